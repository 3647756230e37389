//! Microseconds per point of sequential principal curves as the stream grows: the learner
//! is fed t points of a noisy half circle (t = 10³, 10⁴, 10⁵); each iteration then takes a
//! copy of that learner (not timed) and learns the next 100 points, so the time is the cost
//! per point at t. Both feedback modes, all points kept or a window of the last 1000.
//!
//! The targets: the cost per point stays flat as t grows in window mode (slpc spec §9); with
//! every point kept, the stored points are merged into at most 1024 atoms (bins that double
//! when they outnumber it), so the cost per point at t = 10⁵ should stay within about twice
//! the cost at t = 10³ (growth exponent ≤ 0.2; measured in docs/slpc-calibration.md: 2.4× and
//! 0.19 with bandit feedback, 3.0× and 0.24 with full). Feeding the learners 10⁵ points first takes
//! a few minutes.

#[path = "../examples/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pacstream::OnlineLearner;
use pacstream::curves::{Feedback, Memory, PrincipalCurveParams};
use support::noisy_arc;

fn learn_one(c: &mut Criterion) {
    let mut group = c.benchmark_group("curves_learn_one");
    const BATCH: usize = 100;
    group.throughput(Throughput::Elements(BATCH as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    let stream = noisy_arc(100_000 + BATCH, 1);
    for (mode, feedback) in [("bandit", Feedback::Bandit), ("full", Feedback::Full)] {
        for (memory_name, memory) in [("all", Memory::All), ("window1000", Memory::Window(1000))] {
            for t in [1_000usize, 10_000, 100_000] {
                let mut learner = PrincipalCurveParams::new()
                    .feedback(feedback)
                    .memory(memory)
                    .seed(3)
                    .check()
                    .expect("valid parameters")
                    .build();
                for point in stream.chunks_exact(2).take(t) {
                    learner.learn_one(point).expect("valid point");
                }
                let next = &stream[2 * t..2 * (t + BATCH)];
                group.bench_function(BenchmarkId::new(format!("{mode}_{memory_name}"), t), |b| {
                    b.iter_batched(
                        || learner.clone(),
                        |mut learner| {
                            for point in next.chunks_exact(2) {
                                black_box(
                                    learner.learn_one(black_box(point)).expect("valid point"),
                                );
                            }
                            learner
                        },
                        BatchSize::PerIteration,
                    )
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, learn_one);
criterion_main!(benches);
