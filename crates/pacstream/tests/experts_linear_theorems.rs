//! The theorems of online gradient descent, follow the regularised leader and online ridge
//! regression over the experts, as tests: each bound holds on adversarial and random
//! sequences (with sleeping experts where the rule takes them), and is shown approached,
//! with the fraction stated, so that a wrong bound or a wrong update makes a test fail.

// The measured fractions are printed for the record (`--nocapture`), beside the assertions.
#![allow(clippy::print_stderr)]

use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorParams, ConvexCombinationOracle, FtrlParams, LearningRate,
    Loss, OnlineGradientDescentParams, OnlineRidgeParams, Regulariser, Rule,
};
use pacstream::{OnlineLearner, StreamRng};

/// The sequences the simplex rules are tried on.
#[derive(Clone, Copy, Debug)]
enum Sequence {
    /// Two experts advising 0 and 1, the outcome 1 − round(ŷ): with the absolute loss the
    /// loss is linear in the weights, so the regret is the linearised regret exactly.
    Opposite,
    /// Expert 0 right for the first half, expert 1 for the second: the learner follows the
    /// first and lags behind the second.
    Switch,
    /// Random outcomes, noisy advice, sleeping experts.
    RandomSleeping,
}

fn play_simplex(
    learner: &mut dyn Aggregator,
    n: usize,
    rounds: usize,
    sequence: Sequence,
    loss: Loss,
    rng: &mut StreamRng,
) {
    for t in 0..rounds {
        let weights = learner.weights();
        let (advice, outcome, awake): (Vec<f64>, f64, Option<Vec<bool>>) = match sequence {
            Sequence::Opposite => {
                let advice: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
                let prediction: f64 = weights.iter().zip(&advice).map(|(w, a)| w * a).sum();
                let outcome = if prediction < 0.5 { 1.0 } else { 0.0 };
                (advice, outcome, None)
            }
            Sequence::Switch => {
                let advice: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
                (advice, if 2 * t < rounds { 0.0 } else { 1.0 }, None)
            }
            Sequence::RandomSleeping => {
                let outcome = rng.next_f64();
                let advice = (0..n)
                    .map(|i| outcome + 0.2 * i as f64 * rng.standard_normal())
                    .collect();
                let awake = (0..n).map(|i| i == t % n || rng.next_f64() < 0.6).collect();
                (advice, outcome, Some(awake))
            }
        };
        let round = AdviceRound {
            advice: &advice,
            outcome,
            awake: awake.as_deref(),
        };
        learner.learn_advice(round, loss).unwrap();
    }
}

// Measured (seeded, deterministic): OGD 0.938 (the opposite-answer adversary, η = 10), FTRL
// quadratic 0.962, FTRL entropic 0.922, ridge 0.938 (the ±1 adversary, N = 1, λ = 1); each
// test asserts above 0.85, so that a bound 15% too small, or a learner that pays more than
// its theorem allows, fails.

/// The largest regret / bound over every expert, checking that none is above 1.
fn largest_fraction(learner: &dyn Aggregator, label: &str) -> f64 {
    let n = learner.ledger().expert_losses().len();
    let mut largest = f64::NEG_INFINITY;
    for k in 0..n {
        let regret = learner.ledger().regret_against(k);
        let bound = learner.regret_bound_against(k).value().unwrap();
        assert!(regret <= bound, "{label} expert {k}: {regret} > {bound}");
        largest = largest.max(regret / bound);
    }
    largest
}

fn simplex_rule_bound(rule: Rule, regulariser: Option<Regulariser>) -> f64 {
    let mut rng = StreamRng::seed_from(21);
    let mut largest = 0.0f64;
    for (sequence, n, loss) in [
        (Sequence::Opposite, 2, Loss::Absolute),
        (Sequence::Switch, 2, Loss::Absolute),
        (Sequence::RandomSleeping, 4, Loss::Square),
        (Sequence::RandomSleeping, 3, Loss::Pinball { tau: 0.1 }),
        (Sequence::RandomSleeping, 5, Loss::Absolute),
    ] {
        for eta in [0.01, 0.1, 1.0, 10.0] {
            let mut params = AggregatorParams::new(rule, n)
                .rate(LearningRate::Fixed(eta))
                .loss(loss);
            params.regulariser = regulariser;
            let config = params.check().unwrap();
            let mut learner = config.build().unwrap();
            play_simplex(&mut learner, n, 2000, sequence, loss, &mut rng);
            let label = format!("{rule:?} {regulariser:?} {sequence:?} {loss:?} η {eta}");
            let fraction = largest_fraction(&learner, &label);
            eprintln!("{label}: regret / bound {fraction:.3}");
            largest = largest.max(fraction);
        }
    }
    largest
}

