//! Parameters of the aggregation rules and their validation.
//!
//! The loss range B is required wherever η depends on it (horizon, anytime and doubling
//! schedules) and wherever a bound is reported from it (every schedule except AdaHedge), for
//! every loss except zero-one (B = 1): a silently wrong B ruins the tuned rates (square losses
//! of index forecasts run to 10⁴–10⁵), so a missing B is an error rather than a default.

use serde::{Deserialize, Serialize};

use super::loss::Loss;
use super::schedule::LearningRate;
use crate::error::{Error, Result};

/// Parameters that passed their `check()`: the only thing a learner can be built from.
///
/// Every expert rule names its own as `XConfig` (`HedgeConfig = Checked<HedgeParams>`, as
/// `KMeansConfig` and `PacoConfig` are named elsewhere); the names are aliases of this one
/// generic type so that the rules share one validation path: one `Deserialize` that checks
/// a snapshot's parameters again and refuses any whose derived values contradict them, where
/// distinct types would each repeat it. It serialises as the parameters it holds.
///
/// It dereferences to the parameters, so every setting can be read back. Read from a
/// snapshot, the parameters are checked again: a snapshot cannot smuggle in a setting that
/// `check()` refuses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checked<P>(P);

/// The parameters of a rule, which `check()` validates.
pub trait CheckParams: Sized {
    /// [`WeightedMajorityParams::check`] and its siblings.
    fn check_params(self) -> Result<Checked<Self>>;
}

impl<'de, P> Deserialize<'de> for Checked<P>
where
    P: Deserialize<'de> + CheckParams + Clone + PartialEq,
{
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let raw = P::deserialize(deserializer)?;
        let checked = raw
            .clone()
            .check_params()
            .map_err(<D::Error as serde::de::Error>::custom)?;
        // `check()` is idempotent on valid parameters: a difference means the snapshot's
        // derived values contradict the ones they derive from.
        if checked.0 != raw {
            return Err(serde::de::Error::custom(
                "invalid snapshot: the rule's parameters contradict themselves",
            ));
        }
        Ok(checked)
    }
}

impl<P> Checked<P> {
    /// Wraps parameters that the caller's `check_params` has just validated.
    pub(crate) fn validated(params: P) -> Self {
        Checked(params)
    }
}

impl<P> std::ops::Deref for Checked<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0
    }
}

/// The documented bounds of the aggregators' settings and inputs, checked before anything
/// is allocated (the settings by `check()` and on restoring a snapshot, the values by every
/// `learn_one`). They keep every cumulative loss, and η times it, finite over any stream a
/// u64 can count, so that no weight or regret can become NaN. The command line takes the
/// same bounds.
pub mod limits {
    /// The largest number of experts N.
    pub const MAX_EXPERTS: usize = 1_000_000;
    /// The largest fixed learning rate η (in units of 1/loss).
    pub const MAX_ETA: f64 = 1e50;
    /// The largest horizon T (beyond 2⁵³, T is not exact in the rate's formula).
    pub const MAX_HORIZON: u64 = 1 << 53;
    /// The loss range B must lie in [`MIN_LOSS_BOUND`, `MAX_LOSS_BOUND`]: the tuned rates
    /// are ∝ 1/B, and stay below [`MAX_ETA`] when B does not go below this.
    pub const MIN_LOSS_BOUND: f64 = 1e-40;
    /// See [`MIN_LOSS_BOUND`].
    pub const MAX_LOSS_BOUND: f64 = 1e200;
    /// The largest absolute value of an advice or an outcome: a square loss stays below
    /// 4·10²⁰⁰, and a cumulative loss over 2⁶⁴ rounds below 10²²⁰.
    pub const MAX_ADVICE: f64 = 1e100;
    /// The largest absolute value of a loss given directly ([`super::super::LossRound`]):
    /// above the square loss of any advice and outcome within ±[`MAX_ADVICE`] (4·10²⁰⁰), and
    /// a cumulative loss over 2⁶⁴ rounds, times [`MAX_ETA`], stays below 10²⁷¹.
    pub const MAX_LOSS: f64 = 1e201;
}

