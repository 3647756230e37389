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
        self.check_outcome()
    }

    /// The number of advice values, the mask and the outcome, not the advice values (a pass
    /// that goes over them anyway checks them: [`Ewa`](super::Ewa)'s losses).
    pub(crate) fn check_sizes_and_outcome(&self, n_experts: usize) -> Result<()> {
        check_sizes(self.advice.len(), self.awake, n_experts)?;
        self.check_outcome()
    }

    fn check_outcome(&self) -> Result<()> {
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
        let (low, high) = value_range(self.losses);
        if low < -MAX_LOSS || high > MAX_LOSS {
            check_awake_values(self.losses, self.awake, "loss", MAX_LOSS)?;
        }
        Ok(())
    }

    /// The number of losses and the mask alone (a fused pass that tracks the losses' range
    /// checks their finiteness and magnitude: [`super::core::Core::play`]).
    pub(crate) fn check_sizes(&self, n_experts: usize) -> Result<()> {
        check_sizes(self.losses.len(), self.awake, n_experts)
    }
}

/// (min_i v_i, max_i v_i) over the values that are not NaN, (+∞, −∞) if none: one
/// vectorised pass (`v < low` and `v > high` are false for NaN, so a NaN never moves them).
/// Exact whatever the order of the comparisons, so it needs no fixed lanes.
fn value_range(values: &[f64]) -> (f64, f64) {
    use crate::kernels::{QUAD, Quad, QuadKernel};
    struct Range<'a>(&'a [f64]);
    impl QuadKernel for Range<'_> {
        type Output = (f64, f64);
        #[inline(always)]
        fn run<Q: Quad>(self, q: Q) -> (f64, f64) {
            // `min(v, low)` is `v < low ? v : low`: a NaN v keeps `low`.
            let (mut low, mut high) = (q.splat(f64::INFINITY), q.splat(f64::NEG_INFINITY));
            let mut chunks = self.0.chunks_exact(QUAD);
            for chunk in &mut chunks {
                let v = q.load(chunk.try_into().expect("invariant: chunks_exact(QUAD)"));
                low = q.min(v, low);
                high = q.max(v, high);
            }
            let (low, high) = (q.to_array(low), q.to_array(high));
            let (mut least, mut largest) = (f64::INFINITY, f64::NEG_INFINITY);
            for &v in low.iter().chain(chunks.remainder()) {
                least = if v < least { v } else { least };
            }
            for &v in high.iter().chain(chunks.remainder()) {
                largest = if v > largest { v } else { largest };
            }
            (least, largest)
        }
    }
    if values.len() >= 64 {
        crate::kernels::dispatch_quad(Range(values))
    } else {
        // Short slices: a plain loop, cheaper than the dispatch.
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for &v in values {
            low = if v < low { v } else { low };
            high = if v > high { v } else { high };
        }
        (low, high)
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
    // Short slices inline: the dispatch would cost more than the loop.
    if values.len() >= 64 {
        crate::kernels::dispatch(Exceeds { values, limit })
    } else {
        crate::kernels::Kernel::run(Exceeds { values, limit })
    }
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
