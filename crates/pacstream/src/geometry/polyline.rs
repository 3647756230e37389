//! Projection of a point on a segment and on a polygonal line.
//!
//! A polygonal line with vertices v_0..v_k (k ≥ 1 segments s_i = [v_i, v_{i+1}]) splits the
//! space into 2k + 1 cells: V_i, the points whose nearest point on the line is the vertex v_i,
//! and S_i, the points whose nearest point lies strictly inside the segment s_i. The *parts*
//! of the line are ordered along it, V_0 < S_0 < V_1 < S_1 < … < V_k, and a point equally
//! near to several parts belongs to the first of them (ties go to the lowest index).
//!
//! The squared distance to each part is a fixed function of the point and of that part alone
//! (‖x − v_i‖² for a vertex; ‖x − (a + τ(b − a))‖² with τ = ⟨x − a, b − a⟩/‖b − a‖² for a
//! segment, a candidate only when 0 < τ < 1), and the nearest part is the first part of
//! smallest squared distance. Because vertices are parts in their own right, the distance
//! found is never larger than the distance to any vertex, exactly, whatever the rounding.
//! The principal-curve learner relies on this: it updates the nearest part of stored points
//! incrementally and gets the same bits as a fresh projection.

use super::distance::squared_distance;
use crate::error::{Error, Result};

/// The squared distance from `point` to the interior of the segment [a, b] and the position
/// τ ∈ (0, 1) of the nearest point a + τ(b − a), or `None` when the nearest point of the
/// segment is one of its ends (τ ≤ 0 or τ ≥ 1, or a = b).
///
/// ```
/// use pacstream::geometry::segment_interior;
/// let (squared, tau) = segment_interior(&[1.0, 2.0], &[0.0, 0.0], &[4.0, 0.0]).unwrap();
/// assert_eq!((squared, tau), (4.0, 0.25));
/// assert!(segment_interior(&[-1.0, 2.0], &[0.0, 0.0], &[4.0, 0.0]).is_none());
/// ```
#[inline]
pub fn segment_interior(point: &[f64], a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    debug_assert!(point.len() == a.len() && a.len() == b.len());
    let mut along = 0.0;
    let mut length2 = 0.0;
    for ((x, a), b) in point.iter().zip(a).zip(b) {
        let direction = b - a;
        along += (x - a) * direction;
        length2 += direction * direction;
    }
    // NaN-free: length2 > 0 is checked before dividing.
    if !(length2 > 0.0 && along > 0.0 && along < length2) {
        return None;
    }
    let tau = along / length2;
    let mut squared = 0.0;
    for ((x, a), b) in point.iter().zip(a).zip(b) {
        let diff = x - (a + tau * (b - a));
        squared += diff * diff;
    }
    Some((squared, tau))
}

/// The squared distance from `point` to the closed segment [a, b] and the position
/// τ ∈ [0, 1] of its nearest point a + τ(b − a) (the first end when a = b).
///
/// ```
/// use pacstream::geometry::project_on_segment;
/// assert_eq!(project_on_segment(&[5.0, 3.0], &[0.0, 0.0], &[4.0, 0.0]), (10.0, 1.0));
/// assert_eq!(project_on_segment(&[2.0, 1.0], &[0.0, 0.0], &[4.0, 0.0]), (1.0, 0.5));
/// ```
pub fn project_on_segment(point: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
    if let Some(inside) = segment_interior(point, a, b) {
        return inside;
    }
    let to_a = squared_distance(point, a);
    let to_b = squared_distance(point, b);
    // The lower end on a tie, as on a polygonal line.
    if to_b < to_a {
        (to_b, 1.0)
    } else {
        (to_a, 0.0)
    }
}

/// A part of a polygonal line: a vertex or the interior of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Part {
    /// The vertex v_i.
    Vertex(usize),
    /// The interior of the segment s_i = [v_i, v_{i+1}].
    Segment(usize),
}

impl Part {
    /// The rank of the part along the line: V_i ↦ 2i, S_i ↦ 2i + 1.
    #[inline]
    pub fn rank(self) -> usize {
        match self {
            Part::Vertex(i) => 2 * i,
            Part::Segment(i) => 2 * i + 1,
        }
    }

