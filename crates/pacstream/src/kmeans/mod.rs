//! k-means: k-means++ seeding, Lloyd's algorithm, sequential and mini-batch k-means.
//!
//! The k-means objective of n points x with weights w(x) and centres c_1..c_k is the inertia
//!
//! φ = Σ_x w(x) · min_j ‖x − c_j‖²,
//!
//! which is also the cumulative loss of the centres in the online protocol
//! (ℓ(c, x) = min_j ‖x − c_j‖²).
//!
//! - **Batch** ([`KMeansParams`] → [`KMeansConfig::fit`] → [`KMeans`]): seeding by greedy
//!   k-means++ (default), vanilla k-means++, random points or given centres; then Lloyd's
//!   iterations on the data translated to their weighted mean, until the total squared
//!   centre shift of a pass is at most `tol` × the mean per-feature variance (the spec's and
//!   scikit-learn's rule; counting the points that change cluster is one option away:
//!   [`Stopping`]), or `max_iter`; empty clusters
//!   re-seeded at the farthest point; then (by default) Hartigan's single-point moves
//!   ([`Refinement`]), which reach lower local optima than Lloyd's fixed points; `n_init`
//!   restarts on independent child streams. The
//!   assignment step runs plain or with Hamerly's bounds ([`Algorithm`]), with the same
//!   result either way, over fixed chunks of points in parallel: results are the same bit
//!   for bit whatever the number of threads.
//! - **Sequential** ([`SequentialKMeansParams`] → [`SequentialKMeans`]): the online protocol
//!   with MacQueen's running means, decay, reassignment of dying centres, Sculley's
//!   mini-batches and mergeable [`CentreStats`].

mod assign;
mod batch;
mod centres;
mod chunked;
mod describe;
mod expanded;
mod hamerly;
mod hartigan;
mod init;
mod lloyd;
mod params;
mod sequential;
mod stats;

pub use batch::{KMeans, KMeansReport};
pub use centres::Centres;
pub use describe::{
    InitMethod, KMeansSettings, SequentialKMeansRecord, SequentialKMeansSettings,
    SequentialKMeansSummary, centre_rows,
};
#[doc(hidden)]
#[cfg(feature = "testing")]
pub use init::seed_indices;
#[cfg(not(feature = "testing"))]
pub(crate) use init::seed_indices;
pub use params::{
    Algorithm, Init, KMeansConfig, KMeansParams, Refinement, SequentialKMeansConfig,
    SequentialKMeansParams, Stopping, limits,
};
pub use sequential::{SequentialKMeans, SequentialKMeansReport, SequentialKMeansStep};
pub use stats::CentreStats;
