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
///
/// With every expert awake, the adversary must be one: it sees the weights the learner is
/// about to play and answers 0 or 1 on the far side of the prediction, so the prediction
/// is at least ½ away from the outcome and the learner pays at least ℓ(½, y) every round
/// (½ for the absolute loss, ¼ for the square loss), whatever it does — the lower-bound
/// argument of the lecture notes, for real-valued forecasts. The bounds' "nearly reached"
/// fractions rest on it, so it is asserted round by round, and the cumulative loss at least
/// T·ℓ(½, ·) at the end (up to rounding).
pub fn play_spread_advice(
    learner: &mut impl Aggregator,
    loss: Loss,
    n_rounds: usize,
    (adversarial, sleeping): (bool, bool),
    rng: &mut StreamRng,
) {
    let n = learner.ledger().expert_losses().len();
    let mut rounds = SpreadAdvice::new(n, adversarial, sleeping);
    let forced = adversarial && !sleeping;
    let mut least_forced = 0.0;
    let before = learner.ledger().learner_loss();
    for t in 0..n_rounds {
        let round = rounds.round(t, &learner.weights(), rng);
        let outcome = round.outcome;
        let step = learner.learn_advice(round, loss).unwrap();
        if forced {
            let floor = loss.value(0.5, outcome);
            assert!(
                step.loss >= floor - 1e-12,
                "round {t}: the adversary let the learner pay {} < ℓ(½, {outcome}) = {floor}",
                step.loss
            );
            least_forced += floor;
        }
    }
    if forced {
        let paid = learner.ledger().learner_loss() - before;
        assert!(
            paid >= least_forced - 1e-9 * least_forced.max(1.0),
            "the adversary let the learner pay {paid} < {least_forced} over {n_rounds} rounds"
        );
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
