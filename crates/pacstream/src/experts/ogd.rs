//! Online gradient descent over the simplex (Zinkevich 2003, *Online convex programming and
//! generalized infinitesimal gradient ascent*, ICML): a step against the linearised loss,
//! then the Euclidean projection back onto the simplex, with the step η/√t.
//!
//! Round t: predict ŷ_t = Σ_i p_{t,i} ỹ_{t,i} (over the awake experts, renormalised); the
//! gradient of p ↦ ℓ(Σ_i p_i ỹ_{t,i}, y_t) at p_t is g_{t,i} = ℓ'(ŷ_t, y_t) ỹ_{t,i} (the
//! gradient trick: OGD always works on these linearised losses); then
//!
//! p_{t+1} = Π_Δ(p_t − η_t g_t),   η_t = η / √t,
//!
//! Π_Δ the Euclidean projection onto the simplex (sort-based, Duchi, Shalev-Shwartz, Singer
//! & Chandra 2008). Adding a constant to every g_{t,i} moves p_t − η_t g_t along the normal
//! of the simplex's hyperplane and does not change the projection, so the gradient is
//! centred (its mean removed) before the step; the bound below uses the centred gradient.
//!
//! **Sleeping experts** (the specialists' reduction of Freund, Schapire, Singer & Warmuth
//! 1997): an asleep expert is treated as advising ŷ_t, so its gradient is ℓ'(ŷ_t, y_t) ŷ_t and
//! the learner's prediction is still Σ_i p_{t,i} ỹ_{t,i} with that advice; its weight is kept
//! but not used for the prediction. The regret against expert k on its awake rounds is then
//! at most the linearised regret against the vertex e_k, and the bound below holds with T
//! the total number of rounds.
//!
//! **Bound** ([`bounds::online_gradient_descent`]; Zinkevich 2003, Theorem 1, in the form of
//! Hazan 2016, *Introduction to Online Convex Optimization*, Theorem 3.1, before its last
//! step): for every sequence and every q in the simplex (diameter D = √2),
//!
//! Σ_t ℓ(ŷ_t, y_t) − Σ_t ℓ(q·ỹ_t, y_t) ≤ D² / (2 η_T) + ½ Σ_t η_t ‖g_t − ḡ_t 1‖²
//!                                      = √T / η + ½ Σ_t η_t ‖g_t − ḡ_t 1‖²,
//!
//! ḡ_t the mean of g_t. The run keeps the sum, so the bound needs no loss range; with a
//! known gradient bound G and η = D/G it is Hazan's (3/2) G D √T. It bounds the regret
//! against every expert (a vertex) and every convex combination of them.
//!
//! ```
//! use pacstream::experts::{AdviceRound, Loss, OnlineGradientDescentParams};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = OnlineGradientDescentParams::new(3, 0.5)
//!     .loss(Loss::Absolute)
//!     .check()?
//!     .build();
//! for t in 0..300 {
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
use super::mixing::{forecaster_learner, forecaster_setters, regret_guarantee};
use super::oracle::{ExpertLedger, project_on_simplex};
use super::params::limits::MAX_ETA;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The settings of [`OnlineGradientDescent`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OnlineGradientDescentParams {
    /// N.
    pub n_experts: usize,
    /// The base step η > 0: round t steps η/√t.
    pub eta: f64,
    /// The loss ℓ (convex: square, absolute or pinball).
    pub loss: Loss,
}

/// Validated [`OnlineGradientDescentParams`]: what [`OnlineGradientDescentParams::check`] gives, and the only thing a
/// [`OnlineGradientDescent`](OnlineGradientDescent) is built from ([`OnlineGradientDescentConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type OnlineGradientDescentConfig = Checked<OnlineGradientDescentParams>;

impl OnlineGradientDescentParams {
    /// N experts, base step η, the square loss.
    pub fn new(n_experts: usize, eta: f64) -> Self {
        Self {
            n_experts,
            eta,
            loss: Loss::Square,
        }
    }
}

forecaster_setters!(OnlineGradientDescentParams => OnlineGradientDescentConfig { loss } checked with check_eta(eta));

/// η ∈ (0, [`MAX_ETA`]].
pub(crate) fn check_eta(eta: f64) -> Result<()> {
    if eta > 0.0 && eta <= MAX_ETA {
        Ok(())
    } else {
        Err(Error::invalid_parameter(
            "eta",
            format!("must be in (0, {MAX_ETA:e}], got {eta}"),
        ))
    }
}

impl OnlineGradientDescentConfig {
    /// The learner, at the centre of the simplex.
    pub fn build(&self) -> OnlineGradientDescent {
        let n = self.n_experts;
        OnlineGradientDescent {
            params: self.clone(),
            weights: vec![1.0 / n as f64; n],
            step_sum: 0.0,
            ledger: ExpertLedger::new(n),
        }
    }
}

/// Online gradient descent over the simplex; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct OnlineGradientDescent {
    params: OnlineGradientDescentConfig,
    /// p_t, on the simplex (asleep experts included).
    weights: Vec<f64>,
    /// Σ_t η_t ‖g_t − ḡ_t 1‖².
    step_sum: f64,
    ledger: ExpertLedger,
}

