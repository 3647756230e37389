//! ML-Prod (Gaillard, Stoltz & van Erven 2014, *A second-order bound with excess losses*,
//! COLT): the Prod algorithm with one learning rate per expert, each tuned on line from that
//! expert's own squared regrets.
//!
//! With r_{t,i} = ĉ_t − c_{t,i} the instantaneous regret against expert i (c the charges:
//! own losses, or linearised losses with the gradient trick; ĉ_t the learner's; 0 for an
//! asleep expert) and V_{t,i} = Σ_{s≤t} r²_{s,i}, the rule keeps Prod weights w_{t,i} and mixes
//!
//! p_{t,i} ∝ a_{t,i} η_{t−1,i} w_{t−1,i}
//!
//! over the awake experts. The weights live in log space through G_{t,i} = ln w_{t,i} / η_{t,i}
//! (ln w = η G, and p ∝ exp(ln η + η G) is normalised by log-sum-exp), which turns the update
//! into a sum. Two forms, chosen by whether the range B of a round's charges is given:
//!
//! - **With B (`loss_bound`): the paper's algorithm.** w_0 = 1/N,
//!   η_{t,i} = min{1/(2B), √(ln N / (B² + V_{t,i}))} (the paper's tuning for losses in
//!   [0, 1], rescaled to a range B) and
//!   w_{t,i} = (w_{t−1,i}(1 + η_{t−1,i} r_{t,i}))^{η_{t,i}/η_{t−1,i}}, that is
//!   G_{t,i} = G_{t−1,i} + ln(1 + η_{t−1,i} r_{t,i}) / η_{t−1,i}.
//! - **Without B: R opera's `MLprod`.** w_0 = 1, E_{t,i} = max_{s≤t} |r_{s,i}|,
//!   η_{t,i} = min{1/(2E_{t,i}), √(ln N / (1 + V_{t,i}))} and the factor taken at the new
//!   rate, G_{t,i} = G_{t−1,i} + ln(1 + η_{t,i} r_{t,i}) / η_{t,i} (so 1 + η r ≥ ½ whatever the
//!   range). No theorem covers this form (see below), so it reports no bound.
//!
//! **Bound** ([`bounds::ml_prod`]; the paper's theorem for ML-Prod with learning rates that
//! are non-increasing, at most ½ on losses in [0, 1]): against every expert k,
//!
//! R_{T,k} ≤ ln N / η_{0,k} + Σ_t η_{t−1,k} r²_{t,k} + ln(1 + D_T / e) / η_{T,k},
//! D_T = Σ_t Σ_i (η_{t−1,i}/η_{t,i} − 1).
//!
//! The argument: ln w_{T,k}/η_{T,k} = ln w_{0,k}/η_{0,k} + Σ_t ln(1 + η_{t−1,k} r_{t,k})/η_{t−1,k}
//! ≥ −ln N/η_{0,k} + Σ_t (r_{t,k} − η_{t−1,k} r²_{t,k}) (as ln(1 + x) ≥ x − x² for x ≥ −½);
//! the choice of p makes Σ_i η_{t−1,i} w_{t−1,i} r_{t,i} ≤ 0 (= 0 with the gradient trick,
//! ≤ 0 by Jensen for a convex loss), so Σ_i w_{t−1,i}(1 + η_{t−1,i} r_{t,i}) ≤ Σ_i w_{t−1,i}, and
//! x^α ≤ x + (1/α − 1)/e for α ≤ 1 gives Σ_i w_{T,i} ≤ 1 + D_T / e. The learner keeps every
//! quantity, so this is the theorem's bound before its last simplification, for exactly the
//! run. Its hypothesis, η_{t−1,k} r_{t,k} ≥ −½ in every round, holds when the charges of a
//! round lie in a range of width B; a round that breaks it is learned as if η r were −½ and
//! voids the bound (the run reports none, with the reason). It bounds the regret of
//! ℓ(ŷ_t, y_t) against k on k's awake rounds (with the gradient trick, the linearised regret,
//! which is larger).
//!
//! ```
//! use pacstream::experts::{AdviceRound, Loss, MlProdParams};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = MlProdParams::new(3).loss(Loss::Absolute).loss_bound(6.0).check()?.build();
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

