//! Does PACBO find the number of clusters? k̂_T on mixtures of k = 2..10 well-separated
//! Gaussian clusters in d = 2, 5, 10, over 20 seeds, with the default settings.
//!
//! `cargo run --release -p pacstream --example paco_clusters -- [--dims 2,5,10]
//! [--ks 2,..,10] [--seeds 20] [--horizon 2000] [--eta E]` prints, per (d, k), in how many runs k̂_T = k,
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
//! `-- occam [--dims 5] [--ks 8] [--ts 250,500,1000,2000] [--seeds 5] [--separation Δ]
//! [--half-width L]` prints instead the Laplace approximation of the posterior log odds of k
//! against k − 1 on the learner's own memory (see [`occam`]).
//!
//! The program uses only the learner's public interface, so that the same file runs against
//! an earlier version of the library (the "before" column of the calibration note).

// A report program: its output is the table on stdout.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use std::time::Instant;

use pacstream::paco::PacoParams;
use pacstream::{OnlineLearner, StreamRng};
use support::{list, option};

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
    let delta = separation(dim);
    let half_width = 0.75 * delta * (k as f64).powf(1.0 / dim as f64).max(1.0);
    stream_with(k, dim, horizon, seed, delta, half_width)
}

/// [`stream`] with a given separation Δ and half-width L.
fn stream_with(
    k: usize,
    dim: usize,
    horizon: usize,
    seed: u64,
    delta: f64,
    half_width: f64,
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = StreamRng::seed_from(seed).child((dim * 100 + k) as u64);
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
    if args.first().is_some_and(|a| a == "occam") {
        occam(&args);
        return;
    }
    if args.first().is_some_and(|a| a == "balance") {
        balance(&args);
        return;
    }
    let dims = option(&args, "--dims").map_or(vec![2, 5, 10], |s| list(&s));
    let ks = option(&args, "--ks").map_or((2..=10).collect(), |s| list(&s));
    let seeds: u64 = option(&args, "--seeds").map_or(20, |s| s.parse().expect("a number"));
    let horizon: usize = option(&args, "--horizon").map_or(2000, |s| s.parse().expect("a number"));
    // η (default: the library's), for the comparison of the calibration note.
    let eta: Option<f64> = option(&args, "--eta").map(|s| s.parse().expect("a number"));
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
                let mut params = PacoParams::new().seed(seed);
                if let Some(eta) = eta {
                    params = params.eta(eta);
                }
                let mut learner = params.check().expect("valid settings").build();
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

fn squared(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Lloyd's iterations from `centres` on `points` (row-major); returns the centres and the
/// number of points of each.
fn lloyd(mut centres: Vec<Vec<f64>>, points: &[f64], dim: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
    let mut counts = vec![0; centres.len()];
    for _ in 0..10 {
        let mut sums = vec![vec![0.0; dim]; centres.len()];
        counts = vec![0; centres.len()];
        for x in points.chunks_exact(dim) {
            let j = nearest(&centres, x).0;
            counts[j] += 1;
            sums[j].iter_mut().zip(x).for_each(|(s, v)| *s += v);
        }
        for ((c, s), n) in centres.iter_mut().zip(&sums).zip(&counts) {
            if *n > 0 {
                c.iter_mut().zip(s).for_each(|(c, s)| *c = s / *n as f64);
            }
        }
    }
    (centres, counts)
}

fn nearest(centres: &[Vec<f64>], x: &[f64]) -> (usize, f64) {
    centres
        .iter()
        .enumerate()
        .map(|(j, c)| (j, squared(c, x)))
        .fold((0, f64::INFINITY), |best, next| {
            if next.1 < best.1 { next } else { best }
        })
}

fn ln_gamma_half_integer(twice: usize) -> f64 {
    // ln Γ(twice / 2) for twice ≥ 1, by the recurrence from Γ(1/2) = √π or Γ(1) = 1.
    let (mut value, mut x) = if twice % 2 == 1 {
        (0.5 * std::f64::consts::PI.ln(), 0.5)
    } else {
        (0.0, 1.0)
    };
    while 2.0 * x < twice as f64 {
        value += x.ln();
        x += 1.0;
    }
    value
}

/// `occam --dims 5 --ks 8 --ts 250,500,1000,2000 --seeds 5 [--separation Δ] [--half-width L]`:
/// the Laplace approximation of ln ρ̂_{t+1}(k) − ln ρ̂_{t+1}(k − 1), the log posterior odds of
/// the true k against k − 1, on the learner's own memory, R and ℓ̂_s after t points
/// (default settings): the k-clustering is Lloyd from the true means, the (k − 1)-clustering
/// Lloyd from the true means with the closest pair merged. Per centre of n_j points the
/// evidence is e^{−λ S_j(ĉ)} (π/(λ n_j))^{d/2} U (the curvature of the variance term is left
/// out); the labellings give ln k!; the prior −η k. Printed with its parts: the data term
/// λ [S(ĉ_{k−1}) − S(ĉ_k)] and the Occam term of the extra centre; and the odds of k + 1
/// (one centre that holds no point) against k, e^{−η} (k + 1), for comparison.
fn occam(args: &[String]) {
    let dims = option(args, "--dims").map_or(vec![5], |s| list(&s));
    let ks = option(args, "--ks").map_or(vec![8], |s| list(&s));
    let ts = option(args, "--ts").map_or(vec![250, 500, 1000, 2000], |s| list(&s));
    let seeds: u64 = option(args, "--seeds").map_or(5, |s| s.parse().expect("a number"));
    let given_delta: Option<f64> =
        option(args, "--separation").map(|s| s.parse().expect("a number"));
    let given_half: Option<f64> =
        option(args, "--half-width").map(|s| s.parse().expect("a number"));
    let defaults = PacoParams::new().check().expect("valid settings");
    let (eta, coeff) = (defaults.eta(), defaults.coeff());
    println!(
        "| d | k | Δ | L | t | R | λ_t | data term λ[S(k−1) − S(k)] | Occam term of one more centre | ln odds k : k − 1 | ln odds k + 1 (empty) : k |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &dim in &dims {
        for &k in &ks {
            let delta = given_delta.unwrap_or_else(|| separation(dim));
            let half = given_half
                .unwrap_or_else(|| 0.75 * delta * (k as f64).powf(1.0 / dim as f64).max(1.0));
            for &t in &ts {
                let mut sums = [0.0; 6];
                for seed in 0..seeds {
                    let (means, points) = stream_with(k, dim, t, seed, delta, half);
                    let mut learner = PacoParams::new()
                        .seed(seed)
                        .check()
                        .expect("valid settings")
                        .build();
                    for point in points.chunks_exact(dim) {
                        learner.learn_one(point).expect("valid point");
                    }
                    let frame = learner.frame().expect("past the warm-up");
                    let origin = frame.origin().to_vec();
                    let radius = frame.radius();
                    let memory = learner.memory_points();
                    let losses = learner.memory_losses();
                    let warm = learner.memory_warmup_points();
                    let n = memory.len() / dim;
                    let lambda_of = |m: usize| {
                        coeff * (dim as f64 + 2.0)
                            / (2.0 * (m.max(1) as f64).sqrt() * radius * radius)
                    };
                    let lambda = lambda_of(n);
                    let centred: Vec<Vec<f64>> = means
                        .iter()
                        .map(|m| m.iter().zip(&origin).map(|(v, o)| v - o).collect())
                        .collect();
                    let (full, full_counts) = lloyd(centred.clone(), memory, dim);
                    let (mut a, mut b, mut best) = (0, 1, f64::INFINITY);
                    for i in 0..k {
                        for j in 0..i {
                            let d2 = squared(&centred[i], &centred[j]);
                            if d2 < best {
                                (a, b, best) = (i, j, d2);
                            }
                        }
                    }
                    let mut merged: Vec<Vec<f64>> = centred
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != a)
                        .map(|(_, c)| c.clone())
                        .collect();
                    let slot = if b < a { b } else { b - 1 };
                    merged[slot] = centred[a]
                        .iter()
                        .zip(&centred[b])
                        .map(|(x, y)| 0.5 * (x + y))
                        .collect();
                    let (fewer, fewer_counts) = lloyd(merged, memory, dim);
                    let s_of = |centres: &[Vec<f64>]| -> f64 {
                        memory
                            .chunks_exact(dim)
                            .enumerate()
                            .map(|(i, x)| {
                                let loss = nearest(centres, x).1;
                                let weight = if i < warm { 0.0 } else { lambda_of(i) };
                                loss + 0.5 * weight * (loss - losses[i]).powi(2)
                            })
                            .sum()
                    };
                    let ln_uniform = ln_gamma_half_integer(dim + 2)
                        - 0.5 * dim as f64 * std::f64::consts::PI.ln()
                        - dim as f64 * (2.0 * radius).ln();
                    let occam_of = |counts: &[usize]| -> f64 {
                        counts
                            .iter()
                            .map(|&c| {
                                ln_uniform
                                    + 0.5
                                        * dim as f64
                                        * (std::f64::consts::PI / (lambda * c.max(1) as f64)).ln()
                            })
                            .sum()
                    };
                    let data = lambda * (s_of(&fewer) - s_of(&full));
                    let occam_term =
                        occam_of(&full_counts) - occam_of(&fewer_counts) - eta + (k as f64).ln();
                    sums[0] += radius;
                    sums[1] += lambda;
                    sums[2] += data;
                    sums[3] += occam_term;
                    sums[4] += data + occam_term;
                    sums[5] += -eta + ((k + 1) as f64).ln();
                }
                let m = seeds as f64;
                println!(
                    "| {dim} | {k} | {delta} | {half:.1} | {t} | {:.1} | {:.2e} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    sums[0] / m,
                    sums[1] / m,
                    sums[2] / m,
                    sums[3] / m,
                    sums[4] / m,
                    sums[5] / m
                );
            }
        }
    }
}

/// Farthest-point seeding then Lloyd: k means of `points` and their counts.
fn kmeans_of(points: &[f64], dim: usize, k: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
    let n = points.len() / dim;
    let mut mean = vec![0.0; dim];
    for x in points.chunks_exact(dim) {
        mean.iter_mut().zip(x).for_each(|(m, v)| *m += v / n as f64);
    }
    let mut centres = vec![points[..dim].to_vec()];
    let first = points
        .chunks_exact(dim)
        .max_by(|a, b| squared(a, &mean).total_cmp(&squared(b, &mean)))
        .expect("points");
    centres[0] = first.to_vec();
    while centres.len() < k {
        let next = points
            .chunks_exact(dim)
            .max_by(|a, b| nearest(&centres, a).1.total_cmp(&nearest(&centres, b).1))
            .expect("points");
        centres.push(next.to_vec());
    }
    lloyd(centres, points, dim)
}

/// The number of centres of `centres` (row-major) nearest to at least one point.
fn occupied(centres: &[f64], points: &[f64], dim: usize) -> usize {
    let rows: Vec<Vec<f64>> = centres.chunks_exact(dim).map(<[f64]>::to_vec).collect();
    let mut used = vec![false; rows.len()];
    for x in points.chunks_exact(dim) {
        used[nearest(&rows, x).0] = true;
    }
    used.iter().filter(|u| **u).count()
}

/// `balance [--dims 2] [--ks 2] [--seeds 20] [--horizon 2000] [--samples 2000] [--thin 50]`:
/// is each move of the chain in balance with the target? After a run of the learner, its
/// next round's target is fixed (proposal means by Lloyd, p = k + 4) and chains of each move
/// set run from the learner's state; printed per move set: the fraction of the states
/// (one every `thin` iterations) at k, at k + 1 with one centre that holds no point, at
/// k + 1 with every centre occupied, and elsewhere; beside them the exact posterior odds of
/// "k + 1 with one empty centre" against k, (k + 1) e^{−η} P_U(empty), with P_U(empty) the
/// probability that a centre drawn from the prior holds no point of memory, given the
/// learner's occupied centres.
fn balance(args: &[String]) {
    use pacstream::paco::ProposalMeans;
    use pacstream::paco::ProposalScale;
    use pacstream::paco::testing::{
        MoveMix, ToyChain, ToyMeans, ToyMoves, ToyTarget, run_toy_chain_with,
    };
    let dims = option(args, "--dims").map_or(vec![2], |s| list(&s));
    let ks = option(args, "--ks").map_or(vec![2], |s| list(&s));
    let seeds: u64 = option(args, "--seeds").map_or(20, |s| s.parse().expect("a number"));
    let horizon: usize = option(args, "--horizon").map_or(2000, |s| s.parse().expect("a number"));
    let samples: usize = option(args, "--samples").map_or(2000, |s| s.parse().expect("a number"));
    let thin: usize = option(args, "--thin").map_or(50, |s| s.parse().expect("a number"));
    let learner_moves = ToyMoves::learner();
    let sets: Vec<(&str, ToyMoves)> = vec![
        ("learner", learner_moves),
        (
            "jump (defensive)",
            ToyMoves {
                moves: MoveMix::JUMP_ONLY,
                defensive_weight: learner_moves.defensive_weight,
            },
        ),
        ("jump (t3)", ToyMoves::jump_only()),
        (
            "birth/death + walk",
            ToyMoves {
                moves: MoveMix {
                    jump: 0.0,
                    birth_death: 0.5,
                    random_walk: 0.5,
                },
                defensive_weight: learner_moves.defensive_weight,
            },
        ),
    ];
    println!(
        "| d | k | seed | k̂_T (occupied) | odds k+1 empty : k | moves | at k | k+1, one empty | k+1, all occupied | other | acceptance |"
    );
    println!("|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|");
    for &dim in &dims {
        for &k in &ks {
            for seed in 0..seeds {
                let (_, points) = stream(k, dim, horizon, seed);
                let mut learner = PacoParams::new().seed(seed).check().expect("valid").build();
                for point in points.chunks_exact(dim) {
                    learner.learn_one(point).expect("valid point");
                }
                let (mut target, state) = ToyTarget::of_learner(&learner).expect("a target");
                target.max_k = k + 4;
                let memory = target.points.clone();
                let found = state.len() / dim;
                let used = occupied(&state, &memory, dim);
                // P_U(empty): a centre uniform in B(2R) nearest to no point, given the
                // occupied centres of the learner's state.
                let rows: Vec<Vec<f64>> = state.chunks_exact(dim).map(<[f64]>::to_vec).collect();
                let mut keep = vec![false; rows.len()];
                for x in memory.chunks_exact(dim) {
                    keep[nearest(&rows, x).0] = true;
                }
                let kept: Vec<Vec<f64>> = rows
                    .iter()
                    .zip(&keep)
                    .filter(|(_, u)| **u)
                    .map(|(r, _)| r.clone())
                    .collect();
                let nearest_loss: Vec<f64> = memory
                    .chunks_exact(dim)
                    .map(|x| nearest(&kept, x).1)
                    .collect();
                let mut rng = StreamRng::seed_from(seed).child(99);
                let draws = 20_000;
                let mut empty = 0;
                for _ in 0..draws {
                    let c: Vec<f64> = loop {
                        let c: Vec<f64> = (0..dim)
                            .map(|_| 2.0 * target.radius * (2.0 * rng.next_f64() - 1.0))
                            .collect();
                        if c.iter().map(|v| v * v).sum::<f64>()
                            <= 4.0 * target.radius * target.radius
                        {
                            break c;
                        }
                    };
                    if memory
                        .chunks_exact(dim)
                        .zip(&nearest_loss)
                        .all(|(x, l)| squared(&c, x) >= *l)
                    {
                        empty += 1;
                    }
                }
                let p_empty = empty as f64 / draws as f64;
                let odds = (kept.len() + 1) as f64 * (-target.eta).exp() * p_empty;
                let by_k: Vec<ProposalMeans> = (1..=target.max_k)
                    .map(|kk| {
                        let (means, counts) = kmeans_of(&memory, dim, kk);
                        ProposalMeans {
                            n_clusters: kk,
                            means: means.concat(),
                            counts: counts.iter().map(|&c| c as f64).collect(),
                        }
                    })
                    .collect();
                let fixed = ToyMeans::Fixed(by_k);
                for (name, moves) in &sets {
                    let mut rng = StreamRng::seed_from(seed).child(7);
                    let mut current = state.clone();
                    let mut counts = [0usize; 4];
                    let mut accepted = 0;
                    for _ in 0..samples {
                        let run = run_toy_chain_with(
                            &target,
                            ToyChain {
                                proposal: ProposalScale::Laplace,
                                multiplier: 1.0,
                                iterations: thin,
                                full_evaluation: false,
                                defect: pacstream::paco::testing::Defect::None,
                            },
                            *moves,
                            &fixed,
                            current,
                            &mut rng,
                        );
                        accepted += run.report.accepted;
                        let occ = occupied(&run.centres, &memory, dim);
                        let cell = if run.n_clusters == k && occ == k {
                            0
                        } else if run.n_clusters == k + 1 && occ == k {
                            1
                        } else if run.n_clusters == k + 1 {
                            2
                        } else {
                            3
                        };
                        counts[cell] += 1;
                        current = run.centres;
                    }
                    let f = |i: usize| counts[i] as f64 / samples as f64;
                    println!(
                        "| {dim} | {k} | {seed} | {found} ({used}) | {odds:.4} | {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                        f(0),
                        f(1),
                        f(2),
                        f(3),
                        accepted as f64 / (samples * thin) as f64
                    );
                }
            }
        }
    }
}
