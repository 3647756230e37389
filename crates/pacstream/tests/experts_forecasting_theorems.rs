//! The theorems of the forecasters' rules (fixed share, ML-Poly) and their oracles, as
//! tests: each bound holds on adversarial and random sequences, with and without sleeping
//! experts and the gradient trick, and is shown nearly reached somewhere, with the fraction
//! stated, so that a wrong bound or a wrong update makes a test fail.

// The measured fractions are printed for the record (`--nocapture`), beside the assertions.
#![allow(clippy::print_stderr)]

use pacstream::experts::{
    AdviceRound, ConvexCombinationOracle, FixedShareParams, Loss, MlPolyParams, ShiftingOracle,
    bounds,
};
mod common;

use common::{BOUND_CASES, checked_fraction_of_bound, play_spread_advice};
use pacstream::{OnlineLearner, StreamRng};

/// Fixed share's bound against a sequence with one switch is nearly reached: expert 0 is
/// right for T/2 rounds, then expert 1. With a small η the learner pays ≈ ln 2/η before the
/// weights part; the losing expert's weight settles at the floor α/(N(1 − e^{−η})) that the
/// share keeps, so after the switch the learner pays ≈ (ln 2 + ln(1/α) + ln(1 − e^{−η}))/η
/// climbing back; the bound is (2 ln 2 + ln(1/α) + (T − 2) ln(1/(1 − α)))/η + ηT/8, and the
/// two meet as ln(1/α) grows (here to 93%).
#[test]
fn fixed_share_switching_bound_is_nearly_tight() {
    let (eta, alpha, t_max) = (0.01, 1e-30, 14_000u64);
    let mut learner = FixedShareParams::new(2, eta, alpha)
        .loss(Loss::Absolute)
        .loss_bound(1.0)
        .check()
        .unwrap()
        .build();
    let mut oracle = ShiftingOracle::new(2, 1).unwrap();
    for t in 0..t_max {
        let outcome = if t < t_max / 2 { 0.0 } else { 1.0 };
        let round = AdviceRound::new(&[0.0, 1.0], outcome);
        learner.learn_one(round).unwrap();
        oracle.observe(&[outcome, 1.0 - outcome]).unwrap();
    }
    assert_eq!(oracle.best_loss(1), 0.0);
    let regret = learner.ledger().learner_loss() - oracle.best_loss(1);
    let bound = learner.regret_bound_shifting(1, 1).value().unwrap();
    let fraction = regret / bound;
    eprintln!("fixed share, one switch: regret {regret:.2}, bound {bound:.2}, {fraction:.4}");
    assert!(
        (0.9..=1.0).contains(&fraction),
        "regret / bound = {fraction}"
    );
    // Against one expert all along, the m = 0 bound holds too.
    let single = learner.regret_bound().value().unwrap();
    assert!(learner.ledger().regret() <= single);
}

/// The bound for every m against the best sequence with m switches (the dynamic programme),
/// on random losses in [0, 1] with regime changes, with and without the gradient trick and
/// sleeping experts.
#[test]
fn fixed_share_bound_holds_against_every_number_of_switches() {
    let mut rng = StreamRng::seed_from(11);
    for (n, eta, alpha, gradient, sleeping) in [
        (2, 0.5, 0.01, false, false),
        (5, 0.2, 0.002, false, true),
        (8, 1.0, 0.05, true, false),
        (3, 0.05, 0.0, false, false),
    ] {
        let t_max = 1500u64;
        let mut learner = FixedShareParams::new(n, eta, alpha)
            .loss(Loss::Absolute)
            .gradient(gradient)
            .loss_bound(2.0)
            .check()
            .unwrap()
            .build();
        let mut oracle = ShiftingOracle::new(n, 6).unwrap();
        for t in 0..t_max {
            let good = (t / 250) as usize % n;
            let outcome = f64::from(u8::from(rng.next_f64() < 0.5));
            let advice: Vec<f64> = (0..n)
                .map(|i| {
                    let right = if i == good { 0.9 } else { 0.4 };
                    if rng.next_f64() < right {
                        outcome
                    } else {
                        1.0 - outcome
                    }
                })
                .collect();
            let awake: Vec<bool> = (0..n)
                .map(|i| i == good || !sleeping || rng.next_f64() < 0.8)
                .collect();
            let round = AdviceRound {
                advice: &advice,
                outcome,
                awake: sleeping.then_some(&awake[..]),
            };
            let step = learner.learn_one(round).unwrap();
            // Asleep experts are charged the learner's loss (their regret does not move).
            let losses: Vec<f64> = (0..n)
                .map(|i| {
                    if awake[i] || !sleeping {
                        (advice[i] - outcome).abs()
                    } else {
                        step.loss
                    }
                })
                .collect();
            oracle.observe(&losses).unwrap();
        }
        assert_eq!(learner.out_of_range_rounds(), 0);
        for m in 0..=6u64 {
            let regret = learner.ledger().learner_loss() - oracle.best_loss(m as usize);
            match learner.regret_bound_shifting(0, m).value() {
                Some(bound) => {
                    eprintln!("n {n} α {alpha} m {m}: regret {regret:.2} ≤ {bound:.2}");
                    assert!(regret <= bound, "n {n} m {m}: {regret} > {bound}");
                }
                None => assert!(alpha == 0.0 && m > 0),
            }
        }
    }
}

