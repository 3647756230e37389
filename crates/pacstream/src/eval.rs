//! Prequential evaluation: predict, reveal, pay the loss, learn — and account.
//!
//! [`Prequential`] keeps the running totals of a run (rounds, cumulative loss, and the
//! comparator's cumulative loss when one is given) in O(1) memory, so a stream of any length
//! can be evaluated; every round's totals go to a callback and are not kept. Sums use
//! Neumaier's compensated summation, so a cumulative loss over 10⁸ rounds keeps its digits.
//!
//! Regret is the learner's cumulative loss minus the comparator's, both over the rounds where
//! the learner's loss is defined (a warm-up round, whose point was buffered rather than
//! predicted, is charged to neither).
//!
//! ```
//! use pacstream::eval::{self, Prequential};
//! use pacstream::kmeans::{Centres, SequentialKMeansParams};
//!
//! let points = [[0.0, 0.0], [10.0, 10.0], [0.1, 0.0], [9.9, 10.0], [0.0, 0.2]];
//! let mut learner = SequentialKMeansParams::new(2).init_size(2).check()?.build();
//! let comparator = Centres::from_rows(&[[0.0, 0.0], [10.0, 10.0]])?;
//! let mut fixed = eval::FixedModel::new(comparator);
//! let totals = eval::run_against(
//!     &mut learner,
//!     points.iter().map(|p| p.as_slice()),
//!     &mut fixed,
//!     |_step, _totals| {},
//! )?;
//! assert_eq!(totals.round, 5);
//! assert_eq!(totals.scored_rounds, 4); // round 1 had no model to pay with
//! assert!(totals.regret.unwrap() >= 0.0);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::online::{Model, OnlineLearner, Step};

/// A sum of floats with Neumaier's compensation: the error does not grow with the number of
/// terms (for sums of same-sign terms it stays within a few ulps of the exact sum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    /// Adds a term.
    #[inline]
    pub fn add(&mut self, value: f64) {
        let total = self.sum + value;
        // Neumaier: recover the low-order bits lost by whichever operand was smaller.
        if self.sum.abs() >= value.abs() {
            self.compensation += (self.sum - total) + value;
        } else {
            self.compensation += (value - total) + self.sum;
        }
        self.sum = total;
    }

    /// The sum.
    #[inline]
    pub fn value(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// The running totals after a round.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// The round index t.
    pub round: u64,
    /// The loss of this round, `None` if undefined (no model yet).
    pub loss: Option<f64>,
    /// The number of rounds whose loss was defined.
    pub scored_rounds: u64,
    /// The learner's cumulative loss over the scored rounds.
    pub cumulative_loss: f64,
    /// The comparator's cumulative loss over the same rounds, if a comparator is given.
    pub comparator_loss: Option<f64>,
    /// `cumulative_loss − comparator_loss`, if a comparator is given.
    pub regret: Option<f64>,
}

impl Totals {
    /// The average loss per scored round (`None` before the first scored round).
    pub fn mean_loss(&self) -> Option<f64> {
        (self.scored_rounds > 0).then(|| self.cumulative_loss / self.scored_rounds as f64)
    }
}

/// Running totals of a prequential evaluation. Serialisable, so that a checkpointed run
/// resumes its accounting too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prequential {
    rounds: u64,
    scored_rounds: u64,
    cumulative_loss: CompensatedSum,
}

impl Prequential {
    /// Empty totals.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accounts one step and returns the totals after it.
    pub fn record(&mut self, step: &impl Step) -> Totals {
        self.record_with(step, None)
    }

    /// Accounts one step, given the comparator's cumulative loss after the same round (over
    /// the scored rounds only), and returns the totals with the regret.
    pub fn record_with(&mut self, step: &impl Step, comparator_loss: Option<f64>) -> Totals {
        self.rounds = step.round();
        let loss = step.loss();
        if let Some(loss) = loss {
            self.scored_rounds += 1;
            self.cumulative_loss.add(loss);
        }
        let cumulative_loss = self.cumulative_loss.value();
        Totals {
            round: self.rounds,
            loss,
            scored_rounds: self.scored_rounds,
            cumulative_loss,
            comparator_loss,
            regret: comparator_loss.map(|c| cumulative_loss - c),
        }
    }

    /// Accounts rounds `first_round`, `first_round + 1`, ... each scored with its loss in
    /// `losses`, as [`Prequential::record`] of each in turn would (the same bits: the losses
    /// are added in order to the same compensated sum); returns the totals after the last
    /// (`None` without losses). A replay of many rounds whose totals are wanted only at the
    /// end pays one addition per round, not a [`Totals`] per round.
    pub fn record_losses(&mut self, first_round: u64, losses: &[f64]) -> Option<Totals> {
        let &loss = losses.last()?;
        for &loss in losses {
            self.cumulative_loss.add(loss);
        }
        self.scored_rounds += losses.len() as u64;
        self.rounds = first_round + (losses.len() as u64 - 1);
        Some(Totals {
            round: self.rounds,
            loss: Some(loss),
            scored_rounds: self.scored_rounds,
            cumulative_loss: self.cumulative_loss.value(),
            comparator_loss: None,
            regret: None,
        })
    }

