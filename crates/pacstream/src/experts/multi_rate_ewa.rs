//! ML-EWA: exponential weights with one learning rate per expert, tuned on line — R opera's
//! `MLewa`, the exponential-weights sibling of ML-Prod and ML-Poly in Gaillard, Stoltz & van
//! Erven 2014 (*A second-order bound with excess losses*, COLT).
//!
//! With r_{t,i} = ĉ_t − c_{t,i} the instantaneous regret against expert i (c the charges: own
//! losses, or linearised losses with the gradient trick; ĉ_t the learner's; 0 for an asleep
//! expert), R_{t,i} = Σ_{s≤t} r_{s,i} and V_{t,i} = Σ_{s≤t} r²_{s,i}:
//!
//! p_{t+1,i} ∝ a_{t+1,i} exp(η_{t,i} R_{t,i}),   η_{t,i} = √(ln N / V_{t,i}),
//!
//! over the awake experts (exponent 0 while V_{t,i} = 0, where R_{t,i} = 0 too: the expert
//! keeps its initial weight). These are opera's rates. The weights live in log space: the
//! exponents η R are normalised by log-sum-exp, so a weight whose linear value underflows
//! still recovers.
//!
//! **No bound.** The paper proves its second-order bounds for Prod and polynomial potentials
//! with multiple learning rates (ML-Prod, ML-Poly); exponential weights with a different
//! rate per expert have no potential that the choice of p keeps from growing, and no theorem
//! covers this rule with these rates, so it reports no bound (and says why). Its regret
//! against each expert and each oracle is measured like every rule's.
//!
//! ```
//! use pacstream::experts::{AdviceRound, Loss, MlEwaParams};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = MlEwaParams::new(3).loss(Loss::Absolute).check()?.build();
//! for t in 0..200 {
//!     let outcome = (t % 5) as f64;
//!     learner.learn_one(AdviceRound::new(&[outcome + 1.0, outcome - 0.2, 2.0], outcome))?;
//! }
//! assert!(learner.weights()[1] > 0.5);
//! assert!(learner.regret_bound().value().is_none());
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bounds::{Bounded, Guarantee};
use super::fixed_share::check_common;
use super::loss::Loss;
use super::mixing::{
    finite_of_len, forecaster_learner, forecaster_setters, instant_regrets, softmax_awake,
};
use super::oracle::ExpertLedger;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The settings of [`MlEwa`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlEwaParams {
    /// N.
    pub n_experts: usize,
    /// The loss ℓ (convex).
    pub loss: Loss,
    /// Charge the linearised losses (the gradient trick).
    pub gradient: bool,
}

/// Validated [`MlEwaParams`]: what [`MlEwaParams::check`] gives, and the only thing a
/// [`MlEwa`](MlEwa) is built from ([`MlEwaConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type MlEwaConfig = Checked<MlEwaParams>;

impl MlEwaParams {
    /// N experts, the square loss, no gradient trick.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            loss: Loss::Square,
            gradient: false,
        }
    }
}

forecaster_setters!(MlEwaParams => MlEwaConfig { loss, gradient } checked);

impl MlEwaConfig {
    /// The learner, no regret yet.
    pub fn build(&self) -> MlEwa {
        let n = self.n_experts;
        MlEwa {
            params: self.clone(),
            regrets: vec![0.0; n],
            squared: vec![0.0; n],
            ledger: ExpertLedger::new(n),
        }
    }
}

/// ML-EWA; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct MlEwa {
    params: MlEwaConfig,
    /// R_{t,i}.
    regrets: Vec<f64>,
    /// V_{t,i}.
    squared: Vec<f64>,
    ledger: ExpertLedger,
}

impl MlEwa {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let finite = |v: &[f64]| finite_of_len(v, n);
        if !finite(&self.regrets)
            || !finite(&self.squared)
            || self.squared.iter().any(|&v| v < 0.0)
            || self.ledger.expert_losses().len() != n
        {
            return Err(Error::InvalidSnapshot("ML-EWA: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(MlEwa);

impl MlEwa {
    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// R_{t,i}: the (linearised, with the gradient trick) regret against each expert.
    pub fn regrets(&self) -> &[f64] {
        &self.regrets
    }

    /// η_{t,i} = √(ln N / V_{t,i}); infinite while V_{t,i} = 0.
    pub fn learning_rates(&self) -> Vec<f64> {
        let ln_n = (self.params.n_experts as f64).ln();
        self.squared.iter().map(|&v| (ln_n / v).sqrt()).collect()
    }

    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
        let ln_n = (self.params.n_experts as f64).ln();
        let exponents: Vec<f64> = self
            .regrets
            .iter()
            .zip(&self.squared)
            // √(ln N) · (R/√V): |R/√V| ≤ √t, where ln N / V alone could overflow.
            .map(|(&r, &v)| {
                if v > 0.0 {
                    ln_n.sqrt() * (r / v.sqrt())
                } else {
                    0.0
                }
            })
            .collect();
        softmax_awake(&exponents, awake)
    }

    /// No theorem covers ML-EWA's rates: always [`Guarantee::NoBound`], with the reason.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        Guarantee::none(
            Bounded::Regret,
            "no theorem covers exponential weights with one rate per expert (ML-EWA): \
             Gaillard, Stoltz & van Erven 2014 prove their bound for ML-Prod and ML-Poly",
        )
    }
}

impl MlEwa {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let instant = instant_regrets(&played);
        let regrets: Vec<f64> = self
            .regrets
            .iter()
            .zip(&instant)
            .map(|(a, r)| a + r)
            .collect();
        let squared: Vec<f64> = self
            .squared
            .iter()
            .zip(&instant)
            .map(|(v, r)| v + r * r)
            .collect();
        if !(regrets.iter().all(|r| r.is_finite()) && squared.iter().all(|v| v.is_finite())) {
            return Err(Error::InconsistentInput(
                "the cumulative regrets would overflow".into(),
            ));
        }
        self.regrets = regrets;
        self.squared = squared;
        Ok(played.record(&mut self.ledger, round.awake, None))
    }
}

forecaster_learner!(MlEwa, MlEwaParams, plays_awake_weights);
