//! Follow the regularised leader over the simplex, on the linearised losses (Hazan 2016,
//! *Introduction to Online Convex Optimization*, §5.3; Shalev-Shwartz 2012, *Online Learning
//! and Online Convex Optimization*, §2.3).
//!
//! Round t: predict ŷ_t = Σ_i p_{t,i} ỹ_{t,i} (over the awake experts, renormalised); charge
//! the gradient g_{t,i} = ℓ'(ŷ_t, y_t) ỹ_{t,i} (the gradient trick: FTRL always works on the
//! linearised losses); then, with G_t = Σ_{s≤t} g_s,
//!
//! p_{t+1} = argmin_{p ∈ Δ} ( ⟨G_t, p⟩ + R(p)/η ),
//!
//! for one of two regularisers ([`Regulariser`]):
//! - **quadratic**, R(p) = ½‖p‖²: p_{t+1} = Π_Δ(−η G_t), the Euclidean projection onto the
//!   simplex (lazy projection, or dual averaging);
//! - **entropic**, R(p) = Σ_i p_i ln p_i: p_{t+1,i} ∝ e^{−η G_{t,i}}, exponential weights on
//!   the linearised losses (EWA with the gradient trick and a fixed η), kept in log space.
//!
//! Adding a constant to every g_{t,i} does not move p_{t+1} (⟨1, p⟩ = 1 on the simplex), so
//! each round's gradient is centred before it is summed (its mean for the quadratic
//! regulariser, the middle of its range for the entropic one): G stays small and the bounds
//! below use the centred gradients. Sleeping experts follow the specialists' reduction of
//! [`OnlineGradientDescent`](super::OnlineGradientDescent): an asleep expert advises ŷ_t.
//!
//! **Bounds** ([`bounds::ftrl_quadratic`], [`bounds::ftrl_entropic`]), for every sequence,
//! against expert k on its awake rounds (and against every convex combination q):
//! - quadratic: regret ≤ (1 − 1/N) / (2η) + η Σ_t ‖g_t − ḡ_t 1‖²₂ (Shalev-Shwartz 2012,
//!   Theorem 2.11 with Lemma 2.10: R/η is 1/η-strongly convex for ‖·‖₂, and
//!   max_k R(e_k) − min_Δ R = ½ − 1/(2N));
//! - entropic: regret ≤ ln N / η + (η/8) Σ_t (max_i g_{t,i} − min_i g_{t,i})² (exponential
//!   weights, Hoeffding's lemma round by round: Cesa-Bianchi & Lugosi 2006, *Prediction,
//!   Learning, and Games*, Theorem 2.2 with each round's range in place of 1).
//!
//! What opera's FTRL also takes and this one leaves: an arbitrary regulariser and convex set
//! (opera hands them to a generic solver); here the set is the simplex.
//!
//! ```
//! use pacstream::experts::{AdviceRound, FtrlParams, Loss, Regulariser};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = FtrlParams::new(3, 0.05)
//!     .regulariser(Regulariser::Quadratic)
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
use super::mixing::{forecaster_learner, forecaster_setters, normalise_awake, regret_guarantee};
use super::ogd::{centred, check_eta};
use super::oracle::{ExpertLedger, project_on_simplex};
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The regulariser of [`Ftrl`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Regulariser {
    /// ½‖p‖²: the Euclidean projection of −η G onto the simplex.
    Quadratic,
    /// Σ p_i ln p_i: exponential weights on the linearised losses.
    Entropic,
}

impl Regulariser {
    /// `quadratic` or `entropic`.
    pub fn name(self) -> &'static str {
        match self {
            Regulariser::Quadratic => "quadratic",
            Regulariser::Entropic => "entropic",
        }
    }
}

/// The settings of [`Ftrl`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FtrlParams {
    /// N.
    pub n_experts: usize,
    /// The fixed rate η > 0 (the regulariser is R/η).
    pub eta: f64,
    /// The regulariser R.
    pub regulariser: Regulariser,
    /// The loss ℓ (convex: square, absolute or pinball).
    pub loss: Loss,
}

/// Validated [`FtrlParams`]: what [`FtrlParams::check`] gives, and the only thing a
/// [`Ftrl`](Ftrl) is built from ([`FtrlConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type FtrlConfig = Checked<FtrlParams>;

impl FtrlParams {
    /// N experts, rate η; the quadratic regulariser and the square loss.
    pub fn new(n_experts: usize, eta: f64) -> Self {
        Self {
            n_experts,
            eta,
            regulariser: Regulariser::Quadratic,
            loss: Loss::Square,
        }
    }