#[test]
fn online_gradient_descent_bound_holds_and_is_approached() {
    let largest = simplex_rule_bound(Rule::Ogd, None);
    eprintln!("OGD: largest regret / bound {largest:.3}");
    assert!(largest > 0.85, "largest regret / bound {largest}");
}

#[test]
fn ftrl_quadratic_bound_holds_and_is_approached() {
    let largest = simplex_rule_bound(Rule::Ftrl, Some(Regulariser::Quadratic));
    eprintln!("FTRL quadratic: largest regret / bound {largest:.3}");
    assert!(largest > 0.85, "largest regret / bound {largest}");
}

#[test]
fn ftrl_entropic_bound_holds_and_is_approached() {
    let largest = simplex_rule_bound(Rule::Ftrl, Some(Regulariser::Entropic));
    eprintln!("FTRL entropic: largest regret / bound {largest:.3}");
    assert!(largest > 0.85, "largest regret / bound {largest}");
}

/// inf_u Σ_t (u·x_t − y_t)² + λ‖u − w₀‖², from the normal equations (small N, Gaussian
/// elimination).
fn penalised_least_squares(rows: &[(Vec<f64>, f64)], lambda: f64) -> f64 {
    let n = rows[0].0.len();
    let centre = 1.0 / n as f64;
    // In u = w₀ + d: Σ (d·x − r)² + λ‖d‖², r = y − w₀·x.
    let mut a = vec![vec![0.0; n + 1]; n];
    for i in 0..n {
        a[i][i] = lambda;
    }
    for (x, y) in rows {
        let r = y - centre * x.iter().sum::<f64>();
        for i in 0..n {
            for j in 0..n {
                a[i][j] += x[i] * x[j];
            }
            a[i][n] += x[i] * r;
        }
    }
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))
            .unwrap();
        a.swap(col, pivot);
        for row in 0..n {
            if row != col {
                let factor = a[row][col] / a[col][col];
                for k in col..=n {
                    a[row][k] -= factor * a[col][k];
                }
            }
        }
    }
    let d: Vec<f64> = (0..n).map(|i| a[i][n] / a[i][i]).collect();
    let mut total = lambda * d.iter().map(|v| v * v).sum::<f64>();
    for (x, y) in rows {
        let u_x: f64 = x.iter().zip(&d).map(|(a, b)| (centre + b) * a).sum();
        total += (u_x - y) * (u_x - y);
    }
    total
}

/// The Vovk–Azoury–Warmuth bound against the best penalised linear combination,
/// L̂ − inf_u (L(u) + λ‖u − w₀‖²) ≤ Y² ln det(I + Σ x xᵀ/λ), holds on adversarial and random
/// sequences and is approached by the adversary that answers ±Y against the prediction.
#[test]
fn ridge_bound_holds_and_is_approached() {
    let mut rng = StreamRng::seed_from(22);
    let mut largest = 0.0f64;
    for (n, lambda, adversarial) in [
        (1, 1.0, true),
        (1, 0.1, true),
        (2, 1.0, true),
        (3, 0.5, false),
        (4, 10.0, false),
    ] {
        let mut learner = OnlineRidgeParams::new(n, lambda).check().unwrap().build();
        let mut rows = Vec::new();
        let mut largest_residual = 0.0f64;
        for t in 0..3000 {
            let x: Vec<f64> = if adversarial {
                (0..n).map(|i| if i == t % n { 1.0 } else { 0.0 }).collect()
            } else {
                (0..n).map(|_| rng.standard_normal()).collect()
            };
            // The centre's forecast is w₀·x; the adversary answers ±1 around it, against
            // the learner's prediction (which it computes from a clone).
            let centre: f64 = x.iter().sum::<f64>() / n as f64;
            let y = if adversarial {
                let mut probe = learner.clone();
                let prediction = probe
                    .learn_one(AdviceRound::new(&x, 0.0))
                    .unwrap()
                    .prediction
                    .unwrap();
                centre + if prediction > centre { -1.0 } else { 1.0 }
            } else {
                centre + 2.0 * rng.next_f64() - 1.0
            };
            largest_residual = largest_residual.max((y - centre) * (y - centre));
            learner.learn_one(AdviceRound::new(&x, y)).unwrap();
            rows.push((x, y));
        }
        let regret = learner.ledger().learner_loss() - penalised_least_squares(&rows, lambda);
        let bound = largest_residual * learner.log_det();
        assert!(regret <= bound, "n {n} λ {lambda}: {regret} > {bound}");
        for k in 0..n {
            let against = learner.ledger().regret_against(k);
            let bound_k = learner.regret_bound_against(k).value().unwrap();
            assert!(
                against <= bound_k,
                "n {n} expert {k}: {against} > {bound_k}"
            );
        }
        eprintln!(
            "ridge n {n} λ {lambda} adversarial {adversarial}: regret {regret:.3}, bound \
             {bound:.3}, fraction {:.3}",
            regret / bound
        );
        largest = largest.max(regret / bound);
    }
    eprintln!("ridge: largest regret / bound {largest:.3}");
    assert!(largest > 0.85, "largest regret / bound {largest}");
}