    /// The indices of the vertices connected to a projection on this part, N(x) in the
    /// principal-curve spec: {v_i, v_{i+1}} for a segment, {v_{i−1}, v_i, v_{i+1}} clipped to
    /// the line for a vertex; returned as the inclusive range (first, last).
    pub fn neighbour_vertices(self, n_segments: usize) -> (usize, usize) {
        match self {
            Part::Segment(i) => (i, i + 1),
            Part::Vertex(i) => (i.saturating_sub(1), (i + 1).min(n_segments)),
        }
    }
}

/// The nearest part of a line to a point and the squared distance to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearestPart {
    /// The part (the first along the line on a tie).
    pub part: Part,
    /// The squared distance from the point to the part.
    pub squared_distance: f64,
    /// For a segment, the position τ ∈ (0, 1) of the nearest point on it; 0 for a vertex.
    pub tau: f64,
}

/// The projection of a point on a polygonal line.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    /// The nearest point of the line.
    pub point: Vec<f64>,
    /// The part it lies on.
    pub part: Part,
    /// The projection index: the arc length from the first vertex to the nearest point.
    pub arc_length: f64,
    /// The squared distance from the point to the line.
    pub squared_distance: f64,
}

/// The nearest part among the vertices and segments of the row-major `vertices` (dimension
/// `dim`, at least one vertex); see the module documentation for the tie rule.
pub fn nearest_part(point: &[f64], vertices: &[f64], dim: usize) -> NearestPart {
    let n_vertices = vertices.len() / dim;
    let vertex = |i: usize| &vertices[i * dim..(i + 1) * dim];
    let mut best = NearestPart {
        part: Part::Vertex(0),
        squared_distance: squared_distance(point, vertex(0)),
        tau: 0.0,
    };
    for i in 0..n_vertices.saturating_sub(1) {
        if let Some((squared, tau)) = segment_interior(point, vertex(i), vertex(i + 1)) {
            if squared < best.squared_distance {
                best = NearestPart {
                    part: Part::Segment(i),
                    squared_distance: squared,
                    tau,
                };
            }
        }
        let squared = squared_distance(point, vertex(i + 1));
        if squared < best.squared_distance {
            best = NearestPart {
                part: Part::Vertex(i + 1),
                squared_distance: squared,
                tau: 0.0,
            };
        }
    }
    best
}

/// A polygonal line in R^d: at least two vertices, consecutive vertices distinct, finite
/// coordinates.
///
/// ```
/// use pacstream::geometry::{Part, Polyline};
///
/// // An L: (0,0) → (4,0) → (4,3).
/// let line = Polyline::new(vec![0.0, 0.0, 4.0, 0.0, 4.0, 3.0], 2)?;
/// assert_eq!(line.length(), 7.0);
/// let p = line.project(&[5.0, 1.0]);
/// assert_eq!((p.part, p.squared_distance, p.arc_length), (Part::Segment(1), 1.0, 5.0));
/// assert_eq!(p.point, vec![4.0, 1.0]);
/// // Beyond the first vertex: its cell V_0, arc length 0.
/// let p = line.project(&[-2.0, -1.0]);
/// assert_eq!((p.part, p.squared_distance, p.arc_length), (Part::Vertex(0), 5.0, 0.0));
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "PolylineData", try_from = "PolylineData")]
pub struct Polyline {
    vertices: Vec<f64>,
    dim: usize,
    /// Arc length from v_0 to each vertex.
    cumulative: Vec<f64>,
}

/// What a serialised polygonal line holds: its vertices; the arc lengths are recomputed and
/// the vertices checked when it is read back.
#[derive(serde::Serialize, serde::Deserialize)]
struct PolylineData {
    vertices: Vec<f64>,
    dim: usize,
}

impl From<Polyline> for PolylineData {
    fn from(line: Polyline) -> Self {
        Self {
            vertices: line.vertices,
            dim: line.dim,
        }
    }
}

impl TryFrom<PolylineData> for Polyline {
    type Error = Error;

    fn try_from(data: PolylineData) -> Result<Self> {
        Polyline::new(data.vertices, data.dim)
    }
}

