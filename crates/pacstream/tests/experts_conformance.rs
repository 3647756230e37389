//! Every expert aggregator passes the conformance suite, with and without sleeping experts,
//! under each learning-rate schedule.

use pacstream::conformance::{
    Conformance, OwnedInput, assert_send_sync, invalid_advice, invalid_binary_advice,
    invalid_losses,
};
use pacstream::experts::{
    AdviceRound, AdviceRoundBuf, BoaParams, Ewa, EwaParams, FixedShareParams,
    FollowThePerturbedLeader, FplParams, FtrlParams, Hedge, HedgeParams, LearningRate, Loss,
    LossRoundBuf, MlEwaParams, MlPolyParams, MlProdParams, OnlineGradientDescentParams,
    OnlineRidge, OnlineRidgeParams, RandomizedWeightedMajority, RandomizedWeightedMajorityParams,
    Regulariser, WeightedMajority, WeightedMajorityParams,
};
use pacstream::{OnlineLearner, StreamRng};
use serde::Serialize;
use serde::de::DeserializeOwned;

const N: usize = 5;

fn binary_rounds(n_rounds: usize, seed: u64) -> Vec<AdviceRoundBuf> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n_rounds)
        .map(|_| AdviceRoundBuf {
            advice: (0..N)
                .map(|_| (rng.next_f64() < 0.5) as u8 as f64)
                .collect(),
            outcome: (rng.next_f64() < 0.3) as u8 as f64,
            awake: None,
        })
        .collect()
}

fn real_rounds(n_rounds: usize, seed: u64, sleeping: bool) -> Vec<AdviceRoundBuf> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n_rounds)
        .map(|_| {
            let outcome = rng.next_f64();
            let awake: Vec<bool> = (0..N).map(|i| i == 0 || rng.next_f64() < 0.7).collect();
            AdviceRoundBuf {
                advice: (0..N)
                    .map(|i| {
                        if sleeping && !awake[i] {
                            f64::NAN // missing advice of an asleep expert is never read
                        } else {
                            outcome + 0.1 * i as f64 * rng.standard_normal()
                        }
                    })
                    .collect(),
                outcome,
                awake: sleeping.then_some(awake),
            }
        })
        .collect()
}

fn loss_rounds(n_rounds: usize, seed: u64, sleeping: bool) -> Vec<LossRoundBuf> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n_rounds)
        .map(|_| LossRoundBuf {
            losses: (0..N)
                .map(|i| (rng.next_f64() + 0.1 * i as f64).min(1.0))
                .collect(),
            awake: sleeping.then(|| (0..N).map(|i| i == 1 || rng.next_f64() < 0.6).collect()),
        })
        .collect()
}

#[test]
fn weighted_majority() {
    assert_send_sync::<WeightedMajority>();
    let stream = binary_rounds(120, 1);
    let make = |_seed| {
        WeightedMajorityParams::new(N)
            .beta(0.7)
            .check()
            .unwrap()
            .build()
    };
    Conformance::new(make, &stream)
        .invalid_first_inputs(&invalid_binary_advice(N))
        .check_all()
        .unwrap();
}

#[test]
fn randomized_weighted_majority() {
    assert_send_sync::<RandomizedWeightedMajority>();
    let stream = binary_rounds(150, 2);
    for rate in [LearningRate::Doubling, LearningRate::Horizon(150)] {
        let make = |seed| {
            RandomizedWeightedMajorityParams::new(N)
                .learning_rate(rate)
                .seed(seed)
                .check()
                .unwrap()
                .build()
        };
        Conformance::new(make, &stream)
            .invalid_first_inputs(&invalid_binary_advice(N))
            .check_all()
            .unwrap();
    }
}

#[test]
fn hedge_every_schedule_with_and_without_sleep() {
    assert_send_sync::<Hedge>();
    for sleeping in [false, true] {
        let stream = loss_rounds(130, 3, sleeping);
        for rate in [
            LearningRate::Fixed(0.3),
            LearningRate::Horizon(130),
            LearningRate::Anytime,
            LearningRate::Doubling,
            LearningRate::AdaHedge,
        ] {
            let make = |seed| {
                HedgeParams::new(N)
                    .learning_rate(rate)
                    .loss_bound(1.0)
                    .prior(vec![1.0, 2.0, 1.0, 0.5, 1.0])
                    .sample(true)
                    .seed(seed)
                    .check()
                    .unwrap()
                    .build()
            };
            Conformance::new(make, &stream)
                .invalid_first_inputs(&invalid_losses(N))
                .cuts(&[0, 1, 2, 4, 63, 64, 65, 129])
                .check_all()
                .unwrap_or_else(|v| panic!("{rate:?} sleeping={sleeping}: {v}"));
        }
    }
}

