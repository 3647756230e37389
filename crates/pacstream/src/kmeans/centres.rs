//! A set of cluster centres and the nearest-centre queries on it.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::data::{check_coordinates, check_point};
use crate::error::{Error, Result};
use crate::geometry::squared_distance;
use crate::online::Model;

/// k centres in R^d, stored row-major (centre j is `values[j·d .. (j+1)·d]`).
///
/// As a [`Model`], its loss on a point is the squared distance to the nearest centre,
/// ℓ(c, x) = min_j ‖x − c_j‖².
///
/// ```
/// use pacstream::kmeans::Centres;
/// use pacstream::Model;
///
/// let centres = Centres::from_rows(&[[0.0, 0.0], [10.0, 0.0]])?;
/// assert_eq!(centres.nearest(&[7.0, 1.0]), (1, 10.0));
/// assert_eq!(centres.loss(&[1.0, 1.0]), 2.0);
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Centres {
    dim: usize,
    values: Vec<f64>,
}

validated_snapshot!(Centres);

impl Centres {
    /// Centres from a row-major buffer of `values.len() / dim` centres. At least one centre,
    /// every value finite.
    pub fn new(values: Vec<f64>, dim: usize) -> Result<Self> {
        let centres = Self { dim, values };
        centres.validate_snapshot()?;
        Ok(centres)
    }

    /// Centres from rows of equal length.
    pub fn from_rows<R: AsRef<[f64]>>(rows: &[R]) -> Result<Self> {
        let dim = rows.first().map_or(0, |r| r.as_ref().len());
        let mut values = Vec::with_capacity(rows.len() * dim);
        for (index, row) in rows.iter().enumerate() {
            let row = row.as_ref();
            if row.len() != dim {
                return Err(Error::DimensionMismatch {
                    row: Some(index),
                    expected: dim,
                    found: row.len(),
                });
            }
            values.extend_from_slice(row);
        }
        Self::new(values, dim)
    }

    /// Centres from a `k × d` array (one centre per row).
    pub fn from_array(array: ArrayView2<'_, f64>) -> Result<Self> {
        Self::new(array.iter().copied().collect(), array.ncols())
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        if self.dim == 0 {
            return Err(Error::EmptyInput("a centre needs at least one coordinate"));
        }
        if self.values.is_empty() {
            return Err(Error::EmptyInput("at least one centre is needed"));
        }
        if self.values.len() % self.dim != 0 {
            return Err(Error::InvalidSnapshot(format!(
                "{} values do not make whole centres of dimension {}",
                self.values.len(),
                self.dim
            )));
        }
        check_coordinates(&self.values).map_err(|e| match e {
            Error::NonFinite { column, value, .. } => Error::NonFinite {
                row: Some(column / self.dim),
                column: column % self.dim,
                value,
            },
            Error::ValueTooLarge { column, value, .. } => Error::ValueTooLarge {
                row: Some(column / self.dim),
                column: column % self.dim,
                value,
            },
            other => other,
        })
    }

    /// The number of centres k.
    #[inline]
    pub fn n_centres(&self) -> usize {
        self.values.len() / self.dim
    }

    /// The dimension d.
    #[inline]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Centre `index`.
    #[inline]
    pub fn centre(&self, index: usize) -> &[f64] {
        &self.values[index * self.dim..(index + 1) * self.dim]
    }

    /// Centre `index`, mutably (crate-internal: values must stay finite).
    #[inline]
    pub(crate) fn centre_mut(&mut self, index: usize) -> &mut [f64] {
        &mut self.values[index * self.dim..(index + 1) * self.dim]
    }

    /// Iterates over the centres.
    pub fn iter(&self) -> std::slice::ChunksExact<'_, f64> {
        self.values.chunks_exact(self.dim)
    }

    /// The row-major buffer.
    #[inline]
    pub fn as_slice(&self) -> &[f64] {
        &self.values
    }

    /// Appends a centre (crate-internal: the caller has validated it).
    pub(crate) fn push(&mut self, centre: &[f64]) {
        debug_assert_eq!(centre.len(), self.dim);
        self.values.extend_from_slice(centre);
    }

    /// One centre, the given point (crate-internal: the caller has validated it).
    pub(crate) fn single(point: &[f64]) -> Self {
        Self {
            dim: point.len(),
            values: point.to_vec(),
        }
    }

    /// The centres as a `k × d` array.
    pub fn to_array(&self) -> Array2<f64> {
        Array2::from_shape_vec((self.n_centres(), self.dim), self.values.clone())
            .expect("invariant: values.len() == k * d")
    }

    /// The nearest centre to `point` and its squared distance. Ties go to the lowest index.
    /// `point` must have dimension d (checked in debug builds; see [`Centres::predict`]).
    #[inline]
    pub fn nearest(&self, point: &[f64]) -> (usize, f64) {
        debug_assert_eq!(point.len(), self.dim);
        let mut best = (0, f64::INFINITY);
        for (index, centre) in self.iter().enumerate() {
            let distance = squared_distance(point, centre);
            if distance < best.1 {
                best = (index, distance);
            }
        }
        best
    }

    /// The label of the nearest centre, after validating the point.
    pub fn predict(&self, point: &[f64]) -> Result<usize> {
        check_point(point, self.dim)?;
        Ok(self.nearest(point).0)
    }

    /// The squared distances from `point` to every centre, after validating the point.
    pub fn transform(&self, point: &[f64]) -> Result<Vec<f64>> {
        check_point(point, self.dim)?;
        Ok(self.iter().map(|c| squared_distance(point, c)).collect())
    }
}

impl Model for Centres {
    #[inline]
    fn loss(&self, point: &[f64]) -> f64 {
        self.nearest(point).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_lowest_index() {
        let centres = Centres::from_rows(&[[1.0], [-1.0]]).unwrap();
        assert_eq!(centres.nearest(&[0.0]), (0, 1.0));
    }

    #[test]
    fn corrupt_snapshots_are_rejected() {
        let bad = r#"{"dim":2,"values":[1.0,2.0,3.0]}"#;
        assert!(serde_json::from_str::<Centres>(bad).is_err());
        let bad = r#"{"dim":0,"values":[]}"#;
        assert!(serde_json::from_str::<Centres>(bad).is_err());
        let good = r#"{"dim":2,"values":[1.0,2.0,3.0,4.0]}"#;
        let centres: Centres = serde_json::from_str(good).unwrap();
        assert_eq!(centres.n_centres(), 2);
        assert_eq!(serde_json::to_string(&centres).unwrap(), good);
    }

    #[test]
    fn predict_checks_the_point() {
        let centres = Centres::from_rows(&[[0.0, 0.0]]).unwrap();
        assert!(centres.predict(&[0.0]).is_err());
        assert!(centres.predict(&[0.0, f64::NAN]).is_err());
        assert_eq!(centres.transform(&[3.0, 4.0]).unwrap(), vec![25.0]);
    }
}