use limits::{MAX_ETA, MAX_EXPERTS, MAX_HORIZON, MAX_LOSS_BOUND, MIN_LOSS_BOUND};

fn check_n_experts(n_experts: usize) -> Result<()> {
    Error::check_count("n_experts", n_experts, 1, MAX_EXPERTS)
}

/// Checks a schedule's own values and their limits (η ≤ [`limits::MAX_ETA`], T ≤
/// [`limits::MAX_HORIZON`]), as every rule's `check()` does.
///
/// ```
/// use pacstream::experts::{LearningRate, check_rate};
/// assert!(check_rate(LearningRate::Fixed(0.5)).is_ok());
/// assert!(check_rate(LearningRate::Fixed(-1.0)).is_err());
/// assert!(check_rate(LearningRate::Fixed(1e308)).is_err());
/// ```
pub fn check_rate(rate: LearningRate) -> Result<()> {
    rate.check()?;
    match rate {
        LearningRate::Fixed(eta) if eta > MAX_ETA => Err(Error::invalid_parameter(
            "eta",
            format!("must be at most {MAX_ETA:e}, got {eta:e}"),
        )),
        LearningRate::Horizon(horizon) if horizon > MAX_HORIZON => Err(Error::invalid_parameter(
            "horizon",
            format!("must be at most {MAX_HORIZON}, got {horizon}"),
        )),
        _ => Ok(()),
    }
}

fn check_loss_bound(loss_bound: Option<f64>, required: bool) -> Result<Option<f64>> {
    match loss_bound {
        Some(b) if !(b.is_finite() && (MIN_LOSS_BOUND..=MAX_LOSS_BOUND).contains(&b)) => {
            Err(Error::invalid_parameter(
                "loss_bound",
                format!("must be in [{MIN_LOSS_BOUND:e}, {MAX_LOSS_BOUND:e}], got {b}"),
            ))
        }
        None if required => Err(Error::invalid_parameter(
            "loss_bound",
            "the loss range B is required by this schedule and loss (give B, or use AdaHedge)",
        )),
        other => Ok(other),
    }
}

/// Prior weights, if given, are one per expert, finite and positive, with a finite sum.
pub(crate) fn check_prior(prior: Option<&[f64]>, n_experts: usize) -> Result<()> {
    if let Some(prior) = prior {
        if prior.len() != n_experts {
            return Err(Error::invalid_parameter(
                "prior",
                format!("{} prior weights for {n_experts} experts", prior.len()),
            ));
        }
        if let Some(bad) = prior.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
            return Err(Error::invalid_parameter(
                "prior",
                format!("prior weights must be finite and > 0, got {bad}"),
            ));
        }
        // They are normalised by their sum, which must not overflow (only ratios matter).
        if !prior.iter().sum::<f64>().is_finite() {
            return Err(Error::invalid_parameter(
                "prior",
                "the prior weights' sum overflows: scale them down (only their ratios matter)",
            ));
        }
    }
    Ok(())
}

/// Parameters of deterministic Weighted Majority (binary advice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightedMajorityParams {
    pub(crate) n_experts: usize,
    pub(crate) beta: f64,
}

/// Validated [`WeightedMajorityParams`]: what [`WeightedMajorityParams::check`] gives, and the only thing a
/// [`WeightedMajority`](super::WeightedMajority) is built from ([`WeightedMajorityConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type WeightedMajorityConfig = Checked<WeightedMajorityParams>;

impl WeightedMajorityParams {
    /// `n_experts` experts, β = ½.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            beta: 0.5,
        }
    }

    /// The factor β ∈ (0, 1) applied to the weight of a wrong expert when the majority errs.
    #[must_use]
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<WeightedMajorityConfig> {
        check_n_experts(self.n_experts)?;
        LearningRate::beta(self.beta)?;
        Ok(Checked(self))
    }
}

/// Parameters of Randomized Weighted Majority (binary advice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RandomizedWeightedMajorityParams {
    pub(crate) n_experts: usize,
    pub(crate) beta: Option<f64>,
    pub(crate) rate: LearningRate,
    pub(crate) seed: u64,
}

