//! What several examples and benchmarks share.

// Each example or benchmark uses only some of these.
#![allow(dead_code)]

use std::time::Instant;

use pacstream::StreamRng;

/// Seconds of CPU time of this thread (Linux: /proc/thread-self/schedstat), or of wall time
/// where that is not available: on a machine shared with other work, CPU time is slowed
/// only by contention for caches and memory, not by waiting for a core.
pub fn clock() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok());
    match cpu {
        Some(nanoseconds) => 1e-9 * nanoseconds,
        None => START.get_or_init(Instant::now).elapsed().as_secs_f64(),
    }
}

/// `n` points (row-major, 2-D) scattered with σ = 0.05 around the upper unit half-circle.
pub fn noisy_arc(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n)
        .flat_map(|_| {
            let angle = std::f64::consts::PI * rng.next_f64();
            [
                angle.cos() + 0.05 * rng.standard_normal(),
                angle.sin() + 0.05 * rng.standard_normal(),
            ]
        })
        .collect()
}

/// `n` points (row-major) from `k` unit-variance Gaussian clusters whose means are uniform
/// on [−10, 10]^d; each point picks its cluster uniformly.
pub fn mixture(n: usize, k: usize, dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = StreamRng::seed_from(seed);
    let means: Vec<f64> = (0..k * dim).map(|_| 20.0 * rng.next_f64() - 10.0).collect();
    let mut points = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let c = rng.index_below(k);
        points.extend((0..dim).map(|i| means[c * dim + i] + rng.standard_normal()));
    }
    points
}

/// The smallest distance between two of the k means of `mixture(_, k, dim, seed)` (the
/// means are its first draws), in units of the clusters' standard deviation (1).
pub fn closest_means(k: usize, dim: usize, seed: u64) -> f64 {
    let mut rng = StreamRng::seed_from(seed);
    let means: Vec<f64> = (0..k * dim).map(|_| 20.0 * rng.next_f64() - 10.0).collect();
    let mut closest = f64::INFINITY;
    for a in 0..k {
        for b in a + 1..k {
            let squared: f64 = (0..dim)
                .map(|i| (means[a * dim + i] - means[b * dim + i]).powi(2))
                .sum();
            closest = closest.min(squared.sqrt());
        }
    }
    closest
}

/// The value after `name` on the command line, if any.
pub fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// A comma-separated list of whole numbers.
pub fn list(text: &str) -> Vec<usize> {
    text.split(',')
        .map(|v| v.trim().parse().expect("a whole number"))
        .collect()
}
