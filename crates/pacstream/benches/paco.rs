//! PACBO: the cost of a round and of a whole run.
//!
//! - `paco_r_example`: the R package's documented example (4 Gaussian clusters in d = 5,
//!   means uniform on [−10, 10]^5, unit covariance, T = 100, N = 500), a whole online run.
//!   `defaults`: the default settings (R `auto`: the first 50 points are a warm-up, 50
//!   rounds are predicted, each followed by a chain; the setting under which k̂_T = 4 for
//!   most seeds, see `examples/paco_performance.rs`). `given_radius`: R = the largest norm
//!   of the data, as the package recommends, so that all 100 rounds run a chain, as in the
//!   package (k̂_T is then poor: round 1's prior draw anchors the model through the variance
//!   term). Reference: R PACBO 0.1.0 in its online mode takes 184 s on the project's machine
//!   class; the target is under 184 ms.
//! - `paco_round`: one round (pay the loss, store the point, N = 500 chain iterations) at
//!   t = 1,000 and 10,000 points in memory, d = 2, 5, 20, exact memory and a window of 1,000
//!   points; reported as rounds per second. The learner reaches t cheaply by buffering t − 1
//!   warm-up points (one chain at the end of the warm-up), then plays a few rounds before the
//!   measurement, which clones that learner for every round it times. The fraction of the
//!   memory that each proposal touched (and that early-rejected proposals touched before
//!   their rejection) is printed for each case.

// The fractions of data touched are printed beside criterion's timings.
#![allow(clippy::print_stderr)]

#[path = "../examples/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pacstream::OnlineLearner;
use pacstream::paco::{Memory, Paco, PacoParams, Radius};
use support::mixture;

fn r_example(c: &mut Criterion) {
    let dim = 5;
    let points = mixture(100, 4, dim, 100);
    let radius = points
        .chunks_exact(dim)
        .map(|p| p.iter().map(|v| v * v).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let defaults = PacoParams::new().seed(100).check().expect("valid settings");
    let given_radius = PacoParams::new()
        .radius(Radius::Given(radius))
        .seed(100)
        .check()
        .expect("valid settings");
    let mut group = c.benchmark_group("paco_r_example");
    group.sample_size(20);
    for (name, config) in [("defaults", defaults), ("given_radius", given_radius)] {
        let mut learner = config.build();
        for point in points.chunks_exact(dim) {
            learner.learn_one(point).expect("valid point");
        }
        eprintln!("paco_r_example {name}: k̂_T = {:?}", learner.n_clusters());
        group.bench_function(BenchmarkId::new("online_T100_d5_N500", name), |b| {
            b.iter(|| {
                let mut learner = config.build();
                for point in points.chunks_exact(dim) {
                    learner.learn_one(black_box(point)).expect("valid point");
                }
                black_box(learner.n_clusters())
            })
        });
    }
    group.finish();
}

/// A learner with `t` points in memory (t − 1 of them buffered warm-up points), after a
/// few rounds of play.
fn learner_at(t: usize, dim: usize, memory: Memory, points: &[f64]) -> Paco {
    let mut learner = PacoParams::new()
        .warmup(t - 8)
        .memory(memory)
        .seed(1)
        .check()
        .expect("valid settings")
        .build();
    for point in points.chunks_exact(dim).take(t) {
        learner.learn_one(point).expect("valid point");
    }
    learner
}

fn round(c: &mut Criterion) {
    let mut group = c.benchmark_group("paco_round");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(1));
    for &t in &[1_000usize, 10_000] {
        for &dim in &[2usize, 5, 20] {
            let points = mixture(t + 1, 4, dim, dim as u64);
            let next = &points[t * dim..(t + 1) * dim];
            for (name, memory) in [("exact", Memory::All), ("window1000", Memory::Window(1000))] {
                let learner = learner_at(t, dim, memory, &points);
                let step = learner.clone().learn_one(next).expect("valid point");
                if let Some(report) = &step.sampler {
                    eprintln!(
                        "paco_round {name} t={t} d={dim}: k = {}, acceptance {:.3}, data \
                         touched per proposal {:.3}, by early rejections {:.3} ({} of {})",
                        report.n_clusters,
                        report.acceptance_rate,
                        report.data_fraction,
                        report.early_rejection_fraction,
                        report.early_rejections,
                        report.iterations
                    );
                }
                group.bench_with_input(
                    BenchmarkId::new(name, format!("t{t}_d{dim}")),
                    &learner,
                    |b, learner| {
                        b.iter_batched(
                            || learner.clone(),
                            |mut learner| black_box(learner.learn_one(next).expect("valid")),
                            BatchSize::LargeInput,
                        )
                    },
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, r_example, round);
criterion_main!(benches);
