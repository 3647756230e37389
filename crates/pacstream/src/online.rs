//! The online protocol shared by every learner.
//!
//! At round t a learner holds a model chosen from the first t − 1 inputs only. The t-th input
//! is revealed; the learner pays the loss of its current model on it; then it updates.
//! [`OnlineLearner::learn_one`] does exactly that and returns a small [`Step`] record of the
//! round (its loss, the label it gave, the number of clusters...), so that cumulative loss and
//! regret can be accounted by [`crate::eval`] without the learner keeping its past.
//!
//! Contract of every implementation (checked for each learner by the conformance suite,
//! the `conformance` module, behind the feature of that name):
//!
//! - **prequential**: the loss in the step is the loss of the model held *before* the call;
//! - **atomic**: if `learn_one` returns an error, the learner is exactly as before the call
//!   (validation happens before any state changes, and no randomness is drawn);
//! - **deterministic**: the same seed and the same inputs give the same steps, bit for bit,
//!   whatever the number of threads;
//! - **resumable**: serialising the learner mid-stream and restoring it continues the run
//!   bit for bit;
//! - **batch = online**: [`OnlineLearner::learn_many`] gives the same steps and final state as
//!   repeated `learn_one`.

use crate::error::Result;

/// One round's record, as returned by `learn_one`.
pub trait Step {
    /// The round index t, starting at 1.
    fn round(&self) -> u64;

    /// The loss paid this round: the loss of the model held before the round on the revealed
    /// input. `None` when no model existed yet (the first round, or a warm-up round whose
    /// point was buffered rather than predicted); such rounds do not enter cumulative losses.
    fn loss(&self) -> Option<f64>;
}

/// A learner that follows the online protocol.
pub trait OnlineLearner {
    /// What one round reveals: a point (`&[f64]`) for the unsupervised learners, advice and
    /// outcome for the expert aggregators.
    type Input<'a>: Copy;

    /// The per-round record.
    type Step: Step;

    /// Pays the loss of the current model on `input`, then updates the model.
    ///
    /// On error (wrong dimension, non-finite value, ...) the learner is unchanged.
    fn learn_one(&mut self, input: Self::Input<'_>) -> Result<Self::Step>;

    /// The number of rounds played so far (inputs accepted by `learn_one`).
    fn n_rounds(&self) -> u64;

    /// Learns each input in turn, handing every step to `on_step` as it is made (nothing is
    /// collected). Stops at the first error; the inputs before it stay learned, which is what
    /// repeated `learn_one` would do.
    fn learn_many<'a, I>(&mut self, inputs: I, mut on_step: impl FnMut(Self::Step)) -> Result<()>
    where
        I: IntoIterator<Item = Self::Input<'a>>,
    {
        for input in inputs {
            on_step(self.learn_one(input)?);
        }
        Ok(())
    }
}

/// A model that can be scored on a point: a set of centres, a polygonal line...
pub trait Model {
    /// The loss of the model on `point` (for example min_j ‖point − c_j‖²). The point has the
    /// model's dimension and finite coordinates; learners validate before they score.
    fn loss(&self, point: &[f64]) -> f64;
}

/// An online learner of points, whose current model can be inspected between rounds.
pub trait UnsupervisedLearner: for<'a> OnlineLearner<Input<'a> = &'a [f64]> {
    /// The kind of model the learner holds.
    type Model: Model;

    /// The model the learner would use on the next point, in the user's coordinates; `None`
    /// before it has one.
    fn model(&self) -> Option<&Self::Model>;

    /// The dimension of the points, once the first point has fixed it.
    fn dim(&self) -> Option<usize>;
}