/// A weight vector read from a snapshot lies on the simplex.
pub(crate) fn on_simplex(weights: &[f64], n: usize) -> bool {
    weights.len() == n
        && weights.iter().all(|&w| (0.0..=1.0).contains(&w))
        && (weights.iter().sum::<f64>() - 1.0).abs() <= 1e-9
}

impl OnlineGradientDescent {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let consistent = on_simplex(&self.weights, n)
            && self.ledger.expert_losses().len() == n
            && self.step_sum >= 0.0
            && self.step_sum.is_finite();
        if !consistent {
            return Err(Error::InvalidSnapshot(
                "online gradient descent: inconsistent".into(),
            ));
        }
        Ok(())
    }
}

validated_snapshot!(OnlineGradientDescent);

/// The mean of `values` and Σ (v − mean)².
pub(crate) fn centred(values: &[f64]) -> (f64, f64) {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let squares = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, squares)
}

impl OnlineGradientDescent {
    /// The weights of the next round (every expert awake): p_{t+1}, on the simplex.
    pub fn weights(&self) -> Vec<f64> {
        self.weights.clone()
    }

    /// The bound on the regret against `expert` (on its awake rounds); it holds against
    /// every convex combination of the experts as well.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        let value = bounds::online_gradient_descent(
            self.ledger.rounds(),
            self.params.n_experts,
            self.params.eta,
            self.step_sum,
        );
        regret_guarantee(
            value,
            expert,
            "online gradient descent, η_t = η/√t: √T/η + ½ Σ_t η_t ‖g_t − ḡ_t‖² \
                      (Zinkevich 2003, Theorem 1; Hazan 2016, Theorem 3.1)",
            "the gradients of this run are too large for the bound to be represented",
        )
    }
}

impl OnlineGradientDescent {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let t = self.ledger.rounds() + 1;
        let step = self.params.eta / (t as f64).sqrt();
        let (mean, squares) = centred(&played.charges);
        let mut next: Vec<f64> = self
            .weights
            .iter()
            .zip(&played.charges)
            .map(|(&p, &g)| p - step * (g - mean))
            .collect();
        let step_sum = self.step_sum + step * squares;
        if !(next.iter().all(|v| v.is_finite()) && step_sum.is_finite()) {
            return Err(Error::InconsistentInput(
                "the gradient step of this round is too large to be represented".into(),
            ));
        }
        project_on_simplex(&mut next);
        self.weights = next;
        self.step_sum = step_sum;
        Ok(played.record(&mut self.ledger, round.awake, Some(step)))
    }
}

forecaster_learner!(
    OnlineGradientDescent,
    OnlineGradientDescentParams,
    plays_linearised_weights
);
