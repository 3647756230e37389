//! What a round reveals to an aggregator, and the record it returns.

use serde::{Deserialize, Serialize};

use super::params::limits::{MAX_ADVICE, MAX_LOSS};
use crate::error::{Error, Result};
use crate::online::Step;

/// A round of prediction with expert advice: every expert's advice ỹ_{t,i}, the outcome y_t,
/// and optionally which experts are awake (an expert with missing advice is asleep; its
/// advice value is ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdviceRound<'a> {
    /// ỹ_{t,i}, one value per expert.
    pub advice: &'a [f64],
    /// y_t.
    pub outcome: f64,
    /// a_{t,i}; `None` means every expert is awake.
    pub awake: Option<&'a [bool]>,
}

/// A round of the decision-theoretic setting (Hedge): every expert's loss ℓ_{t,i}, and
/// optionally which experts are awake.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossRound<'a> {
    /// ℓ_{t,i}, one value per expert.
    pub losses: &'a [f64],
    /// a_{t,i}; `None` means every expert is awake.
    pub awake: Option<&'a [bool]>,
}

impl<'a> AdviceRound<'a> {
    /// A round with every expert awake.
    pub fn new(advice: &'a [f64], outcome: f64) -> Self {
        Self {
            advice,
            outcome,
            awake: None,
        }
    }

    /// Checks sizes and values: N advice values (finite and within ±[`MAX_ADVICE`] where
    /// awake), an outcome within ±[`MAX_ADVICE`], a mask of N flags with at least one expert
    /// awake.
    pub(crate) fn check(&self, n_experts: usize) -> Result<()> {
        self.check_shape(n_experts)?;
        check_awake_values(self.advice, self.awake, "advice", MAX_ADVICE)
    }

    /// [`AdviceRound::check`] but for the advice values' finiteness (a fused pass checks
    /// that): their magnitude is checked here.
    pub(crate) fn check_shape(&self, n_experts: usize) -> Result<()> {
        check_sizes(self.advice.len(), self.awake, n_experts)?;
        if exceeds(self.advice, MAX_ADVICE) {
            check_awake_values(self.advice, self.awake, "advice", MAX_ADVICE)?;
        }
        if !self.outcome.is_finite() {
            return Err(Error::InconsistentInput(format!(
                "the outcome {} is not finite",
                self.outcome
            )));
        }
        if self.outcome.abs() > MAX_ADVICE {
            return Err(Error::InconsistentInput(format!(
                "the outcome {:e} is too large: outcomes and advice must lie within \
                 ±{MAX_ADVICE:e}, so that losses stay finite",
                self.outcome
            )));
        }
        Ok(())
    }
}

impl<'a> LossRound<'a> {
    /// A round with every expert awake.
    pub fn new(losses: &'a [f64]) -> Self {
        Self {
            losses,
            awake: None,
        }
    }

    pub(crate) fn check(&self, n_experts: usize) -> Result<()> {
        self.check_shape(n_experts)?;
        check_awake_values(self.losses, self.awake, "loss", MAX_LOSS)
    }

    /// [`LossRound::check`] but for the losses' finiteness (a fused pass checks that): their
    /// magnitude is checked here.
    pub(crate) fn check_shape(&self, n_experts: usize) -> Result<()> {
        check_sizes(self.losses.len(), self.awake, n_experts)?;
        if exceeds(self.losses, MAX_LOSS) {
            check_awake_values(self.losses, self.awake, "loss", MAX_LOSS)?;
        }
        Ok(())
    }
}

/// Whether some |v_i| exceeds `limit` (NaN does not: the finiteness checks catch it). A count
/// rather than `any`, so that the loop vectorises (compiled for the CPU's vector width by
/// [`crate::kernels::dispatch`]): a small fraction of a fused round.
fn exceeds(values: &[f64], limit: f64) -> bool {
    struct Exceeds<'a> {
        values: &'a [f64],
        limit: f64,
    }
    impl crate::kernels::Kernel for Exceeds<'_> {
        type Output = bool;
        #[inline(always)]
        fn run(self) -> bool {
            let over: usize = self
                .values
                .iter()
                .map(|&v| usize::from(v.abs() > self.limit))
                .sum();
            over > 0
        }
    }
    crate::kernels::dispatch(Exceeds { values, limit })
}

fn check_sizes(values: usize, awake: Option<&[bool]>, n_experts: usize) -> Result<()> {
    if values != n_experts {
        return Err(Error::DimensionMismatch {
            row: None,
            expected: n_experts,
            found: values,
        });
    }
    if let Some(awake) = awake {
        if awake.len() != n_experts {
            return Err(Error::InconsistentInput(format!(
                "{} awake flags for {n_experts} experts",
                awake.len()
            )));
        }
        if !awake.iter().any(|&a| a) {
            return Err(Error::InconsistentInput(
                "no expert is awake in this round".into(),
            ));
        }
    }
    Ok(())
}

