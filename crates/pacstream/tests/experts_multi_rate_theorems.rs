//! The rules with one learning rate per expert (ML-Prod, ML-EWA, BOA) as tests: the bounds of
//! ML-Prod and of BOA with a loss range hold on adversarial and random sequences, with each
//! loss, the gradient trick and sleeping experts, and are approached to a stated fraction;
//! ML-EWA and opera's BOA, which no theorem covers with their rates, are pinned by
//! hand-computed rounds (their rates and second-order terms) and say why they report no
//! bound.

// The measured fractions are printed for the record (`--nocapture`), beside the assertions.
#![allow(clippy::print_stderr)]

use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorParams, Boa, BoaParams, Loss, MlEwaParams, MlProdParams,
    Rule,
};
mod common;

use common::{BOUND_CASES, checked_fraction_of_bound, play_spread_advice};
use pacstream::{OnlineLearner, StreamRng};

/// Checks that the bound of `rule` (ML-Prod or BOA, with a loss range) holds against every
/// expert of adversarial and random sequences, with each loss, the gradient trick and
/// sleeping experts, and that the largest regret / bound over them exceeds `reached`.
fn check_multi_rate_bound(rule: Rule, reached: f64) {
    let mut rng = StreamRng::seed_from(21);
    let mut largest_fraction = 0.0f64;
    for (n, loss, gradient, sleeping, adversarial) in BOUND_CASES {
        // Advice in [0, 1], outcomes in {0, 1} or [0, 1]: every loss and every linearised
        // loss of a round spreads over at most 2 (square with gradient: |ℓ'| ≤ 2).
        let range = if gradient { 2.0 } else { 1.0 };
        let mut params = AggregatorParams::new(rule, n).loss(loss).loss_bound(range);
        params.gradient = gradient;
        let mut learner = params.check().unwrap().build().unwrap();
        play_spread_advice(&mut learner, loss, 4000, (adversarial, sleeping), &mut rng);
        assert_eq!(learner.out_of_range_rounds(), 0);
        let case = format!("{rule:?} n {n} {loss:?} gradient {gradient} sleeping {sleeping}");
        largest_fraction = largest_fraction.max(checked_fraction_of_bound(&learner, &case));
    }
    eprintln!("{rule:?}: largest regret / bound {largest_fraction:.3}");
    assert!(
        largest_fraction > reached,
        "{rule:?}: largest regret / bound {largest_fraction}"
    );
}

/// ML-Prod's bound ln N/η_0 + Σ η_{t−1} r² + ln(1 + D_T/e)/η_T holds against every expert,
/// and the adversary that answers against the learner's prediction brings the regret to a
/// stated fraction of it.
#[test]
fn ml_prod_bound_holds_and_is_approached() {
    check_multi_rate_bound(Rule::Mlprod, 0.4);
}

/// BOA's bound with a range B, Σ η_{t−1} r² + (ln N + ln(1 + D_T/e))/η_T, holds against every
/// expert, and the adversary brings the regret to a stated fraction of it.
#[test]
fn boa_bound_holds_and_is_approached() {
    // Measured 0.388 (seeded, deterministic; the opposite-answer adversary, N = 2).
    check_multi_rate_bound(Rule::Boa, 0.35);
}

/// Plays a round of the absolute loss, checks that BOA predicts the mixture of `advice` by
/// the hand-computed `weights`, and returns each expert's regret r_i = |p − y| − |x_i − y|.
fn play_absolute_round(
    learner: &mut Boa,
    weights: &[f64],
    advice: &[f64],
    outcome: f64,
) -> Vec<f64> {
    let prediction: f64 = weights.iter().zip(advice).map(|(w, a)| w * a).sum();
    let step = learner
        .learn_one(AdviceRound::new(advice, outcome))
        .unwrap();
    assert!((step.prediction.unwrap() - prediction).abs() < 1e-12);
    let learner_loss = (prediction - outcome).abs();
    advice
        .iter()
        .map(|a| learner_loss - (a - outcome).abs())
        .collect()
}

