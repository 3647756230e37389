//! Batch k-means: the fit (seeding + Lloyd) and the seeding alone, on the shapes of the
//! k-means spec (§2), with every assignment kernel.
//!
//! The data are Gaussian blobs drawn like scikit-learn's `make_blobs`: centres uniform in
//! [−10, 10]^d, unit standard deviation, points spread evenly over the centres (seeded, so
//! every run measures the same data). The "digits-like" set has the shape of scikit-learn's
//! digits (1797 × 64, k = 10, n_init = 10) with a standard deviation of 6, so that, as in the
//! real digits, the clusters overlap and Lloyd needs a few dozen iterations.
//!
//! `cargo bench -p pacstream --bench kmeans_batch` prints the times; the fitted inertia of
//! each case is printed once before its measurement, to compare quality at equal settings.

#![allow(
    clippy::print_stdout,
    reason = "the bench reports the inertia it reaches"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ndarray::Array2;
use pacstream::StreamRng;
use pacstream::kmeans::{Algorithm, Init, KMeansParams, seed_indices};

/// n points around `n_centres` centres uniform in [−10, 10]^dim, standard deviation `std`.
fn blobs(n_points: usize, dim: usize, n_centres: usize, std: f64, seed: u64) -> Array2<f64> {
    let mut rng = StreamRng::seed_from(seed);
    let centres: Vec<f64> = (0..n_centres * dim)
        .map(|_| 20.0 * rng.next_f64() - 10.0)
        .collect();
    Array2::from_shape_fn((n_points, dim), |(i, f)| {
        centres[(i % n_centres) * dim + f] + std * rng.standard_normal()
    })
}

struct Case {
    name: &'static str,
    data: Array2<f64>,
    n_clusters: usize,
    n_init: usize,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "digits_like_1797x64_k10_ninit10",
            data: blobs(1797, 64, 10, 6.0, 1),
            n_clusters: 10,
            n_init: 10,
        },
        Case {
            name: "blobs_100000x10_k20",
            data: blobs(100_000, 10, 20, 1.0, 2),
            n_clusters: 20,
            n_init: 1,
        },
        Case {
            name: "blobs_1000000x2_k8",
            data: blobs(1_000_000, 2, 8, 1.0, 3),
            n_clusters: 8,
            n_init: 1,
        },
    ]
}

fn fit(c: &mut Criterion) {
    let mut group = c.benchmark_group("kmeans_fit");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for case in cases() {
        for (label, algorithm) in [
            ("auto", Algorithm::Auto),
            ("lloyd", Algorithm::Lloyd),
            ("hamerly", Algorithm::Hamerly),
        ] {
            let config = KMeansParams::new(case.n_clusters)
                .n_init(case.n_init)
                .algorithm(algorithm)
                .seed(0)
                .check()
                .expect("valid parameters");
            let report = config
                .fit(case.data.view())
                .expect("valid data")
                .report()
                .clone();
            println!(
                "{}/{label}: inertia {:.6e}, n_iter {}, converged {}",
                case.name, report.inertia, report.n_iter, report.converged
            );
            group.bench_with_input(BenchmarkId::new(case.name, label), &case.data, |b, data| {
                b.iter(|| config.fit(black_box(data.view())).expect("valid data"));
            });
        }
    }
    group.finish();
}

fn seeding(c: &mut Criterion) {
    let mut group = c.benchmark_group("kmeans_seeding");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for case in cases() {
        for (label, init) in [
            ("greedy", Init::default()),
            ("kmeans++", Init::KMeansPlusPlus),
        ] {
            group.bench_with_input(BenchmarkId::new(case.name, label), &case.data, |b, data| {
                b.iter(|| {
                    let mut rng = StreamRng::seed_from(0);
                    seed_indices(
                        black_box(data.view()),
                        None,
                        &init,
                        case.n_clusters,
                        &mut rng,
                    )
                    .expect("valid data")
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, fit, seeding);
criterion_main!(benches);