#[test]
fn ewa_losses_gradient_and_sleep() {
    assert_send_sync::<Ewa>();
    for sleeping in [false, true] {
        let stream = real_rounds(120, 4, sleeping);
        for (loss, gradient, rate) in [
            (Loss::Square, false, LearningRate::AdaHedge),
            (Loss::Square, true, LearningRate::Anytime),
            (Loss::Absolute, false, LearningRate::Doubling),
            (Loss::Pinball { tau: 0.8 }, true, LearningRate::AdaHedge),
        ] {
            let make = |_seed| {
                EwaParams::new(N)
                    .loss(loss)
                    .gradient(gradient)
                    .learning_rate(rate)
                    .loss_bound(4.0)
                    .check()
                    .unwrap()
                    .build()
            };
            Conformance::new(make, &stream)
                .invalid_first_inputs(&invalid_advice(N))
                .check_all()
                .unwrap_or_else(|v| panic!("{loss:?} {gradient} sleeping={sleeping}: {v}"));
        }
    }
}

#[test]
fn follow_the_perturbed_leader() {
    assert_send_sync::<FollowThePerturbedLeader>();
    for sleeping in [false, true] {
        let stream = loss_rounds(100, 5, sleeping);
        for expected in [false, true] {
            let make = |seed| {
                FplParams::new(N, 1.0)
                    .learning_rate(LearningRate::Horizon(100))
                    .expected_loss(expected)
                    .seed(seed)
                    .check()
                    .unwrap()
                    .build()
            };
            Conformance::new(make, &stream)
                .invalid_first_inputs(&invalid_losses(N))
                .check_all()
                .unwrap_or_else(|v| panic!("expected={expected} sleeping={sleeping}: {v}"));
        }
    }
}

/// The suite for an aggregation rule of forecasters, for each of `cases` (a loss and the
/// rule's own settings), on real-valued rounds with and without sleeping experts.
fn check_forecaster<L, C>(stream_seed: u64, cases: &[C], build: impl Fn(C) -> L + Sync)
where
    L: OnlineLearner + Serialize + DeserializeOwned + Send + Sync,
    L::Step: Serialize,
    AdviceRoundBuf: OwnedInput<L>,
    C: Copy + std::fmt::Debug + Sync,
{
    assert_send_sync::<L>();
    for sleeping in [false, true] {
        let stream = real_rounds(120, stream_seed, sleeping);
        for &case in cases {
            let make = |_seed| build(case);
            Conformance::new(make, &stream)
                .invalid_first_inputs(&invalid_advice(N))
                .check_all()
                .unwrap_or_else(|v| panic!("{case:?} sleeping={sleeping}: {v}"));
        }
    }
}

#[test]
fn fixed_share_losses_gradient_and_sleep() {
    let cases = [
        (Loss::Square, false, 0.05),
        (Loss::Absolute, true, 0.0),
        (Loss::Pinball { tau: 0.3 }, false, 0.2),
    ];
    check_forecaster(6, &cases, |(loss, gradient, alpha)| {
        FixedShareParams::new(N, 0.7, alpha)
            .loss(loss)
            .gradient(gradient)
            .loss_bound(4.0)
            .check()
            .unwrap()
            .build()
    });
}

#[test]
fn ml_poly_losses_gradient_and_sleep() {
    let cases = [
        (Loss::Square, true),
        (Loss::Absolute, false),
        (Loss::Pinball { tau: 0.9 }, true),
    ];
    check_forecaster(7, &cases, |(loss, gradient)| {
        MlPolyParams::new(N)
            .loss(loss)
            .gradient(gradient)
            .check()
            .unwrap()
            .build()
    });
}

#[test]
fn ml_prod_losses_gradient_sleep_and_both_forms() {
    let cases = [
        (Loss::Square, true, None),
        (Loss::Absolute, false, Some(4.0)),
        (Loss::Pinball { tau: 0.2 }, true, Some(4.0)),
        (Loss::Absolute, true, None),
    ];
    check_forecaster(8, &cases, |(loss, gradient, range)| {
        let mut params = MlProdParams::new(N).loss(loss).gradient(gradient);
        params.loss_bound = range;
        params.check().unwrap().build()
    });
}

#[test]
fn ml_ewa_losses_gradient_and_sleep() {
    let cases = [
        (Loss::Square, false),
        (Loss::Absolute, true),
        (Loss::Pinball { tau: 0.7 }, false),
    ];
    check_forecaster(9, &cases, |(loss, gradient)| {
        MlEwaParams::new(N)
            .loss(loss)
            .gradient(gradient)
            .check()
            .unwrap()
            .build()
    });
}

#[test]
fn boa_losses_gradient_sleep_and_both_forms() {
    let cases = [
        (Loss::Square, true, None),
        (Loss::Absolute, false, None),
        (Loss::Pinball { tau: 0.4 }, true, None),
        (Loss::Absolute, true, Some(4.0)),
        (Loss::Square, false, Some(4.0)),
    ];
    check_forecaster(10, &cases, |(loss, gradient, range)| {
        let mut params = BoaParams::new(N).loss(loss).gradient(gradient);
        params.loss_bound = range;
        params.check().unwrap().build()
    });
}

