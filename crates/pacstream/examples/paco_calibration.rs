//! Calibration runs of PACBO on simulated mixtures with a known number of clusters.
//!
//! `cargo run --release --example paco_calibration -- [options]` prints one table row per
//! (scenario, settings): the fraction of seeds whose k̂_t equals the true k at each
//! checkpoint t, and the mean k̂_t. The tables of `docs/paco-calibration.md` were made with it
//! (the exact commands are written there).
//!
//! Options (all optional; lists are comma-separated): `--scenarios a,b,..` (names below),
//! `--coeff A,..`, `--eta E,..`, `--b B,..` (default: the library's defaults),
//! `--proposal laplace|seed|both`, `--seeds N` (5), `--horizon T` (1000), `--iterations N`
//! (500), `--window W`, `--restart`. Seed s draws the stream from `StreamRng::seed_from(s)`
//! and runs the learner with seed s, so every table is reproduced exactly.
//!
//! Scenarios (Gaussian clusters of unit variance per coordinate, equal weights, labels drawn
//! uniformly per point):
//! - `line3`: d = 1, 3 clusters at −8, 0, 8;
//! - `ring3`: d = 2, 3 clusters on a circle of radius 6;
//! - `grid6`: d = 2, 6 clusters on a 3 × 2 grid of spacing 7;
//! - `rpkg4`: d = 5, 4 clusters with means uniform on [−10, 10]^5 (the R package's example),
//!   new means per seed;
//! - `simplex5`: d = 10, 5 clusters at 6·e_1..6·e_5 (pairwise distance 8.5);
//! - `wide8`: d = 5, 8 clusters with means uniform on [−15, 15]^5, redrawn until every pair
//!   is at least 8 apart (well separated), new means per seed;
//! - `change2to5`: d = 2, the stream of `data/changing.csv` (two clusters for 400 rounds,
//!   then those two and three new ones); its true k is 2 before round 400 and 5 after.

// A report program: its output is the table on stdout.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use pacstream::paco::{Memory, PacoParams, ProposalScale, default_proposal_scale};
use pacstream::{OnlineLearner, StreamRng};

struct Scenario {
    name: &'static str,
    dim: usize,
    means: fn(&mut StreamRng) -> Vec<Vec<f64>>,
    /// The number of active clusters (the first ones of `means`) at round t.
    active: fn(usize, usize) -> usize,
}

/// Every cluster active from the start.
fn all(_t: usize, k: usize) -> usize {
    k
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "line3",
            dim: 1,
            means: |_| vec![vec![-8.0], vec![0.0], vec![8.0]],
            active: all,
        },
        Scenario {
            name: "ring3",
            dim: 2,
            means: |_| {
                (0..3)
                    .map(|j| {
                        let angle = 2.0 * std::f64::consts::PI * j as f64 / 3.0;
                        vec![6.0 * angle.cos(), 6.0 * angle.sin()]
                    })
                    .collect()
            },
            active: all,
        },
        Scenario {
            name: "grid6",
            dim: 2,
            means: |_| {
                (0..6)
                    .map(|j| vec![7.0 * (j % 3) as f64, 7.0 * (j / 3) as f64])
                    .collect()
            },
            active: all,
        },
        Scenario {
            name: "rpkg4",
            dim: 5,
            means: |rng| uniform_means(rng, 4, 5, 10.0),
            active: all,
        },
        Scenario {
            name: "simplex5",
            dim: 10,
            means: |_| {
                (0..5)
                    .map(|j| (0..10).map(|i| if i == j { 6.0 } else { 0.0 }).collect())
                    .collect()
            },
            active: all,
        },
        Scenario {
            name: "wide8",
            dim: 5,
            means: |rng| loop {
                let means = uniform_means(rng, 8, 5, 15.0);
                let separated = means.iter().enumerate().all(|(i, a)| {
                    means[..i].iter().all(|b| {
                        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() >= 64.0
                    })
                });
                if separated {
                    break means;
                }
            },
            active: all,
        },
        Scenario {
            name: "change2to5",
            dim: 2,
            means: |_| {
                vec![
                    vec![0.0, 0.0],
                    vec![10.0, 0.0],
                    vec![0.0, 10.0],
                    vec![10.0, 10.0],
                    vec![5.0, 17.0],
                ]
            },
            active: |t, _| if t < 400 { 2 } else { 5 },
        },
    ]
}

fn uniform_means(rng: &mut StreamRng, k: usize, dim: usize, half_width: f64) -> Vec<Vec<f64>> {
    (0..k)
        .map(|_| {
            (0..dim)
                .map(|_| half_width * (2.0 * rng.next_f64() - 1.0))
                .collect()
        })
        .collect()
}