/// Ridge competes with the best *linear* combination: on a stream where the outcome is a
/// combination with weights outside the simplex, its loss comes within its bound of that
/// oracle, well below the best convex combination.
#[test]
fn ridge_against_the_linear_and_convex_oracles() {
    let mut rng = StreamRng::seed_from(23);
    let n = 3;
    let lambda = 1.0;
    let mut learner = OnlineRidgeParams::new(n, lambda).check().unwrap().build();
    let mut oracle = ConvexCombinationOracle::new(n);
    for _ in 0..2000 {
        let x: Vec<f64> = (0..n).map(|_| rng.standard_normal()).collect();
        let y = 1.5 * x[0] - 0.7 * x[1] + 0.1 * rng.standard_normal();
        learner.learn_one(AdviceRound::new(&x, y)).unwrap();
        oracle.observe(&x, y).unwrap();
    }
    let (linear_weights, linear) = oracle.solve_linear();
    let (_, convex) = oracle.solve();
    let loss = learner.ledger().learner_loss();
    let bound = learner.regret_bound_linear(&linear_weights);
    eprintln!(
        "ridge {loss:.2}, linear oracle {linear:.2} (+ bound {bound:.2}), convex {convex:.2}"
    );
    assert!(loss - linear <= bound, "{loss} − {linear} > {bound}");
    assert!(loss < 0.5 * convex, "{loss} vs convex {convex}");
}