/// BOA with a range B on hand-computed rounds: η = min(1/(2B), √(ln N/V)), R̃ = Σ (r − η_{t−1}
/// r²) with each round's term at the rate before it, p ∝ η exp(η R̃) over every expert; and
/// the bound after them, from its statement.
#[test]
fn boa_with_a_range_matches_hand_computed_rounds() {
    let range = 1.0;
    let mut learner = BoaParams::new(3)
        .loss(Loss::Absolute)
        .loss_bound(range)
        .check()
        .unwrap()
        .build();
    let ln3 = 3f64.ln();
    let rate = |v: f64| (0.5 / range).min((ln3 / v).sqrt());
    let advice = [0.0, 1.0, 0.4];
    let (mut regularised, mut squared, mut second) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    let mut drift = 0.0;
    let mut weights = vec![1.0 / 3.0; 3];
    let mut moved = false;
    for t in 0..40 {
        let outcome = [0.0, 1.0, 0.2, 1.0][t % 4];
        let regrets = play_absolute_round(&mut learner, &weights, &advice, outcome);
        for i in 0..3 {
            let r = regrets[i];
            let before = rate(squared[i]);
            squared[i] += r * r;
            let after = rate(squared[i]);
            regularised[i] += r - before * r * r;
            second[i] += before * r * r;
            drift += (before / after - 1.0) / 3.0;
            moved |= after < before;
        }
        let exps: Vec<f64> = (0..3)
            .map(|i| rate(squared[i]) * (rate(squared[i]) * regularised[i]).exp())
            .collect();
        let total: f64 = exps.iter().sum();
        weights = exps.iter().map(|e| e / total).collect();
        for (w, e) in learner.weights().iter().zip(&weights) {
            assert!((w - e).abs() < 1e-12, "round {t}: {w} vs {e}");
        }
    }
    assert!(moved, "the rates never moved");
    for k in 0..3 {
        let expected =
            second[k] + (ln3 + (1.0 + drift / std::f64::consts::E).ln()) / rate(squared[k]);
        let bound = learner.regret_bound_against(k).value().unwrap();
        assert!(
            (bound - expected).abs() <= 1e-9 * expected,
            "{bound} vs {expected}"
        );
    }
}

/// ML-Prod on a hand-computed round of the paper's form: w_0 = 1/N, η_0 = min(1/(2B),
/// √(ln N/B²)), w_1 ∝ (w_0(1 + η_0 r))^{η_1/η_0}, p ∝ η w; and its bound after the round.
#[test]
fn ml_prod_matches_hand_computed_round() {
    let mut learner = MlProdParams::new(2)
        .loss(Loss::Absolute)
        .loss_bound(1.0)
        .check()
        .unwrap()
        .build();
    let step = learner
        .learn_one(AdviceRound::new(&[0.0, 1.0], 0.0))
        .unwrap();
    assert_eq!(step.prediction, Some(0.5));
    // r = (0.5, −0.5); η_0 = 0.5; V = 0.25 each, η_1 = min(0.5, √(ln 2/1.25)) = 0.5.
    let ln2 = 2f64.ln();
    let eta1 = 0.5f64.min((ln2 / 1.25).sqrt());
    assert_eq!(learner.learning_rates(), &[eta1, eta1]);
    let (up, down) = (0.5 * 1.25, 0.5 * 0.75);
    let weights = learner.weights();
    assert!((weights[0] - up / (up + down)).abs() < 1e-12, "{weights:?}");
    let bound = learner.regret_bound_against(0).value().unwrap();
    assert!((bound - (ln2 / 0.5 + 0.5 * 0.25)).abs() < 1e-12, "{bound}");
    // Further rounds, against the paper's update written in linear space:
    // w_t = (w_{t−1}(1 + η_{t−1} r_t))^{η_t/η_{t−1}}, p ∝ η w (the rates move after V > 1.77).
    let rate = |v: f64| 0.5f64.min((ln2 / (1.0 + v)).sqrt());
    let (mut w, mut eta, mut v) = ([0.5 * 1.25, 0.5 * 0.75], [eta1, eta1], [0.25, 0.25]);
    let mut moved = false;
    for t in 0..30 {
        let outcome = if t % 3 == 2 { 0.0 } else { 1.0 };
        let total = eta[0] * w[0] + eta[1] * w[1];
        let prediction = eta[1] * w[1] / total;
        let step = learner
            .learn_one(AdviceRound::new(&[0.0, 1.0], outcome))
            .unwrap();
        assert!((step.prediction.unwrap() - prediction).abs() < 1e-12);
        let learner_loss = (prediction - outcome).abs();
        for i in 0..2 {
            let r = learner_loss - (i as f64 - outcome).abs();
            v[i] += r * r;
            let next = rate(v[i]);
            w[i] = (w[i] * (1.0 + eta[i] * r)).powf(next / eta[i]);
            moved |= next < eta[i];
            eta[i] = next;
        }
        let total = eta[0] * w[0] + eta[1] * w[1];
        let weights = learner.weights();
        assert!(
            (weights[0] - eta[0] * w[0] / total).abs() < 1e-12,
            "round {t}: {weights:?}"
        );
        for (found, expected) in learner.learning_rates().iter().zip(&eta) {
            assert!(
                (found - expected).abs() <= 1e-15 * expected,
                "{found} vs {expected}"
            );
        }
    }
    assert!(moved, "the rates never moved");
}

