//! PACBO's online learner: the conformance suite, scale-equivariance, d = 1, a stream whose
//! number of clusters changes, the R package's documented example, batch mode, window
//! memory; the corollary of Li, Guedj & Loustau (2018) with exact draws, and the report of a
//! run against the best clusterings in hindsight. Every seed is fixed.

// The measured fractions are printed for the record (`--nocapture`), beside the assertions.
#![allow(clippy::print_stderr)]

use pacstream::conformance::{Conformance, InvalidPoints, assert_send_sync};
use pacstream::paco::bounds::{BoundSettings, loss_bound};
use pacstream::paco::oracle::{IdealSamplerBound, hindsight_oracle, hindsight_report};
use pacstream::paco::{Memory, Paco, PacoParams, PacoStep, ProposalScale, Radius};
use pacstream::{Error, OnlineLearner, StreamRng, UnsupervisedLearner};

/// `n` points from Gaussian groups of unit variance around `means`, interleaved at random.
fn mixture(means: &[Vec<f64>], n: usize, spread: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n)
        .map(|_| {
            let m = &means[rng.index_below(means.len())];
            m.iter()
                .map(|v| v + spread * rng.standard_normal())
                .collect()
        })
        .collect()
}

fn three_groups(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let means = vec![
        vec![0.0, 0.0, 0.0],
        vec![8.0, 0.0, 1.0],
        vec![0.0, 8.0, -1.0],
    ];
    mixture(&means, n, 1.0, seed)
}

/// The conformance suite for learners with `params` and each seed, cutting `stream` at
/// `cuts` for the snapshot checks.
fn check_conformance(params: &PacoParams, stream: &[Vec<f64>], cuts: &[usize]) {
    let make = |seed| params.clone().seed(seed).check().unwrap().build();
    Conformance::new(make, stream)
        .invalid_points(&InvalidPoints::around(&stream[0]))
        .cuts(cuts)
        .check_all()
        .unwrap();
}

#[test]
fn conformance_with_warmup() {
    assert_send_sync::<Paco>();
    let stream = three_groups(70, 1);
    let params = PacoParams::new().warmup(10).iterations(40).max_k(6);
    check_conformance(&params, &stream, &[0, 1, 5, 9, 10, 11, 40, 69]);
}

#[test]
fn conformance_with_given_radius_window_and_paper_proposal() {
    let stream = three_groups(70, 2);
    let params = PacoParams::new()
        .radius(Radius::Given(15.0))
        .memory(Memory::Window(25))
        .proposal(ProposalScale::Paper)
        .iterations(40)
        .max_k(6);
    check_conformance(&params, &stream, &[0, 1, 2, 24, 25, 26, 50, 69]);
}

/// With restarts, over a few thousand points (the k-means passes of the proposal means run
/// in parallel). The parallel waves of the S_t evaluation start beyond 65,536 points; their
/// thread-count independence is tested in `paco::evaluate`.
#[test]
fn conformance_with_restart_and_parallel_evaluation() {
    let mut stream = three_groups(4200, 3);
    stream.truncate(4200);
    let params = PacoParams::new()
        .warmup(4100)
        .restart(true)
        .iterations(30)
        .max_k(5);
    check_conformance(&params, &stream, &[0, 4099, 4100, 4150, 4199]);
}

#[test]
fn round_one_is_drawn_from_the_prior_without_looking_at_the_point() {
    let make = || {
        PacoParams::new()
            .radius(Radius::Given(5.0))
            .iterations(10)
            .seed(3)
            .check()
            .unwrap()
            .build()
    };
    let mut a = make();
    let mut b = make();
    let step_a = a.learn_one(&[0.0, 0.0]).unwrap();
    let step_b = b.learn_one(&[4.0, -1.0]).unwrap();
    // The prediction of round 1 does not depend on x_1: the same centres, so the loss is
    // the distance from each point to the same clustering.
    assert!(step_a.loss.is_some() && step_a.n_clusters == step_b.n_clusters);
    assert!(!step_a.warmup);
    let mut fresh = make();
    fresh.learn_one(&[0.0, 0.0]).unwrap();
    assert_eq!(fresh.centres(), a.centres());
}

