//! ML-Poly (Gaillard, Stoltz & van Erven 2014, *A second-order bound with excess losses*,
//! COLT): polynomially weighted averages with one learning rate per expert, tuned on line,
//! with no parameter at all (opera's default rule).
//!
//! With r_{t,i} = a_{t,i}(ĉ_t − c_{t,i}) the instantaneous regret against expert i (c the
//! charges: own losses, or linearised losses with the gradient trick; ĉ_t the learner's;
//! 0 for an asleep expert), R_{t,i} = Σ_{s≤t} r_{s,i}, V_{t,i} = Σ_{s≤t} r²_{s,i} and
//! E_t = max_{s≤t, j} r²_{s,j}:
//!
//! p_{t,i} ∝ a_{t,i} η_{t−1,i} (R_{t−1,i})₊,   η_{t,i} = 1 / (E_t + V_{t,i}),
//!
//! uniform over the awake experts while no regret is positive (η_0 = ∞ before any regret).
//! These are the rates opera uses; E_t replaces the known loss range of the paper. The
//! weights are polynomial in the regrets, not exponential: there is no log-space form to keep.
//!
//! **Bound** ([`bounds::ml_poly`]): the potential Φ_t = Σ_i η_{t,i} (R_{t,i})₊² of the paper's
//! analysis (§4, polynomial potentials with multiple learning rates) does not grow by more
//! than Σ_i η_{t−1,i} r²_{t,i} per round — the cross term Σ_i η_{t−1,i}(R_{t−1,i})₊ r_{t,i} is
//! ≤ 0 by the choice of p (and Jensen for a convex loss), and η decreases — so that for every
//! expert k and every sequence
//!
//! R_{T,k} ≤ √( (E_T + V_{T,k}) · S_T ),   S_T = Σ_t Σ_i η_{t−1,i} r²_{t,i}
//!
//! (the first round with a non-zero regret uses η_t in place of the infinite η_{t−1}). The
//! run computes S_T as it goes: the bound is the paper's second-order bound before its last
//! step (S_T ≤ N(1 + ln(1 + T)) for losses in [0, 1]), so it needs no loss range and holds
//! on every sequence. It bounds the regret of ℓ(ŷ_t, y_t) against k on k's awake rounds.
//!
//! ```
//! use pacstream::experts::{AdviceRound, Loss, MlPolyParams};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = MlPolyParams::new(3).loss(Loss::Absolute).check()?.build();
//! for t in 0..200 {
//!     let outcome = (t % 5) as f64;
//!     learner.learn_one(AdviceRound::new(&[outcome + 1.0, outcome - 0.2, 2.0], outcome))?;
//! }
//! assert!(learner.weights()[1] > 0.5);
//! let bound = learner.regret_bound().value().unwrap();
//! assert!(learner.ledger().regret() <= bound);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bounds::{self, Guarantee};
use super::fixed_share::check_common;
use super::loss::Loss;
use super::mixing::{forecaster_learner, forecaster_setters, normalise_awake, regret_guarantee};
use super::oracle::ExpertLedger;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The settings of [`MlPoly`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlPolyParams {
    /// N.
    pub n_experts: usize,
    /// The loss ℓ (convex).
    pub loss: Loss,
    /// Charge the linearised losses (the gradient trick).
    pub gradient: bool,
}

/// Validated [`MlPolyParams`]: what [`MlPolyParams::check`] gives, and the only thing a
/// [`MlPoly`](MlPoly) is built from ([`MlPolyConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type MlPolyConfig = Checked<MlPolyParams>;

impl MlPolyParams {
    /// N experts, the square loss, no gradient trick.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            loss: Loss::Square,
            gradient: false,
        }
    }
}

forecaster_setters!(MlPolyParams => MlPolyConfig { loss, gradient } checked);

impl MlPolyConfig {
    /// The learner, no regret yet.
    pub fn build(&self) -> MlPoly {
        let n = self.n_experts;
        MlPoly {
            params: self.clone(),
            regrets: vec![0.0; n],
            squared: vec![0.0; n],
            largest_square: 0.0,
            potential_growth: 0.0,
            ledger: ExpertLedger::new(n),
        }
    }
}

