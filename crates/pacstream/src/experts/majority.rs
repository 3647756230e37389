//! Weighted Majority and Randomized Weighted Majority (binary advice), as in the lecture notes
//! on online learning (§10.1), on the shared log-space engine.
//!
//! **Weighted Majority.** Weights start at 1. Predict ŷ_t = 1 iff Σ_i w_i ỹ_{t,i} ≥
//! ½ Σ_i w_i (ties go to 1). Only when ŷ_t ≠ y_t, multiply by β the weight of every wrong
//! expert. Mistake bound on every sequence:
//! L_T ≤ (ln(1/β)·m*_T + ln N) / ln(2/(1+β)).
//! (The lecture notes divide by ln((1+β)/2), which is negative; the correct statement, from
//! W_{T+1} ≤ N((1+β)/2)^{L_T} and W_{T+1} ≥ β^{m*}, divides by ln(2/(1+β)) > 0.)
//!
//! **Randomized Weighted Majority.** Same weights; predict ŷ_t ~ Bernoulli(p_t),
//! p_t = Σ_i w_i ỹ_{t,i} / Σ_i w_i, from the learner's seeded generator; every round,
//! multiply by β the weight of every wrong expert. It is Hedge with η = ln(1/β) on the
//! zero-one loss; its loss in the online protocol is the expected mistake |p_t − y_t| (the
//! quantity of its bound E L_T ≤ (ln(1/β)·m* + ln N)/(1 − β)), and the realised mistake of
//! the draw is reported beside it.

use serde::{Deserialize, Serialize};

use super::bounds::{self, Bounded, Guarantee, RegretBound};
use super::core::{Core, LossRange, core_learner};
use super::params::{
    RandomizedWeightedMajorityConfig, RandomizedWeightedMajorityParams, WeightedMajorityConfig,
    WeightedMajorityParams,
};
use super::round::{AdviceRound, ExpertStep};
use super::schedule::{LearningRate, Tuning};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;
use crate::rng::StreamRng;

/// Checks a binary round: every advice value and the outcome are 0 or 1, nobody sleeps.
fn check_binary(round: &AdviceRound<'_>, n_experts: usize) -> Result<()> {
    round.check(n_experts)?;
    if round.awake.is_some() {
        return Err(Error::InconsistentInput(
            "weighted majority has no sleeping experts: use Hedge, EWA or FPL".into(),
        ));
    }
    let is_binary = |v: f64| v == 0.0 || v == 1.0;
    if !is_binary(round.outcome) {
        return Err(Error::InconsistentInput(format!(
            "the outcome must be 0 or 1, got {}",
            round.outcome
        )));
    }
    if let Some(i) = round.advice.iter().position(|&v| !is_binary(v)) {
        return Err(Error::InconsistentInput(format!(
            "the advice of expert {i} must be 0 or 1, got {}",
            round.advice[i]
        )));
    }
    Ok(())
}

/// Every expert's mistake on a binary `round` (1 where its advice is not the outcome), in
/// the core's buffer of the experts' losses, taken out so that `finish` can borrow the core;
/// the caller puts it back.
fn take_mistakes(core: &mut Core, round: &AdviceRound<'_>) -> Vec<f64> {
    let mut wrong = std::mem::take(&mut core.expert_losses);
    for (flag, &advice) in wrong.iter_mut().zip(round.advice) {
        *flag = f64::from(u8::from(advice != round.outcome));
    }
    wrong
}

core_learner! {
    /// Deterministic Weighted Majority; see the module documentation.
    ///
    /// ```
    /// use pacstream::experts::{AdviceRound, WeightedMajorityParams};
    /// use pacstream::OnlineLearner;
    ///
    /// let mut wm = WeightedMajorityParams::new(3).beta(0.5).check()?.build();
    /// // Expert 2 is always right; the others always wrong.
    /// for t in 0..20 {
    ///     let y = (t % 2) as f64;
    ///     wm.learn_one(AdviceRound::new(&[1.0 - y, 1.0 - y, y], y))?;
    /// }
    /// assert!(wm.mistakes() <= 3);
    /// assert_eq!(wm.ledger().best_expert().0, 2);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    WeightedMajority(
        "weighted majority",
        WeightedMajorityConfig => WeightedMajorityParams,
        AdviceRound
    ) {
        mistakes: u64,
    }
    counts(mistakes)
}

impl WeightedMajorityConfig {
    /// The learner.
    pub fn build(&self) -> WeightedMajority {
        let core = Core::new(
            self.n_experts,
            None,
            LearningRate::Fixed(-self.beta.ln()),
            Tuning::Beta,
            LossRange::nonnegative(Some(1.0)),
        )
        .expect("invariant: checked parameters");
        WeightedMajority {
            params: self.clone(),
            core,
            mistakes: 0,
        }
    }
}

impl WeightedMajority {
    /// The number of mistakes L_T so far.
    pub fn mistakes(&self) -> u64 {
        self.mistakes
    }