/// FTRL with the entropic regulariser is exponential weights on the linearised losses: it
/// plays as EWA with the gradient trick and the same fixed η, round by round.
#[test]
fn entropic_ftrl_is_ewa_with_the_gradient_trick() {
    let mut rng = StreamRng::seed_from(24);
    let n = 4;
    let mut ftrl = FtrlParams::new(n, 0.3)
        .regulariser(Regulariser::Entropic)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let mut ewa = AggregatorParams::new(Rule::Ewa, n)
        .rate(LearningRate::Fixed(0.3))
        .loss(Loss::Absolute)
        .loss_bound(10.0);
    ewa.gradient = true;
    let mut ewa = ewa.check().unwrap().build().unwrap();
    for _ in 0..300 {
        let outcome = rng.next_f64();
        let advice: Vec<f64> = (0..n)
            .map(|i| outcome + 0.3 * i as f64 * rng.standard_normal())
            .collect();
        let round = AdviceRound::new(&advice, outcome);
        let a = ftrl.learn_one(round).unwrap().prediction.unwrap();
        let b = ewa
            .learn_advice(round, Loss::Absolute)
            .unwrap()
            .prediction
            .unwrap();
        assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

/// Online gradient descent's step is η/√t and its weights stay on the simplex; a hand
/// computed first round: N = 2, advice (0, 1), outcome 1, absolute loss: ŷ = ½, ℓ' = −1,
/// g = (0, −1), centred (½, −½); p₂ = Π(½ − η·½, ½ + η·½) = (¼, ¾) for η = ½.
#[test]
fn online_gradient_descent_first_round_by_hand() {
    let mut ogd = OnlineGradientDescentParams::new(2, 0.5)
        .loss(Loss::Absolute)
        .check()
        .unwrap()
        .build();
    let step = ogd.learn_one(AdviceRound::new(&[0.0, 1.0], 1.0)).unwrap();
    assert_eq!(step.prediction, Some(0.5));
    assert_eq!(step.learning_rate, Some(0.5));
    assert_eq!(ogd.weights(), vec![0.25, 0.75]);
    // Round 2 steps η/√2: g = (0, −1) again, centred (½, −½): (¼ − ½·0.3536, …).
    let step = ogd.learn_one(AdviceRound::new(&[0.0, 1.0], 1.0)).unwrap();
    assert_eq!(step.prediction, Some(0.75));
    let expected = 0.25 - 0.5 / 2f64.sqrt() * 0.5;
    assert!((ogd.weights()[0] - expected).abs() < 1e-15);
}

/// The bounds of online gradient descent and of FTRL with the quadratic regulariser, pinned
/// term by term by a computation from the theorems' statements that shares nothing with the
/// learners but the loss's derivative: each round's gradient g_{t,i} = ℓ'(ŷ_t, y_t) ỹ_{t,i}
/// (ŷ_t for an asleep expert, the specialists' reduction), centred, then
/// - OGD (Hazan 2016, Theorem 3.1, steps η_t = η/√t, simplex of diameter D = √2):
///   D²/(2η_T) + ½ Σ_t η_t ‖g_t − ḡ_t 1‖²;
/// - FTRL with R(p) = ½‖p‖²/η, which is (1/η)-strongly convex (Shalev-Shwartz 2012,
///   Theorem 2.11): (max_k R(e_k) − min_Δ R) + η Σ_t ‖g_t − ḡ_t 1‖², where
///   max_k ½‖e_k‖² = ½ and min_Δ ½‖p‖² = 1/(2N).
///
/// The runs are chosen so that each of the two terms is at least a quarter of the bound in
/// some run: a factor changed in either term moves the reported bound far beyond the 1e-9
/// tolerance. (The approach tests above are dominated by one term each.)
#[test]
fn simplex_bounds_pinned_by_the_theorems_statements() {
    let mut rng = StreamRng::seed_from(27);
    let (mut first_share, mut second_share) = ([0.0f64; 2], [0.0f64; 2]);
    for (k, rule) in [Rule::Ogd, Rule::Ftrl].into_iter().enumerate() {
        for (sequence, n, loss) in [
            (Sequence::Opposite, 2, Loss::Absolute),
            (Sequence::RandomSleeping, 4, Loss::Square),
            (Sequence::RandomSleeping, 3, Loss::Pinball { tau: 0.3 }),
        ] {
            for eta in [0.03, 0.3, 3.0] {
                let mut params = AggregatorParams::new(rule, n)
                    .rate(LearningRate::Fixed(eta))
                    .loss(loss);
                if rule == Rule::Ftrl {
                    params.regulariser = Some(Regulariser::Quadratic);
                }
                let mut learner = params.check().unwrap().build().unwrap();
                let mut step_weighted = 0.0; // Σ_t η_t ‖g_t − ḡ_t‖² (OGD)
                let mut plain = 0.0; // Σ_t ‖g_t − ḡ_t‖² (FTRL)
                let mut rounds = 0u64;
                for t in 1..=400u64 {
                    let weights = learner.weights();
                    let (advice, outcome, awake): (Vec<f64>, f64, Option<Vec<bool>>) =
                        match sequence {
                            Sequence::Opposite => {
                                let advice = vec![0.0, 1.0];
                                let prediction = weights[1];
                                (advice, if prediction < 0.5 { 1.0 } else { 0.0 }, None)
                            }
                            _ => {
                                let outcome = rng.next_f64();
                                let advice = (0..n)
                                    .map(|i| outcome + 0.3 * i as f64 * rng.standard_normal())
                                    .collect();
                                let awake = (0..n)
                                    .map(|i| i as u64 == t % n as u64 || rng.next_f64() < 0.6)
                                    .collect();
                                (advice, outcome, Some(awake))
                            }
                        };
                    let round = AdviceRound {
                        advice: &advice,
                        outcome,
                        awake: awake.as_deref(),
                    };
                    let step = learner.learn_advice(round, loss).unwrap();
                    let prediction = step.prediction.unwrap();
                    let slope = loss.gradient(prediction, outcome);
                    let gradient: Vec<f64> = (0..n)
                        .map(|i| {
                            let is_awake = awake.as_ref().is_none_or(|a| a[i]);
                            slope * if is_awake { advice[i] } else { prediction }
                        })
                        .collect();
                    let mean = gradient.iter().sum::<f64>() / n as f64;
                    let norm: f64 = gradient.iter().map(|g| (g - mean).powi(2)).sum();
                    step_weighted += eta / (t as f64).sqrt() * norm;
                    plain += norm;
                    rounds = t;
                }
                let (first, second) = if rule == Rule::Ogd {
                    let diameter_squared = 2.0;
                    let last_step = eta / (rounds as f64).sqrt();
                    (diameter_squared / (2.0 * last_step), 0.5 * step_weighted)
                } else {
                    let regulariser_range = 0.5 - 0.5 / n as f64;
                    (regulariser_range / eta, eta * plain)
                };
                let expected = first + second;
                for expert in 0..n {
                    let reported = learner.regret_bound_against(expert).value().unwrap();
                    assert!(
                        (reported - expected).abs() <= 1e-9 * expected,
                        "{rule:?} {sequence:?} {loss:?} η {eta} expert {expert}: reported \
                         {reported}, theorem {expected} ({first} + {second})"
                    );
                }
                first_share[k] = first_share[k].max(first / expected);
                second_share[k] = second_share[k].max(second / expected);
            }
        }
    }
    for k in 0..2 {
        assert!(
            first_share[k] >= 0.25 && second_share[k] >= 0.25,
            "{first_share:?} {second_share:?}"
        );
    }
}
