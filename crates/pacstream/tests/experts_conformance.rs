//! Every expert aggregator passes the conformance suite, with and without sleeping experts,
//! under each learning-rate schedule.

use pacstream::conformance::{
    Conformance, OwnedInput, assert_send_sync, invalid_advice, invalid_binary_advice,
    invalid_losses,
};
use pacstream::experts::{
    AdviceRound, AdviceRoundBuf, BoaParams, EwaParams, FixedShareParams, FplParams, FtrlParams,
    HedgeParams, LearningRate, Loss, LossRoundBuf, MlEwaParams, MlPolyParams, MlProdParams,
    OnlineGradientDescentParams, OnlineRidgeParams, RandomizedWeightedMajorityParams, Regulariser,
    WeightedMajorityParams,
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

/// Checks and builds settings that a test knows to be valid.
macro_rules! built {
    ($params:expr) => {
        $params.check().unwrap().build()
    };
}

/// The stream `rounds(sleeping)` without, then with, sleeping experts.
fn with_and_without_sleep<S>(rounds: impl Fn(bool) -> Vec<S>) -> [Vec<S>; 2] {
    [rounds(false), rounds(true)]
}

/// The suite for a rule on each of `streams`, for each of `cases` (the rule's settings, built
/// with a seed by `build`); `invalid` is refused from the first round, and snapshots are
/// taken after the rounds `cuts` (the suite's own if none).
fn check_cases<L, S, C>(
    streams: &[Vec<S>],
    invalid: &[S],
    cuts: Option<&[usize]>,
    cases: &[C],
    build: impl Fn(C, u64) -> L + Sync,
) where
    L: OnlineLearner + Serialize + DeserializeOwned + Send + Sync,
    L::Step: Serialize,
    S: OwnedInput<L> + Sync,
    C: Copy + std::fmt::Debug + Sync,
{
    assert_send_sync::<L>();
    for (i, stream) in streams.iter().enumerate() {
        for &case in cases {
            let suite = Conformance::new(|seed| build(case, seed), stream);
            let suite = suite.invalid_first_inputs(invalid);
            match cuts {
                Some(cuts) => suite.cuts(cuts),
                None => suite,
            }
            .check_all()
            .unwrap_or_else(|v| panic!("{case:?} on stream {i}: {v}"));
        }
    }
}

#[test]
fn weighted_majority() {
    let stream = [binary_rounds(120, 1)];
    let invalid = invalid_binary_advice(N);
    check_cases(&stream, &invalid, None, &[0.7], |beta, _seed| {
        built!(WeightedMajorityParams::new(N).beta(beta))
    });
}

#[test]
fn randomized_weighted_majority() {
    let stream = [binary_rounds(150, 2)];
    let invalid = invalid_binary_advice(N);
    let rates = [LearningRate::Doubling, LearningRate::Horizon(150)];
    check_cases(&stream, &invalid, None, &rates, |rate, seed| {
        built!(
            RandomizedWeightedMajorityParams::new(N)
                .learning_rate(rate)
                .seed(seed)
        )
    });
}

#[test]
fn hedge_every_schedule_with_and_without_sleep() {
    let rates = [
        LearningRate::Fixed(0.3),
        LearningRate::Horizon(130),
        LearningRate::Anytime,
        LearningRate::Doubling,
        LearningRate::AdaHedge,
    ];
    let cuts = [0, 1, 2, 4, 63, 64, 65, 129];
    let streams = with_and_without_sleep(|sleeping| loss_rounds(130, 3, sleeping));
    check_cases(
        &streams,
        &invalid_losses(N),
        Some(&cuts),
        &rates,
        |rate, seed| {
            let prior = vec![1.0, 2.0, 1.0, 0.5, 1.0];
            built!(
                HedgeParams::new(N)
                    .learning_rate(rate)
                    .loss_bound(1.0)
                    .prior(prior)
                    .sample(true)
                    .seed(seed)
            )
        },
    );
}

#[test]
fn follow_the_perturbed_leader() {
    let streams = with_and_without_sleep(|sleeping| loss_rounds(100, 5, sleeping));
    check_cases(
        &streams,
        &invalid_losses(N),
        None,
        &[false, true],
        |expected, seed| {
            let rate = LearningRate::Horizon(100);
            built!(
                FplParams::new(N, 1.0)
                    .learning_rate(rate)
                    .expected_loss(expected)
                    .seed(seed)
            )
        },
    );
}

/// One test per forecasting rule: [`check_cases`] on the real-valued rounds of its seed,
/// without and with sleeping experts, for each of its cases (a loss and the rule's own settings), refusing invalid advice; the
/// rules take no seed.
macro_rules! forecaster_tests {
    ($($test:ident($seed:literal): [$($case:expr),+ $(,)?] => |$case_is:pat_param| $params:expr;)+) => {
        $(
            #[test]
            fn $test() {
                let streams = with_and_without_sleep(|sleeping| real_rounds(120, $seed, sleeping));
                let cases = [$($case),+];
                check_cases(&streams, &invalid_advice(N), None, &cases, |$case_is, _seed| {
                    built!($params)
                });
            }
        )+
    };
}

forecaster_tests! {
    ewa_losses_gradient_and_sleep(4): [
        (Loss::Square, false, LearningRate::AdaHedge),
        (Loss::Square, true, LearningRate::Anytime),
        (Loss::Absolute, false, LearningRate::Doubling),
        (Loss::Pinball { tau: 0.8 }, true, LearningRate::AdaHedge),
    ] => |(loss, gradient, rate)|
        EwaParams::new(N).loss(loss).gradient(gradient).learning_rate(rate).loss_bound(4.0);
    fixed_share_losses_gradient_and_sleep(6): [
        (Loss::Square, false, 0.05),
        (Loss::Absolute, true, 0.0),
        (Loss::Pinball { tau: 0.3 }, false, 0.2),
    ] => |(loss, gradient, alpha)|
        FixedShareParams::new(N, 0.7, alpha).loss(loss).gradient(gradient).loss_bound(4.0);
    ml_poly_losses_gradient_and_sleep(7): [
        (Loss::Square, true),
        (Loss::Absolute, false),
        (Loss::Pinball { tau: 0.9 }, true),
    ] => |(loss, gradient)| MlPolyParams::new(N).loss(loss).gradient(gradient);
    ml_prod_losses_gradient_sleep_and_both_forms(8): [
        (Loss::Square, true, None),
        (Loss::Absolute, false, Some(4.0)),
        (Loss::Pinball { tau: 0.2 }, true, Some(4.0)),
        (Loss::Absolute, true, None),
    ] => |(loss, gradient, range)| MlProdParams {
        loss_bound: range,
        ..MlProdParams::new(N).loss(loss).gradient(gradient)
    };
    ml_ewa_losses_gradient_and_sleep(9): [
        (Loss::Square, false),
        (Loss::Absolute, true),
        (Loss::Pinball { tau: 0.7 }, false),
    ] => |(loss, gradient)| MlEwaParams::new(N).loss(loss).gradient(gradient);
    boa_losses_gradient_sleep_and_both_forms(10): [
        (Loss::Square, true, None),
        (Loss::Absolute, false, None),
        (Loss::Pinball { tau: 0.4 }, true, None),
        (Loss::Absolute, true, Some(4.0)),
        (Loss::Square, false, Some(4.0)),
    ] => |(loss, gradient, range)| BoaParams {
        loss_bound: range,
        ..BoaParams::new(N).loss(loss).gradient(gradient)
    };
    online_gradient_descent_losses_and_sleep(8): [
        (Loss::Square, 0.3),
        (Loss::Absolute, 0.1),
        (Loss::Pinball { tau: 0.2 }, 1.0),
    ] => |(loss, eta)| OnlineGradientDescentParams::new(N, eta).loss(loss);
    ftrl_regularisers_losses_and_sleep(9): [
        (Loss::Square, Regulariser::Quadratic),
        (Loss::Absolute, Regulariser::Entropic),
        (Loss::Pinball { tau: 0.7 }, Regulariser::Quadratic),
        (Loss::Square, Regulariser::Entropic),
    ] => |(loss, regulariser)| FtrlParams::new(N, 0.4).regulariser(regulariser).loss(loss);
}

#[test]
fn online_ridge_and_its_refusal_of_sleepers() {
    let mut invalid = invalid_advice(N);
    // A round with an asleep expert is refused: the regression needs every advice.
    let mut asleep = vec![true; N];
    asleep[2] = false;
    invalid.push(AdviceRoundBuf {
        advice: vec![0.5; N],
        outcome: 0.5,
        awake: Some(asleep),
    });
    let stream = [real_rounds(120, 10, false)];
    check_cases(
        &stream,
        &invalid,
        None,
        &[1e-3, 1.0, 50.0],
        |lambda, _seed| built!(OnlineRidgeParams::new(N, lambda)),
    );
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

/// Asserts that the snapshot of `learner` after a short stream is read back, and that the
/// same snapshot with one value fewer in `field` (a per-expert list) is refused as
/// inconsistent.
fn check_refuses_short_snapshot<L>(learner: L, field: &str)
where
    L: for<'a> OnlineLearner<Input<'a> = AdviceRound<'a>>,
    L: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let learner = played(learner, &real_rounds(20, 11, false));
    let mut value = serde_json::to_value(&learner).unwrap();
    assert_eq!(serde_json::from_value::<L>(value.clone()).unwrap(), learner);
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
    let loss = Loss::Square;
    check_refuses_short_snapshot(built!(BoaParams::new(N).loss(loss)), "regularised");
    let fixed_share = FixedShareParams::new(N, 0.7, 0.05).loss(loss);
    check_refuses_short_snapshot(built!(fixed_share.loss_bound(4.0)), "log_weights");
    check_refuses_short_snapshot(built!(FtrlParams::new(N, 0.4).loss(loss)), "gradient_sums");
    check_refuses_short_snapshot(built!(MlEwaParams::new(N).loss(loss)), "regrets");
    let gradient_descent = OnlineGradientDescentParams::new(N, 0.3).loss(loss);
    check_refuses_short_snapshot(built!(gradient_descent), "weights");
    check_refuses_short_snapshot(built!(MlPolyParams::new(N).loss(loss)), "regrets");
    let ml_prod = MlProdParams::new(N).loss(loss);
    check_refuses_short_snapshot(built!(ml_prod), "scaled_log_weights");
    check_refuses_short_snapshot(built!(OnlineRidgeParams::new(N, 1.0)), "inverse");
}
