//! `learn_one` on arbitrary floats, for every learner of the library.
//!
//! Whatever the values (NaN, infinities, subnormals, ±1e308, advice of 1e200) and small
//! arbitrary settings: `learn_one` never panics; when it succeeds, every number it reports
//! (losses, regrets, weights, centres) is finite; when it fails, the learner is exactly as it
//! was (its snapshot is unchanged).

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use pacstream::experts::{
    AdviceRound, Aggregator, BoaParams, EwaParams, ExpertLedger, ExpertStep, FixedShareParams,
    FplParams, HedgeParams, LearningRate, Loss, LossRound, MlEwaParams, MlPolyParams, MlProdParams,
    RandomizedWeightedMajorityParams, WeightedMajorityParams,
};
use pacstream::{OnlineLearner, UnsupervisedLearner};
use serde::Serialize;

/// A float the fuzzer steers towards the values that break arithmetic.
fn value(u: &mut Unstructured<'_>) -> arbitrary::Result<f64> {
    Ok(match u.int_in_range(0..=9)? {
        0 => f64::from_bits(u64::arbitrary(u)?),
        1 => f64::from(i8::arbitrary(u)?),
        2 => f64::from(i32::arbitrary(u)?) * 1e-3,
        3 => *u.choose(&[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            -0.0,
            1e100,
            -1e100,
            1.000_000_000_000_1e100,
            1e150,
            1e200,
            1e300,
        ])?,
        4 => f64::from(u8::arbitrary(u)? % 2),
        _ => f64::from(u16::arbitrary(u)?) / 100.0 - 300.0,
    })
}

fn values(u: &mut Unstructured<'_>, n: usize) -> arbitrary::Result<Vec<f64>> {
    (0..n).map(|_| value(u)).collect()
}

/// The snapshot of a learner, to check that a failed step changed nothing.
fn snapshot<L: Serialize>(learner: &L) -> String {
    serde_json::to_string(learner).expect("every learner serialises")
}

fn finite(what: &str, x: f64) {
    assert!(x.is_finite(), "{what} is {x}");
}

fn check_expert_step(step: &ExpertStep, ledger: &ExpertLedger, weights: &[f64]) {
    finite("the loss", step.loss);
    finite("the regret", step.regret);
    if let Some(p) = step.prediction {
        finite("the prediction", p);
    }
    if let Some(l) = step.realised_loss {
        finite("the realised loss", l);
    }
    finite("the learner's cumulative loss", ledger.learner_loss());
    for &l in ledger.expert_losses() {
        finite("an expert's cumulative loss", l);
    }
    for &w in weights {
        assert!(w.is_finite() && w >= 0.0, "a weight is {w}");
    }
    let total: f64 = weights.iter().sum();
    assert!((total - 1.0).abs() < 1e-6, "the weights sum to {total}");
}

/// One learner's run over the rounds, checking every step.
macro_rules! run_rounds {
    ($learner:expr, $rounds:expr, $input:expr, $check:expr) => {{
        let mut learner = $learner;
        for round in &$rounds {
            let before = snapshot(&learner);
            match learner.learn_one($input(round)) {
                Ok(step) => $check(&learner, &step),
                Err(_) => assert_eq!(
                    snapshot(&learner),
                    before,
                    "a failed step changed the learner"
                ),
            }
        }
    }};
}

type Round = (Vec<f64>, f64, Option<Vec<bool>>);

fn point_of(point: &Vec<f64>) -> &[f64] {
    point
}

fn advice_of(round: &Round) -> AdviceRound<'_> {
    AdviceRound {
        advice: &round.0,
        outcome: round.1,
        awake: round.2.as_deref(),
    }
}

fn losses_of(round: &Round) -> LossRound<'_> {
    LossRound {
        losses: &round.0,
        awake: round.2.as_deref(),
    }
}

fn loss(u: &mut Unstructured<'_>) -> arbitrary::Result<Loss> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Loss::ZeroOne,
        1 => Loss::Square,
        2 => Loss::Absolute,
        _ => Loss::Pinball { tau: value(u)? },
    })
}

/// What every rule's step must satisfy, through the trait every rule implements.
fn check_rule<A: Aggregator>(rule: &A, step: &ExpertStep) {
    check_expert_step(step, rule.ledger(), &rule.weights());
}

/// [`check_rule`], and a bound, when the theorem gives one, is finite.
fn check_rule_and_bound<A: Aggregator>(rule: &A, step: &ExpertStep) {
    check_rule(rule, step);
    if let Some(b) = rule.regret_bound().value() {
        finite("the bound", b);
    }
}

