//! pacstream's learners on [timely dataflow](https://docs.rs/timely): worker threads and
//! processes that talk over TCP, with deterministic progress tracking.
//!
//! Three patterns, each giving the same result whatever the number of workers and
//! processes:
//!
//! - [`keyed`]: one learner per key (any learner of the library), the keys spread over the
//!   workers by a hash;
//! - [`kmeans`]: one sequential k-means over one stream, each mini-batch's statistics
//!   computed by chunks on all workers and merged in stream order;
//! - [`experts`]: one Hedge over N experts, each worker holding a slice of the experts.
//!
//! Every worker runs the same function with the same arguments; the patterns exchange
//! data in synchronous rounds ([`channel`]) and sort what they receive by a position in the
//! stream before using it, so that arrival order never matters. Worker 0 writes the records
//! in stream order; every worker checkpoints its state at epoch boundaries
//! ([`checkpoint`]), and a restarted cluster resumes from the last epoch every worker holds.

pub mod channel;
pub mod checkpoint;
pub mod cluster;
mod error;
pub mod experts;
pub mod keyed;

pub mod kmeans;
mod sink;
mod source;

pub use error::{Error, Result};
pub use sink::RunFiles;
pub use source::{AsRow, Rows, Selection, Source, VecSource};

/// The largest number of rows an epoch may hold (checked before anything is allocated).
pub const ROWS_LIMIT: usize = 10_000_000;
