//! Points, batches of points and sample weights, and their validation.
//!
//! Every value that enters a learner is checked here first: points must have the learner's
//! dimension and finite coordinates; weights must be finite, non-negative and not all zero.
//! A learner runs these checks *before* touching its state, which is what makes its steps
//! atomic.
//!
//! Batches are row-major `f64` buffers. The public API takes `ndarray` views
//! ([`Points::from_array`]); hot loops work on plain slices ([`Points::row`]).

use std::borrow::Cow;

use ndarray::ArrayView2;

use crate::error::{Error, Result};

/// The largest absolute value of a point's coordinate: the losses of the point learners are
/// squared distances, and with coordinates within ±1e150 a squared distance in up to 10⁷
/// dimensions stays far from overflow (4·10³⁰⁷). Larger values are refused with
/// [`Error::ValueTooLarge`] rather than silently producing infinite losses.
pub const MAX_COORDINATE: f64 = 1e150;

/// Checks that every coordinate of a point is finite and within ±[`MAX_COORDINATE`].
pub fn check_coordinates(point: &[f64]) -> Result<()> {
    check_finite(point)?;
    match point.iter().position(|v| v.abs() > MAX_COORDINATE) {
        Some(column) => Err(Error::ValueTooLarge {
            row: None,
            column,
            value: point[column],
        }),
        None => Ok(()),
    }
}

/// Checks that every value is finite (advice, losses, weights: any size).
pub fn check_finite(point: &[f64]) -> Result<()> {
    // The vectorised test first; the position only for the error message.
    if crate::kernels::all_finite_any_length(point) {
        return Ok(());
    }
    match point.iter().position(|v| !v.is_finite()) {
        Some(column) => Err(Error::NonFinite {
            row: None,
            column,
            value: point[column],
        }),
        None => Ok(()),
    }
}

/// Checks that `point` has dimension `dim` and finite coordinates within ±[`MAX_COORDINATE`].
///
/// ```
/// use pacstream::data::check_point;
/// assert!(check_point(&[1.0, 2.0], 2).is_ok());
/// assert!(check_point(&[1.0], 2).is_err());
/// assert!(check_point(&[1.0, f64::NAN], 2).is_err());
/// ```
pub fn check_point(point: &[f64], dim: usize) -> Result<()> {
    if point.len() != dim {
        return Err(Error::DimensionMismatch {
            row: None,
            expected: dim,
            found: point.len(),
        });
    }
    check_coordinates(point)
}

/// Checks the first point of a stream, which fixes the dimension: it must have at least one
/// coordinate, all finite and within ±[`MAX_COORDINATE`].
pub fn check_first_point(point: &[f64]) -> Result<()> {
    if point.is_empty() {
        return Err(Error::EmptyInput("a point needs at least one coordinate"));
    }
    check_coordinates(point)
}

/// A validated batch of points: row-major, `n_points × dim`, every value finite and within
/// ±[`MAX_COORDINATE`], at least one point and one coordinate.
#[derive(Debug, Clone)]
pub struct Points<'a> {
    values: Cow<'a, [f64]>,
    n_points: usize,
    dim: usize,
}

impl<'a> Points<'a> {
    /// Validates a row-major buffer of `values.len() / dim` points of dimension `dim`.
    pub fn from_slice(values: &'a [f64], dim: usize) -> Result<Self> {
        Self::new(Cow::Borrowed(values), dim)
    }

    /// Validates an `n × d` array view (one point per row). Borrows it when it is in standard
    /// (row-major, contiguous) layout and copies it otherwise.
    pub fn from_array(array: ArrayView2<'a, f64>) -> Result<Self> {
        let dim = array.ncols();
        let values = match array.to_slice() {
            Some(slice) => Cow::Borrowed(slice),
            None => Cow::Owned(array.iter().copied().collect()),
        };
        if array.nrows() == 0 {
            return Err(Error::EmptyInput("the batch holds no points"));
        }
        Self::new(values, dim)
    }

    fn new(values: Cow<'a, [f64]>, dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::EmptyInput("a point needs at least one coordinate"));
        }
        if values.is_empty() {
            return Err(Error::EmptyInput("the batch holds no points"));
        }
        if values.len() % dim != 0 {
            return Err(Error::InconsistentInput(format!(
                "{} values do not make whole points of dimension {dim}",
                values.len()
            )));
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                row: Some(index / dim),
                column: index % dim,
                value: values[index],
            });
        }
        if let Some(index) = values.iter().position(|v| v.abs() > MAX_COORDINATE) {
            return Err(Error::ValueTooLarge {
                row: Some(index / dim),
                column: index % dim,
                value: values[index],
            });
        }
        let n_points = values.len() / dim;
        Ok(Self {
            values,
            n_points,
            dim,
        })
    }

    /// Number of points.
    #[inline]
    pub fn n_points(&self) -> usize {
        self.n_points
    }

    /// Dimension of every point.
    #[inline]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Point `index` as a slice of `dim` values.
    #[inline]
    pub fn row(&self, index: usize) -> &[f64] {
        &self.values[index * self.dim..(index + 1) * self.dim]
    }

    /// Iterates over the points in order.
    pub fn rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.values.chunks_exact(self.dim)
    }

    /// The row-major buffer.
    #[inline]
    pub fn as_slice(&self) -> &[f64] {
        &self.values
    }

    /// The batch as an `n × d` array view.
    pub fn view(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.n_points, self.dim), &self.values)
            .expect("invariant: values.len() == n_points * dim")
    }
}