/// Validated [`RandomizedWeightedMajorityParams`]: what [`RandomizedWeightedMajorityParams::check`] gives, and the only thing a
/// [`RandomizedWeightedMajority`](super::RandomizedWeightedMajority) is built from ([`RandomizedWeightedMajorityConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type RandomizedWeightedMajorityConfig = Checked<RandomizedWeightedMajorityParams>;

impl RandomizedWeightedMajorityParams {
    /// `n_experts` experts, the doubling trick (no horizon needed), seed 0.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            beta: None,
            rate: LearningRate::Doubling,
            seed: 0,
        }
    }

    /// A fixed β ∈ (0, 1).
    #[must_use]
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = Some(beta);
        self
    }

    /// The schedule: `Horizon(T)` (β = 1 − √(ln N / T), floored at ½) or `Doubling` (β_m per
    /// epoch); a fixed β is set with [`Self::beta`] (`Fixed(η)` means β = e^{−η}).
    #[must_use]
    pub fn learning_rate(mut self, rate: LearningRate) -> Self {
        self.beta = None;
        self.rate = rate;
        self
    }

    /// The seed of the draws.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters.
    pub fn check(mut self) -> Result<RandomizedWeightedMajorityConfig> {
        check_n_experts(self.n_experts)?;
        if let Some(beta) = self.beta {
            self.rate = LearningRate::beta(beta)?;
        }
        check_rate(self.rate)?;
        if matches!(self.rate, LearningRate::Anytime | LearningRate::AdaHedge) {
            return Err(Error::invalid_parameter(
                "learning_rate",
                "randomized weighted majority takes a fixed beta, a horizon or the doubling trick",
            ));
        }
        Ok(Checked(self))
    }
}

/// Parameters of Hedge (decision-theoretic: the learner plays the mixture of the experts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HedgeParams {
    pub(crate) n_experts: usize,
    pub(crate) rate: LearningRate,
    pub(crate) loss_bound: Option<f64>,
    pub(crate) prior: Option<Vec<f64>>,
    pub(crate) sample: bool,
    pub(crate) seed: u64,
}

/// Validated [`HedgeParams`]: what [`HedgeParams::check`] gives, and the only thing a
/// [`Hedge`](super::Hedge) is built from ([`HedgeConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type HedgeConfig = Checked<HedgeParams>;

impl HedgeParams {
    /// `n_experts` experts, AdaHedge, uniform prior, no sampling.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            rate: LearningRate::AdaHedge,
            loss_bound: None,
            prior: None,
            sample: false,
            seed: 0,
        }
    }

    setters! {
        /// The learning-rate schedule.
        learning_rate => rate: LearningRate;
        /// The loss range B: every loss lies in [0, B].
        loss_bound: Option<f64>;
        /// Prior weights π (positive; normalised).
        prior: Option<Vec<f64>>;
        /// Also draw one expert from p_t each round (seeded) and report its realised loss.
        sample: bool;
        /// The seed of the draws.
        seed: u64;
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<HedgeConfig> {
        check_n_experts(self.n_experts)?;
        check_rate(self.rate)?;
        check_loss_bound(self.loss_bound, self.rate != LearningRate::AdaHedge)?;
        check_prior(self.prior.as_deref(), self.n_experts)?;
        Ok(Checked(self))
    }
}

/// Parameters of the exponentially weighted average forecaster (real-valued advice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EwaParams {
    pub(crate) n_experts: usize,
    pub(crate) loss: Loss,
    pub(crate) rate: LearningRate,
    pub(crate) loss_bound: Option<f64>,
    pub(crate) prior: Option<Vec<f64>>,
    pub(crate) gradient: bool,
}

/// Validated [`EwaParams`]: what [`EwaParams::check`] gives, and the only thing a
/// [`Ewa`](super::Ewa) is built from ([`EwaConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type EwaConfig = Checked<EwaParams>;

