//! Microseconds per point of sequential principal curves as the stream grows: a noisy half
//! circle (radius 1, σ = 0.05, angle uniform) is fed to the learner with the default
//! parameters. The cost per point at t is the CPU time of the learning thread over the
//! rounds t/2 < s ≤ t, divided by t/2: half the stream, so exploration and exploitation rounds
//! are both in it in their proportions, and long enough (500 rounds at t = 10³, about a
//! tenth of a second) not to be one scheduling accident. At every t but the last the stream's
//! first t points are learned again by fresh learners (same seed, the same work bit for bit),
//! `SLPC_COST_REPEATS` runs in all (default 7 at t = 10³, 3 at t = 10⁴), and the median is
//! reported with the range in brackets; the last t is the one long run (t/2 rounds). The
//! growth is the least-squares slope of log(µs per point) against log t over the t: 0 is
//! flat, 1 is linear in t. The number of atoms (`n_atoms`) and of segments at each t say what
//! a round works on, and the last columns what the cost buys: the mean loss paid online,
//! and the stream's mean squared distance to the final curve, with its length.
//! `SLPC_MAX_ATOMS` and `SLPC_BIN_SIDE` change the atoms' budget and their first bin side
//! (the defaults of `PrincipalCurveParams` otherwise).
//!
//! Run: `cargo run --release -p pacstream --example slpc_cost_per_point [max_t [feedback
//! [memory]]]` (`max_t` defaults to 100000; `feedback` is `bandit` or `full`, `memory` `all`
//! or `window`, to run one setting only; a setting that passes `SLPC_COST_LIMIT` seconds,
//! default 900, stops and reports the t it reached).

mod support;

use support::{clock, noisy_arc};

use pacstream::OnlineLearner;
use pacstream::curves::{Feedback, Memory, PrincipalCurveParams};