/// A round whose charges spread over more than B voids fixed share's bound.
#[test]
fn fixed_share_reports_no_bound_out_of_range() {
    let mut learner = FixedShareParams::new(2, 0.5, 0.1)
        .loss_bound(1.0)
        .check()
        .unwrap()
        .build();
    learner
        .learn_one(AdviceRound::new(&[0.0, 3.0], 0.0))
        .unwrap();
    assert_eq!(learner.out_of_range_rounds(), 1);
    assert!(learner.regret_bound().value().is_none());
}

/// ML-Poly's bound √((E_T + V_T,k) S_T) holds against every expert, on adversarial and
/// random sequences, with each loss, the gradient trick and sleeping experts; and is reached
/// to a stated fraction (a quarter: the bound keeps the ln T and N of the potential argument)
/// by the adversary that answers against the learner's prediction.
///
/// A quarter leaves room for a bound off by a constant factor, so the bound's value is first
/// checked exactly against a hand computation: experts 0 and 1 advise 0 and 1, absolute
/// loss, outcomes 1, 0, 0 (the last two against the learner's prediction). With
/// r_{t,i} = ℓ(ŷ_t, y_t) − ℓ(a_i, y_t), η_{t,i} = 1/(E_t + V_{t,i}):
///
/// - t = 1: uniform, ŷ = ½; r = (−½, ½), E = ¼, V = (¼, ¼); S grows by r²/(E₁ + r²) = ½
///   per expert (the first round's rate is η₁): S = 1.
/// - t = 2: p ∝ R₊ η = (0, 2): ŷ = 1; r = (1, 0), E = 1, V = (5/4, 1/4);
///   S grows by 1 · η₁,₀ = 1/(¼ + ¼) = 2: S = 3.
/// - t = 3: p ∝ (½/(9/4), ½/(5/4)) = (2/9, 2/5), ŷ = 9/14; r = (9/14, −5/14);
///   V = (5/4 + 81/196, 1/4 + 25/196) = (163/98, 37/98); S grows by
///   (81/196)/(9/4) + (25/196)/(5/4) = 9/49 + 5/49 = 2/7: S = 23/7.
///
/// The bounds: √((1 + 163/98)·23/7) against expert 0 (regret 15/7 − 1 = 8/7) and
/// √((1 + 37/98)·23/7) against expert 1 (regret 15/7 − 2 = 1/7).
#[test]
fn ml_poly_bound_holds_and_is_approached() {
    let mut hand = MlPolyParams::new(2)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let predictions: Vec<f64> = [1.0, 0.0, 0.0]
        .into_iter()
        .map(|outcome| {
            let step = hand
                .learn_one(AdviceRound::new(&[0.0, 1.0], outcome))
                .unwrap();
            step.prediction.unwrap()
        })
        .collect();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    assert!(
        close(predictions[0], 0.5)
            && close(predictions[1], 1.0)
            && close(predictions[2], 9.0 / 14.0),
        "predictions {predictions:?}"
    );
    let s_total: f64 = 23.0 / 7.0;
    for (expert, inverse_rate, regret) in [
        (0, 1.0 + 163.0 / 98.0, 8.0 / 7.0),
        (1, 1.0 + 37.0 / 98.0, 1.0 / 7.0),
    ] {
        let bound = hand.regret_bound_against(expert).value().unwrap();
        let by_hand = (inverse_rate * s_total).sqrt();
        assert!(
            close(bound, by_hand),
            "expert {expert}: bound {bound}, by hand {by_hand}"
        );
        assert!(close(hand.ledger().regret_against(expert), regret));
    }

    let mut rng = StreamRng::seed_from(12);
    let mut largest_fraction = 0.0f64;
    for (n, loss, gradient, sleeping, adversarial) in BOUND_CASES {
        let mut learner = MlPolyParams::new(n)
            .loss(loss)
            .gradient(gradient)
            .check()
            .unwrap()
            .build();
        play_spread_advice(&mut learner, loss, 3000, (adversarial, sleeping), &mut rng);
        let case = format!("ML-Poly n {n} {loss:?} gradient {gradient} sleeping {sleeping}");
        largest_fraction = largest_fraction.max(checked_fraction_of_bound(&learner, &case));
    }
    eprintln!("ML-Poly: largest regret / bound {largest_fraction:.3}");
    assert!(
        largest_fraction > 0.2,
        "largest regret / bound {largest_fraction}"
    );
}