impl Polyline {
    /// A line through the row-major `vertices` of dimension `dim`.
    pub fn new(vertices: Vec<f64>, dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::EmptyInput("a vertex needs at least one coordinate"));
        }
        if vertices.len() % dim != 0 {
            return Err(Error::InconsistentInput(format!(
                "{} values do not make whole vertices of dimension {dim}",
                vertices.len()
            )));
        }
        let n = vertices.len() / dim;
        if n < 2 {
            return Err(Error::NotEnoughPoints {
                required: 2,
                found: n,
            });
        }
        crate::data::check_coordinates(&vertices)?;
        let mut cumulative = Vec::with_capacity(n);
        cumulative.push(0.0);
        for i in 1..n {
            let a = &vertices[(i - 1) * dim..i * dim];
            let b = &vertices[i * dim..(i + 1) * dim];
            if a == b {
                return Err(Error::InconsistentInput(format!(
                    "vertices {} and {i} are equal: consecutive vertices must differ",
                    i - 1
                )));
            }
            cumulative.push(cumulative[i - 1] + squared_distance(a, b).sqrt());
        }
        Ok(Self {
            vertices,
            dim,
            cumulative,
        })
    }

    /// A line through vertices known to be valid, except that two consecutive vertices may
    /// coincide after rounding (a zero-length segment has no interior, so projections stay
    /// well defined). For lines built from lattice keys.
    pub(crate) fn new_unchecked(vertices: Vec<f64>, dim: usize) -> Self {
        let n = vertices.len() / dim;
        let mut cumulative = Vec::with_capacity(n);
        cumulative.push(0.0);
        for i in 1..n {
            let a = &vertices[(i - 1) * dim..i * dim];
            let b = &vertices[i * dim..(i + 1) * dim];
            cumulative.push(cumulative[i - 1] + squared_distance(a, b).sqrt());
        }
        Self {
            vertices,
            dim,
            cumulative,
        }
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of segments k.
    pub fn n_segments(&self) -> usize {
        self.cumulative.len() - 1
    }

    /// The vertices, row-major.
    pub fn vertices(&self) -> &[f64] {
        &self.vertices
    }

    /// Vertex `i`.
    pub fn vertex(&self, i: usize) -> &[f64] {
        &self.vertices[i * self.dim..(i + 1) * self.dim]
    }

    /// The vertices, one slice each.
    pub fn vertex_rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.vertices.chunks_exact(self.dim)
    }

    /// The length Σ ‖v_{i+1} − v_i‖.
    pub fn length(&self) -> f64 {
        self.cumulative[self.cumulative.len() - 1]
    }

    /// The nearest part to `point` (of the line's dimension) and the squared distance.
    pub fn nearest(&self, point: &[f64]) -> NearestPart {
        nearest_part(point, &self.vertices, self.dim)
    }

    /// The squared distance from `point` to the line.
    pub fn squared_distance(&self, point: &[f64]) -> f64 {
        self.nearest(point).squared_distance
    }

    /// The projection of `point`: nearest point, part, arc length, squared distance.
    pub fn project(&self, point: &[f64]) -> Projection {
        let nearest = self.nearest(point);
        let (point, arc_length) = match nearest.part {
            Part::Vertex(i) => (self.vertex(i).to_vec(), self.cumulative[i]),
            Part::Segment(i) => {
                let (a, b) = (self.vertex(i), self.vertex(i + 1));
                let tau = nearest.tau;
                let point = a.iter().zip(b).map(|(a, b)| a + tau * (b - a)).collect();
                let arc = self.cumulative[i] + tau * (self.cumulative[i + 1] - self.cumulative[i]);
                (point, arc)
            }
        };
        Projection {
            point,
            part: nearest.part,
            arc_length,
            squared_distance: nearest.squared_distance,
        }
    }

    /// The cell of every point (row-major, the line's dimension): the partition into the
    /// V_i and S_i of the module documentation.
    pub fn partition<'a>(&self, points: impl IntoIterator<Item = &'a [f64]>) -> Vec<Part> {
        points.into_iter().map(|p| self.nearest(p).part).collect()
    }
}