    /// The number of rounds accounted.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The learner's cumulative loss so far.
    pub fn cumulative_loss(&self) -> f64 {
        self.cumulative_loss.value()
    }
}

/// What a learner is compared with: anything that can be charged the rounds the learner was
/// charged, and tell its cumulative loss (a fixed model; the best of several experts).
pub trait Comparator<I> {
    /// Charges the comparator for a round the learner paid for.
    fn observe(&mut self, input: I);
    /// The comparator's cumulative loss over the rounds observed.
    fn cumulative_loss(&self) -> f64;
}

/// A fixed model as comparator (for example the k-means solution of the whole stream, as the
/// clustering "chosen in hindsight").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedModel<M> {
    model: M,
    cumulative_loss: CompensatedSum,
}

impl<M: Model> FixedModel<M> {
    /// Wraps a model.
    pub fn new(model: M) -> Self {
        Self {
            model,
            cumulative_loss: CompensatedSum::default(),
        }
    }
}

impl<M: Model> Comparator<&[f64]> for FixedModel<M> {
    fn observe(&mut self, input: &[f64]) {
        self.cumulative_loss.add(self.model.loss(input));
    }

    fn cumulative_loss(&self) -> f64 {
        self.cumulative_loss.value()
    }
}

/// Runs `learner` over `inputs`, handing each step and the totals after it to `on_round`;
/// returns the final totals. Stops at the first error (the rounds before it stay learned).
pub fn run<'a, L, I>(
    learner: &mut L,
    inputs: I,
    mut on_round: impl FnMut(&L::Step, &Totals),
) -> Result<Totals>
where
    L: OnlineLearner,
    I: IntoIterator<Item = L::Input<'a>>,
{
    let mut totals = Prequential::new();
    let mut last = totals.record_with(&NoRound, None);
    for input in inputs {
        let step = learner.learn_one(input)?;
        last = totals.record(&step);
        on_round(&step, &last);
    }
    Ok(last)
}

/// [`run`] with a comparator: it is charged every round whose loss was defined for the
/// learner, and the totals carry the regret.
pub fn run_against<'a, L, C, I>(
    learner: &mut L,
    inputs: I,
    comparator: &mut C,
    mut on_round: impl FnMut(&L::Step, &Totals),
) -> Result<Totals>
where
    L: OnlineLearner,
    C: Comparator<L::Input<'a>>,
    I: IntoIterator<Item = L::Input<'a>>,
{
    let mut totals = Prequential::new();
    let mut last = totals.record_with(&NoRound, Some(0.0));
    for input in inputs {
        let step = learner.learn_one(input)?;
        if step.loss().is_some() {
            comparator.observe(input);
        }
        last = totals.record_with(&step, Some(comparator.cumulative_loss()));
        on_round(&step, &last);
    }
    Ok(last)
}

/// The totals before any round.
struct NoRound;

impl Step for NoRound {
    fn round(&self) -> u64 {
        0
    }
    fn loss(&self) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sum_keeps_small_terms() {
        let mut sum = CompensatedSum::default();
        sum.add(1e16);
        for _ in 0..1000 {
            sum.add(1.0);
        }
        sum.add(-1e16);
        assert_eq!(sum.value(), 1000.0);
        let naive: f64 = std::iter::once(1e16)
            .chain(std::iter::repeat_n(1.0, 1000))
            .chain(std::iter::once(-1e16))
            .sum();
        assert_ne!(naive, 1000.0, "the naive sum loses these digits");
    }

    struct Fixed(u64, Option<f64>);
    impl Step for Fixed {
        fn round(&self) -> u64 {
            self.0
        }
        fn loss(&self) -> Option<f64> {
            self.1
        }
    }

    /// A run of losses accounted at once gives the bits of accounting them one by one:
    /// the totals after the last, and the state the next rounds are added to.
    #[test]
    fn losses_accounted_at_once_are_those_recorded_one_by_one() {
        let mut rng = crate::rng::StreamRng::seed_from(7);
        let losses: Vec<f64> = (0..500)
            .map(|i| rng.next_f64() * 10f64.powi(i % 13 - 6))
            .collect();
        let (mut one_by_one, mut at_once) = (Prequential::new(), Prequential::new());
        one_by_one.record(&Fixed(1, None));
        at_once.record(&Fixed(1, None));
        let mut round = 2;
        for run in losses.chunks(37).chain([&[][..]]) {
            let mut last = None;
            for &loss in run {
                last = Some(one_by_one.record(&Fixed(round, Some(loss))));
                round += 1;
            }
            let first = round - run.len() as u64;
            assert_eq!(at_once.record_losses(first, run), last);
            assert_eq!(at_once, one_by_one);
        }
        assert_eq!(at_once.rounds(), 501);
    }

    #[test]
    fn undefined_losses_are_not_scored() {
        let mut totals = Prequential::new();
        totals.record(&Fixed(1, None));
        let after = totals.record_with(&Fixed(2, Some(2.0)), Some(0.5));
        assert_eq!(after.scored_rounds, 1);
        assert_eq!(after.cumulative_loss, 2.0);
        assert_eq!(after.regret, Some(1.5));
        assert_eq!(after.mean_loss(), Some(2.0));
    }
}
