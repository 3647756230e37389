//! What a front-end needs to drive a learner of any family without knowing the family: its
//! validated settings by name, the record of one round, and its summary (model, totals,
//! regret and bound, each labelled with what it is).
//!
//! The command line, the Python package and the dataflow operators write these as they
//! are (JSON, CSV, Python dicts), so that no front-end keeps a per-family table of names,
//! re-derives a formula or decides which totals a family reports. The expert rules have
//! their own face, [`crate::experts::Aggregator`], whose rounds take advice rather than a
//! point.
//!
//! ```
//! use pacstream::describe::Describe;
//! use pacstream::eval::Prequential;
//! use pacstream::kmeans::SequentialKMeansParams;
//! use pacstream::OnlineLearner;
//!
//! let mut learner = SequentialKMeansParams::new(2).init_size(2).check().unwrap().build();
//! let mut totals = Prequential::new();
//! let mut last = None;
//! for point in [[0.0, 0.0], [4.0, 0.0], [0.0, 1.0], [4.0, 1.0]] {
//!     let step = learner.learn_one(&point).unwrap();
//!     let round = totals.record(&step);
//!     let record = serde_json::to_value(learner.record(&step, &round)).unwrap();
//!     assert_eq!(record["t"], step.round);
//!     last = Some(round);
//! }
//! let settings = serde_json::to_value(learner.settings()).unwrap();
//! assert_eq!(settings["k"], 2);
//! let summary = serde_json::to_value(learner.summary(&totals, last.as_ref())).unwrap();
//! assert_eq!(summary["totals"]["rounds"], 4);
//! assert_eq!(summary["totals"]["scored_rounds"], 3);
//! ```

use serde::Serialize;

use crate::eval::{Prequential, Totals};
use crate::online::OnlineLearner;

/// A learner as every front-end sees it.
pub trait Describe: OnlineLearner {
    /// The validated settings, by the names the front-ends give them (`k`, `decay`, ...):
    /// what must be equal for a snapshot to be resumed.
    type Settings: Serialize;

    /// One round as written out: the step and the running totals after it.
    type Record<'a>: Serialize
    where
        Self: 'a;

    /// The final model and what the run achieved.
    type Summary<'a>: Serialize
    where
        Self: 'a;

    /// The settings by name.
    fn settings(&self) -> Self::Settings;

    /// The record of `step`, with the totals after it.
    fn record<'a>(&'a self, step: &'a Self::Step, totals: &Totals) -> Self::Record<'a>;

    /// The summary, given the run's totals and those after its last round (none before the
    /// first).
    fn summary<'a>(&'a self, totals: &Prequential, last: Option<&Totals>) -> Self::Summary<'a>;
}

/// The totals of a stream as a summary reports them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StreamTotals {
    /// Rounds played.
    pub rounds: u64,
    /// Rounds whose loss was defined (a model existed).
    pub scored_rounds: u64,
    /// The learner's cumulative loss over the scored rounds.
    pub cumulative_loss: f64,
    /// The average loss per scored round.
    pub mean_loss: Option<f64>,
}

impl StreamTotals {
    /// The totals of a learner that played `rounds`, accounted in `totals`, `last` those
    /// after its last round.
    pub fn new(rounds: u64, totals: &Prequential, last: Option<&Totals>) -> Self {
        Self {
            rounds,
            scored_rounds: last.map_or(0, |t| t.scored_rounds),
            cumulative_loss: totals.cumulative_loss(),
            mean_loss: last.and_then(Totals::mean_loss),
        }
    }
}
