//! Fixed share (Herbster & Warmuth 1998): exponential weights that give back a share α of
//! the weight to every expert each round, so that the learner can follow the best expert
//! *of each period* (a sequence of experts with m switches), not only the best one overall.
//!
//! Round t: predict ŷ_t = Σ_i p_{t,i} ỹ_{t,i} with p_t ∝ a_t · w_t over the awake experts;
//! charge each expert c_{t,i} (its loss ℓ(ỹ_{t,i}, y_t), or with the gradient trick the
//! linearised loss ℓ'(ŷ_t, y_t)·ỹ_{t,i}; an asleep expert the learner's own charge); then
//!
//! v_{t+1,i} ∝ w_{t,i} e^{−η c_{t,i}} (normalised),   w_{t+1,i} = α/N + (1 − α) v_{t+1,i}.
//!
//! The weights live in log space: ln w_{t+1,i} = logaddexp(ln(α/N), ln(1 − α) + ln v_{t+1,i}),
//! so a weight whose linear value would underflow keeps its value and recovers. With α = 0
//! this is EWA with a fixed rate.
//!
//! **Bound** ([`bounds::fixed_share`]; Cesa-Bianchi & Lugosi 2006, *Prediction, Learning,
//! and Games*, Theorem 5.2, rescaled to charges in a range of width B): against every
//! sequence of experts with m switches over T rounds,
//!
//! regret ≤ ((m + 1) ln N + m ln(1/α) + (T − m − 1) ln(1/(1 − α))) / η + η B² T / 8,
//!
//! which for m = 0 (one expert) is the bound [`FixedShare::regret_bound_against`] reports.
//! It needs a fixed η and B; a round whose charges spread over more than B voids it (the
//! run reports no bound, with the reason).
//!
//! ```
//! use pacstream::experts::{AdviceRound, FixedShareParams, Loss};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = FixedShareParams::new(2, 0.5, 0.05).loss_bound(1.0).check()?.build();
//! // Expert 0 is right for 50 rounds, then expert 1: fixed share follows the switch.
//! for t in 0..100 {
//!     let outcome = if t < 50 { 0.0 } else { 1.0 };
//!     learner.learn_one(AdviceRound::new(&[0.0, 1.0], outcome))?;
//! }
//! assert!(learner.weights()[1] > 0.9);
//! let bound = learner.regret_bound().value().unwrap();
//! assert!(learner.ledger().regret() <= bound);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bounds::{self, Bounded, Guarantee, OUT_OF_RANGE};
use super::loss::Loss;
use super::mixing::{
    Played, forecaster_learner, forecaster_setters, normalise_awake, regret_guarantee,
};
use super::oracle::ExpertLedger;
use super::params::limits::{MAX_ETA, MAX_EXPERTS, MAX_LOSS_BOUND, MIN_LOSS_BOUND};
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The settings of [`FixedShare`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedShareParams {
    /// N.
    pub n_experts: usize,
    /// The fixed learning rate η > 0.
    pub eta: f64,
    /// The share α ∈ [0, 1) given back to every expert each round.
    pub alpha: f64,
    /// The loss ℓ (convex: square, absolute or pinball).
    pub loss: Loss,
    /// The range B of a round's charges, for the bound.
    pub loss_bound: Option<f64>,
    /// Charge the linearised losses (the gradient trick).
    pub gradient: bool,
}

/// Validated [`FixedShareParams`]: what [`FixedShareParams::check`] gives, and the only thing a
/// [`FixedShare`](FixedShare) is built from ([`FixedShareConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type FixedShareConfig = Checked<FixedShareParams>;

impl FixedShareParams {
    /// N experts, rate η, share α; the square loss, no gradient trick, no loss range.
    pub fn new(n_experts: usize, eta: f64, alpha: f64) -> Self {
        Self {
            n_experts,
            eta,
            alpha,
            loss: Loss::Square,
            loss_bound: None,
            gradient: false,
        }
    }
}

forecaster_setters!(FixedShareParams => FixedShareConfig {
    loss,
    gradient,
    loss_bound
});

impl CheckParams for FixedShareParams {
    fn check_params(self) -> Result<Checked<Self>> {
        check_common(self.n_experts, self.loss, self.loss_bound)?;
        if !(self.eta > 0.0 && self.eta <= MAX_ETA) {
            return Err(Error::invalid_parameter(
                "eta",
                format!("must be in (0, {MAX_ETA:e}], got {}", self.eta),
            ));
        }
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(Error::invalid_parameter(
                "alpha",
                format!("the share must be in [0, 1), got {}", self.alpha),
            ));
        }
        Ok(Checked::validated(self))
    }
}