/// Per-point sample weights: unit weights by default, or a validated vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Weights<'a> {
    /// Every point has weight 1.
    Unit,
    /// One finite, non-negative weight per point, not all zero.
    Given(&'a [f64]),
}

impl<'a> Weights<'a> {
    /// Validates optional weights for `n_points` points.
    pub fn new(weights: Option<&'a [f64]>, n_points: usize) -> Result<Self> {
        let Some(weights) = weights else {
            return Ok(Weights::Unit);
        };
        if weights.len() != n_points {
            return Err(Error::InconsistentInput(format!(
                "{} sample weights for {n_points} points",
                weights.len()
            )));
        }
        if let Some(row) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(Error::InvalidWeight {
                row: Some(row),
                value: weights[row],
            });
        }
        if weights.iter().all(|&w| w == 0.0) {
            return Err(Error::InvalidWeight {
                row: None,
                value: 0.0,
            });
        }
        Ok(Weights::Given(weights))
    }

    /// The weight of point `index`.
    #[inline]
    pub fn get(&self, index: usize) -> f64 {
        match self {
            Weights::Unit => 1.0,
            Weights::Given(weights) => weights[index],
        }
    }

    /// Whether every weight is 1 (lets kernels skip the multiplications).
    #[inline]
    pub fn is_unit(&self) -> bool {
        matches!(self, Weights::Unit)
    }
}

/// Checks a single sample weight of a streamed point: finite and non-negative.
pub fn check_weight(weight: f64) -> Result<()> {
    if weight.is_finite() && weight >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidWeight {
            row: Some(0),
            value: weight,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn batch_validation_names_row_and_column() {
        let data = array![[1.0, 2.0], [3.0, f64::INFINITY]];
        let err = Points::from_array(data.view()).unwrap_err();
        assert_eq!(
            err,
            Error::NonFinite {
                row: Some(1),
                column: 1,
                value: f64::INFINITY
            }
        );
    }

    #[test]
    fn huge_coordinates_are_refused() {
        let err = Points::from_slice(&[1.0, 2.0, 3.0, -1e200], 2).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ValueTooLarge {
                    row: Some(1),
                    column: 1,
                    ..
                }
            ),
            "{err}"
        );
        assert!(check_point(&[1e151], 1).is_err());
        assert!(check_point(&[MAX_COORDINATE, -MAX_COORDINATE], 2).is_ok());
        assert!(err.to_string().contains("too large"));
    }

    #[test]
    fn non_standard_layout_is_copied_in_row_order() {
        let data = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let transposed = data.t();
        let points = Points::from_array(transposed).unwrap();
        assert_eq!(points.n_points(), 2);
        assert_eq!(points.row(1), &[2.0, 4.0, 6.0]);
    }

    #[test]
    fn weights_are_checked() {
        assert!(Weights::new(Some(&[1.0, -1.0]), 2).is_err());
        assert!(Weights::new(Some(&[0.0, 0.0]), 2).is_err());
        assert!(Weights::new(Some(&[1.0]), 2).is_err());
        let weights = Weights::new(Some(&[0.0, 2.0]), 2).unwrap();
        assert_eq!(weights.get(1), 2.0);
        assert!(Weights::new(None, 2).unwrap().is_unit());
    }

    #[test]
    fn empty_batches_are_rejected() {
        assert!(Points::from_slice(&[], 2).is_err());
        assert!(Points::from_slice(&[1.0, 2.0, 3.0], 2).is_err());
        assert!(Points::from_slice(&[1.0], 0).is_err());
    }
}

/// R, the radius of the data that a learner's guarantees assume (PACBO: ‖x_t − μ_0‖ ≤ R;
/// principal curves: the points lie in B(μ_0, √d R)), given or measured on the warm-up
/// points. PACBO and the principal curves share this one type (`paco::Radius` and
/// `curves::Radius` name it); each family's documentation says how `Auto` measures it.
///
/// ```
/// use pacstream::data::Radius;
///
/// assert_eq!("auto".parse::<Radius>(), Ok(Radius::Auto));
/// assert_eq!("2.5".parse::<Radius>(), Ok(Radius::Given(2.5)));
/// assert!("big".parse::<Radius>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Radius {
    /// Measured on the warm-up points, which fix the centre μ_0 too (and are not predicted).
    Auto,
    /// This value (finite, > 0), in the units of the data.
    Given(f64),
}

impl std::str::FromStr for Radius {
    type Err = String;

    /// `auto`, or a number.
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        if text == "auto" {
            return Ok(Radius::Auto);
        }
        text.parse::<f64>()
            .map(Radius::Given)
            .map_err(|_| format!("expected a number or `auto`, got {text:?}"))
    }
}

impl Radius {
    /// Writes `"auto"` or the number (the principal curves' settings).
    pub(crate) fn serialize_auto_or_number<S: serde::Serializer>(
        radius: &Radius,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match radius {
            Radius::Auto => serializer.serialize_str("auto"),
            Radius::Given(value) => serializer.serialize_f64(*value),
        }
    }

    /// Writes `"auto"` or the number in scientific notation as text (PACBO's settings, as
    /// its checkpoints have always recorded them).
    pub(crate) fn serialize_auto_or_text<S: serde::Serializer>(
        radius: &Radius,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match radius {
            Radius::Auto => serializer.serialize_str("auto"),
            Radius::Given(value) => serializer.serialize_str(&format!("{value:e}")),
        }
    }
}