#[test]
fn warm_up_rounds_have_no_loss() {
    let mut learner = PacoParams::new()
        .warmup(5)
        .iterations(20)
        .check()
        .unwrap()
        .build();
    for (t, point) in three_groups(8, 4).iter().enumerate() {
        let step = learner.learn_one(point).unwrap();
        if t < 5 {
            assert_eq!((step.loss, step.warmup), (None, true));
            assert_eq!(
                step.sampler.is_some(),
                t == 4,
                "the last warm-up point runs a chain"
            );
        } else {
            assert!(step.loss.is_some() && step.n_clusters.is_some() && !step.warmup);
        }
    }
    assert!(learner.frame().unwrap().radius() > 0.0);
}

fn run(learner: &mut Paco, stream: &[Vec<f64>]) -> Vec<PacoStep> {
    stream
        .iter()
        .map(|p| learner.learn_one(p).unwrap())
        .collect()
}

/// Data a·x + b with R `auto`: the centres become a·c + b and the k̂ path is unchanged;
/// bit for bit for a = 2^j (b = 0), within a tolerance otherwise.
#[test]
fn scale_equivariance() {
    let stream = three_groups(150, 5);
    let make = || {
        PacoParams::new()
            .warmup(20)
            .iterations(150)
            .seed(9)
            .check()
            .unwrap()
            .build()
    };
    let mut base = make();
    let base_steps = run(&mut base, &stream);
    for j in [-3, 5] {
        let a = 2f64.powi(j);
        let scaled: Vec<Vec<f64>> = stream
            .iter()
            .map(|p| p.iter().map(|v| a * v).collect())
            .collect();
        let mut learner = make();
        let steps = run(&mut learner, &scaled);
        for (s, t) in base_steps.iter().zip(&steps) {
            assert_eq!(s.n_clusters, t.n_clusters);
            assert_eq!(s.label, t.label);
            assert_eq!(
                s.loss.map(|l| l * a * a),
                t.loss,
                "losses scale by a², bit for bit"
            );
            let (rs, rt) = (s.sampler.as_ref(), t.sampler.as_ref());
            assert_eq!(rs.map(|r| r.accepted), rt.map(|r| r.accepted));
            assert_eq!(rs.map(|r| r.lambda / (a * a)), rt.map(|r| r.lambda));
        }
        let expected: Vec<f64> = base
            .centres()
            .unwrap()
            .as_slice()
            .iter()
            .map(|c| a * c)
            .collect();
        assert_eq!(learner.centres().unwrap().as_slice(), expected.as_slice());
    }
    // a = 3.7 and a translation: the same k̂ path, centres within a tolerance.
    let (a, shift) = (3.7, [100.0, -20.0, 5.5]);
    let moved: Vec<Vec<f64>> = stream
        .iter()
        .map(|p| p.iter().zip(&shift).map(|(v, b)| a * v + b).collect())
        .collect();
    let mut learner = make();
    let steps = run(&mut learner, &moved);
    let path = |steps: &[PacoStep]| steps.iter().map(|s| s.n_clusters).collect::<Vec<_>>();
    assert_eq!(path(&base_steps), path(&steps));
    for (c, m) in base
        .centres()
        .unwrap()
        .iter()
        .zip(learner.centres().unwrap().iter())
    {
        for ((x, y), b) in c.iter().zip(m).zip(&shift) {
            assert!((a * x + b - y).abs() < 1e-9 * a * 20.0, "{x} {y}");
        }
    }
}

/// d = 1 works (the R package cannot leave k = 1 in one dimension).
#[test]
fn one_dimension() {
    let means = vec![vec![-10.0], vec![0.0], vec![10.0]];
    let stream = mixture(&means, 400, 1.0, 6);
    let mut learner = PacoParams::new()
        .iterations(300)
        .seed(1)
        .check()
        .unwrap()
        .build();
    let steps = run(&mut learner, &stream);
    let late: Vec<usize> = steps[300..].iter().filter_map(|s| s.n_clusters).collect();
    let threes = late.iter().filter(|&&k| k == 3).count();
    assert!(threes as f64 >= 0.9 * late.len() as f64, "{late:?}");
    // Each group has a centre nearby: within 2.5, about three widths of the quasi-posterior
    // of a centre here (1/√(2λn_j) ≈ 0.9), since the prediction is a draw from it.
    let centres: Vec<f64> = learner.centres().unwrap().iter().map(|c| c[0]).collect();
    for m in [-10.0, 0.0, 10.0] {
        assert!(centres.iter().any(|c| (c - m).abs() < 2.5), "{centres:?}");
    }
}