    /// Sets the regulariser.
    pub fn regulariser(mut self, regulariser: Regulariser) -> Self {
        self.regulariser = regulariser;
        self
    }
}

forecaster_setters!(FtrlParams => FtrlConfig { loss } checked with check_eta(eta));

impl FtrlConfig {
    /// The learner: no gradient yet, uniform weights.
    pub fn build(&self) -> Ftrl {
        let n = self.n_experts;
        Ftrl {
            params: self.clone(),
            gradient_sums: vec![0.0; n],
            square_sum: 0.0,
            ledger: ExpertLedger::new(n),
        }
    }
}

/// Follow the regularised leader; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Ftrl {
    params: FtrlConfig,
    /// G_t, the sum of the centred gradients.
    gradient_sums: Vec<f64>,
    /// Σ_t ‖g_t − ḡ_t‖²₂ (quadratic) or Σ_t range(g_t)² (entropic).
    square_sum: f64,
    ledger: ExpertLedger,
}

impl Ftrl {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let consistent = self.gradient_sums.len() == n
            && self.gradient_sums.iter().all(|g| g.is_finite())
            && self.ledger.expert_losses().len() == n
            && self.square_sum >= 0.0
            && self.square_sum.is_finite();
        if !consistent {
            return Err(Error::InvalidSnapshot("FTRL: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(Ftrl);

impl Ftrl {
    /// The weights of the next round (every expert awake): the regularised leader.
    pub fn weights(&self) -> Vec<f64> {
        leader(
            &self.gradient_sums,
            self.params.eta,
            self.params.regulariser,
        )
    }

    /// The bound on the regret against `expert` (on its awake rounds); it holds against
    /// every convex combination of the experts as well.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        let (n, eta) = (self.params.n_experts, self.params.eta);
        let (value, theorem) = match self.params.regulariser {
            Regulariser::Quadratic => (
                bounds::ftrl_quadratic(n, eta, self.square_sum),
                "FTRL, quadratic regulariser: (1 − 1/N)/(2η) + η Σ_t ‖g_t − ḡ_t‖² \
                 (Shalev-Shwartz 2012, Theorem 2.11)",
            ),
            Regulariser::Entropic => (
                bounds::ftrl_entropic(n, eta, self.square_sum),
                "FTRL, entropic regulariser: ln N/η + (η/8) Σ_t range(g_t)² \
                 (Cesa-Bianchi & Lugosi 2006, Theorem 2.2)",
            ),
        };
        regret_guarantee(
            value,
            expert,
            theorem,
            "the gradients of this run are too large for the bound to be represented",
        )
    }
}

/// argmin_{p ∈ Δ} ⟨G, p⟩ + R(p)/η.
fn leader(gradient_sums: &[f64], eta: f64, regulariser: Regulariser) -> Vec<f64> {
    match regulariser {
        Regulariser::Quadratic => {
            let mut weights: Vec<f64> = gradient_sums.iter().map(|g| -eta * g).collect();
            project_on_simplex(&mut weights);
            weights
        }
        Regulariser::Entropic => {
            // Log space: the largest exponent is 0, so no weight overflows and the leader's
            // is 1 before normalising.
            let least = gradient_sums.iter().copied().fold(f64::INFINITY, f64::min);
            let mut weights: Vec<f64> = gradient_sums
                .iter()
                .map(|g| (-eta * (g - least)).exp())
                .collect();
            normalise_awake(&mut weights, None);
            weights
        }
    }
}

impl Ftrl {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let (centre, square) = match self.params.regulariser {
            Regulariser::Quadratic => centred(&played.charges),
            Regulariser::Entropic => {
                let (least, most) = played
                    .charges
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &g| {
                        (lo.min(g), hi.max(g))
                    });
                ((least + most) / 2.0, (most - least) * (most - least))
            }
        };
        let sums: Vec<f64> = self
            .gradient_sums
            .iter()
            .zip(&played.charges)
            .map(|(&sum, &g)| sum + (g - centre))
            .collect();
        let square_sum = self.square_sum + square;
        if !(sums.iter().all(|s| (s * self.params.eta).is_finite()) && square_sum.is_finite()) {
            return Err(Error::InconsistentInput(
                "the summed gradients would overflow".into(),
            ));
        }
        self.gradient_sums = sums;
        self.square_sum = square_sum;
        Ok(played.record(&mut self.ledger, round.awake, Some(self.params.eta)))
    }
}

forecaster_learner!(Ftrl, FtrlParams, plays_linearised_weights);
