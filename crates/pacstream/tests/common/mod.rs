//! What the theorem tests of the expert rules share.

use pacstream::StreamRng;
use pacstream::experts::testing::SpreadAdvice;
use pacstream::experts::{Aggregator, Loss};

/// The sequences the bounds of the forecasting rules are checked on: (N, loss, the gradient
/// trick, sleeping experts, adversarial outcomes).
pub const BOUND_CASES: [(usize, Loss, bool, bool, bool); 7] = [
    (2, Loss::Absolute, false, false, true),
    (2, Loss::Absolute, true, false, true),
    (4, Loss::Square, false, false, true),
    (3, Loss::Pinball { tau: 0.8 }, true, true, false),
    (6, Loss::Square, true, false, false),
    (5, Loss::Absolute, false, true, false),
    (8, Loss::Absolute, false, false, true),
];

/// Plays `n_rounds` rounds of [`SpreadAdvice`] against `learner`.
pub fn play_spread_advice(
    learner: &mut impl Aggregator,
    loss: Loss,
    n_rounds: usize,
    (adversarial, sleeping): (bool, bool),
    rng: &mut StreamRng,
) {
    let n = learner.ledger().expert_losses().len();
    let mut rounds = SpreadAdvice::new(n, adversarial, sleeping);
    for t in 0..n_rounds {
        let round = rounds.round(t, &learner.weights(), rng);
        learner.learn_advice(round, loss).unwrap();
    }
}

/// Asserts that the bound of `learner` holds against every expert, prints the regret and the
/// bound against the best one (`--nocapture`), and returns the largest regret / bound over
/// the experts, so that a test can say how nearly the bound is reached.
pub fn checked_fraction_of_bound(learner: &impl Aggregator, case: &str) -> f64 {
    let mut largest_fraction = 0.0f64;
    for k in 0..learner.ledger().expert_losses().len() {
        let regret = learner.ledger().regret_against(k);
        let bound = learner.regret_bound_against(k).value().unwrap();
        assert!(regret <= bound, "{case} expert {k}: {regret} > {bound}");
        largest_fraction = largest_fraction.max(regret / bound);
    }
    let regret = learner.ledger().regret();
    let bound = learner.regret_bound().value().unwrap();
    eprintln!(
        "{case}: regret {regret:.3}, bound {bound:.3}, {:.3}",
        regret / bound
    );
    largest_fraction
}
