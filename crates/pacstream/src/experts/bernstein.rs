//! BOA, Bernstein online aggregation (Wintenberger 2017, *Optimal learning with Bernstein
//! online aggregation*, Machine Learning 106): exponential weights of a second-order
//! regularised regret, with one adaptive learning rate per expert: R opera's `BOA` by
//! default, the paper's adaptive BOA and its bound when the range of the losses is given.
//!
//! With r_{t,i} = ĉ_t − c_{t,i} the instantaneous regret against expert i (c the charges: own
//! losses, or linearised losses with the gradient trick — the paper's setting; ĉ_t the
//! learner's; 0 for an asleep expert) and V_{t,i} = Σ_{s≤t} r²_{s,i}, opera's rates and
//! regularised regret (the default form) are
//!
//! η_{t,i} = 1 / √(2.2 V_{t,i}),   R̃_{t,i} = Σ_{s≤t} (r_{s,i} − η_{s,i} r²_{s,i}),
//!
//! (each round's second-order term taken at the rate that already counts that round) and the
//! weights of round t + 1 are
//!
//! p_{t+1,i} ∝ η_{t,i} exp(η_{t,i} R̃_{t,i})
//!
//! over the awake experts with V_{t,i} > 0, which share the mass their number gives them; an
//! awake expert with V_{t,i} = 0 (never a regret yet) keeps its initial weight 1/N_awake. The
//! second-order term η r² is what separates BOA from exponential weights of the regret: it
//! penalises the experts whose regret varies, Bernstein's inequality in place of Hoeffding's.
//! The exponents ln η + η R̃ are normalised by log-sum-exp.
//!
//! **Two forms, chosen by whether the range B of a round's charges is given** (as for
//! [`MlProd`](super::MlProd)):
//!
//! - **With B (`loss_bound`): the paper's adaptive BOA** (its multiple-learning-rates
//!   version, with the range E = B known). η_{t,i} = min{1/(2B), √(ln N / V_{t,i})}
//!   (1/(2B) while V_{t,i} = 0), the second-order term of each round taken at the rate
//!   *before* the round, R̃_{t,i} = Σ_{s≤t} (r_{s,i} − η_{s−1,i} r²_{s,i}), and
//!   p_{t+1,i} ∝ η_{t,i} exp(η_{t,i} R̃_{t,i}) over the awake experts, every one of them
//!   from the first round (a uniform prior π_i = 1/N). It reports a bound (below).
//! - **Without B: R opera's `BOA`**, as above: no cap, 2.2 in place of ln N, the
//!   second-order term at the new rate. No theorem covers these rates, so this form
//!   reports no bound (and says why).
//!
//! **Bound with B** ([`bounds::boa`]): against every expert k, on k's awake rounds,
//!
//! R_{T,k} ≤ Σ_t η_{t−1,k} r²_{t,k} + (ln N + ln(1 + D_T / e)) / η_{T,k},
//! D_T = (1/N) Σ_t Σ_i (η_{t−1,i}/η_{t,i} − 1).
//!
//! The argument (the paper's exponential potential with the rate-change step of Gaillard,
//! Stoltz & van Erven 2014), kept before any final simplification so that the run's own
//! quantities give the value; it is proved here, step by step, rather than quoted with the
//! paper's constants: with Φ_t = Σ_i π_i exp(η_{t,i} R̃_{t,i}) (Φ_0 = 1),
//! e^{x − x²} ≤ 1 + x for x = η_{t−1,i} r_{t,i} ≥ −½ gives
//! Σ_i π_i exp(η_{t−1,i} R̃_{t,i}) ≤ Φ_{t−1} + Σ_i π_i η_{t−1,i} e^{η_{t−1,i} R̃_{t−1,i}} r_{t,i},
//! whose last sum is a positive multiple of Σ_i p_{t,i} r_{t,i} ≤ 0 (= 0 with the gradient
//! trick, ≤ 0 by Jensen for a convex loss); then x^α ≤ x + (1/α − 1)/e for α = η_t/η_{t−1}
//! ≤ 1 moves each exponent to the new rate at a cost (η_{t−1,i}/η_{t,i} − 1)/e, so
//! Φ_T ≤ 1 + D_T/e, and π_k exp(η_{T,k} R̃_{T,k}) ≤ Φ_T is the bound. Its hypothesis,
//! η_{t−1,k} r_{t,k} ≥ −½, holds when the charges of a round lie in a range of width B; a
//! round that breaks it voids the bound (the run reports none, with the reason). With the
//! gradient trick it bounds the linearised regret, which is larger than the regret.