/// Without a loss range ML-Prod runs opera's form: w_0 = 1, the rate min(1/(2E), √(ln N/(1 +
/// V))) and the factor taken at the new rate; it reports no bound, and says why.
#[test]
fn ml_prod_without_a_range_is_operas_and_has_no_bound() {
    let mut learner = MlProdParams::new(2)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    learner
        .learn_one(AdviceRound::new(&[0.0, 1.0], 0.0))
        .unwrap();
    // E = 0.5, V = 0.25: η = min(1, √(ln 2/1.25)); ln w = ln(1 + η r).
    let eta = 1f64.min((2f64.ln() / 1.25).sqrt());
    let (up, down) = (1.0 + eta * 0.5, 1.0 - eta * 0.5);
    let weights = learner.weights();
    assert!((weights[0] - up / (up + down)).abs() < 1e-12, "{weights:?}");
    assert!(learner.regret_bound().value().is_none());
}

/// A round whose regret falls below −1/(2η) (a loss beyond B) voids the bound of ML-Prod and
/// of BOA, and leaves their weights finite.
#[test]
fn ml_prod_and_boa_report_no_bound_out_of_range() {
    for rule in [Rule::Mlprod, Rule::Boa] {
        let mut learner = AggregatorParams::new(rule, 2)
            .loss(Loss::Absolute)
            .loss_bound(1.0)
            .check()
            .unwrap()
            .build()
            .unwrap();
        learner
            .learn_advice(AdviceRound::new(&[0.0, 5.0], 0.0), Loss::Absolute)
            .unwrap();
        assert_eq!(learner.out_of_range_rounds(), 1, "{rule:?}");
        assert!(learner.regret_bound().value().is_none(), "{rule:?}");
        assert!(learner.weights().iter().all(|w| w.is_finite()), "{rule:?}");
    }
}

/// ML-EWA on two hand-computed rounds: p ∝ exp(η R), η = √(ln N/V) per expert.
#[test]
fn ml_ewa_matches_hand_computed_rounds() {
    let mut learner = MlEwaParams::new(3)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let first = learner
        .learn_one(AdviceRound::new(&[0.0, 1.0, 0.5], 0.0))
        .unwrap();
    assert_eq!(first.prediction, Some(0.5));
    // r = (0.5, −0.5, 0): the third expert keeps exponent 0 (V = 0).
    let ln3 = 3f64.ln();
    let mut regrets = [0.5, -0.5, 0.0];
    let mut squared = [0.25, 0.25, 0.0];
    let softmax = |r: &[f64; 3], v: &[f64; 3]| {
        let e: Vec<f64> = (0..3)
            .map(|i| {
                if v[i] > 0.0 {
                    ((ln3 / v[i]).sqrt() * r[i]).exp()
                } else {
                    1.0
                }
            })
            .collect();
        let total: f64 = e.iter().sum();
        e.iter().map(|x| x / total).collect::<Vec<f64>>()
    };
    let expected = softmax(&regrets, &squared);
    for (w, e) in learner.weights().iter().zip(&expected) {
        assert!((w - e).abs() < 1e-12, "{w} vs {e}");
    }
    let second = learner
        .learn_one(AdviceRound::new(&[0.0, 1.0, 0.5], 1.0))
        .unwrap();
    let prediction = expected[1] + 0.5 * expected[2];
    assert!((second.prediction.unwrap() - prediction).abs() < 1e-12);
    let own = [1.0, 0.0, 0.5];
    for i in 0..3 {
        let r = (1.0 - prediction) - own[i];
        regrets[i] += r;
        squared[i] += r * r;
    }
    let expected = softmax(&regrets, &squared);
    for (w, e) in learner.weights().iter().zip(&expected) {
        assert!((w - e).abs() < 1e-12, "{w} vs {e}");
    }
    assert!(learner.regret_bound().value().is_none());
}

