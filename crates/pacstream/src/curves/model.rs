//! A fitted principal curve: a polygonal line in the user's coordinates, and the projection
//! of new points on it.

use serde::{Deserialize, Serialize};

use crate::data::check_point;
use crate::error::Result;
use crate::geometry::{Polyline, Projection};
use crate::online::Model;

/// A principal curve: a polygonal line in the user's coordinates.
///
/// Projecting new points on a fitted curve is what principal curves are most used for:
/// [`PrincipalCurve::project`] gives the nearest point, the segment or vertex it lies on, the
/// projection index (arc length from the first vertex) and the squared distance.
///
/// ```
/// use pacstream::curves::PrincipalCurve;
/// use pacstream::geometry::Part;
///
/// let curve = PrincipalCurve::from_vertices(vec![0.0, 0.0, 3.0, 4.0, 3.0, 10.0], 2)?;
/// assert_eq!((curve.n_segments(), curve.length()), (2, 11.0));
/// let p = curve.project(&[4.0, 7.0])?;
/// assert_eq!((p.part, p.arc_length, p.squared_distance), (Part::Segment(1), 8.0, 1.0));
/// assert!(curve.project(&[1.0]).is_err());
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrincipalCurve {
    line: Polyline,
}

impl PrincipalCurve {
    /// The curve through `vertices` (row-major, dimension `dim`): at least two, consecutive
    /// vertices distinct, finite.
    pub fn from_vertices(vertices: Vec<f64>, dim: usize) -> Result<Self> {
        Ok(Self {
            line: Polyline::new(vertices, dim)?,
        })
    }

    pub(crate) fn from_line(line: Polyline) -> Self {
        Self { line }
    }

    /// The polygonal line.
    pub fn polyline(&self) -> &Polyline {
        &self.line
    }

    /// The vertices, row-major.
    pub fn vertices(&self) -> &[f64] {
        self.line.vertices()
    }

    /// The vertices, one slice each.
    pub fn vertex_rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.line.vertex_rows()
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.line.dim()
    }

    /// The number of segments K(f).
    pub fn n_segments(&self) -> usize {
        self.line.n_segments()
    }

    /// The length 𝓛(f).
    pub fn length(&self) -> f64 {
        self.line.length()
    }

    /// The projection of a point (of the curve's dimension, finite).
    pub fn project(&self, point: &[f64]) -> Result<Projection> {
        check_point(point, self.dim())?;
        Ok(self.line.project(point))
    }

    /// The squared distance Δ(f, x) from a point to the curve.
    pub fn squared_distance(&self, point: &[f64]) -> Result<f64> {
        check_point(point, self.dim())?;
        Ok(self.line.squared_distance(point))
    }
}

impl Model for PrincipalCurve {
    fn loss(&self, point: &[f64]) -> f64 {
        self.line.squared_distance(point)
    }
}