use super::bounds::{self, Bounded, Guarantee};
use super::fixed_share::check_common;
use super::loss::Loss;
use super::mixing::{
    finite_of_len, forecaster_learner, forecaster_setters, instant_regrets,
    ranged_forecaster_params, regret_guarantee, softmax_awake,
};
use super::oracle::ExpertLedger;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

ranged_forecaster_params! {
    /// The settings of [`MlProd`].
    MlProdParams => MlProdConfig,
}

/// Validated [`MlProdParams`]: what [`MlProdParams::check`] gives, and the only thing a
/// [`MlProd`](MlProd) is built from ([`MlProdConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type MlProdConfig = Checked<MlProdParams>;

/// ln N.
fn ln_n(n_experts: usize) -> f64 {
    (n_experts as f64).ln()
}

/// The paper's rate for a range B: min{1/(2B), √(ln N / (B² + V))}, the root of B² + V
/// taken as hypot(B, √V) so that a range up to 10²⁰⁰ does not overflow.
fn paper_rate(n_experts: usize, range: f64, squared: f64) -> f64 {
    (0.5 / range).min(ln_n(n_experts).sqrt() / range.hypot(squared.sqrt()))
}

/// opera's rate: min{1/(2E), √(ln N / (1 + V))} (1/(2E) = ∞ while E = 0).
fn opera_rate(n_experts: usize, largest: f64, squared: f64) -> f64 {
    let cap = if largest > 0.0 {
        0.5 / largest
    } else {
        f64::INFINITY
    };
    cap.min(ln_n(n_experts).sqrt() / 1f64.hypot(squared.sqrt()))
}

impl MlProdConfig {
    /// The learner, every expert at the same weight.
    pub fn build(&self) -> MlProd {
        let n = self.n_experts;
        let (rate, scaled) = match self.loss_bound {
            Some(range) => {
                let rate = paper_rate(n, range, 0.0);
                // ln w_0 = −ln N; with N = 1 the rate is 0 and the one expert is copied.
                let scaled = if rate > 0.0 { -ln_n(n) / rate } else { 0.0 };
                (rate, scaled)
            }
            None => (opera_rate(n, 0.0, 0.0), 0.0),
        };
        MlProd {
            params: self.clone(),
            state: ProdState {
                scaled_log_weights: vec![scaled; n],
                rates: vec![rate; n],
                squared: vec![0.0; n],
                largest: vec![0.0; n],
                second_order: vec![0.0; n],
                rate_drift: 0.0,
            },
            out_of_range_rounds: 0,
            ledger: ExpertLedger::new(n),
        }
    }
}

/// ML-Prod; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct MlProd {
    params: MlProdConfig,
    /// Written in a snapshot as fields of the learner's own.
    #[serde(flatten)]
    state: ProdState,
    /// Rounds where some η_{t−1,i} r_{t,i} < −½ (the paper's form only).
    out_of_range_rounds: u64,
    ledger: ExpertLedger,
}

/// What ML-Prod learns, expert by expert, and the drift of its rates: what a round computes
/// anew from the last, checks, and only then commits whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ProdState {
    /// G_{t,i} = ln w_{t,i} / η_{t,i}.
    scaled_log_weights: Vec<f64>,
    /// η_{t,i}.
    rates: Vec<f64>,
    /// V_{t,i}.
    squared: Vec<f64>,
    /// E_{t,i} = max_{s≤t} |r_{s,i}|.
    largest: Vec<f64>,
    /// Σ_t η_{t−1,i} r²_{t,i}.
    second_order: Vec<f64>,
    /// D_t = Σ_s Σ_i (η_{s−1,i}/η_{s,i} − 1).
    rate_drift: f64,
}

