//! PACBO's online learner: the conformance suite, scale-equivariance, d = 1, a stream whose
//! number of clusters changes, the R package's documented example, batch mode, window
//! memory, and the regret bound with its oracle. Every seed is fixed.

use pacstream::conformance::{Conformance, assert_send_sync};
use pacstream::paco::bounds::BoundSettings;
use pacstream::paco::oracle::{bound_with_oracle, hindsight_oracle};
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

fn invalid_after_first() -> Vec<Vec<f64>> {
    vec![
        vec![1.0],
        vec![1.0, 2.0, 3.0, 4.0],
        vec![0.0, f64::INFINITY, 1.0],
    ]
}

fn invalid_always() -> Vec<Vec<f64>> {
    vec![vec![f64::NAN, 0.0, 0.0], vec![], vec![0.0, 1e200, 0.0]]
}

#[test]
fn conformance_with_warmup() {
    assert_send_sync::<Paco>();
    let stream = three_groups(70, 1);
    let make = |seed| {
        PacoParams::new()
            .warmup(10)
            .iterations(40)
            .max_k(6)
            .seed(seed)
            .check()
            .unwrap()
            .build()
    };
    Conformance::new(make, &stream)
        .invalid_inputs(&invalid_after_first())
        .invalid_first_inputs(&invalid_always())
        .cuts(&[0, 1, 5, 9, 10, 11, 40, 69])
        .check_all()
        .unwrap();
}

#[test]
fn conformance_with_given_radius_window_and_seed_proposal() {
    let stream = three_groups(70, 2);
    let make = |seed| {
        PacoParams::new()
            .radius(Radius::Given(15.0))
            .memory(Memory::Window(25))
            .proposal(ProposalScale::Seed)
            .iterations(40)
            .max_k(6)
            .seed(seed)
            .check()
            .unwrap()
            .build()
    };
    Conformance::new(make, &stream)
        .invalid_inputs(&invalid_after_first())
        .invalid_first_inputs(&invalid_always())
        .cuts(&[0, 1, 2, 24, 25, 26, 50, 69])
        .check_all()
        .unwrap();
}

/// With restarts, over a few thousand points (the k-means passes of the proposal means run
/// in parallel). The parallel waves of the S_t evaluation start beyond 65,536 points; their
/// thread-count independence is tested in `paco::evaluate`.
#[test]
fn conformance_with_restart_and_parallel_evaluation() {
    let mut stream = three_groups(4200, 3);
    stream.truncate(4200);
    let make = |seed| {
        PacoParams::new()
            .warmup(4100)
            .restart(true)
            .iterations(30)
            .max_k(5)
            .seed(seed)
            .check()
            .unwrap()
            .build()
    };
    Conformance::new(make, &stream)
        .invalid_inputs(&invalid_after_first())
        .cuts(&[0, 4099, 4100, 4150, 4199])
        .check_all()
        .unwrap();
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
    for memory in [Memory::Exact, Memory::Window(300)] {
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
/// [−10, 10]^5, unit covariance, T = 100, N = 500. k̂_T = 4 for most seeds.
///
/// With the default settings: R `auto`, so the first 50 points are a warm-up. (With R given,
/// round 1 is a draw from the prior, far from the data; its large losses enter S_t through
/// the variance term, which then favours clusterings as bad as the past predictions, and the
/// chain stays there: k̂_T = 4 for none of these seeds. The R package avoids this by taking
/// the prior draw closest to x_1, that is by looking at x_1 before predicting it.)
#[test]
fn the_r_package_example() {
    let mut found = 0;
    for seed in 0..20 {
        let mut rng = StreamRng::seed_from(100 + seed);
        let means: Vec<Vec<f64>> = (0..4)
            .map(|_| (0..5).map(|_| 20.0 * rng.next_f64() - 10.0).collect())
            .collect();
        let stream = mixture(&means, 100, 1.0, 200 + seed);
        let mut learner = PacoParams::new().seed(seed).check().unwrap().build();
        run(&mut learner, &stream);
        if learner.n_clusters() == Some(4) {
            found += 1;
        }
    }
    eprintln!("k̂_T = 4 for {found} of 20 seeds");
    assert!(found > 10, "k̂_T = 4 for {found} of 20 seeds");
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

/// The corollary's bound, with the oracle of k-means restarts, holds for the learner's
/// cumulative loss on a well-clustered stream with R covering the data (a = 1, as in the
/// corollary; the bound is for exact draws, the chain only approximates them, and the bound
/// is loose enough that it holds all the same).
#[test]
fn the_regret_bound_holds_on_a_clustered_stream() {
    let stream = three_groups(400, 13);
    let mut learner = PacoParams::new()
        .radius(Radius::Given(16.0))
        .coeff(1.0)
        .iterations(100)
        .seed(5)
        .check()
        .unwrap()
        .build();
    let steps = run(&mut learner, &stream);
    let cumulative: f64 = steps.iter().filter_map(|s| s.loss).sum();
    let flat: Vec<f64> = stream.iter().flatten().copied().collect();
    let data = ndarray::Array2::from_shape_vec((400, 3), flat).unwrap();
    let max_norm = stream
        .iter()
        .map(|p| p.iter().map(|v| v * v).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let settings = BoundSettings {
        horizon: 400,
        dim: 3,
        radius: 16.0,
        max_norm,
        max_k: 50,
        eta: 1.0,
    };
    assert!(settings.radius_covers_data());
    let (bound, _) = bound_with_oracle(data.view(), &settings, 5, 1).unwrap();
    assert!(cumulative <= bound.value, "{cumulative} > {}", bound.value);
    let fits = hindsight_oracle(data.view(), 4, 5, 1).unwrap();
    assert!(fits[2].loss < fits[1].loss && fits[1].loss < fits[0].loss);
    // The three groups' clustering is the oracle's best at k = 3 by a wide margin.
    assert!(fits[3].loss > 0.8 * fits[2].loss);
}

/// The conformance suite on the spatial index (forced from the first points with
/// `Summation::Index`), in exact and window memory: snapshots taken mid-stream restore the
/// index, the proposal means' assignments and the robust covers' stable parts, and the run
/// continues bit for bit; the same in a 1-thread and a 3-thread pool.
#[test]
fn conformance_on_the_index() {
    use pacstream::paco::Summation;
    // Two groups, then four: the proposal means move after the first trees are built.
    let mut stream = mixture(&[vec![0.0, 0.0, 0.0], vec![8.0, 0.0, 1.0]], 200, 1.0, 11);
    stream.extend(mixture(
        &[
            vec![0.0, 0.0, 0.0],
            vec![8.0, 0.0, 1.0],
            vec![0.0, 8.0, -1.0],
            vec![8.0, 8.0, 0.0],
        ],
        220,
        1.0,
        12,
    ));
    for memory in [Memory::Exact, Memory::Window(150)] {
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
            .invalid_inputs(&invalid_after_first())
            .cuts(&[0, 19, 20, 21, 63, 64, 65, 149, 150, 151, 257, 419])
            .check_all()
            .unwrap();
    }
}
