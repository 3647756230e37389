//! Geometry shared by the algorithm families: squared Euclidean distances (k-means, PACBO)
//! and, for principal curves, projections on segments and polygonal lines.

mod distance;
mod polyline;

pub(crate) use distance::fused_squared_distance;
pub use distance::{squared_distance, squared_norm};
pub use polyline::{
    NearestPart, Part, Polyline, Projection, nearest_part, project_on_segment, segment_interior,
};