/// BOA on three hand-computed rounds: η = 1/√(2.2 V), R̃ = Σ (r − η r²) with each round's
/// term at the rate that counts it, p ∝ η exp(η R̃) over the experts with V > 0, the others
/// at their initial weight.
#[test]
fn boa_matches_hand_computed_rounds() {
    let mut learner = BoaParams::new(3)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let advice = [0.0, 1.0, 0.4];
    let mut regularised = [0.0; 3];
    let mut squared = [0.0; 3];
    let expected_weights = |reg: &[f64; 3], sq: &[f64; 3]| -> Vec<f64> {
        let learned: Vec<usize> = (0..3).filter(|&i| sq[i] > 0.0).collect();
        let exps: Vec<f64> = learned
            .iter()
            .map(|&i| {
                let eta = 1.0 / (2.2 * sq[i]).sqrt();
                eta * (eta * reg[i]).exp()
            })
            .collect();
        let total: f64 = exps.iter().sum();
        let mut w = vec![1.0 / 3.0; 3];
        for (k, &i) in learned.iter().enumerate() {
            w[i] = learned.len() as f64 / 3.0 * exps[k] / total;
        }
        w
    };
    let mut weights = vec![1.0 / 3.0; 3];
    for outcome in [0.0, 1.0, 0.2] {
        let regrets = play_absolute_round(&mut learner, &weights, &advice, outcome);
        for i in 0..3 {
            let r = regrets[i];
            squared[i] += r * r;
            if squared[i] > 0.0 {
                regularised[i] += r - r * r / (2.2 * squared[i]).sqrt();
            }
        }
        weights = expected_weights(&regularised, &squared);
        for (w, e) in learner.weights().iter().zip(&weights) {
            assert!((w - e).abs() < 1e-12, "{w} vs {e}");
        }
    }
    assert!(learner.regret_bound().value().is_none());
}

/// With one expert every rule copies it; ML-Prod's bound is 0.
#[test]
fn one_expert_is_copied() {
    let mut prod = MlProdParams::new(1)
        .loss_bound(1.0)
        .check()
        .unwrap()
        .build();
    let mut ewa = MlEwaParams::new(1).check().unwrap().build();
    let mut boa = BoaParams::new(1).gradient(true).check().unwrap().build();
    for t in 0..50 {
        let advice = [(t % 3) as f64 / 3.0];
        let round = AdviceRound::new(&advice, (t % 2) as f64);
        for step in [
            prod.learn_one(round).unwrap(),
            ewa.learn_one(round).unwrap(),
            boa.learn_one(round).unwrap(),
        ] {
            assert_eq!(step.prediction, Some(advice[0]));
        }
    }
    assert_eq!(prod.regret_bound().value(), Some(0.0));
}

/// A loss range near the largest accepted (10²⁰⁰) keeps ML-Prod's rates finite and positive:
/// B² would overflow, B² + V is taken through hypot.
#[test]
fn ml_prod_takes_the_largest_range() {
    let mut learner = MlProdParams::new(3)
        .loss_bound(1e200)
        .check()
        .unwrap()
        .build();
    for t in 0..20 {
        learner
            .learn_one(AdviceRound::new(&[0.0, 1.0, t as f64], 0.5))
            .unwrap();
    }
    assert!(learner.learning_rates().iter().all(|&eta| eta > 0.0));
    assert!(learner.regret_bound().value().is_some());
}