/// How many runs give the cost at a t that is not the last: `SLPC_COST_REPEATS` (one
/// number for every t), or 7 up to t = 10³ and 3 above.
fn repeats_at(t: usize) -> usize {
    match std::env::var("SLPC_COST_REPEATS") {
        Ok(value) => value
            .parse::<usize>()
            .expect("SLPC_COST_REPEATS: a positive integer")
            .max(1),
        Err(_) if t <= 1_000 => 7,
        Err(_) => 3,
    }
}

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
    let max_atoms: usize = std::env::var("SLPC_MAX_ATOMS")
        .ok()
        .map(|v| v.parse().expect("SLPC_MAX_ATOMS: a number of atoms"))
        .unwrap_or(pacstream::curves::DEFAULT_MAX_ATOMS);
    let bin_side: f64 = std::env::var("SLPC_BIN_SIDE")
        .ok()
        .map(|v| v.parse().expect("SLPC_BIN_SIDE: a fraction of δ"))
        .unwrap_or(pacstream::curves::DEFAULT_BIN_SIDE);
    println!(
        "| feedback | memory | µs/point at t = {} | growth (slope of log µs on log t) | last / first | whole stream (s of CPU) | final K | mean online loss | final curve's mean squared distance | final length |",
        checkpoints
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (mode, feedback) in [("bandit", Feedback::Bandit), ("full", Feedback::Full)] {
        for (memory_name, memory) in [("all", Memory::All), ("window 1000", Memory::Window(1000))] {
            if only_feedback.as_deref().is_some_and(|f| f != mode)
                || only_memory
                    .as_deref()
                    .is_some_and(|m| !memory_name.starts_with(m))
            {
                continue;
            }
            let build = || {
                PrincipalCurveParams::new()
                    .bin_side(bin_side)
                    .feedback(feedback)
                    .memory(memory)
                    .max_atoms(max_atoms)
                    .seed(3)
                    .check()
                    .expect("valid parameters")
                    .build()
            };
            let mut learner = build();
            let mut online_loss = 0.0;
            let start = clock();
            let mut half_start = start;
            // (t, µs per point, atoms, segments) at each checkpoint reached.
            let mut costs: Vec<(usize, f64, usize, usize)> = Vec::new();
            let mut reached = 0;
            // The cost of the last whole block of 1000 rounds, reported when a setting stops.
            let mut thousand_start = start;
            let mut last_thousand: Option<(usize, f64)> = None;
            for (index, point) in stream.chunks_exact(2).enumerate() {
                let t = index + 1;
                if checkpoints.iter().any(|&c| t == c / 2 + 1) {
                    half_start = clock();
                }
                online_loss += learner
                    .learn_one(point)
                    .expect("valid point")
                    .loss
                    .unwrap_or(0.0);
                reached = t;
                if checkpoints.contains(&t) {
                    let seconds = clock() - half_start;
                    let segments = learner.curve().map_or(0, |c| c.n_segments());
                    costs.push((
                        t,
                        1e6 * seconds / (t - t / 2) as f64,
                        learner.n_atoms(),
                        segments,
                    ));
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
            // What the cost buys: the mean loss the learner paid online, and the mean squared
            // distance of the stream to the final curve, with that curve's length (the arc
            // is π long; a curve much longer folds back and forth across the band).
            let (msd, length) = learner.curve().map_or((f64::NAN, f64::NAN), |curve| {
                let total: f64 = stream[..reached * 2]
                    .chunks_exact(2)
                    .map(|p| {
                        curve
                            .squared_distance(p)
                            .expect("a point of the curve's dimension")
                    })
                    .sum();
                (total / reached as f64, curve.length())
            });
            let online_mean = online_loss / reached as f64;
            // Fresh runs of the first t points for every t but the last: the median of the
            // repeats (this run's figure included) and their range.
            let mut ranges: Vec<Option<(f64, f64)>> = vec![None; costs.len()];
            let last = costs.len().saturating_sub(1);
            for (slot, cost) in costs.iter_mut().enumerate().take(last) {
                let t = cost.0;
                let repeats = repeats_at(t);
                let mut samples = vec![cost.1];
                for _ in 1..repeats {
                    let mut fresh = build();
                    let mut half_start = clock();
                    for (index, point) in stream[..2 * t].chunks_exact(2).enumerate() {
                        if index == t / 2 {
                            half_start = clock();
                        }
                        fresh.learn_one(point).expect("valid point");
                    }
                    samples.push(1e6 * (clock() - half_start) / (t - t / 2) as f64);
                }
                samples.sort_by(f64::total_cmp);
                cost.1 = samples[samples.len() / 2];
                if samples.len() > 1 {
                    ranges[slot] = Some((samples[0], samples[samples.len() - 1]));
                }
            }
            let cells: Vec<String> = checkpoints
                .iter()
                .map(|&t| match costs.iter().position(|c| c.0 == t) {
                    Some(slot) => {
                        let (_, us, atoms, segments) = costs[slot];
                        let range = ranges[slot].map_or(String::new(), |(low, high)| {
                            format!(" [{low:.0}–{high:.0}]")
                        });
                        format!("{us:.0}{range} ({atoms} atoms, K = {segments})")
                    }
                    None => match last_thousand {
                        Some((end, us)) => {
                            format!("(stopped at t = {reached}; {us:.0} at t = {end})")
                        }
                        None => format!("(stopped at t = {reached})"),
                    },
                })
                .collect();
            let (growth, ratio) = if costs.len() >= 2 {
                let logs: Vec<(f64, f64)> = costs
                    .iter()
                    .map(|&(t, us, _, _)| ((t as f64).ln(), us.ln()))
                    .collect();
                (
                    format!("{:.2}", slope(&logs)),
                    format!("{:.2}", costs[last].1 / costs[0].1),
                )
            } else {
                ("-".to_string(), "-".to_string())
            };
            let k = learner.curve().map_or(0, |c| c.n_segments());
            println!(
                "| {mode} | {memory_name} | {} | {growth} | {ratio} | {total:.1} | {k} | {online_mean:.6} | {msd:.6} | {length:.2} |",
                cells.join(" / ")
            );
        }
    }
}