/// Two clusters, then five (the two and three new ones): k̂_t follows, in exact and window
/// memory.
#[test]
fn a_changing_number_of_clusters_is_followed() {
    let first = vec![vec![0.0, 0.0], vec![10.0, 0.0]];
    let all = vec![
        vec![0.0, 0.0],
        vec![10.0, 0.0],
        vec![0.0, 10.0],
        vec![10.0, 10.0],
        vec![5.0, 17.0],
    ];
    let mut stream = mixture(&first, 300, 1.0, 7);
    stream.extend(mixture(&all, 600, 1.0, 8));
    for memory in [Memory::All, Memory::Window(300)] {
        let mut learner = PacoParams::new()
            .iterations(200)
            .memory(memory)
            .seed(2)
            .check()
            .unwrap()
            .build();
        let steps = run(&mut learner, &stream);
        let k_at = |t: usize| steps[t - 1].n_clusters.unwrap_or(0);
        // k̂_t is a draw from the quasi-posterior: brief excursions are part of it, so the
        // checks are on shares of rounds.
        let share = |rounds: std::ops::RangeInclusive<usize>, k: usize| {
            let n = rounds.clone().count();
            rounds.filter(|&t| k_at(t) == k).count() as f64 / n as f64
        };
        assert!(share(200..=300, 2) >= 0.9, "{memory:?}: before the change");
        assert!(share(800..=900, 5) >= 0.8, "{memory:?}: at the end");
        let first_five = (301..=900).find(|&t| k_at(t) == 5).unwrap_or(usize::MAX);
        assert!(
            first_five <= 700,
            "{memory:?}: k̂ = 5 first at t = {first_five}"
        );
    }
}

/// The R package's documented example: 4 Gaussian clusters in d = 5, means uniform on
/// [−10, 10]^5, unit covariance, T = 100, N = 500, with the data of
/// `examples/paco_performance.rs r-example` (its seeds 0–19 are the 17 of 20 of
/// docs/paco-calibration.md), here over 40 seeds.
///
/// With the default settings: R `auto`, so the first 50 points are a warm-up. (With R given,
/// round 1 is a draw from the prior, far from the data; its large losses enter S_t through
/// the variance term, which then favours clusterings as bad as the past predictions, and the
/// chain stays there: k̂_T = 4 for none of these seeds. The R package avoids this by taking
/// the prior draw closest to x_1, that is by looking at x_1 before predicting it.)
#[test]
fn the_r_package_example() {
    let seeds = 40u64;
    let mut found = 0;
    for seed in 0..seeds {
        // The example's generator: means first, then each point's cluster and coordinates.
        let mut rng = StreamRng::seed_from(1000 + seed);
        let means: Vec<f64> = (0..20).map(|_| 20.0 * rng.next_f64() - 10.0).collect();
        let stream: Vec<Vec<f64>> = (0..100)
            .map(|_| {
                let c = rng.index_below(4);
                (0..5)
                    .map(|i| means[c * 5 + i] + rng.standard_normal())
                    .collect()
            })
            .collect();
        let mut learner = PacoParams::new().seed(seed).check().unwrap().build();
        run(&mut learner, &stream);
        if learner.n_clusters() == Some(4) {
            found += 1;
        }
    }
    eprintln!("k̂_T = 4 for {found} of {seeds} seeds");
    // Measured: 30 of 40 (17 of the first 20, as documented). The count over 40 independent
    // seeds is Binomial(40, p); at the measured p = 0.75 its standard deviation is 2.7, and
    // the assertion sits two of them below the measured count (P(count ≤ 24) = 0.026 at
    // p = 0.75): a change of the random streams that leaves the learner as good passes, a
    // learner that finds k = 4 at p = 0.5 (20 of 40) fails with probability 0.92.
    assert!(
        found >= 25,
        "k̂_T = 4 for {found} of {seeds} seeds (measured: 30)"
    );
}