    /// The mistake bound of the lecture notes' theorem against `expert`, as a bound on the
    /// regret (mistakes beyond the expert's): (ln(1/β) m_i + ln N)/ln(2/(1+β)) − m_i.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        let mistakes = self.core.ledger.expert_losses()[expert];
        let bound = bounds::weighted_majority(self.core.n_experts(), self.params.beta, mistakes);
        Guarantee::Bound(RegretBound {
            value: (bound - mistakes).max(0.0),
            expert,
            bounded: Bounded::Regret,
            theorem: "weighted majority (lecture notes): (ln(1/β) m_i + ln N)/ln(2/(1+β)) mistakes",
        })
    }

    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        check_binary(&round, self.core.n_experts())?;
        let eta = self.core.begin(None);
        let (mut on_one, mut on_zero) = (0.0, 0.0);
        for (p, &advice) in self.core.probabilities.iter().zip(round.advice) {
            if advice == 1.0 {
                on_one += p;
            } else {
                on_zero += p;
            }
        }
        let prediction = if on_one >= on_zero { 1.0 } else { 0.0 };
        let mistake = prediction != round.outcome;
        let wrong = take_mistakes(&mut self.core, &round);
        let loss = f64::from(u8::from(mistake));
        // Weights move only when the majority errs.
        let zeros = vec![0.0; if mistake { 0 } else { wrong.len() }];
        let charges = if mistake { &wrong } else { &zeros };
        self.core.finish(eta, None, charges, 0.0, loss, &wrong);
        self.core.expert_losses = wrong;
        self.mistakes += u64::from(mistake);
        Ok(self.core.step(eta, Some(prediction), loss, None, None))
    }
}

core_learner! {
    /// Randomized Weighted Majority; see the module documentation.
    ///
    /// ```
    /// use pacstream::experts::{AdviceRound, RandomizedWeightedMajorityParams};
    /// use pacstream::OnlineLearner;
    ///
    /// let mut rwm = RandomizedWeightedMajorityParams::new(2).beta(0.8).seed(1).check()?.build();
    /// let step = rwm.learn_one(AdviceRound::new(&[1.0, 0.0], 1.0))?;
    /// assert_eq!(step.loss, 0.5); // p_1 = ½: expected mistake ½
    /// assert!(step.realised_loss == Some(0.0) || step.realised_loss == Some(1.0));
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    RandomizedWeightedMajority(
        "randomized weighted majority",
        RandomizedWeightedMajorityConfig => RandomizedWeightedMajorityParams,
        AdviceRound
    ) {
        rng: StreamRng,
        realised_mistakes: u64,
    }
    counts(realised_mistakes)
}

impl RandomizedWeightedMajorityConfig {
    /// The learner.
    pub fn build(&self) -> RandomizedWeightedMajority {
        let core = Core::new(
            self.n_experts,
            None,
            self.rate,
            Tuning::Beta,
            LossRange::nonnegative(Some(1.0)),
        )
        .expect("invariant: checked parameters");
        RandomizedWeightedMajority {
            params: self.clone(),
            core,
            rng: StreamRng::seed_from(self.seed),
            realised_mistakes: 0,
        }
    }
}

impl RandomizedWeightedMajority {
    /// The realised mistakes of the draws so far.
    pub fn realised_mistakes(&self) -> u64 {
        self.realised_mistakes
    }

    /// The bound of the lecture notes' theorem on the expected regret against `expert`
    /// (expected mistakes, E L_T = Σ_t |p_t − y_t|, beyond the expert's mistakes): with a
    /// fixed β, or β tuned for a horizon, (ln(1/β) m_i + ln N)/(1 − β) − m_i; with the
    /// doubling trick, the epoch-by-epoch sum.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        let n = self.core.n_experts();
        let mistakes = self.core.ledger.expert_losses()[expert];
        let (bound, theorem) = match self.core.schedule.rate {
            LearningRate::Doubling => (
                bounds::randomized_weighted_majority_doubling_sum(self.core.n_rounds, n, mistakes),
                "randomized weighted majority, doubling trick: Σ_m min(ℓ_m, (c_m − 1)ℓ_m + ln N/(1 − β_m))",
            ),
            // Fixed, or tuned for a horizon: β = e^{−η} is the same every round.
            _ => (
                bounds::randomized_weighted_majority(
                    n,
                    (-self.core.schedule.eta(1)).exp(),
                    mistakes,
                ),
                "randomized weighted majority (lecture notes): (ln(1/β) m_i + ln N)/(1 − β) expected mistakes",
            ),
        };
        Guarantee::Bound(RegretBound {
            value: (bound - mistakes).max(0.0),
            expert,
            bounded: Bounded::ExpectedRegret,
            theorem,
        })
    }

    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        check_binary(&round, self.core.n_experts())?;
        let eta = self.core.begin(None);
        let on_one = self.core.mixture(round.advice, None).clamp(0.0, 1.0);
        let prediction = if self.rng.next_f64() < on_one {
            1.0
        } else {
            0.0
        };
        let expected = (on_one - round.outcome).abs();
        let realised = f64::from(u8::from(prediction != round.outcome));
        let wrong = take_mistakes(&mut self.core, &round);
        self.core.finish(eta, None, &wrong, 0.0, expected, &wrong);
        self.core.expert_losses = wrong;
        self.realised_mistakes += realised as u64;
        Ok(self
            .core
            .step(eta, Some(prediction), expected, Some(realised), None))
    }
}