/// The values of the awake experts must be finite and within ±`limit`.
fn check_awake_values(
    values: &[f64],
    awake: Option<&[bool]>,
    what: &str,
    limit: f64,
) -> Result<()> {
    let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
    // One vectorised pass for the usual all-awake, all-fine round; the position only for
    // the error message.
    if awake.is_none()
        && crate::kernels::all_finite_any_length(values)
        && values.iter().all(|v| v.abs() <= limit)
    {
        return Ok(());
    }
    for (i, &value) in values.iter().enumerate() {
        if !is_awake(i) {
            continue;
        }
        if !value.is_finite() {
            return Err(match awake {
                None => Error::NonFinite {
                    row: None,
                    column: i,
                    value,
                },
                Some(_) => Error::InconsistentInput(format!(
                    "the {what} of awake expert {i} is {value}, not a finite number"
                )),
            });
        }
        if value.abs() > limit {
            return Err(Error::InconsistentInput(format!(
                "the {what} of expert {i} is {value:e}, too large: it must lie within \
                 ±{limit:e}, so that cumulative losses stay finite"
            )));
        }
    }
    Ok(())
}

/// Owned storage for an [`AdviceRound`] (tests, examples, buffered input).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdviceRoundBuf {
    /// ỹ_{t,i}.
    pub advice: Vec<f64>,
    /// y_t.
    pub outcome: f64,
    /// a_{t,i}, if some experts may sleep.
    pub awake: Option<Vec<bool>>,
}

impl AdviceRoundBuf {
    /// Borrows the round.
    pub fn as_round(&self) -> AdviceRound<'_> {
        AdviceRound {
            advice: &self.advice,
            outcome: self.outcome,
            awake: self.awake.as_deref(),
        }
    }
}

/// Owned storage for a [`LossRound`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossRoundBuf {
    /// ℓ_{t,i}.
    pub losses: Vec<f64>,
    /// a_{t,i}, if some experts may sleep.
    pub awake: Option<Vec<bool>>,
}

impl LossRoundBuf {
    /// Borrows the round.
    pub fn as_round(&self) -> LossRound<'_> {
        LossRound {
            losses: &self.losses,
            awake: self.awake.as_deref(),
        }
    }
}

/// The record of one round of an expert aggregator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpertStep {
    /// The round index t (1-based).
    pub round: u64,
    /// The learner's prediction ŷ_t: 0/1 for (randomized) weighted majority, the weighted
    /// average of the advice for EWA; `None` for Hedge and FPL, which choose an expert.
    pub prediction: Option<f64>,
    /// The loss the regret bounds are about: WM's mistake, RWM's expected mistake |p_t − y_t|,
    /// Hedge's mixture loss Σ p_i ℓ_i, EWA's ℓ(ŷ_t, y_t), FPL's expected loss Σ P(i) ℓ_i when
    /// it is tracked and its realised loss otherwise.
    pub loss: f64,
    /// The loss of the learner's random draw, for the randomised rules: RWM's realised
    /// mistake, the loss of Hedge's sampled expert, the loss of FPL's chosen expert.
    pub realised_loss: Option<f64>,
    /// The expert drawn (Hedge with sampling) or chosen (FPL).
    pub chosen: Option<usize>,
    /// The learning rate η_t used this round; `None` when it is infinite (AdaHedge's follow
    /// the leader, before any mixability gap).
    pub learning_rate: Option<f64>,
    /// The expert the learner regrets most after this round (the best expert in hindsight).
    pub best_expert: usize,
    /// The regret after this round against that expert.
    pub regret: f64,
}

impl Step for ExpertStep {
    fn round(&self) -> u64 {
        self.round
    }
    fn loss(&self) -> Option<f64> {
        Some(self.loss)
    }
}

#[cfg(feature = "conformance")]
impl<L> crate::conformance::OwnedInput<L> for AdviceRoundBuf
where
    L: for<'a> crate::online::OnlineLearner<Input<'a> = AdviceRound<'a>>,
{
    fn as_input(&self) -> AdviceRound<'_> {
        self.as_round()
    }
}

#[cfg(feature = "conformance")]
impl<L> crate::conformance::OwnedInput<L> for LossRoundBuf
where
    L: for<'a> crate::online::OnlineLearner<Input<'a> = LossRound<'a>>,
{
    fn as_input(&self) -> LossRound<'_> {
        self.as_round()
    }
}