/// With one expert every rule copies it and every bound is 0.
#[test]
fn one_expert_is_copied() {
    let mut share = FixedShareParams::new(1, 0.3, 0.1)
        .loss_bound(1.0)
        .check()
        .unwrap()
        .build();
    let mut poly = MlPolyParams::new(1).gradient(true).check().unwrap().build();
    for t in 0..50 {
        let advice = [(t % 3) as f64];
        let round = AdviceRound::new(&advice, (t % 2) as f64);
        assert_eq!(
            share.learn_one(round).unwrap().prediction,
            Some((t % 3) as f64)
        );
        assert_eq!(
            poly.learn_one(round).unwrap().prediction,
            Some((t % 3) as f64)
        );
    }
    assert_eq!(share.regret_bound().value(), Some(0.0));
    assert_eq!(poly.regret_bound().value(), Some(0.0));
}

/// The oracles are ordered: best linear combination ≤ best convex combination ≤ best expert
/// (the simplex holds every expert, ℝᴺ holds the simplex), and the best sequence with m
/// switches improves with m down to the sum of each round's least loss.
#[test]
fn oracles_are_ordered() {
    let mut rng = StreamRng::seed_from(13);
    let n = 4;
    let mut combination = ConvexCombinationOracle::new(n);
    let mut shifting = ShiftingOracle::new(n, 2000).unwrap();
    let mut expert_losses = vec![0.0; n];
    let mut least_each_round = 0.0;
    for t in 0..400 {
        let outcome = (t as f64 * 0.05).sin() + 0.1 * rng.standard_normal();
        let advice: Vec<f64> = (0..n)
            .map(|i| 0.5 * i as f64 * outcome + 0.3 * rng.standard_normal())
            .collect();
        let losses: Vec<f64> = advice.iter().map(|a| (a - outcome).powi(2)).collect();
        combination.observe(&advice, outcome).unwrap();
        shifting.observe(&losses).unwrap();
        expert_losses
            .iter_mut()
            .zip(&losses)
            .for_each(|(l, x)| *l += x);
        least_each_round += losses.iter().copied().fold(f64::INFINITY, f64::min);
    }
    let best_expert = expert_losses.iter().copied().fold(f64::INFINITY, f64::min);
    let (_, convex) = combination.solve();
    let (_, linear) = combination.solve_linear();
    assert!(linear <= convex + 1e-9 && convex <= best_expert + 1e-9);
    assert!(linear < 0.9 * convex, "{linear} vs {convex}");
    assert_eq!(shifting.best_loss(0), best_expert);
    let mut previous = f64::INFINITY;
    for m in [0, 1, 5, 50, 500] {
        let loss = shifting.best_loss(m);
        assert!(loss <= previous);
        previous = loss;
    }
    assert!((shifting.best_loss(2000) - least_each_round).abs() < 1e-9);
    let _ = bounds::ml_poly(1.0, 1.0);
}

/// Fixed share's update on a hand-computed round: v ∝ w e^{−η c}, w' = α/N + (1 − α) v.
#[test]
fn fixed_share_matches_hand_computed_weights() {
    let (eta, alpha) = (1.0, 0.3);
    let mut learner = FixedShareParams::new(3, eta, alpha)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let step = learner
        .learn_one(AdviceRound::new(&[2.0, 3.0, 1.0], 2.0))
        .unwrap();
    assert!((step.prediction.unwrap() - 2.0).abs() < 1e-12);
    let e = (-1.0f64).exp();
    let v = [
        1.0 / (1.0 + 2.0 * e),
        e / (1.0 + 2.0 * e),
        e / (1.0 + 2.0 * e),
    ];
    for (w, v) in learner.weights().iter().zip(v) {
        assert!((w - (alpha / 3.0 + (1.0 - alpha) * v)).abs() < 1e-12, "{w}");
    }
}

/// ML-Poly on two hand-computed rounds: weights ∝ η (R)₊, η = 1/(E + V), and the bound's
/// S = 1 + 2 after the second round.
#[test]
fn ml_poly_matches_hand_computed_rounds() {
    let mut learner = MlPolyParams::new(2)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let first = learner
        .learn_one(AdviceRound::new(&[0.0, 1.0], 0.0))
        .unwrap();
    assert_eq!(first.prediction, Some(0.5));
    assert_eq!(learner.weights(), vec![1.0, 0.0]);
    let second = learner
        .learn_one(AdviceRound::new(&[0.0, 1.0], 1.0))
        .unwrap();
    assert_eq!(second.prediction, Some(0.0));
    let weights = learner.weights();
    assert!(
        (weights[0] - 0.4 / (0.4 + 0.5 / 2.25)).abs() < 1e-12,
        "{weights:?}"
    );
    assert_eq!(learner.learning_rates(), vec![1.0 / 1.25, 1.0 / 2.25]);
    let bound = learner.regret_bound_against(1).value().unwrap();
    assert!((bound - (2.25f64 * 3.0).sqrt()).abs() < 1e-12, "{bound}");
    assert_eq!(learner.ledger().regret_against(1), 0.5);
}