#[test]
fn batch_mode_finds_the_groups() {
    let data = three_groups(300, 10);
    let flat: Vec<f64> = data.iter().flatten().copied().collect();
    let array = ndarray::Array2::from_shape_vec((300, 3), flat).unwrap();
    let fit = PacoParams::new()
        .seed(3)
        .check()
        .unwrap()
        .fit(array.view())
        .unwrap();
    assert_eq!(fit.n_clusters(), 3);
    assert_eq!(fit.labels().len(), 300);
    assert!(fit.report().acceptance_rate > 0.0);
    // Every point's label is its nearest centre.
    for (point, &label) in data.iter().zip(fit.labels()) {
        assert_eq!(fit.centres().nearest(point).0, label);
    }
}

/// Window memory holds W points and its cost per round does not grow.
#[test]
fn window_memory_forgets() {
    let stream = three_groups(500, 11);
    let mut learner = PacoParams::new()
        .memory(Memory::Window(100))
        .iterations(50)
        .seed(1)
        .check()
        .unwrap()
        .build();
    let steps = run(&mut learner, &stream);
    assert_eq!(learner.memory_points().len(), 100 * 3);
    assert_eq!(
        steps.last().unwrap().sampler.as_ref().unwrap().n_points,
        100
    );
    // λ_t stops decreasing once the window is full.
    let lambda = |t: usize| steps[t].sampler.as_ref().unwrap().lambda;
    assert_eq!(lambda(150), lambda(499));
    assert!(lambda(60) > lambda(150));
}

#[test]
fn points_beyond_the_radius_are_counted_not_refused() {
    let mut learner = PacoParams::new()
        .radius(Radius::Given(1.0))
        .iterations(10)
        .check()
        .unwrap()
        .build();
    learner.learn_one(&[0.5]).unwrap();
    learner.learn_one(&[3.0]).unwrap();
    assert_eq!(learner.report().points_beyond_radius, 1);
}

#[test]
fn bad_settings_and_snapshots_are_refused() {
    assert!(matches!(
        PacoParams::new().max_k(0).check(),
        Err(Error::InvalidParameter { name: "max_k", .. })
    ));
    let mut learner = PacoParams::new()
        .warmup(3)
        .iterations(5)
        .check()
        .unwrap()
        .build();
    for point in three_groups(6, 12) {
        learner.learn_one(&point).unwrap();
    }
    let text = serde_json::to_string(&learner).unwrap();
    let restored: Paco = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&restored).unwrap(), text);
    // A snapshot whose model contradicts its centres is refused.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["n_rounds"] = serde_json::json!(99);
    assert!(serde_json::from_value::<Paco>(value).is_err());
    assert_eq!(learner.dim(), Some(3));
}

/// The ideal sampler of a one-dimensional problem with one cluster (p = 1, R = 1, η = 0):
/// ĉ_t drawn from ρ̂_t ∝ exp(−λ_{t−1} S_{t−1}(c)) on [−2R, 2R] by inverse transform on a
/// grid of `cells` cells (a uniform draw inside the chosen cell), S_t with the variance term
/// of the realised draws, λ_t = a (d + 2)/(2 √t R²), λ_0 := λ_1. Returns, averaged over
/// `replicates` runs: Σ_t E_{ρ̂_t} ℓ(c, x_t) (each expectation by quadrature on the grid),
/// the right-hand side of the paper's Theorem 2 for the best ρ,
/// inf_ρ {E_ρ S_T + K(ρ, π)/λ_T} = −(1/λ_T) ln ∫ exp(−λ_T S_T) dπ (also by quadrature), and
/// the comparator L*_1 = inf_{|c| ≤ R} Σ_t (c − x_t)².
fn ideal_sampler(stream: &[f64], a: f64, replicates: u64, cells: usize) -> (f64, f64, f64) {
    let radius = 1.0;
    let h = 4.0 * radius / cells as f64;
    let grid: Vec<f64> = (0..cells)
        .map(|j| -2.0 * radius + (j as f64 + 0.5) * h)
        .collect();
    let lambda = |n: usize| a * 3.0 / (2.0 * (n.max(1) as f64).sqrt() * radius * radius);
    let (mut expected, mut theorem) = (0.0, 0.0);
    let mut weights = vec![0.0; cells];
    for replicate in 0..replicates {
        let mut rng = StreamRng::seed_from(replicate);
        let mut s = vec![0.0; cells];
        for (index, &x) in stream.iter().enumerate() {
            let lam = lambda(index);
            let least = s.iter().copied().fold(f64::INFINITY, f64::min);
            let mut total = 0.0;
            for (w, v) in weights.iter_mut().zip(&s) {
                *w = (-lam * (v - least)).exp();
                total += *w;
            }
            weights.iter_mut().for_each(|w| *w /= total);
            expected += weights
                .iter()
                .zip(&grid)
                .map(|(w, c)| w * (c - x) * (c - x))
                .sum::<f64>();
            let u = rng.next_f64();
            let mut cumulative = 0.0;
            let cell = weights
                .iter()
                .position(|w| {
                    cumulative += w;
                    cumulative > u
                })
                .unwrap_or(cells - 1);
            let drawn = grid[cell] + h * (rng.next_f64() - 0.5);
            let paid = (drawn - x) * (drawn - x);
            for (v, c) in s.iter_mut().zip(&grid) {
                let loss = (c - x) * (c - x);
                *v += loss + 0.5 * lam * (loss - paid) * (loss - paid);
            }
        }
        let lam = lambda(stream.len());
        let least = s.iter().copied().fold(f64::INFINITY, f64::min);
        let integral: f64 = s
            .iter()
            .map(|v| (-lam * (v - least)).exp() * h / (4.0 * radius))
            .sum();
        theorem += least - integral.ln() / lam;
    }
    let mean = stream.iter().sum::<f64>() / stream.len() as f64;
    let centre = mean.clamp(-radius, radius);
    let comparator = stream.iter().map(|x| (x - centre) * (x - centre)).sum();
    let n = replicates as f64;
    (expected / n, theorem / n, comparator)
}