impl EwaParams {
    /// `n_experts` experts, square loss, AdaHedge, uniform prior, no gradient trick.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            loss: Loss::Square,
            rate: LearningRate::AdaHedge,
            loss_bound: None,
            prior: None,
            gradient: false,
        }
    }

    setters! {
        /// The loss ℓ(ŷ, y).
        loss: Loss;
        /// The learning-rate schedule.
        learning_rate => rate: LearningRate;
        /// The loss range B: the experts' losses lie in [0, B] (with the gradient option, the
        /// linearised losses lie in [−B/2, B/2], B = 2GY).
        loss_bound: Option<f64>;
        /// Prior weights π (positive; normalised).
        prior: Option<Vec<f64>>;
        /// Charge the experts the linearised losses ℓ'(ŷ_t, y_t)·ỹ_{t,i} (opera's default), which
        /// competes with the best convex combination of the experts.
        gradient: bool;
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<EwaConfig> {
        check_n_experts(self.n_experts)?;
        self.loss.check()?;
        check_rate(self.rate)?;
        if self.gradient && !self.loss.is_convex() {
            return Err(Error::invalid_parameter(
                "gradient",
                "the gradient option needs a convex loss (square, absolute or pinball)",
            ));
        }
        let required = self.rate != LearningRate::AdaHedge && self.loss != Loss::ZeroOne;
        let loss_bound = check_loss_bound(self.loss_bound, required)?;
        check_prior(self.prior.as_deref(), self.n_experts)?;
        Ok(Checked(Self {
            loss_bound: loss_bound.or((self.loss == Loss::ZeroOne).then_some(1.0)),
            ..self
        }))
    }
}

/// Parameters of follow the perturbed leader (exponential perturbations).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FplParams {
    pub(crate) n_experts: usize,
    pub(crate) rate: LearningRate,
    pub(crate) loss_bound: Option<f64>,
    pub(crate) expected_loss: bool,
    pub(crate) seed: u64,
}

/// Validated [`FplParams`]: what [`FplParams::check`] gives, and the only thing a
/// [`FollowThePerturbedLeader`](super::FollowThePerturbedLeader) is built from ([`FplConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type FplConfig = Checked<FplParams>;

impl FplParams {
    /// `n_experts` experts with losses in [0, `loss_bound`], η = 1/B, realised losses only.
    pub fn new(n_experts: usize, loss_bound: f64) -> Self {
        Self {
            n_experts,
            rate: LearningRate::Fixed(1.0 / loss_bound),
            loss_bound: Some(loss_bound),
            expected_loss: false,
            seed: 0,
        }
    }

    setters! {
        /// `Fixed(η)` (η in units of 1/loss) or `Horizon(T)` (η = min(1, √(ln N / T)) / B).
        learning_rate => rate: LearningRate;
        /// Also compute, each round, the expected loss Σ_i P(i chosen) ℓ_i exactly (with
        /// [`super::win_probabilities`]: O(N²) per round). Sleeping experts need it anyway.
        expected_loss: bool;
        /// The seed of the perturbations.
        seed: u64;
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<FplConfig> {
        check_n_experts(self.n_experts)?;
        check_loss_bound(self.loss_bound, true)?;
        check_rate(self.rate)?;
        if !matches!(self.rate, LearningRate::Fixed(_) | LearningRate::Horizon(_)) {
            return Err(Error::invalid_parameter(
                "learning_rate",
                "follow the perturbed leader takes a fixed eta or a horizon",
            ));
        }
        Ok(Checked(self))
    }
}

impl CheckParams for WeightedMajorityParams {
    fn check_params(self) -> Result<Checked<Self>> {
        self.check()
    }
}

impl CheckParams for RandomizedWeightedMajorityParams {
    fn check_params(self) -> Result<Checked<Self>> {
        self.check()
    }
}

impl CheckParams for HedgeParams {
    fn check_params(self) -> Result<Checked<Self>> {
        self.check()
    }
}

impl CheckParams for EwaParams {
    fn check_params(self) -> Result<Checked<Self>> {
        self.check()
    }
}

impl CheckParams for FplParams {
    fn check_params(self) -> Result<Checked<Self>> {
        self.check()
    }
}
