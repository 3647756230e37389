//! Nanoseconds per sequential k-means round (learn_one), after the warm-up.
//!
//! The reference is River's `cluster.KMeans` (k = 8, d = 5): about 35 µs per
//! learn_one + predict_one on the project's machine class; the target is under 100 ns.
//! `learn_one` already returns the label of the point under the model held before the round
//! (what `predict_one` answers), so one call does both.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndarray::Array2;
use pacstream::kmeans::SequentialKMeansParams;
use pacstream::{OnlineLearner, StreamRng};

fn stream(n_points: usize, n_groups: usize, dim: usize) -> Vec<f64> {
    let mut rng = StreamRng::seed_from(1);
    let means: Vec<f64> = (0..n_groups * dim).map(|_| 20.0 * rng.next_f64()).collect();
    (0..n_points)
        .flat_map(|_| {
            let group = rng.index_below(n_groups);
            (0..dim)
                .map(|j| means[group * dim + j] + rng.standard_normal())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn learn_one(c: &mut Criterion) {
    let mut group = c.benchmark_group("sequential_kmeans_learn_one");
    group.throughput(Throughput::Elements(1));
    for &(k, dim) in &[(8, 5), (8, 2), (32, 5), (8, 50)] {
        let n_points = 1 << 16;
        let points = stream(n_points, k, dim);
        for (name, half_life) in [("plain", None), ("decay", Some(1000.0))] {
            let mut params = SequentialKMeansParams::new(k).seed(3);
            if let Some(h) = half_life {
                params = params.decay_half_life(h);
            }
            let mut learner = params.check().expect("valid parameters").build();
            for point in points.chunks_exact(dim).take(10 * k) {
                learner.learn_one(point).expect("valid point");
            }
            let mut next = 0usize;
            group.bench_function(BenchmarkId::new(name, format!("k{k}_d{dim}")), |b| {
                b.iter(|| {
                    let start = (next % n_points) * dim;
                    next += 1;
                    let step = learner
                        .learn_one(black_box(&points[start..start + dim]))
                        .expect("valid point");
                    black_box(step.label)
                })
            });
        }
    }
    group.finish();
}

fn learn_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("sequential_kmeans_learn_batch");
    let (k, dim, batch) = (8, 5, 1024);
    let points = stream(64 * batch, k, dim);
    let mut learner = SequentialKMeansParams::new(k)
        .seed(3)
        .check()
        .expect("valid parameters")
        .build();
    for point in points.chunks_exact(dim).take(10 * k) {
        learner.learn_one(point).expect("valid point");
    }
    let batches: Vec<Array2<f64>> = points
        .chunks_exact(batch * dim)
        .map(|chunk| Array2::from_shape_vec((batch, dim), chunk.to_vec()).expect("shape"))
        .collect();
    group.throughput(Throughput::Elements(batch as u64));
    let mut next = 0usize;
    group.bench_function(format!("k{k}_d{dim}_b{batch}"), |b| {
        b.iter(|| {
            let steps = learner
                .learn_batch(batches[next % batches.len()].view(), None)
                .expect("valid batch");
            next += 1;
            black_box(steps.len())
        })
    });
    group.finish();
}

criterion_group!(benches, learn_one, learn_batch);
criterion_main!(benches);