/// The theorem with exact draws, on a problem where the bound is nearly reached: one cluster
/// on a line (p = 1, R = 1), T = 1000, a small temperature multiplier a (at the default
/// a = 20 the variance term C_1²·a dominates and no sequence comes near it). Theorem 2 for
/// the best ρ is reached to 0.77–0.91 of the regret, the corollary's closed form — the bound
/// the library computes and the command prints — to 0.53–0.64. The fractions are asserted
/// at what was measured ± 0.03 (the Monte Carlo part is the draws' effect on the variance
/// term, small), so the test fails if the ideal sampler does worse than the theorem allows,
/// if the bound's formula loses its 1/a (the a = 1 form is 820 at a = 0.01, below the ideal
/// sampler's 951) or its variance term (0.576 becomes 0.657 against ±R), or if it is
/// loosened by a tenth.
#[test]
fn the_corollary_holds_and_is_nearly_reached_with_exact_draws() {
    let t_max = 1000usize;
    let zero = vec![0.0; t_max];
    let alternating: Vec<f64> = (0..t_max)
        .map(|t| if t % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    // (stream, a, measured fractions of the regret reached: Theorem 2, the corollary)
    let cases = [
        ("x_t = 0", &zero, 0.01, 0.913, 0.528),
        ("x_t = 0", &zero, 0.03, 0.773, 0.640),
        ("x_t = ±R", &alternating, 0.03, 0.766, 0.576),
    ];
    for (name, stream, a, theorem_measured, corollary_measured) in cases {
        let (expected, theorem, comparator) = ideal_sampler(stream, a, 40, 800);
        let max_norm = stream.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let settings = BoundSettings {
            horizon: t_max as u64,
            dim: 1,
            radius: 1.0,
            max_norm,
            max_k: 1,
            eta: 0.0,
            coeff: a,
        };
        let bound = loss_bound(&settings, &[comparator]).unwrap();
        let theorem_fraction = (expected - comparator) / (theorem - comparator);
        let corollary_fraction = (expected - comparator) / (bound.value - comparator);
        eprintln!(
            "{name}, a = {a}: E loss {expected:.1}, Theorem 2 {theorem:.1}, corollary {:.1}, \
             L* {comparator:.1}: regret fractions {theorem_fraction:.3} and \
             {corollary_fraction:.3}",
            bound.value
        );
        assert!(expected <= theorem, "{name}, a = {a}: Theorem 2 broken");
        assert!(
            theorem <= bound.value,
            "{name}, a = {a}: the corollary is below Theorem 2"
        );
        assert!(
            (theorem_fraction - theorem_measured).abs() < 0.03,
            "{name}, a = {a}: Theorem 2 reached to {theorem_fraction}"
        );
        assert!(
            (corollary_fraction - corollary_measured).abs() < 0.03,
            "{name}, a = {a}: the corollary reached to {corollary_fraction}"
        );
        // Not vacuous: far below the loss of the worst clustering inside B(2R).
        let worst = stream.iter().map(|x| (2.0 + x.abs()).powi(2)).sum::<f64>();
        assert!(
            bound.value < 0.75 * worst,
            "{name}, a = {a}: {} vs {worst}",
            bound.value
        );
    }
}

/// The report of a run: the regret against the best fixed clustering in hindsight for every
/// k, the bound for the run's a (not 1), the k that minimises it, the warm-up rows counted
/// in the bound's T; in window memory and with rows beyond R, no bound.
#[test]
fn the_hindsight_report_names_what_it_bounds() {
    let stream = three_groups(400, 13);
    let mut learner = PacoParams::new()
        .warmup(40)
        .max_k(8)
        .iterations(100)
        .seed(5)
        .check()
        .unwrap()
        .build();
    let steps = run(&mut learner, &stream);
    let cumulative: f64 = steps.iter().filter_map(|s| s.loss).sum();
    let report = hindsight_report(&learner, 5, 1).unwrap();
    assert_eq!((report.predicted_rows, report.warmup_rows), (360, 40));
    assert!((report.cumulative_loss - cumulative).abs() < 1e-9 * cumulative);
    assert_eq!(
        report.fits.iter().map(|f| f.n_clusters).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    // The three groups' clustering is the oracle's by a wide margin; the best in hindsight
    // is the largest k (more centres, less loss), not the k of the bound.
    let (two, three, four) = (
        report.fit(2).unwrap(),
        report.fit(3).unwrap(),
        report.fit(4).unwrap(),
    );
    assert!(
        three.loss < 0.35 * two.loss && four.loss > 0.8 * three.loss,
        "{} {} {}",
        two.loss,
        three.loss,
        four.loss
    );
    assert_eq!(report.best().unwrap().n_clusters, 8);
    for fit in &report.fits {
        assert!((fit.regret - (cumulative - fit.loss)).abs() < 1e-6 * cumulative);
    }
    let IdealSamplerBound::Bound(bound) = &report.bound else {
        panic!("a bound: {:?}", report.bound)
    };
    assert_eq!(bound.settings.coeff, pacstream::paco::DEFAULT_COEFF);
    assert_eq!(bound.settings.horizon, 400, "T counts the warm-up rows");
    // The k of the bound is where L*_k + k·(price of a cluster) is least over every row.
    let flat: Vec<f64> = stream.iter().flatten().copied().collect();
    let every_row = ndarray::Array2::from_shape_vec((400, 3), flat).unwrap();
    let origin = learner.frame().unwrap().origin().to_vec();
    let centred = &every_row - &ndarray::Array1::from(origin);
    let oracle = hindsight_oracle(centred.view(), 8, 5, 1).unwrap();
    let losses: Vec<f64> = oracle.iter().map(|f| f.loss).collect();
    let direct = loss_bound(&bound.settings, &losses).unwrap();
    assert_eq!(direct.bound_k, bound.bound_k);
    assert!((direct.value - bound.value).abs() < 1e-9 * bound.value);

    // Window memory: no oracle, no bound, and the reason.
    let mut windowed = PacoParams::new()
        .memory(Memory::Window(100))
        .iterations(30)
        .check()
        .unwrap()
        .build();
    run(&mut windowed, &stream[..200]);
    let report = hindsight_report(&windowed, 3, 1).unwrap();
    assert!(report.fits.is_empty() && report.no_fits.is_some());
    let IdealSamplerBound::NoBound { reason } = &report.bound else {
        panic!("no bound in window memory")
    };
    assert!(reason.contains("window"), "{reason}");

    // A row far beyond R (fixed by the warm-up): the corollary does not apply.
    let mut beyond = PacoParams::new()
        .warmup(20)
        .iterations(30)
        .check()
        .unwrap()
        .build();
    run(&mut beyond, &stream[..60]);
    beyond.learn_one(&[500.0, 0.0, 0.0]).unwrap();
    let report = hindsight_report(&beyond, 3, 1).unwrap();
    let IdealSamplerBound::NoBound { reason } = &report.bound else {
        panic!("no bound beyond R")
    };
    assert!(reason.contains("beyond R"), "{reason}");
    assert!(!report.fits.is_empty(), "the regret is still measured");
}

/// `n_two` points around two groups in d = 3, then `n_four` around four (the first two and
/// two more), unit spread: the proposal means move once the first trees are built. The two
/// parts are drawn with `seed` and `seed + 1`.
fn two_groups_then_four(n_two: usize, n_four: usize, seed: u64) -> Vec<Vec<f64>> {
    let two = [vec![0.0, 0.0, 0.0], vec![8.0, 0.0, 1.0]];
    let four = [
        two[0].clone(),
        two[1].clone(),
        vec![0.0, 8.0, -1.0],
        vec![8.0, 8.0, 0.0],
    ];
    let mut stream = mixture(&two, n_two, 1.0, seed);
    stream.extend(mixture(&four, n_four, 1.0, seed + 1));
    stream
}

/// The conformance suite on the spatial index (forced from the first points with
/// `Summation::Index`), in exact and window memory: snapshots taken mid-stream restore the
/// index, the proposal means' assignments and the robust covers' stable parts, and the run
/// continues bit for bit; the same in a 1-thread and a 3-thread pool.
#[test]
fn conformance_on_the_index() {
    use pacstream::paco::Summation;
    // Two groups, then four: the proposal means move after the first trees are built.
    let stream = two_groups_then_four(200, 220, 11);
    for memory in [Memory::All, Memory::Window(150)] {
        let make = |seed| {
            PacoParams::new()
                .warmup(20)
                .iterations(40)
                .max_k(6)
                .memory(memory)
                .summation(Summation::Index)
                .seed(seed)
                .check()
                .unwrap()
                .build()
        };
        Conformance::new(make, &stream)
            .invalid_points(&InvalidPoints::around(&stream[0]))
            .cuts(&[0, 19, 20, 21, 63, 64, 65, 149, 150, 151, 257, 419])
            .check_all()
            .unwrap();
    }
}

/// A 64-bit FNV-1a hash of a sequence of words.
fn fingerprint(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for word in words {
        for byte in word.to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The fingerprint of a whole run: every round's k̂_t, loss (bits) and number of accepted
/// moves, then the bits of the final centres.
fn run_fingerprint(learner: &mut Paco, stream: &[Vec<f64>]) -> u64 {
    let steps = run(learner, stream);
    let per_round = steps.iter().flat_map(|step| {
        [
            step.n_clusters.unwrap_or(0) as u64,
            step.loss.map_or(u64::MAX, f64::to_bits),
            step.sampler
                .as_ref()
                .map_or(0, |report| report.accepted as u64),
        ]
    });
    let centres: Vec<u64> = learner
        .centres()
        .map(|c| c.as_slice().iter().map(|v| v.to_bits()).collect())
        .unwrap_or_default();
    fingerprint(per_round.chain(centres))
}

/// Speed-ups of the evaluation of S_t, of the proposal means or of the covers must not
/// change a run: the chain's decisions, the centres and so the losses are pinned, bit for
/// bit, by the fingerprint of a whole run (k̂_t, ℓ(ĉ_t, x_t) and the accepted moves of every
/// round, and the final centres), on the index (forced from the first points) and point by
/// point, for a stream whose number of groups changes from two to four. The fingerprints
/// were recorded with the code of commit 1206820, and again on 2026-12-04 when a fresh
/// k-means fit that finds the warm start's optimum in another order stopped replacing it
/// (`paco/means.rs`). A change meant to alter the algorithm
/// (a new move, another proposal) changes them: record the new values and say why in the
/// commit. (The kernels give the same bits on every instruction set; `ln`, `exp` and
/// `ln_1p` come from the platform's maths library, so another platform may differ.)
#[test]
fn a_run_is_pinned_to_its_fingerprint() {
    use pacstream::paco::Summation;
    let stream = two_groups_then_four(150, 250, 21);
    let mut found = Vec::new();
    for summation in [Summation::Index, Summation::PointByPoint] {
        let mut learner = PacoParams::new()
            .warmup(20)
            .iterations(60)
            .max_k(6)
            .summation(summation)
            .seed(77)
            .check()
            .unwrap()
            .build();
        found.push(run_fingerprint(&mut learner, &stream));
    }
    let expected: [u64; 2] = [0x5126_b943_1506_3350, 0x7c81_2610_eb36_422f];
    assert_eq!(
        found, expected,
        "the runs changed: {:016x?} (index, point by point)",
        found
    );
}

/// Whether a round's S_t was summed on the index: point by point, every point covered is
/// summed one by one; on the index, some in closed form.
fn on_the_index(step: &PacoStep) -> bool {
    step.sampler
        .as_ref()
        .is_some_and(|r| r.direct_fraction < r.data_fraction)
}

/// Four groups in d = 3 whose means lie 3 standard deviations apart (where the index is
/// dearer than the scan), `warmup` points for the warm-up and `rounds` more.
fn close_groups(warmup: usize, rounds: usize) -> Vec<Vec<f64>> {
    let means = vec![
        vec![0.0, 0.0, 0.0],
        vec![3.0, 0.0, 0.0],
        vec![0.0, 3.0, 0.0],
        vec![3.0, 3.0, 0.0],
    ];
    mixture(&means, warmup + rounds, 1.0, 21)
}

/// `Summation::Auto`'s fallback from the index, end to end: on groups 3 standard
/// deviations apart in d = 3, the first chain on the index is reviewed as dearer than the
/// scan, the next 15 rounds are summed point by point, the 16th on the index again, and so
/// on with the fallback doubled; `Summation::Index` keeps the index in every round; and on
/// groups 16 standard deviations apart in d = 5 with 4,096 points, where the index is 2–3
/// times cheaper, Auto keeps it too. (Near the size where Auto starts to use the index,
/// 2,048 points in d = 5, where the index and the scan are within 1.1–1.6× of each other, the
/// same stream sees a review find the index dearer after six rounds.)
#[test]
fn auto_falls_back_from_the_index_where_it_does_not_pay() {
    use pacstream::paco::Summation;
    let warmup = 4_096;
    let rounds = 60;
    let stream = close_groups(warmup, rounds);
    let indexed_rounds = |summation: Summation, stream: &[Vec<f64>], warmup: usize| {
        let mut learner = PacoParams::new()
            .warmup(warmup)
            .iterations(100)
            .summation(summation)
            .seed(5)
            .check()
            .unwrap()
            .build();
        let steps = run(&mut learner, stream);
        steps
            .iter()
            .filter(|step| !step.warmup)
            .enumerate()
            .filter(|(_, step)| on_the_index(step))
            .map(|(round, _)| round)
            .collect::<Vec<_>>()
    };
    // The chain that ends the warm-up (4,096 points in memory) is the first reviewed:
    // rounds 0-14 after it are summed point by point, round 15 reviews the index again,
    // then 32 rounds of the scan.
    let auto = indexed_rounds(Summation::Auto, &stream, warmup);
    eprintln!("rounds on the index with Auto: {auto:?}");
    assert_eq!(auto, vec![15, 47], "16 rounds, then 32");
    let forced = indexed_rounds(Summation::Index, &stream, warmup);
    assert_eq!(forced.len(), rounds);
    let far = vec![
        vec![0.0; 5],
        vec![16.0, 0.0, 0.0, 0.0, 0.0],
        vec![0.0, 16.0, 0.0, 0.0, 0.0],
        vec![0.0, 0.0, 16.0, 0.0, 0.0],
    ];
    let separated = mixture(&far, 4_096 + 30, 1.0, 22);
    let kept = indexed_rounds(Summation::Auto, &separated, 4_096);
    assert_eq!(kept.len(), 30, "rounds on the index: {kept:?}");
}

/// The conformance suite with Auto's fallback under way: snapshots taken in a fallback, at
/// its last round, at the round that reviews the index again and after restore it, and the
/// run continues bit for bit (the same in a 1-thread and a 3-thread pool).
#[test]
fn conformance_through_the_fallback_from_the_index() {
    let warmup = 4_096;
    let stream = close_groups(warmup, 24);
    check_conformance(
        &PacoParams::new().warmup(warmup).iterations(40),
        &stream,
        &[
            warmup,
            warmup + 1,
            warmup + 8,
            warmup + 15,
            warmup + 16,
            warmup + 17,
        ],
    );
}
