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
/// It dereferences to the parameters, so every setting can be read back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checked<P>(P);

impl<P> std::ops::Deref for Checked<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0
    }
}

fn check_n_experts(n_experts: usize) -> Result<()> {
    if n_experts == 0 {
        return Err(Error::invalid_parameter("n_experts", "must be >= 1, got 0"));
    }
    Ok(())
}

fn check_loss_bound(loss_bound: Option<f64>, required: bool) -> Result<Option<f64>> {
    match loss_bound {
        Some(b) if !(b.is_finite() && b > 0.0) => Err(Error::invalid_parameter(
            "loss_bound",
            format!("must be finite and > 0, got {b}"),
        )),
        None if required => Err(Error::invalid_parameter(
            "loss_bound",
            "the loss range B is required by this schedule and loss (give B, or use AdaHedge)",
        )),
        other => Ok(other),
    }
}

fn check_prior(prior: &Option<Vec<f64>>, n_experts: usize) -> Result<()> {
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
    }
    Ok(())
}

/// Parameters of deterministic Weighted Majority (binary advice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightedMajorityParams {
    pub(crate) n_experts: usize,
    pub(crate) beta: f64,
}

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
    pub fn check(self) -> Result<Checked<Self>> {
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
    pub fn check(mut self) -> Result<Checked<Self>> {
        check_n_experts(self.n_experts)?;
        if let Some(beta) = self.beta {
            self.rate = LearningRate::beta(beta)?;
        }
        self.rate.check()?;
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

    /// The learning-rate schedule.
    #[must_use]
    pub fn learning_rate(mut self, rate: LearningRate) -> Self {
        self.rate = rate;
        self
    }

    /// The loss range B: every loss lies in [0, B].
    #[must_use]
    pub fn loss_bound(mut self, bound: f64) -> Self {
        self.loss_bound = Some(bound);
        self
    }

    /// Prior weights π (positive; normalised).
    #[must_use]
    pub fn prior(mut self, prior: Vec<f64>) -> Self {
        self.prior = Some(prior);
        self
    }

    /// Also draw one expert from p_t each round (seeded) and report its realised loss.
    #[must_use]
    pub fn sample(mut self, sample: bool) -> Self {
        self.sample = sample;
        self
    }

    /// The seed of the draws.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<Checked<Self>> {
        check_n_experts(self.n_experts)?;
        self.rate.check()?;
        check_loss_bound(self.loss_bound, self.rate != LearningRate::AdaHedge)?;
        check_prior(&self.prior, self.n_experts)?;
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

    /// The loss ℓ(ŷ, y).
    #[must_use]
    pub fn loss(mut self, loss: Loss) -> Self {
        self.loss = loss;
        self
    }

    /// The learning-rate schedule.
    #[must_use]
    pub fn learning_rate(mut self, rate: LearningRate) -> Self {
        self.rate = rate;
        self
    }

    /// The loss range B: the experts' losses lie in [0, B] (with the gradient option, the
    /// linearised losses lie in [−B/2, B/2], B = 2GY).
    #[must_use]
    pub fn loss_bound(mut self, bound: f64) -> Self {
        self.loss_bound = Some(bound);
        self
    }

    /// Prior weights π (positive; normalised).
    #[must_use]
    pub fn prior(mut self, prior: Vec<f64>) -> Self {
        self.prior = Some(prior);
        self
    }

    /// Charge the experts the linearised losses ℓ'(ŷ_t, y_t)·ỹ_{t,i} (opera's default), which
    /// competes with the best convex combination of the experts.
    #[must_use]
    pub fn gradient(mut self, gradient: bool) -> Self {
        self.gradient = gradient;
        self
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<Checked<Self>> {
        check_n_experts(self.n_experts)?;
        self.loss.check()?;
        self.rate.check()?;
        if self.gradient && !self.loss.is_convex() {
            return Err(Error::invalid_parameter(
                "gradient",
                "the gradient option needs a convex loss (square, absolute or pinball)",
            ));
        }
        let required = self.rate != LearningRate::AdaHedge && self.loss != Loss::ZeroOne;
        let loss_bound = check_loss_bound(self.loss_bound, required)?;
        check_prior(&self.prior, self.n_experts)?;
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

    /// `Fixed(η)` (η in units of 1/loss) or `Horizon(T)` (η = min(1, √(ln N / T)) / B).
    #[must_use]
    pub fn learning_rate(mut self, rate: LearningRate) -> Self {
        self.rate = rate;
        self
    }

    /// Also compute, each round, the expected loss Σ_i P(i chosen) ℓ_i exactly (with
    /// [`super::win_probabilities`]: O(N²) per round). Sleeping experts need it anyway.
    #[must_use]
    pub fn expected_loss(mut self, expected_loss: bool) -> Self {
        self.expected_loss = expected_loss;
        self
    }

    /// The seed of the perturbations.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<Checked<Self>> {
        check_n_experts(self.n_experts)?;
        check_loss_bound(self.loss_bound, true)?;
        self.rate.check()?;
        if !matches!(self.rate, LearningRate::Fixed(_) | LearningRate::Horizon(_)) {
            return Err(Error::invalid_parameter(
                "learning_rate",
                "follow the perturbed leader takes a fixed eta or a horizon",
            ));
        }
        Ok(Checked(self))
    }
}