//! ```
//! use pacstream::experts::{AdviceRound, BoaParams, Loss};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = BoaParams::new(3).loss(Loss::Absolute).gradient(true).check()?.build();
//! for t in 0..200 {
//!     let outcome = (t % 5) as f64;
//!     learner.learn_one(AdviceRound::new(&[outcome + 1.0, outcome - 0.2, 2.0], outcome))?;
//! }
//! assert!(learner.weights()[1] > 0.5);
//! assert!(learner.regret_bound().value().is_none());
//!
//! // With the range of the charges, the paper's rates and its bound.
//! let mut learner = BoaParams::new(3).loss(Loss::Absolute).loss_bound(6.0).check()?.build();
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

/// opera's constant in η = 1/√(2.2 V).
const RATE_CONSTANT: f64 = 2.2;

ranged_forecaster_params! {
    /// The settings of [`Boa`].
    BoaParams => BoaConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
}

/// Validated [`BoaParams`]: what [`BoaParams::check`] gives, and the only thing a
/// [`Boa`](Boa) is built from ([`BoaConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type BoaConfig = Checked<BoaParams>;

impl BoaConfig {
    /// The learner, no regret yet.
    pub fn build(&self) -> Boa {
        let n = self.n_experts;
        Boa {
            params: self.clone(),
            regularised: vec![0.0; n],
            squared: vec![0.0; n],
            paper: self.loss_bound.map(|_| PaperRun::default()),
            ledger: ExpertLedger::new(n),
        }
    }
}

/// What the paper's form keeps for its bound.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct PaperRun {
    /// Σ_t η_{t−1,i} r²_{t,i} (empty until the first round).
    second_order: Vec<f64>,
    /// D_t = (1/N) Σ_s Σ_i (η_{s−1,i}/η_{s,i} − 1).
    rate_drift: f64,
    /// Rounds where some η_{t−1,i} r_{t,i} < −½.
    out_of_range_rounds: u64,
}

/// BOA; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Boa {
    params: BoaConfig,
    /// R̃_{t,i} = Σ_s (r_{s,i} − η_{s,i} r²_{s,i}).
    regularised: Vec<f64>,
    /// V_{t,i}.
    squared: Vec<f64>,
    /// The paper's form only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paper: Option<PaperRun>,
    ledger: ExpertLedger,
}

