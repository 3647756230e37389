//! Nanoseconds per round of Hedge and EWA at N = 10, 1,000 and 1,000,000 experts.
//!
//! The reference is a vectorised NumPy Hedge: about 8.6 µs per round at N = 1,000 on the
//! project's machine class (see benches/compare/run-experts.sh); the target is well under
//! 1 µs. Each round pays the mixture, charges every expert and renormalises the weights.
//! The rounds replay a table that stays in the L2 cache ([`rounds_for`]); the
//! `*_from_memory` groups replay one of 32 MB at N = 1,000, for the cost of the memory bus.

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorParams, EwaParams, HedgeParams, LearningRate, Loss,
    LossRound, Rule,
};
use pacstream::{OnlineLearner, StreamRng};

/// `rounds` rounds of N losses in [0, 1] (or advice around an outcome), pre-drawn.
fn table(n_experts: usize, rounds: usize) -> Vec<f64> {
    let mut rng = StreamRng::seed_from(1);
    (0..n_experts * rounds).map(|_| rng.next_f64()).collect()
}

/// About 512 KB of pre-drawn rounds (64 rounds at N = 1,000): a table that stays in the
/// L2 cache, as the losses of a round a caller has just computed do. A table of many
/// megabytes would time the memory bus, not the round: at N = 1,000 a round reads 8 KB of
/// losses, and streaming them from DRAM took about 0.45 µs of a 1.3 µs round on the
/// project's AMD EPYC host (see docs/benchmarks.md). N = 1,000,000 cannot fit: two rounds.
fn rounds_for(n_experts: usize) -> usize {
    (1 << 16) / n_experts.max(1)
}

/// Benchmarks one round of `learn`, cycling through the pre-drawn rounds (`advice`, one
/// outcome each).
fn bench_advice_rounds(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    advice: &[f64],
    outcomes: &[f64],
    mut learn: impl FnMut(AdviceRound<'_>) -> f64,
) {
    let rounds = outcomes.len();
    let n = advice.len() / rounds;
    let mut next = 0usize;
    group.bench_function(id, |b| {
        b.iter(|| {
            let round = next % rounds;
            next += 1;
            let loss = learn(AdviceRound::new(
                black_box(&advice[round * n..(round + 1) * n]),
                outcomes[round],
            ));
            black_box(loss)
        })
    });
}

/// The rounds of each benchmark: (group, N, rounds in the table). The `_from_memory`
/// groups replay a 32 MB table at N = 1,000 (4,096 rounds), so that the cost of streaming a
/// round's losses from DRAM is measured beside the round itself.
fn cases(group: &str) -> [(String, usize, usize); 4] {
    let cached = |n: usize| (group.to_string(), n, rounds_for(n).max(2));
    [
        cached(10),
        cached(1_000),
        cached(1_000_000),
        (format!("{group}_from_memory"), 1_000, (1 << 22) / 1_000),
    ]
}

fn hedge(c: &mut Criterion) {
    for (name, n, rounds) in cases("hedge_round") {
        let mut group = c.benchmark_group(name.as_str());
        let losses = table(n, rounds);
        group.throughput(Throughput::Elements(n as u64));
        for rate in [
            LearningRate::Fixed(0.1),
            LearningRate::Anytime,
            LearningRate::AdaHedge,
        ] {
            let mut learner = HedgeParams::new(n)
                .learning_rate(rate)
                .loss_bound(1.0)
                .check()
                .expect("valid parameters")
                .build();
            let mut next = 0usize;
            group.bench_function(BenchmarkId::new(rate.name(), n), |b| {
                b.iter(|| {
                    let start = (next % rounds) * n;
                    next += 1;
                    let step = learner
                        .learn_one(LossRound::new(black_box(&losses[start..start + n])))
                        .expect("valid round");
                    black_box(step.loss)
                })
            });
        }
        group.finish();
    }
}

fn ewa(c: &mut Criterion) {
    for (name, n, rounds) in cases("ewa_round") {
        let mut group = c.benchmark_group(name.as_str());
        let advice = table(n, rounds);
        let outcomes = table(1, rounds);
        group.throughput(Throughput::Elements(n as u64));
        for (name, rate, gradient) in [
            ("fixed", LearningRate::Fixed(0.1), false),
            ("anytime-gradient", LearningRate::Anytime, true),
        ] {
            let mut learner = EwaParams::new(n)
                .loss(Loss::Square)
                .learning_rate(rate)
                .gradient(gradient)
                .loss_bound(4.0)
                .check()
                .expect("valid parameters")
                .build();
            bench_advice_rounds(
                &mut group,
                BenchmarkId::new(name, n),
                &advice,
                &outcomes,
                |round| learner.learn_one(round).expect("valid round").loss,
            );
        }
        group.finish();
    }
}

/// One round of each real-valued rule through the `Aggregator` trait (what the front-ends
/// drive), at N = 10 and 1,000, EWA beside them for the ratio.
fn forecasters(c: &mut Criterion) {
    let mut group = c.benchmark_group("forecaster_round");
    for n in [10usize, 1_000] {
        let rounds = rounds_for(n).max(2);
        let advice = table(n, rounds);
        let outcomes = table(1, rounds);
        group.throughput(Throughput::Elements(n as u64));
        let rules = [
            (
                "ewa-fixed",
                AggregatorParams::new(Rule::Ewa, n)
                    .rate(LearningRate::Fixed(0.1))
                    .loss_bound(4.0),
            ),
            (
                "fixed-share",
                AggregatorParams::new(Rule::FixedShare, n)
                    .rate(LearningRate::Fixed(0.1))
                    .alpha(0.01)
                    .loss_bound(4.0),
            ),
            ("mlpol", AggregatorParams::new(Rule::Mlpol, n)),
            ("mlprod", AggregatorParams::new(Rule::Mlprod, n)),
            (
                "mlprod-range",
                AggregatorParams::new(Rule::Mlprod, n).loss_bound(4.0),
            ),
            ("mlewa", AggregatorParams::new(Rule::Mlewa, n)),
            ("boa", AggregatorParams::new(Rule::Boa, n)),
            (
                "boa-range",
                AggregatorParams::new(Rule::Boa, n).loss_bound(4.0),
            ),
            (
                "ftrl",
                AggregatorParams::new(Rule::Ftrl, n).rate(LearningRate::Fixed(0.1)),
            ),
            (
                "ogd",
                AggregatorParams::new(Rule::Ogd, n).rate(LearningRate::Fixed(0.1)),
            ),
            ("ridge", AggregatorParams::new(Rule::Ridge, n).lambda(1.0)),
        ];
        for (name, params) in rules {
            let config = params.check().expect("valid parameters");
            let mut learner = config.build().expect("valid parameters");
            bench_advice_rounds(
                &mut group,
                BenchmarkId::new(name, n),
                &advice,
                &outcomes,
                |round| {
                    learner
                        .learn_advice(round, Loss::Square)
                        .expect("valid round")
                        .loss
                },
            );
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = hedge, ewa, forecasters
}
criterion_main!(benches);