fn rate(u: &mut Unstructured<'_>) -> arbitrary::Result<LearningRate> {
    Ok(match u.int_in_range(0..=4)? {
        0 => LearningRate::Fixed(value(u)?),
        1 => LearningRate::Horizon(u64::arbitrary(u)?),
        2 => LearningRate::Anytime,
        3 => LearningRate::Doubling,
        _ => LearningRate::AdaHedge,
    })
}

fn run(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let learner = u.int_in_range(0..=9)?;
    let dim = u.int_in_range(1..=3)?;
    let n_rounds = u.int_in_range(1..=40)?;
    let seed = u64::arbitrary(u)?;
    match learner {
        0 => {
            let k = u.int_in_range(1..=3)?;
            let mut params = pacstream::kmeans::SequentialKMeansParams::new(k)
                .init_size(k + u.int_in_range(0..=4)?)
                .seed(seed);
            if bool::arbitrary(u)? {
                params = params.decay_half_life(value(u)?);
            }
            if bool::arbitrary(u)? {
                params = params.reassignment_ratio(value(u)?);
            }
            let Ok(config) = params.check() else {
                return Ok(());
            };
            let mut learner = config.build();
            for _ in 0..n_rounds {
                let point = values(u, dim)?;
                let weight = value(u)?;
                let before = snapshot(&learner);
                match learner.learn_one_weighted(&point, weight) {
                    Ok(step) => {
                        if let Some(loss) = step.loss {
                            assert!(loss.is_finite() && loss >= 0.0, "loss {loss}");
                        }
                        if let Some(centres) = learner.centres() {
                            assert!(centres.iter().flatten().all(|c| c.is_finite()));
                        }
                    }
                    Err(_) => assert_eq!(snapshot(&learner), before),
                }
            }
        }
        1 => {
            let radius = if bool::arbitrary(u)? {
                pacstream::paco::Radius::Auto
            } else {
                pacstream::paco::Radius::Given(value(u)?)
            };
            let mut params = pacstream::paco::PacoParams::new()
                .max_k(u.int_in_range(1..=4)?)
                .warmup(u.int_in_range(1..=4)?)
                .iterations(u.int_in_range(1..=8)?)
                .radius(radius)
                .scale(bool::arbitrary(u)?)
                .eta(value(u)?)
                .seed(seed);
            if bool::arbitrary(u)? {
                params = params.memory(pacstream::paco::Memory::Window(u.int_in_range(1..=6)?));
            }
            if bool::arbitrary(u)? {
                params = params.coeff(value(u)?);
            }
            let Ok(config) = params.check() else {
                return Ok(());
            };
            let points: Vec<Vec<f64>> = (0..n_rounds)
                .map(|_| values(u, dim))
                .collect::<arbitrary::Result<_>>()?;
            run_rounds!(
                config.build(),
                points,
                point_of,
                |learner: &pacstream::paco::Paco, step: &pacstream::paco::PacoStep| {
                    if let Some(loss) = step.loss {
                        assert!(loss.is_finite() && loss >= 0.0, "loss {loss}");
                    }
                    if let Some(centres) = learner.model() {
                        assert!(centres.iter().flatten().all(|c| c.is_finite()));
                    }
                }
            );
        }
        2 => {
            let mut params = pacstream::curves::PrincipalCurveParams::new()
                .warmup(u.int_in_range(2..=5)?)
                .max_candidates(u.int_in_range(1..=16)?)
                .local_vertices(u.int_in_range(2..=6)?)
                .max_segments(u.int_in_range(1..=6)?)
                .seed(seed);
            if bool::arbitrary(u)? {
                params = params.radius(pacstream::curves::Radius::Given(value(u)?));
            }
            if bool::arbitrary(u)? {
                params = params.feedback(pacstream::curves::Feedback::Full);
            }
            if bool::arbitrary(u)? {
                params = params.memory(pacstream::curves::Memory::Window(u.int_in_range(2..=8)?));
            }
            let Ok(config) = params.check() else {
                return Ok(());
            };
            let points: Vec<Vec<f64>> = (0..n_rounds)
                .map(|_| values(u, dim))
                .collect::<arbitrary::Result<_>>()?;
            run_rounds!(
                config.build(),
                points,
                point_of,
                |learner: &pacstream::curves::PrincipalCurveLearner,
                 step: &pacstream::curves::PrincipalCurveStep| {
                    if let Some(loss) = step.loss {
                        assert!(loss.is_finite() && loss >= 0.0, "loss {loss}");
                    }
                    if let Some(curve) = learner.curve() {
                        assert!(curve.vertices().iter().all(|v| v.is_finite()));
                    }
                }
            );
        }
        _ => {
            let n = u.int_in_range(1..=4)?;
            let rounds: Vec<Round> = (0..n_rounds)
                .map(|_| -> arbitrary::Result<_> {
                    let awake = if bool::arbitrary(u)? {
                        Some(
                            (0..n)
                                .map(|_| bool::arbitrary(u))
                                .collect::<arbitrary::Result<_>>()?,
                        )
                    } else {
                        None
                    };
                    Ok((values(u, n)?, value(u)?, awake))
                })
                .collect::<arbitrary::Result<_>>()?;
            let bound = if bool::arbitrary(u)? {
                Some(value(u)?)
            } else {
                None
            };
            let prior = if bool::arbitrary(u)? {
                Some(values(u, n)?)
            } else {
                None
            };
            match learner {
                3 => {
                    let Ok(p) = WeightedMajorityParams::new(n).beta(value(u)?).check() else {
                        return Ok(());
                    };
                    run_rounds!(p.build(), rounds, advice_of, check_rule);
                }
                4 => {
                    let Ok(p) = RandomizedWeightedMajorityParams::new(n)
                        .learning_rate(rate(u)?)
                        .seed(seed)
                        .check()
                    else {
                        return Ok(());
                    };
                    run_rounds!(p.build(), rounds, advice_of, check_rule);
                }
                5 => {
                    let mut params = HedgeParams::new(n)
                        .learning_rate(rate(u)?)
                        .sample(bool::arbitrary(u)?)
                        .seed(seed);
                    if let Some(b) = bound {
                        params = params.loss_bound(b);
                    }
                    if let Some(prior) = prior {
                        params = params.prior(prior);
                    }
                    let Ok(p) = params.check() else {
                        return Ok(());
                    };
                    run_rounds!(p.build(), rounds, losses_of, check_rule);
                }
                6 => {
                    let loss = loss(u)?;
                    let mut params = EwaParams::new(n)
                        .loss(loss)
                        .learning_rate(rate(u)?)
                        .gradient(bool::arbitrary(u)?);
                    if let Some(b) = bound {
                        params = params.loss_bound(b);
                    }
                    if let Some(prior) = prior {
                        params = params.prior(prior);
                    }
                    let Ok(p) = params.check() else {
                        return Ok(());
                    };
                    run_rounds!(p.build(), rounds, advice_of, check_rule);
                }
                8 | 9 => {
                    let loss = loss(u)?;
                    let gradient = bool::arbitrary(u)?;
                    if learner == 8 {
                        let mut params = FixedShareParams::new(n, value(u)?, value(u)?)
                            .loss(loss)
                            .gradient(gradient);
                        params.loss_bound = bound;
                        let Ok(p) = params.check() else {
                            return Ok(());
                        };
                        run_rounds!(p.build(), rounds, advice_of, check_rule_and_bound);
                    } else {
                        // The rules with one rate per expert: ML-Poly, ML-Prod, ML-EWA, BOA.
                        match u.int_in_range(0..=3)? {
                            0 => {
                                let Ok(p) =
                                    MlPolyParams::new(n).loss(loss).gradient(gradient).check()
                                else {
                                    return Ok(());
                                };
                                run_rounds!(p.build(), rounds, advice_of, check_rule_and_bound);
                            }
                            1 => {
                                let mut params = MlProdParams::new(n).loss(loss).gradient(gradient);
                                params.loss_bound = bound;
                                let Ok(p) = params.check() else {
                                    return Ok(());
                                };
                                run_rounds!(p.build(), rounds, advice_of, check_rule_and_bound);
                            }
                            2 => {
                                let Ok(p) =
                                    MlEwaParams::new(n).loss(loss).gradient(gradient).check()
                                else {
                                    return Ok(());
                                };
                                run_rounds!(p.build(), rounds, advice_of, check_rule_and_bound);
                            }
                            _ => {
                                let mut params = BoaParams::new(n).loss(loss).gradient(gradient);
                                params.loss_bound = bound;
                                let Ok(p) = params.check() else {
                                    return Ok(());
                                };
                                run_rounds!(p.build(), rounds, advice_of, check_rule_and_bound);
                            }
                        }
                    }
                }
                _ => {
                    let Ok(p) = FplParams::new(n, bound.unwrap_or(1.0))
                        .learning_rate(rate(u)?)
                        .expected_loss(bool::arbitrary(u)?)
                        .seed(seed)
                        .check()
                    else {
                        return Ok(());
                    };
                    run_rounds!(p.build(), rounds, losses_of, check_rule);
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