/// ML-Poly; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct MlPoly {
    params: MlPolyConfig,
    /// R_{t,i}.
    regrets: Vec<f64>,
    /// V_{t,i}.
    squared: Vec<f64>,
    /// E_t.
    largest_square: f64,
    /// S_t.
    potential_growth: f64,
    ledger: ExpertLedger,
}

impl MlPoly {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if self.regrets.len() != n
            || self.squared.len() != n
            || self.ledger.expert_losses().len() != n
            || !finite(&self.regrets)
            || !finite(&self.squared)
            || self
                .squared
                .iter()
                .any(|&v| v < 0.0 || v > 0.0 && self.largest_square == 0.0)
            || !(self.largest_square >= 0.0 && self.largest_square.is_finite())
            || !(self.potential_growth >= 0.0 && self.potential_growth.is_finite())
        {
            return Err(Error::InvalidSnapshot("ML-Poly: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(MlPoly);

impl MlPoly {
    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// R_{t,i}: the (linearised, with the gradient trick) regret against each expert.
    pub fn regrets(&self) -> &[f64] {
        &self.regrets
    }

    /// η_{t,i} = 1/(E_t + V_{t,i}); infinite before any regret.
    pub fn learning_rates(&self) -> Vec<f64> {
        self.squared
            .iter()
            .map(|&v| 1.0 / (self.largest_square + v))
            .collect()
    }

    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
        let mut weights: Vec<f64> = if self.largest_square > 0.0 {
            self.regrets
                .iter()
                .zip(&self.squared)
                .map(|(&r, &v)| r.max(0.0) / (self.largest_square + v))
                .collect()
        } else {
            vec![0.0; self.regrets.len()]
        };
        normalise_awake(&mut weights, awake);
        weights
    }

    /// The bound on the regret against `expert` (on its awake rounds).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        let value = bounds::ml_poly(
            self.largest_square + self.squared[expert],
            self.potential_growth,
        );
        regret_guarantee(
            value,
            expert,
            "ML-Poly: √((E_T + V_T,k) S_T), S_T = Σ_t Σ_i η_t−1,i r²_t,i (the \
                      polynomial potential of Gaillard, Stoltz & van Erven 2014, §4)",
            "the squared regrets of this run are too large for the bound to be represented",
        )
    }
}

impl MlPoly {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let n = self.regrets.len();
        let instant: Vec<f64> = played
            .charges
            .iter()
            .map(|&c| played.learner_charge - c)
            .collect();
        let largest = instant
            .iter()
            .map(|r| r * r)
            .fold(self.largest_square, f64::max);
        if !largest.is_finite() {
            return Err(Error::InconsistentInput(
                "the squared regrets of this round are too large to be represented".into(),
            ));
        }
        // S grows by Σ_i η_{t−1,i} r²_{t,i} (η_t on the first round with a regret).
        let growth: f64 = (0..n)
            .map(|i| {
                let r2 = instant[i] * instant[i];
                if r2 == 0.0 {
                    0.0
                } else if self.largest_square > 0.0 {
                    r2 / (self.largest_square + self.squared[i])
                } else {
                    r2 / (largest + r2)
                }
            })
            .sum();
        let mut regrets = self.regrets.clone();
        let mut squared = self.squared.clone();
        for i in 0..n {
            regrets[i] += instant[i];
            squared[i] += instant[i] * instant[i];
        }
        if !(regrets.iter().all(|r| r.is_finite())
            && squared.iter().all(|v| v.is_finite())
            && (self.potential_growth + growth).is_finite())
        {
            return Err(Error::InconsistentInput(
                "the cumulative regrets would overflow".into(),
            ));
        }
        self.regrets = regrets;
        self.squared = squared;
        self.largest_square = largest;
        self.potential_growth += growth;
        Ok(played.record(&mut self.ledger, round.awake, None))
    }
}

forecaster_learner!(MlPoly, MlPolyParams, plays_awake_weights);
