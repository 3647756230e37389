//! # pacstream
//!
//! Learning from data streams with regret guarantees.
//!
//! Every learner here is an **online learner in the regret sense**: at round t it holds a
//! model chosen from x_1..x_{t−1} only; x_t is revealed; it pays the loss of its model on
//! x_t; then it updates ([`OnlineLearner::learn_one`]). Cumulative loss, the best model in
//! hindsight and the regret between them are first-class outputs ([`eval`]).
//!
//! | family | module | what it learns |
//! |---|---|---|
//! | expert advice | [`experts`] | weighted majority, Hedge/EWA, FPL, sleeping experts, bounds |
//! | k-means | [`kmeans`] | k-means++ seeding, Lloyd, sequential and mini-batch k-means |
//! | PACBO | [`paco`] | online clustering with an unknown, changing number of clusters (quasi-Bayesian, RJMCMC), its regret bound and hindsight oracle |
//! | principal curves | [`curves`] | a polygonal line through a stream (slpc), its projections |
//!
//! Conventions shared by every learner:
//!
//! - **Params → validated config → learner**: a `XParams` builder holds raw values,
//!   `check()` validates them into a `XConfig`, and only a config builds a learner.
//! - **Atomic steps**: a call that returns an error leaves the learner exactly as it was;
//!   bad input never panics.
//! - **No hidden randomness**: each stochastic learner owns a seeded [`StreamRng`], part of
//!   its snapshot; the same seed gives the same results bit for bit, whatever the number of
//!   threads.
//! - **Snapshots**: every learner is `serde`-serialisable; restoring a snapshot checks its
//!   consistency and continues the run bit for bit.
//! - **Reports, not errors**, for non-failures (not converged, empty cluster re-seeded).
//!
//! ## Quick start
//!
//! ```
//! use pacstream::prelude::*;
//! use pacstream::kmeans::SequentialKMeansParams;
//!
//! // Two well-separated groups arriving in a stream.
//! let stream: Vec<[f64; 2]> = (0..200)
//!     .map(|i| if i % 2 == 0 { [0.0 + (i % 7) as f64 * 0.1, 0.0] } else { [10.0, 10.0 - (i % 5) as f64 * 0.1] })
//!     .collect();
//! let mut learner = SequentialKMeansParams::new(2).seed(42).check()?.build();
//! let totals = pacstream::eval::run(&mut learner, stream.iter().map(|p| p.as_slice()), |_, _| {})?;
//! assert_eq!(totals.round, 200);
//! assert_eq!(totals.scored_rounds, 199); // round 1 had no model to pay with
//! // The centres are the means of the two groups, whichever label each got.
//! let centres = learner.centres().unwrap();
//! let mut xs: Vec<f64> = centres.iter().map(|c| c[0]).collect();
//! xs.sort_by(f64::total_cmp);
//! assert!(xs[0] < 0.6 && xs[1] == 10.0);
//! # Ok::<(), pacstream::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Library code never unwraps: errors are returned, and broken invariants say which one.
#![warn(clippy::unwrap_used)]

#[macro_use]
mod macros;

pub mod curves;
pub mod data;
pub mod describe;
pub mod error;
pub mod eval;
pub mod experts;
pub mod geometry;
mod kernels;
pub mod kmeans;
pub mod online;
pub mod paco;
pub mod rng;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{Error, Result};
pub use online::{Model, OnlineLearner, Step, UnsupervisedLearner};
pub use rng::StreamRng;

/// The traits and types most programs need.
pub mod prelude {
    pub use crate::error::{Error, Result};
    pub use crate::eval::{Prequential, Totals};
    pub use crate::online::{Model, OnlineLearner, Step, UnsupervisedLearner};
    pub use crate::rng::StreamRng;
}
