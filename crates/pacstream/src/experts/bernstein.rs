//! BOA, Bernstein online aggregation (Wintenberger 2017, *Optimal learning with Bernstein
//! online aggregation*, Machine Learning 106): exponential weights of a second-order
//! regularised regret, with one adaptive learning rate per expert — the version R opera's
//! `BOA` implements.
//!
//! With r_{t,i} = ĉ_t − c_{t,i} the instantaneous regret against expert i (c the charges: own
//! losses, or linearised losses with the gradient trick — the paper's setting; ĉ_t the
//! learner's; 0 for an asleep expert) and V_{t,i} = Σ_{s≤t} r²_{s,i}, opera's rates and
//! regularised regret are
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
//! **Which version, and no bound.** The paper's adaptive BOA (its multiple-learning-rates
//! version, regret of order √(V ln N) up to a log log factor) takes
//! η_{t,i} = min{1/(2E), √(ln(1/π_i) / V_{t,i})} with E the range of the losses (known, or
//! found by doubling), which is what its exponential inequality e^{x − x²} ≤ 1 + x (x ≥ −½)
//! needs. opera's rates drop the cap 1/(2E) and the ln(1/π_i) = ln N and put 2.2 in their
//! place; no theorem covers them, so this rule reports no bound (and says why). Its regret
//! against each expert and each oracle is measured like every rule's.
//!
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
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bounds::{Bounded, Guarantee};
use super::fixed_share::{check_common, check_played};
use super::loss::Loss;
use super::mixing::{instant_regrets, play, softmax_awake};
use super::oracle::ExpertLedger;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// opera's constant in η = 1/√(2.2 V).
const RATE_CONSTANT: f64 = 2.2;

/// The settings of [`Boa`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoaParams {
    /// N.
    pub n_experts: usize,
    /// The loss ℓ (convex).
    pub loss: Loss,
    /// Charge the linearised losses (the gradient trick).
    pub gradient: bool,
}

impl BoaParams {
    /// N experts, the square loss, no gradient trick.
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            loss: Loss::Square,
            gradient: false,
        }
    }

    /// Sets the loss.
    pub fn loss(mut self, loss: Loss) -> Self {
        self.loss = loss;
        self
    }

    /// Charges the linearised losses.
    pub fn gradient(mut self, gradient: bool) -> Self {
        self.gradient = gradient;
        self
    }

    /// Checks the settings.
    pub fn check(self) -> Result<Checked<Self>> {
        self.check_params()
    }
}

impl CheckParams for BoaParams {
    fn check_params(self) -> Result<Checked<Self>> {
        check_common(self.n_experts, self.loss, None)?;
        Ok(Checked::validated(self))
    }
}

impl Checked<BoaParams> {
    /// The learner, no regret yet.
    pub fn build(&self) -> Boa {
        let n = self.n_experts;
        Boa {
            params: self.clone(),
            regularised: vec![0.0; n],
            squared: vec![0.0; n],
            ledger: ExpertLedger::new(n),
        }
    }
}

/// BOA; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "BoaState")]
pub struct Boa {
    params: Checked<BoaParams>,
    /// R̃_{t,i} = Σ_s (r_{s,i} − η_{s,i} r²_{s,i}).
    regularised: Vec<f64>,
    /// V_{t,i}.
    squared: Vec<f64>,
    ledger: ExpertLedger,
}

#[derive(Deserialize)]
struct BoaState {
    params: Checked<BoaParams>,
    regularised: Vec<f64>,
    squared: Vec<f64>,
    ledger: ExpertLedger,
}

impl TryFrom<BoaState> for Boa {
    type Error = Error;
    fn try_from(state: BoaState) -> Result<Self> {
        let n = state.params.n_experts;
        let finite = |v: &[f64]| v.len() == n && v.iter().all(|x| x.is_finite());
        if !finite(&state.regularised)
            || !finite(&state.squared)
            || state.squared.iter().any(|&v| v < 0.0)
            || state.ledger.expert_losses().len() != n
        {
            return Err(Error::InvalidSnapshot("BOA: inconsistent".into()));
        }
        Ok(Boa {
            params: state.params,
            regularised: state.regularised,
            squared: state.squared,
            ledger: state.ledger,
        })
    }
}

/// η = 1/√(2.2 V), for V > 0.
fn rate(squared: f64) -> f64 {
    1.0 / (RATE_CONSTANT * squared).sqrt()
}

impl Boa {
    /// The settings.
    pub fn params(&self) -> &BoaParams {
        &self.params
    }

    /// Every expert's cumulative loss and the learner's.
    pub fn ledger(&self) -> &ExpertLedger {
        &self.ledger
    }

    /// The normalised weights of the next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        self.awake_weights(None)
    }

    /// R̃_{t,i}: the regularised regret against each expert.
    pub fn regularised_regrets(&self) -> &[f64] {
        &self.regularised
    }

    /// η_{t,i} = 1/√(2.2 V_{t,i}); infinite while V_{t,i} = 0.
    pub fn learning_rates(&self) -> Vec<f64> {
        self.squared.iter().map(|&v| rate(v)).collect()
    }

    fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
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

    /// No theorem covers opera's BOA rates: always [`Guarantee::NoBound`], with the reason.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        Guarantee::none(
            Bounded::Regret,
            "BOA runs opera's rates 1/√(2.2 V), without the cap 1/(2E) and the ln N that \
             Wintenberger 2017's adaptive theorem needs: no theorem covers them",
        )
    }

    /// No theorem covers opera's BOA rates (see [`Boa::regret_bound_against`]).
    pub fn regret_bound(&self) -> Guarantee {
        self.regret_bound_against(self.ledger.best_expert().0)
    }
}

impl OnlineLearner for Boa {
    type Input<'a> = AdviceRound<'a>;
    type Step = ExpertStep;

    fn learn_one(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        round.check(self.params.n_experts)?;
        let weights = self.awake_weights(round.awake);
        let played = play(&weights, &round, self.params.loss, self.params.gradient);
        check_played(&played)?;
        let instant = instant_regrets(&played);
        let mut squared = self.squared.clone();
        let mut regularised = self.regularised.clone();
        for (i, &r) in instant.iter().enumerate() {
            squared[i] += r * r;
            if squared[i] > 0.0 {
                regularised[i] += r - rate(squared[i]) * r * r;
            }
        }
        if !(squared.iter().all(|v| v.is_finite()) && regularised.iter().all(|r| r.is_finite())) {
            return Err(Error::InconsistentInput(
                "the squared regrets of this round are too large to be represented".into(),
            ));
        }
        self.squared = squared;
        self.regularised = regularised;
        self.ledger
            .record(played.learner_loss, &played.own_losses, round.awake);
        let (best_expert, regret) = self.ledger.best_expert();
        Ok(ExpertStep {
            round: self.ledger.rounds(),
            prediction: Some(played.prediction),
            loss: played.learner_loss,
            realised_loss: None,
            chosen: None,
            learning_rate: None,
            best_expert,
            regret,
        })
    }

    fn n_rounds(&self) -> u64 {
        self.ledger.rounds()
    }
}