#[test]
fn online_gradient_descent_losses_and_sleep() {
    let cases = [
        (Loss::Square, 0.3),
        (Loss::Absolute, 0.1),
        (Loss::Pinball { tau: 0.2 }, 1.0),
    ];
    check_forecaster(8, &cases, |(loss, eta)| {
        OnlineGradientDescentParams::new(N, eta)
            .loss(loss)
            .check()
            .unwrap()
            .build()
    });
}

#[test]
fn ftrl_regularisers_losses_and_sleep() {
    let cases = [
        (Loss::Square, Regulariser::Quadratic),
        (Loss::Absolute, Regulariser::Entropic),
        (Loss::Pinball { tau: 0.7 }, Regulariser::Quadratic),
        (Loss::Square, Regulariser::Entropic),
    ];
    check_forecaster(9, &cases, |(loss, regulariser)| {
        FtrlParams::new(N, 0.4)
            .regulariser(regulariser)
            .loss(loss)
            .check()
            .unwrap()
            .build()
    });
}

#[test]
fn online_ridge_and_its_refusal_of_sleepers() {
    assert_send_sync::<OnlineRidge>();
    let stream = real_rounds(120, 10, false);
    let mut invalid = invalid_advice(N);
    // A round with an asleep expert is refused: the regression needs every advice.
    let mut asleep = vec![true; N];
    asleep[2] = false;
    invalid.push(AdviceRoundBuf {
        advice: vec![0.5; N],
        outcome: 0.5,
        awake: Some(asleep),
    });
    for lambda in [1e-3, 1.0, 50.0] {
        let make = |_seed| OnlineRidgeParams::new(N, lambda).check().unwrap().build();
        Conformance::new(make, &stream)
            .invalid_first_inputs(&invalid)
            .check_all()
            .unwrap_or_else(|v| panic!("lambda {lambda}: {v}"));
    }
}

/// Plays `stream` and returns the learner, for a snapshot that is not the initial one.
fn played<L>(mut learner: L, stream: &[AdviceRoundBuf]) -> L
where
    L: for<'a> OnlineLearner<Input<'a> = AdviceRound<'a>>,
{
    for round in stream {
        learner.learn_one(round.as_round()).unwrap();
    }
    learner
}

/// Asserts that `learner`'s snapshot is read back, and that the same snapshot with one value
/// fewer in `field` (a per-expert list) is refused as inconsistent.
fn check_refuses_short_snapshot<L>(learner: &L, field: &str)
where
    L: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let mut value = serde_json::to_value(learner).unwrap();
    assert_eq!(
        &serde_json::from_value::<L>(value.clone()).unwrap(),
        learner
    );
    let list = value[field]
        .as_array_mut()
        .unwrap_or_else(|| panic!("{field} is not a list"));
    list.pop();
    let error = serde_json::from_value::<L>(value)
        .err()
        .unwrap_or_else(|| panic!("a snapshot short of one {field} was read"));
    assert!(
        error.to_string().contains("inconsistent"),
        "{field}: {error}"
    );
}

/// The forecasting rules check a snapshot when they read it: one that has lost an expert's
/// state is refused, not resumed into a learner with broken invariants.
#[test]
fn snapshots_short_of_an_expert_are_refused() {
    let stream = real_rounds(20, 11, false);
    let loss = Loss::Square;
    check_refuses_short_snapshot(
        &played(
            BoaParams::new(N).loss(loss).check().unwrap().build(),
            &stream,
        ),
        "regularised",
    );
    check_refuses_short_snapshot(
        &played(
            FixedShareParams::new(N, 0.7, 0.05)
                .loss(loss)
                .loss_bound(4.0)
                .check()
                .unwrap()
                .build(),
            &stream,
        ),
        "log_weights",
    );
    check_refuses_short_snapshot(
        &played(
            FtrlParams::new(N, 0.4).loss(loss).check().unwrap().build(),
            &stream,
        ),
        "gradient_sums",
    );
    check_refuses_short_snapshot(
        &played(
            MlEwaParams::new(N).loss(loss).check().unwrap().build(),
            &stream,
        ),
        "regrets",
    );
    check_refuses_short_snapshot(
        &played(
            OnlineGradientDescentParams::new(N, 0.3)
                .loss(loss)
                .check()
                .unwrap()
                .build(),
            &stream,
        ),
        "weights",
    );
    check_refuses_short_snapshot(
        &played(
            MlPolyParams::new(N).loss(loss).check().unwrap().build(),
            &stream,
        ),
        "regrets",
    );
    check_refuses_short_snapshot(
        &played(
            MlProdParams::new(N).loss(loss).check().unwrap().build(),
            &stream,
        ),
        "scaled_log_weights",
    );
    check_refuses_short_snapshot(
        &played(
            OnlineRidgeParams::new(N, 1.0).check().unwrap().build(),
            &stream,
        ),
        "inverse",
    );
}