impl crate::online::Model for Polyline {
    fn loss(&self, point: &[f64]) -> f64 {
        self.squared_distance(point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_projections() {
        // A right angle (0,0) → (2,0) → (2,2).
        let line = Polyline::new(vec![0.0, 0.0, 2.0, 0.0, 2.0, 2.0], 2).unwrap();
        let cases: [([f64; 2], Part, f64, f64); 6] = [
            ([1.0, -1.0], Part::Segment(0), 1.0, 1.0),
            ([3.0, 1.0], Part::Segment(1), 1.0, 3.0),
            // Inside the corner: equally near both segments' interiors: the first wins.
            ([1.0, 1.0], Part::Segment(0), 1.0, 1.0),
            // Outside the corner: the vertex.
            ([3.0, -1.0], Part::Vertex(1), 2.0, 2.0),
            ([-1.0, 0.0], Part::Vertex(0), 1.0, 0.0),
            ([2.0, 5.0], Part::Vertex(2), 9.0, 4.0),
        ];
        for (point, part, squared, arc) in cases {
            let p = line.project(&point);
            assert_eq!(
                (p.part, p.squared_distance, p.arc_length),
                (part, squared, arc),
                "{point:?}"
            );
        }
        // A point on the line projects on itself.
        let p = line.project(&[2.0, 0.5]);
        assert_eq!((p.squared_distance, p.arc_length), (0.0, 2.5));
        assert_eq!(p.point, vec![2.0, 0.5]);
    }

    #[test]
    fn ties_between_distant_parts_go_to_the_first_along_the_line() {
        // (0,0) → (3,0) → (3,4) → (−3,4): (0,2) is at distance 2 from v_0 and from the
        // interior of s_2 (and 3 from s_1).
        let line = Polyline::new(vec![0.0, 0.0, 3.0, 0.0, 3.0, 4.0, -3.0, 4.0], 2).unwrap();
        let p = line.project(&[0.0, 2.0]);
        assert_eq!(
            (p.part, p.squared_distance, p.arc_length),
            (Part::Vertex(0), 4.0, 0.0)
        );
        // Just above the middle, s_2 alone is nearest: arc length 3 + 4 + 3.
        let p = line.project(&[0.0, 2.5]);
        assert_eq!(
            (p.part, p.squared_distance, p.arc_length),
            (Part::Segment(2), 2.25, 10.0)
        );
        // A U: (−1,1) is √2 from both ends, v_0 and v_3.
        let line = Polyline::new(vec![0.0, 0.0, 4.0, 0.0, 4.0, 2.0, 0.0, 2.0], 2).unwrap();
        let p = line.project(&[-1.0, 1.0]);
        assert_eq!((p.part, p.squared_distance), (Part::Vertex(0), 2.0));
        assert_eq!(
            line.partition([[-1.0, 1.0].as_slice(), &[-1.0, 1.5]]),
            vec![Part::Vertex(0), Part::Vertex(3)]
        );
    }

    #[test]
    fn one_dimensional_and_three_dimensional_lines() {
        let line = Polyline::new(vec![0.0, 3.0, 1.0], 1).unwrap();
        assert_eq!(line.length(), 5.0);
        let p = line.project(&[2.0]);
        // Equally near s_0's and s_1's interior (distance 0 on both): the first.
        assert_eq!((p.part, p.arc_length), (Part::Segment(0), 2.0));
        let line = Polyline::new(vec![0.0, 0.0, 0.0, 0.0, 0.0, 2.0], 3).unwrap();
        let p = line.project(&[1.0, 1.0, 1.0]);
        assert_eq!(
            (p.part, p.squared_distance, p.arc_length),
            (Part::Segment(0), 2.0, 1.0)
        );
    }

    #[test]
    fn invalid_lines_are_refused() {
        assert!(Polyline::new(vec![0.0, 0.0], 2).is_err());
        assert!(Polyline::new(vec![0.0, 0.0, 0.0, 0.0], 2).is_err());
        assert!(Polyline::new(vec![0.0, 0.0, 1.0], 2).is_err());
        assert!(Polyline::new(vec![0.0, f64::NAN, 1.0, 1.0], 2).is_err());
        assert!(Polyline::new(vec![], 0).is_err());
    }

    #[test]
    fn snapshots_are_checked() {
        let line = Polyline::new(vec![0.0, 0.0, 3.0, 4.0], 2).unwrap();
        let text = serde_json::to_string(&line).unwrap();
        assert_eq!(serde_json::from_str::<Polyline>(&text).unwrap(), line);
        assert!(serde_json::from_str::<Polyline>(r#"{"vertices":[0,0,0,0],"dim":2}"#).is_err());
    }

    #[test]
    fn neighbour_vertices_are_clipped() {
        assert_eq!(Part::Segment(2).neighbour_vertices(5), (2, 3));
        assert_eq!(Part::Vertex(0).neighbour_vertices(5), (0, 1));
        assert_eq!(Part::Vertex(5).neighbour_vertices(5), (4, 5));
        assert_eq!(Part::Vertex(3).neighbour_vertices(5), (2, 4));
        assert_eq!(Part::Vertex(1).neighbour_vertices(1), (0, 1));
    }
}
