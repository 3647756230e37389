//! Microseconds per point of sequential principal curves as the stream grows, in one pass per
//! setting: a noisy half circle (radius 1, σ = 0.05, angle uniform) is fed to the learner
//! with the default parameters, and the mean cost per point is taken over the last tenth of
//! the points before t = 10³, 10⁴ and 10⁵ (rounds 0.9t < s ≤ t, so exploration and
//! exploitation rounds are both in the mean). Both feedback modes, every point kept or a
//! window of the last 1000. The growth is the least-squares slope of log(µs per point)
//! against log t over the three t: 0 is flat, 1 is linear in t.
//!
//! Run: `cargo run --release -p pacstream --example slpc_cost_per_point [max_t [feedback
//! [memory]]]` (`max_t` defaults to 100000; `feedback` is `bandit` or `full`, `memory` `all`
//! or `window`, to run one setting only; a setting that passes `SLPC_COST_LIMIT` seconds,
//! default 900, stops and reports the t it reached).

mod support;

use support::{clock, noisy_arc};

use pacstream::OnlineLearner;
use pacstream::curves::{Feedback, Memory, PrincipalCurveParams};

/// The least-squares slope of `y` against `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let covariance: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    covariance / variance
}

// An example that prints a table: printing is its purpose.
#[allow(clippy::print_stdout)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only_feedback = args.get(2).cloned();
    let only_memory = args.get(3).cloned();
    let max_t: usize = args
        .get(1)
        .map(|a| a.parse().expect("max_t: a positive integer"))
        .unwrap_or(100_000);
    let limit: f64 = std::env::var("SLPC_COST_LIMIT")
        .ok()
        .map(|v| v.parse().expect("SLPC_COST_LIMIT: seconds"))
        .unwrap_or(900.0);
    let checkpoints: Vec<usize> = [1_000usize, 10_000, 100_000]
        .into_iter()
        .filter(|&t| t <= max_t)
        .collect();
    let stream = noisy_arc(max_t, 1);
    let bin_side: f64 = std::env::var("SLPC_BIN_SIDE")
        .ok()
        .map(|v| v.parse().expect("SLPC_BIN_SIDE: a fraction of δ"))
        .unwrap_or(pacstream::curves::DEFAULT_BIN_SIDE);
    println!(
        "| feedback | memory | µs/point at t = {} | growth (slope of log µs on log t) | whole stream (s) | final K |",
        checkpoints
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("|---|---|---|---|---|---|");
    for (mode, feedback) in [("bandit", Feedback::Bandit), ("full", Feedback::Full)] {
        for (memory_name, memory) in [("all", Memory::All), ("window 1000", Memory::Window(1000))] {
            if only_feedback.as_deref().is_some_and(|f| f != mode)
                || only_memory
                    .as_deref()
                    .is_some_and(|m| !memory_name.starts_with(m))
            {
                continue;
            }
            let mut learner = PrincipalCurveParams::new()
                .bin_side(bin_side)
                .feedback(feedback)
                .memory(memory)
                .seed(3)
                .check()
                .expect("valid parameters")
                .build();
            let start = clock();
            let mut block_start = start;
            let mut costs: Vec<(usize, f64)> = Vec::new();
            let mut reached = 0;
            // The cost of the last whole block of 1000 rounds, reported when a setting stops.
            let mut thousand_start = start;
            let mut last_thousand: Option<(usize, f64)> = None;
            for (index, point) in stream.chunks_exact(2).enumerate() {
                let t = index + 1;
                if let Some(&next) = checkpoints.iter().find(|&&c| c > reached) {
                    if t == next - next / 10 + 1 {
                        block_start = clock();
                    }
                }
                learner.learn_one(point).expect("valid point");
                reached = t;
                if checkpoints.contains(&t) {
                    let seconds = clock() - block_start;
                    costs.push((t, 1e6 * seconds / (t / 10) as f64));
                }
                if t % 1000 == 0 {
                    let seconds = clock() - thousand_start;
                    last_thousand = Some((t, 1e6 * seconds / 1000.0));
                    thousand_start = clock();
                }
                if t % 1000 == 0 && t < max_t && clock() - start > limit {
                    break;
                }
            }
            let total = clock() - start;
            let cells: Vec<String> = checkpoints
                .iter()
                .map(|&t| match costs.iter().find(|c| c.0 == t) {
                    Some(&(_, us)) => format!("{us:.0}"),
                    None => match last_thousand {
                        Some((end, us)) => {
                            format!("(stopped at t = {reached}; {us:.0} at t = {end})")
                        }
                        None => format!("(stopped at t = {reached})"),
                    },
                })
                .collect();
            let growth = if costs.len() >= 2 {
                let logs: Vec<(f64, f64)> = costs
                    .iter()
                    .map(|&(t, us)| ((t as f64).ln(), us.ln()))
                    .collect();
                format!("{:.2}", slope(&logs))
            } else {
                "-".to_string()
            };
            let k = learner.curve().map_or(0, |c| c.n_segments());
            println!(
                "| {mode} | {memory_name} | {} | {growth} | {total:.1} | {k} |",
                cells.join(" / ")
            );
        }
    }
}