impl MlProd {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let finite = |v: &[f64]| finite_of_len(v, n);
        let non_negative = |v: &[f64]| v.iter().all(|&x| x >= 0.0);
        let state = &self.state;
        if !finite(&state.scaled_log_weights)
            || !finite(&state.rates)
            || !finite(&state.squared)
            || !finite(&state.largest)
            || !finite(&state.second_order)
            || !non_negative(&state.rates)
            || !non_negative(&state.squared)
            || !non_negative(&state.largest)
            || !non_negative(&state.second_order)
            || !(state.rate_drift >= 0.0 && state.rate_drift.is_finite())
            || self.ledger.expert_losses().len() != n
        {
            return Err(Error::InvalidSnapshot("ML-Prod: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(MlProd);

impl MlProd {
    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// η_{t,i}: each expert's learning rate for the next round.
    pub fn learning_rates(&self) -> &[f64] {
        &self.state.rates
    }

    /// Rounds in which some η_{t−1,i} r_{t,i} fell below −½ (a charge outside the range B).
    pub fn out_of_range_rounds(&self) -> u64 {
        self.out_of_range_rounds
    }

    /// ln(η_i w_i) = ln η_i + η_i G_i; the rates all equal (uniform weights) when they are 0.
    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
        let log_weights: Vec<f64> = self
            .state
            .rates
            .iter()
            .zip(&self.state.scaled_log_weights)
            .map(|(&eta, &g)| if eta > 0.0 { eta.ln() + eta * g } else { 0.0 })
            .collect();
        softmax_awake(&log_weights, awake)
    }

    /// The bound on the regret against `expert` (on its awake rounds).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        let n = self.params.n_experts;
        assert!(expert < n, "no expert {expert}");
        let Some(range) = self.params.loss_bound else {
            return Guarantee::none(
                Bounded::Regret,
                "ML-Prod without a loss range runs opera's rates, which no theorem covers; \
                 give the range B of the losses (--loss-bound) for the paper's rates and bound",
            );
        };
        if self.out_of_range_rounds > 0 {
            return Guarantee::none(
                Bounded::Regret,
                "in some rounds a regret fell below −1/(2η) (a loss outside the range B the \
                 rates assume): ML-Prod's theorem does not cover the run",
            );
        }
        let value = if n == 1 {
            0.0
        } else {
            bounds::ml_prod(
                ln_n(n),
                paper_rate(n, range, 0.0),
                self.state.second_order[expert],
                self.state.rates[expert],
                self.state.rate_drift,
            )
        };
        regret_guarantee(
            value,
            expert,
            "ML-Prod: ln N/η_0,k + Σ_t η_t−1,k r²_t,k + ln(1 + D_T/e)/η_T,k, \
                      D_T = Σ_t Σ_i (η_t−1,i/η_t,i − 1) (Gaillard, Stoltz & van Erven 2014, \
                      ML-Prod with non-increasing rates; the run's own terms, proved step by \
                      step in docs/guarantees.md)",
            "the squared regrets of this run are too large for the bound to be represented",
        )
    }
}

impl MlProd {
    /// The state after a round of instantaneous regrets `regrets`, computed before anything
    /// is committed, and whether some η_{t−1,i} r_{t,i} fell below −½.
    fn update(&self, regrets: &[f64]) -> (ProdState, bool) {
        let n = self.params.n_experts;
        let mut next = self.state.clone();
        let mut out_of_range = false;
        if n == 1 {
            // The one expert is copied: r = 0 every round, nothing to learn.
            return (next, out_of_range);
        }
        for (i, &r) in regrets.iter().enumerate() {
            let before = self.state.rates[i];
            next.squared[i] += r * r;
            next.largest[i] = next.largest[i].max(r.abs());
            match self.params.loss_bound {
                Some(range) => {
                    let mut x = before * r;
                    if x < -0.5 {
                        out_of_range = true;
                        x = -0.5;
                    }
                    next.scaled_log_weights[i] += x.ln_1p() / before;
                    next.second_order[i] += before * r * r;
                    let after = paper_rate(n, range, next.squared[i]);
                    next.rate_drift += before / after - 1.0;
                    next.rates[i] = after;
                }
                None => {
                    let after = opera_rate(n, next.largest[i], next.squared[i]);
                    next.scaled_log_weights[i] += (after * r).ln_1p() / after;
                    next.rates[i] = after;
                }
            }
        }
        (next, out_of_range)
    }
}

impl MlProd {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let regrets = instant_regrets(&played);
        let (next, out_of_range) = self.update(&regrets);
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if !(finite(&next.scaled_log_weights)
            && finite(&next.squared)
            && finite(&next.second_order)
            && next.rates.iter().all(|&eta| eta.is_finite() && eta >= 0.0)
            && next.rate_drift.is_finite())
        {
            return Err(Error::InconsistentInput(
                "the squared regrets of this round are too large to be represented".into(),
            ));
        }
        self.state = next;
        if out_of_range {
            self.out_of_range_rounds += 1;
        }
        Ok(played.record(&mut self.ledger, round.awake, None))
    }
}

forecaster_learner!(MlProd, MlProdParams, plays_awake_weights);