/// The checks every forecasting rule shares: N, a convex loss, a loss range if any.
pub(crate) fn check_common(n_experts: usize, loss: Loss, loss_bound: Option<f64>) -> Result<()> {
    if n_experts == 0 || n_experts > MAX_EXPERTS {
        return Err(Error::invalid_parameter(
            "n_experts",
            format!("must be in [1, {MAX_EXPERTS}], got {n_experts}"),
        ));
    }
    loss.check()?;
    if !loss.is_convex() {
        return Err(Error::invalid_parameter(
            "loss",
            "these rules average real-valued advice: take a convex loss (square, absolute, \
             pinball); for binary advice use the absolute loss",
        ));
    }
    if let Some(b) = loss_bound
        && !(b.is_finite() && (MIN_LOSS_BOUND..=MAX_LOSS_BOUND).contains(&b))
    {
        return Err(Error::invalid_parameter(
            "loss_bound",
            format!("must be in [{MIN_LOSS_BOUND:e}, {MAX_LOSS_BOUND:e}], got {b}"),
        ));
    }
    Ok(())
}

impl FixedShareConfig {
    /// The learner, every expert at weight 1/N.
    pub fn build(&self) -> FixedShare {
        let n = self.n_experts;
        FixedShare {
            params: self.clone(),
            log_weights: vec![-(n as f64).ln(); n],
            ledger: ExpertLedger::new(n),
            out_of_range_rounds: 0,
        }
    }
}

/// Fixed share; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct FixedShare {
    params: FixedShareConfig,
    /// ln w_{t,i}, normalised (log-sum-exp 0).
    log_weights: Vec<f64>,
    ledger: ExpertLedger,
    out_of_range_rounds: u64,
}

/// A snapshot as read, checked before it becomes a learner.
impl FixedShare {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        if self.log_weights.len() != n
            || self.ledger.expert_losses().len() != n
            || !self.log_weights.iter().all(|l| l.is_finite())
        {
            return Err(Error::InvalidSnapshot("fixed share: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(FixedShare);

impl FixedShare {
    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// Rounds whose charges spread over more than B.
    pub fn out_of_range_rounds(&self) -> u64 {
        self.out_of_range_rounds
    }

    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
        let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
        let top = (0..self.log_weights.len())
            .filter(|&i| is_awake(i))
            .map(|i| self.log_weights[i])
            .fold(f64::NEG_INFINITY, f64::max);
        let mut weights: Vec<f64> = self.log_weights.iter().map(|&l| (l - top).exp()).collect();
        normalise_awake(&mut weights, awake);
        weights
    }

    /// The bound on the regret against `expert` (m = 0 switches).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        self.regret_bound_shifting(expert, 0)
    }

    /// The bound on the regret against any sequence of experts with `shifts` switches
    /// (compare with [`ShiftingOracle`](super::ShiftingOracle)); `expert` only labels it.
    pub fn regret_bound_shifting(&self, expert: usize, shifts: u64) -> Guarantee {
        let Some(range) = self.params.loss_bound else {
            return Guarantee::none(
                Bounded::Regret,
                "fixed share's bound needs the range B of a round's losses (--loss-bound)",
            );
        };
        if self.out_of_range_rounds > 0 {
            return Guarantee::none(Bounded::Regret, OUT_OF_RANGE);
        }
        let value = bounds::fixed_share(
            self.ledger.rounds(),
            self.params.n_experts,
            self.params.eta,
            self.params.alpha,
            range,
            shifts,
        );
        regret_guarantee(
            value,
            expert,
            "fixed share: ((m+1) ln N + m ln(1/α) + (T−m−1) ln(1/(1−α)))/η + η B² T/8 \
                      (Cesa-Bianchi & Lugosi 2006, Theorem 5.2)",
            "with α = 0 fixed share cannot switch: no bound against a switching sequence",
        )
    }

    fn commit(&mut self, played: &Played, awake: Option<&[bool]>) -> ExpertStep {
        let (eta, alpha) = (self.params.eta, self.params.alpha);
        let n = self.log_weights.len();
        // ln v ∝ ln w − η c, normalised by log-sum-exp.
        let mut log_v: Vec<f64> = self
            .log_weights
            .iter()
            .zip(&played.charges)
            .map(|(&l, &c)| l - eta * c)
            .collect();
        let top = log_v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = log_v.iter().map(|&l| (l - top).exp()).sum();
        let norm = top + total.ln();
        log_v.iter_mut().for_each(|l| *l -= norm);
        if alpha > 0.0 {
            let share = (alpha / n as f64).ln();
            let keep = (1.0 - alpha).ln();
            for l in &mut log_v {
                let kept = keep + *l;
                let (hi, lo) = if kept > share {
                    (kept, share)
                } else {
                    (share, kept)
                };
                *l = hi + (lo - hi).exp().ln_1p();
            }
        }
        self.log_weights = log_v;
        if let Some(range) = self.params.loss_bound
            && played.charge_range > range
        {
            self.out_of_range_rounds += 1;
        }
        played.record(&mut self.ledger, awake, Some(eta))
    }
}

impl FixedShare {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        Ok(self.commit(&played, round.awake))
    }
}

forecaster_learner!(FixedShare, FixedShareParams, plays_awake_weights);