/// The stream and the true number of clusters at each round.
fn stream(scenario: &Scenario, horizon: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
    let mut rng = StreamRng::seed_from(seed).child(0x6d69_7874);
    let means = (scenario.means)(&mut rng);
    let mut points = Vec::with_capacity(horizon * scenario.dim);
    let mut true_k = Vec::with_capacity(horizon);
    for t in 0..horizon {
        let active = (scenario.active)(t, means.len());
        let m = &means[rng.index_below(active)];
        points.extend(m.iter().map(|v| v + rng.standard_normal()));
        true_k.push(active);
    }
    (points, true_k)
}

fn list<T: std::str::FromStr>(text: &str) -> Vec<T> {
    text.split(',')
        .map(|v| v.parse().ok().expect("a number"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let option = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].clone())
    };
    let wanted: Option<Vec<String>> =
        option("--scenarios").map(|s| s.split(',').map(str::to_string).collect());
    let coeffs: Vec<f64> =
        option("--coeff").map_or(vec![pacstream::paco::DEFAULT_COEFF], |s| list(&s));
    let etas: Vec<f64> = option("--eta").map_or(vec![pacstream::paco::DEFAULT_ETA], |s| list(&s));
    // No --b: the default of each proposal rule.
    let bs: Vec<Option<f64>> =
        option("--b").map_or(vec![None], |s| list(&s).into_iter().map(Some).collect());
    let proposals = match option("--proposal").as_deref() {
        Some("paper" | "seed") => vec![ProposalScale::Paper],
        Some("both") => vec![ProposalScale::Laplace, ProposalScale::Paper],
        _ => vec![ProposalScale::Laplace],
    };
    let seeds: u64 = option("--seeds").map_or(5, |s| s.parse().expect("a number"));
    let horizon: usize = option("--horizon").map_or(1000, |s| s.parse().expect("a number"));
    let iterations: usize = option("--iterations").map_or(500, |s| s.parse().expect("a number"));
    let window: Option<usize> = option("--window").map(|s| s.parse().expect("a number"));
    let restart = args.iter().any(|a| a == "--restart");
    let checkpoints: Vec<usize> = [50, 100, 200, 300, 400, 500, 700, 1000, 2000, 5000, 10_000]
        .into_iter()
        .filter(|&t| t <= horizon)
        .collect();

    print!("| scenario | proposal | a | η | b |");
    for t in &checkpoints {
        print!(" t={t} |");
    }
    println!(" acceptance | s/run |");
    print!("|---|---|---|---|---|");
    for _ in &checkpoints {
        print!("---|");
    }
    println!("---|---|");
    for scenario in scenarios() {
        if wanted
            .as_ref()
            .is_some_and(|w| !w.iter().any(|n| n == scenario.name))
        {
            continue;
        }
        for &proposal in &proposals {
            for &coeff in &coeffs {
                for &eta in &etas {
                    for &b in &bs {
                        let mut hits = vec![0usize; checkpoints.len()];
                        let mut sums = vec![0usize; checkpoints.len()];
                        let started = Instant::now();
                        let mut accepted = 0u64;
                        let mut total_iterations = 0u64;
                        for seed in 0..seeds {
                            let (points, true_k) = stream(&scenario, horizon, seed);
                            let mut params = PacoParams::new()
                                .coeff(coeff)
                                .eta(eta)
                                .proposal(proposal)
                                .iterations(iterations)
                                .restart(restart)
                                .seed(seed);
                            if let Some(w) = window {
                                params = params.memory(Memory::Window(w));
                            }
                            if let Some(b) = b {
                                params = params.proposal_scale(b);
                            }
                            let mut learner = params.check().expect("valid settings").build();
                            for (t, point) in points.chunks_exact(scenario.dim).enumerate() {
                                learner.learn_one(point).expect("valid point");
                                if let Some(c) = checkpoints.iter().position(|&c| c == t + 1) {
                                    let k = learner.n_clusters().unwrap_or(0);
                                    sums[c] += k;
                                    if k == true_k[t] {
                                        hits[c] += 1;
                                    }
                                }
                            }
                            accepted += learner.report().accepted;
                            total_iterations += learner.report().iterations;
                        }
                        let seconds = started.elapsed().as_secs_f64() / seeds as f64;
                        let acceptance = accepted as f64 / total_iterations.max(1) as f64;
                        let b = b.unwrap_or_else(|| default_proposal_scale(proposal));
                        print!(
                            "| {} | {} | {coeff} | {eta} | {b} |",
                            scenario.name,
                            proposal.name()
                        );
                        for (h, s) in hits.iter().zip(&sums) {
                            print!(" {}/{seeds} ({:.1}) |", h, *s as f64 / seeds as f64);
                        }
                        println!(" {:.1}% | {seconds:.1} |", 100.0 * acceptance);
                    }
                }
            }
        }
    }
}
