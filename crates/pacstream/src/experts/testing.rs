//! Entry points for the theorem tests of the expert rules (hidden from the documentation):
//! the sequences the library's tests and the command's tests run the rules against.

use super::majority::WeightedMajority;
use super::round::AdviceRound;
use crate::OnlineLearner;
use crate::rng::StreamRng;

/// Rounds of `n` experts whose advice is spread evenly over [0, 1] (expert i says
/// i/(n − 1)), with an outcome in {0, 1} against the learner's prediction (adversarial) or
/// uniform in [0, 1], and, with sleeping experts, expert t mod n awake and each other one
/// awake with probability 0.7.
#[derive(Clone, Debug)]
pub struct SpreadAdvice {
    advice: Vec<f64>,
    awake: Vec<bool>,
    adversarial: bool,
    sleeping: bool,
}

impl SpreadAdvice {
    /// The sequence for `n ≥ 2` experts.
    pub fn new(n: usize, adversarial: bool, sleeping: bool) -> Self {
        Self {
            advice: (0..n).map(|i| (i as f64) / (n as f64 - 1.0)).collect(),
            awake: vec![true; n],
            adversarial,
            sleeping,
        }
    }

    /// Round `t` for a learner whose weights are `weights`. The adversary answers 1 when the
    /// weighted prediction is below ½ and 0 otherwise, so that the learner loses at least ½
    /// (absolute loss) every round. The awake draws are made whether or not experts sleep,
    /// so that one `rng` gives the same outcomes to the sleeping and the awake runs.
    pub fn round(&mut self, t: usize, weights: &[f64], rng: &mut StreamRng) -> AdviceRound<'_> {
        let n = self.advice.len();
        let outcome = if self.adversarial {
            let prediction: f64 = weights.iter().zip(&self.advice).map(|(w, a)| w * a).sum();
            if prediction < 0.5 { 1.0 } else { 0.0 }
        } else {
            rng.next_f64()
        };
        for (i, awake) in self.awake.iter_mut().enumerate() {
            *awake = i == t % n || rng.next_f64() < 0.7;
        }
        AdviceRound {
            advice: &self.advice,
            outcome,
            awake: self.sleeping.then_some(&self.awake[..]),
        }
    }
}

/// The outcome that makes weighted majority err on `advice` (0/1 advice): the opposite of
/// its prediction, which is deterministic, so a copy of the learner is asked.
///
/// # Panics
/// If `advice` is not a valid round for `wm` (a test's own mistake).
pub fn against_weighted_majority(wm: &WeightedMajority, advice: &[f64]) -> f64 {
    let prediction = wm
        .clone()
        .learn_one(AdviceRound::new(advice, 0.0))
        .expect("0/1 advice, one value per expert")
        .prediction
        .expect("weighted majority always predicts");
    1.0 - prediction
}

/// The adversary of a randomised learner with 0/1 advice: the opposite of the side holding
/// most of `weights`, so that the expected mistake max(p, 1 − p) is at least ½ every round.
pub fn against_the_majority(weights: &[f64], advice: &[f64]) -> f64 {
    let on_one: f64 = weights.iter().zip(advice).map(|(w, a)| w * a).sum();
    if on_one >= 0.5 { 0.0 } else { 1.0 }
}

/// Losses against a learner's `weights`: `bound` to the heaviest experts (ties to the lower
/// index) until they hold half the weight, 0 to the others, so that the mixture loss is
/// about `bound`/2 with the largest variance every round (Hoeffding's lemma nearly tight)
/// and no expert escapes.
pub fn halves_losses(weights: &[f64], bound: f64) -> Vec<f64> {
    let n = weights.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| weights[*b].total_cmp(&weights[*a]).then(a.cmp(b)));
    let mut losses = vec![0.0; n];
    let mut mass = 0.0;
    for i in order {
        if mass < 0.5 {
            losses[i] = bound;
            mass += weights[i];
        }
    }
    losses
}