impl Boa {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let finite = |v: &[f64]| finite_of_len(v, n);
        if !finite(&self.regularised)
            || !finite(&self.squared)
            || self.squared.iter().any(|&v| v < 0.0)
            || self.ledger.expert_losses().len() != n
            || self.paper.is_some() != self.params.loss_bound.is_some()
            || self.paper.as_ref().is_some_and(|paper| {
                !(paper.second_order.is_empty() || finite(&paper.second_order))
                    || paper.second_order.iter().any(|&v| v < 0.0)
                    || !(paper.rate_drift >= 0.0 && paper.rate_drift.is_finite())
            })
        {
            return Err(Error::InvalidSnapshot("BOA: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(Boa);

/// opera's η = 1/√(2.2 V), for V > 0.
fn rate(squared: f64) -> f64 {
    1.0 / (RATE_CONSTANT * squared).sqrt()
}

/// The paper's η = min{1/(2B), √(ln N / V)} (1/(2B) while V = 0; 0 when N = 1).
fn paper_rate(n_experts: usize, range: f64, squared: f64) -> f64 {
    let ln_n = (n_experts as f64).ln();
    (0.5 / range).min((ln_n / squared).sqrt())
}

impl Boa {
    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// R̃_{t,i}: the regularised regret against each expert.
    pub fn regularised_regrets(&self) -> &[f64] {
        &self.regularised
    }

    /// η_{t,i}: opera's 1/√(2.2 V_{t,i}) (infinite while V_{t,i} = 0), or with a range B
    /// the paper's min{1/(2B), √(ln N / V_{t,i})}.
    pub fn learning_rates(&self) -> Vec<f64> {
        self.squared.iter().map(|&v| self.rate_of(v)).collect()
    }

    fn rate_of(&self, squared: f64) -> f64 {
        match self.params.loss_bound {
            Some(range) => paper_rate(self.params.n_experts, range, squared),
            None => rate(squared),
        }
    }

    /// Rounds in which some η_{t−1,i} r_{t,i} fell below −½ (the paper's form only).
    pub fn out_of_range_rounds(&self) -> u64 {
        self.paper
            .as_ref()
            .map_or(0, |paper| paper.out_of_range_rounds)
    }

    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
        if self.params.loss_bound.is_some() {
            // Every expert from the first round: ln η + η R̃ (uniform when N = 1, η = 0).
            let exponents: Vec<f64> = self
                .squared
                .iter()
                .zip(&self.regularised)
                .map(|(&v, &r)| {
                    let eta = self.rate_of(v);
                    if eta > 0.0 { eta.ln() + eta * r } else { 0.0 }
                })
                .collect();
            return softmax_awake(&exponents, awake);
        }
        let n = self.params.n_experts;
        let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
        let n_awake = (0..n).filter(|&i| is_awake(i)).count();
        // The awake experts that have had a regret: exponential weights of ln η + η R̃.
        let learned: Vec<bool> = (0..n)
            .map(|i| is_awake(i) && self.squared[i] > 0.0)
            .collect();
        let n_learned = learned.iter().filter(|&&l| l).count();
        let exponents: Vec<f64> = (0..n)
            .map(|i| {
                if learned[i] {
                    let eta = rate(self.squared[i]);
                    eta.ln() + eta * self.regularised[i]
                } else {
                    0.0
                }
            })
            .collect();
        let mut weights = if n_learned > 0 {
            softmax_awake(&exponents, Some(&learned[..]))
        } else {
            vec![0.0; n]
        };
        let share = n_learned as f64 / n_awake.max(1) as f64;
        for i in 0..n {
            weights[i] = if learned[i] {
                share * weights[i]
            } else if is_awake(i) {
                1.0 / n_awake as f64
            } else {
                0.0
            };
        }
        weights
    }

    /// The bound on the regret against `expert` (on its awake rounds) with a range B; none
    /// without it (no theorem covers opera's rates), with the reason.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        let n = self.params.n_experts;
        assert!(expert < n, "no expert {expert}");
        let (Some(range), Some(paper)) = (self.params.loss_bound, &self.paper) else {
            return Guarantee::none(
                Bounded::Regret,
                "BOA without a loss range runs opera's rates 1/√(2.2 V), without the cap \
                 1/(2E) and the ln N that Wintenberger 2017's adaptive theorem needs: no \
                 theorem covers them; give the range B of the losses (--loss-bound) for the \
                 paper's rates and bound",
            );
        };
        if paper.out_of_range_rounds > 0 {
            return Guarantee::none(
                Bounded::Regret,
                "in some rounds a regret fell below −1/(2η) (a loss outside the range B the \
                 rates assume): BOA's theorem does not cover the run",
            );
        }
        let value = if n == 1 {
            0.0
        } else {
            bounds::boa(
                n,
                paper.second_order.get(expert).copied().unwrap_or(0.0),
                paper_rate(n, range, self.squared[expert]),
                paper.rate_drift,
            )
        };
        regret_guarantee(
            value,
            expert,
            "BOA with a range B: Σ_t η_t−1,k r²_t,k + (ln N + ln(1 + D_T/e))/η_T,k, \
                      D_T = (1/N) Σ_t Σ_i (η_t−1,i/η_t,i − 1) (the adaptive BOA \
                      of Wintenberger 2017; the potential argument kept for the run's own \
                      terms, proved step by step in docs/guarantees.md)",
            "the squared regrets of this run are too large for the bound to be represented",
        )
    }
}

impl Boa {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let played = self.play_awake(&round)?;
        let instant = instant_regrets(&played);
        let n = self.params.n_experts;
        let mut squared = self.squared.clone();
        let mut regularised = self.regularised.clone();
        let mut paper = self.paper.clone();
        let mut out_of_range = false;
        for (i, &r) in instant.iter().enumerate() {
            let before = self.rate_of(squared[i]);
            squared[i] += r * r;
            match paper.as_mut() {
                Some(paper) => {
                    if n == 1 {
                        continue;
                    }
                    let after = self.rate_of(squared[i]);
                    out_of_range |= before * r < -0.5;
                    regularised[i] += r - before * r * r;
                    paper.second_order.resize(n, 0.0);
                    paper.second_order[i] += before * r * r;
                    paper.rate_drift += (before / after - 1.0) / n as f64;
                }
                None => {
                    if squared[i] > 0.0 {
                        regularised[i] += r - rate(squared[i]) * r * r;
                    }
                }
            }
        }
        let paper_finite = paper.as_ref().is_none_or(|paper| {
            paper.second_order.iter().all(|v| v.is_finite()) && paper.rate_drift.is_finite()
        });
        if !(squared.iter().all(|v| v.is_finite())
            && regularised.iter().all(|r| r.is_finite())
            && paper_finite)
        {
            return Err(Error::InconsistentInput(
                "the squared regrets of this round are too large to be represented".into(),
            ));
        }
        if let Some(paper) = paper.as_mut() {
            paper.out_of_range_rounds += u64::from(out_of_range);
        }
        self.squared = squared;
        self.regularised = regularised;
        self.paper = paper;
        Ok(played.record(&mut self.ledger, round.awake, None))
    }
}

forecaster_learner!(Boa, BoaParams, plays_awake_weights);
