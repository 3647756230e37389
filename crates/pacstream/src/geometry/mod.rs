//! Geometry shared by the algorithm families: squared Euclidean distances (k-means, PACBO)
//! and, for principal curves, projections on segments and polygonal lines.

mod distance;

pub use distance::{squared_distance, squared_norm};
