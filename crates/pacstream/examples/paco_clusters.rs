//! Does PACBO find the number of clusters? k̂_T on mixtures of k = 2..10 well-separated
//! Gaussian clusters in d = 2, 5, 10, over 20 seeds, with the default settings.
//!
//! `cargo run --release -p pacstream --example paco_clusters -- [--dims 2,5,10]
//! [--ks 2,..,10] [--seeds 20] [--horizon 2000]` prints, per (d, k), in how many runs k̂_T = k,
//! in how many the number of *occupied* centres (those nearest to at least one point in
//! memory) equals k, the histogram of k̂_T, and the mean run time; and, per run on stderr,
//! the details.
//!
//! **Data.** For seed s, the k means are drawn uniformly in [−L, L]^d, again until every
//! pair is at least Δ_d apart (Δ = 12, 14, 16 for d = 2, 5, 10; L = 0.75 Δ max(1, k^{1/d})),
//! then T points, each from a cluster chosen uniformly, with unit variance per coordinate.
//! Δ is chosen so that the quasi-posterior itself prefers k to k − 1 at T = 2000 (each centre
//! that holds points pays an Occam factor of about (d/2) ln(λ n_j (2R)²) nats, which grows with
//! d and with the prior's ball; see `docs/paco-calibration.md`).
//!
//! The program uses only the learner's public interface, so that the same file runs against
//! an earlier version of the library (the "before" column of the calibration note).

// A report program: its output is the table on stdout.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use pacstream::paco::PacoParams;
use pacstream::{OnlineLearner, StreamRng};

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn list(text: &str) -> Vec<usize> {
    text.split(',')
        .map(|v| v.trim().parse().expect("a whole number"))
        .collect()
}

/// The minimum distance between two means, by dimension.
fn separation(dim: usize) -> f64 {
    match dim {
        0..=2 => 12.0,
        3..=5 => 14.0,
        _ => 16.0,
    }
}

/// The means and the stream of seed `seed`.
fn stream(k: usize, dim: usize, horizon: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = StreamRng::seed_from(seed).child((dim * 100 + k) as u64);
    let delta = separation(dim);
    let half_width = 0.75 * delta * (k as f64).powf(1.0 / dim as f64).max(1.0);
    let means = loop {
        let means: Vec<Vec<f64>> = (0..k)
            .map(|_| {
                (0..dim)
                    .map(|_| half_width * (2.0 * rng.next_f64() - 1.0))
                    .collect()
            })
            .collect();
        let separated = means.iter().enumerate().all(|(i, a)| {
            means[..i].iter().all(|b| {
                a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() >= delta * delta
            })
        });
        if separated {
            break means;
        }
    };
    let mut points = Vec::with_capacity(horizon * dim);
    for _ in 0..horizon {
        let m = &means[rng.index_below(k)];
        points.extend(m.iter().map(|v| v + rng.standard_normal()));
    }
    (means, points)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dims = option(&args, "--dims").map_or(vec![2, 5, 10], |s| list(&s));
    let ks = option(&args, "--ks").map_or((2..=10).collect(), |s| list(&s));
    let seeds: u64 = option(&args, "--seeds").map_or(20, |s| s.parse().expect("a number"));
    let horizon: usize = option(&args, "--horizon").map_or(2000, |s| s.parse().expect("a number"));
    println!(
        "| d | k | k̂_T = k | occupied centres = k | k̂_T: runs | s/run |\n|---:|---:|---:|---:|---|---:|"
    );
    for &dim in &dims {
        for &k in &ks {
            let mut hits = 0;
            let mut occupied_hits = 0;
            let mut histogram = std::collections::BTreeMap::new();
            let started = Instant::now();
            for seed in 0..seeds {
                let (_, points) = stream(k, dim, horizon, seed);
                let mut learner = PacoParams::new()
                    .seed(seed)
                    .check()
                    .expect("valid settings")
                    .build();
                for point in points.chunks_exact(dim) {
                    learner.learn_one(point).expect("valid point");
                }
                let found = learner.n_clusters().unwrap_or(0);
                // The centres nearest to at least one point in memory (internal coordinates:
                // the memory is centred on μ_0, the model is in the user's coordinates).
                let frame = learner.frame().expect("past the warm-up");
                let origin = frame.origin().to_vec();
                let centres: Vec<Vec<f64>> = learner
                    .centres()
                    .expect("a model")
                    .iter()
                    .map(|c| c.iter().zip(&origin).map(|(x, o)| x - o).collect())
                    .collect();
                let mut used = vec![false; centres.len()];
                for point in learner.memory_points().chunks_exact(dim) {
                    let nearest = centres
                        .iter()
                        .enumerate()
                        .map(|(j, c)| {
                            (
                                j,
                                c.iter()
                                    .zip(point)
                                    .map(|(a, b)| (a - b) * (a - b))
                                    .sum::<f64>(),
                            )
                        })
                        .fold((0, f64::INFINITY), |best, next| {
                            if next.1 < best.1 { next } else { best }
                        });
                    used[nearest.0] = true;
                }
                let occupied = used.iter().filter(|u| **u).count();
                hits += usize::from(found == k);
                occupied_hits += usize::from(occupied == k);
                *histogram.entry(found).or_insert(0) += 1;
                eprintln!("d {dim} k {k} seed {seed}: k̂ {found}, occupied {occupied}");
            }
            let seconds = started.elapsed().as_secs_f64() / seeds as f64;
            let runs = histogram
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "| {dim} | {k} | {hits}/{seeds} | {occupied_hits}/{seeds} | {runs} | {seconds:.1} |"
            );
        }
    }
}
