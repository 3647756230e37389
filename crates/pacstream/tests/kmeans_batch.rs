//! Batch k-means: labels against brute force for every kernel, oracles on hand-computed
//! inputs, empty clusters, duplicates, weights, restarts, determinism across thread counts,
//! scale and translation, and reference inertias of scikit-learn.

use ndarray::{Array1, Array2, ArrayView2, array};
use pacstream::kmeans::{Algorithm, Centres, Init, KMeans, KMeansParams, Refinement, Stopping};
use pacstream::{Error, StreamRng};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Lloyd, Algorithm::Hamerly, Algorithm::Auto];

/// The numeric columns `columns` of an embedded CSV file with a header row.
fn csv(text: &str, columns: &[usize]) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            columns
                .iter()
                .map(|&c| fields[c].trim().parse().expect("a number"))
                .collect()
        })
        .collect();
    let n_cols = columns.len();
    Array2::from_shape_vec((rows.len(), n_cols), rows.concat()).expect("rectangular")
}

fn iris() -> Array2<f64> {
    csv(include_str!("data/iris.csv"), &[0, 1, 2, 3])
}

fn quakes() -> Array2<f64> {
    csv(include_str!("data/quakes.csv"), &[0, 1, 2])
}

/// n points around k centres uniform in [−10, 10]^dim (plus `offset` on every coordinate),
/// standard deviation `std`.
fn blobs(n: usize, dim: usize, k: usize, std: f64, offset: f64, seed: u64) -> Array2<f64> {
    let mut rng = StreamRng::seed_from(seed);
    let centres: Vec<f64> = (0..k * dim).map(|_| 20.0 * rng.next_f64() - 10.0).collect();
    Array2::from_shape_fn((n, dim), |(i, f)| {
        offset + centres[(i % k) * dim + f] + std * rng.standard_normal()
    })
}

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The brute-force nearest centre and the two smallest squared distances.
fn brute_force(point: &[f64], centres: &Centres) -> (usize, f64, f64) {
    let mut best = (usize::MAX, f64::INFINITY, f64::INFINITY);
    for (j, c) in centres.iter().enumerate() {
        let d = squared_distance(point, c);
        if d < best.1 {
            best = (j, d, best.1);
        } else if d < best.2 {
            best.2 = d;
        }
    }
    best
}

/// Whether the two nearest centres of `point` are further apart than the spec's tie
/// tolerance 1e-9·(1 + ‖x‖²).
fn clear_cut(point: &[f64], centres: &Centres) -> bool {
    let (_, first, second) = brute_force(point, centres);
    let norm: f64 = point.iter().map(|x| x * x).sum();
    second - first > 1e-9 * (1.0 + norm)
}

/// Every point whose nearest centre is clear-cut carries that centre's label; returns how
/// many points were checked.
fn assert_labels_are_nearest(data: ArrayView2<'_, f64>, fit: &KMeans, what: &str) -> usize {
    let mut checked = 0;
    for (i, row) in data.rows().into_iter().enumerate() {
        let point = row.as_slice().expect("standard layout");
        if clear_cut(point, fit.centres()) {
            checked += 1;
            assert_eq!(
                fit.labels()[i],
                brute_force(point, fit.centres()).0,
                "{what}: point {i}"
            );
        }
    }
    checked
}

/// The fit of `data` from the centres `given`, by `algorithm`.
fn fit_from(data: ArrayView2<'_, f64>, given: &Centres, algorithm: Algorithm) -> KMeans {
    let params = KMeansParams::new(given.n_centres())
        .init(Init::Given(given.clone()))
        .algorithm(algorithm);
    fit(data, params)
}

fn fit(data: ArrayView2<'_, f64>, params: KMeansParams) -> KMeans {
    params
        .check()
        .expect("valid parameters")
        .fit(data)
        .expect("valid data")
}

/// Data sets on which every kernel must agree with plain Lloyd: random blobs in d = 1, 2,
/// 10, 64, overlapping and separated, blobs far from the origin, the quakes data (‖x‖ of
/// several hundred against clusters a few degrees wide) and an integer grid full of exact
/// ties.
fn equivalence_cases() -> Vec<(String, Array2<f64>, usize)> {
    let mut cases = Vec::new();
    for (dim, k, std) in [(1, 4, 1.0), (2, 8, 2.0), (10, 12, 3.0), (64, 10, 6.0)] {
        cases.push((
            format!("blobs d={dim}"),
            blobs(3000, dim, k, std, 0.0, dim as u64),
            k,
        ));
    }
    cases.push(("blobs offset 1e5".into(), blobs(2000, 3, 6, 1.5, 1e5, 7), 6));
    cases.push(("quakes".into(), quakes(), 5));
    let grid = Array2::from_shape_fn((400, 2), |(i, f)| {
        if f == 0 {
            (i % 20) as f64
        } else {
            (i / 20) as f64
        }
    });
    cases.push(("grid".into(), grid, 7));
    cases
}

#[test]
fn every_kernel_labels_like_plain_lloyd() {
    for (name, data, k) in equivalence_cases() {
        for init in [Init::default(), Init::Random] {
            let reference = fit(
                data.view(),
                KMeansParams::new(k)
                    .init(init.clone())
                    .algorithm(Algorithm::Lloyd),
            );
            assert!(reference.report().n_iter > 1, "{name}: Lloyd must iterate");
            for algorithm in ALGORITHMS {
                let what = format!("{name}, {init:?}, {algorithm:?}");
                let fitted = fit(
                    data.view(),
                    KMeansParams::new(k).init(init.clone()).algorithm(algorithm),
                );
                let checked = assert_labels_are_nearest(data.view(), &fitted, &what);
                assert!(checked * 2 >= data.nrows(), "{what}: {checked} clear-cut");
                // Same labels at every iteration give the same sums in the same order: the
                // whole run is plain Lloyd's, bit for bit.
                assert_eq!(fitted.labels(), reference.labels(), "{what}");
                assert_eq!(fitted.centres(), reference.centres(), "{what}");
                assert_eq!(fitted.report(), reference.report(), "{what}");
            }
        }
    }
}

#[test]
fn oracle_two_pairs() {
    let data = array![[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]];
    for algorithm in ALGORITHMS {
        let fitted = fit(data.view(), KMeansParams::new(2).algorithm(algorithm));
        let report = fitted.report();
        assert_eq!(report.inertia, 1.0);
        assert!(report.converged);
        let mut centres: Vec<Vec<f64>> = fitted.centres().iter().map(<[f64]>::to_vec).collect();
        centres.sort_by(|a, b| a[0].total_cmp(&b[0]));
        assert_eq!(centres, [[0.0, 0.5], [10.0, 0.5]]);
        assert_eq!(fitted.labels()[0], fitted.labels()[1]);
        assert_eq!(fitted.labels()[2], fitted.labels()[3]);
    }
}

#[test]
fn oracle_given_centres_two_iterations() {
    // Centres 0 and 10: labels 0,0,0,1 → centres 2 and 10 (shift 4, far above
    // tol × variance = 1e-4 × 14) → labels unchanged → strict convergence at iteration 2.
    let data = array![[0.0], [2.0], [4.0], [10.0]];
    let given = Centres::from_rows(&[[0.0], [10.0]]).unwrap();
    for algorithm in ALGORITHMS {
        let fitted = fit_from(data.view(), &given, algorithm);
        assert_eq!(fitted.labels(), [0, 0, 0, 1]);
        assert_eq!(fitted.centres().as_slice(), [2.0, 10.0]);
        let report = fitted.report();
        assert_eq!(report.inertia, 8.0);
        assert_eq!(report.n_iter, 2);
        assert!(report.converged);
        assert_eq!(report.empty_cluster_reseeds, 0);
        assert!(!report.duplicate_centres);
    }
}

#[test]
fn max_iter_stops_and_labels_match_the_final_centres() {
    // One iteration from centres 0 and 10 moves them to 2 and 8.25; the loop stops there and
    // the points are assigned once more, against the centres returned.
    let data = array![[0.0], [2.0], [4.0], [6.5], [10.0]];
    let given = Centres::from_rows(&[[0.0], [10.0]]).unwrap();
    for algorithm in ALGORITHMS {
        let fitted = fit(
            data.view(),
            KMeansParams::new(2)
                .init(Init::Given(given.clone()))
                .max_iter(1)
                .algorithm(algorithm),
        );
        // Iteration 1: 0, 2, 4 → 0 (6.5 is nearer 10) ; centres 2 and 8.25.
        assert_eq!(fitted.centres().as_slice(), [2.0, 8.25]);
        assert_eq!(fitted.labels(), [0, 0, 0, 1, 1]);
        let report = fitted.report();
        assert_eq!(report.n_iter, 1);
        assert!(!report.converged);
        assert_eq!(report.inertia, 4.0 + 0.0 + 4.0 + 1.75 * 1.75 + 1.75 * 1.75);
    }
}

#[test]
fn empty_cluster_is_reseeded_at_the_farthest_point() {
    // Centre 100 gets no point. The losses are 1, 0, 1, 1, 0, 1: the first of the largest
    // (x = 0) becomes centre 2 and leaves cluster 0, whose mean becomes 1.5.
    let data = array![[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]];
    let given = Centres::from_rows(&[[1.0], [11.0], [100.0]]).unwrap();
    for algorithm in ALGORITHMS {
        let fitted = fit_from(data.view(), &given, algorithm);
        let report = fitted.report();
        assert_eq!(report.empty_cluster_reseeds, 1, "{algorithm:?}");
        assert_eq!(fitted.centres().as_slice(), [1.5, 11.0, 0.0]);
        assert_eq!(fitted.labels(), [2, 0, 0, 1, 1, 1]);
        assert_eq!(report.inertia, 0.25 + 0.25 + 1.0 + 0.0 + 1.0);
        assert!(report.converged);
    }
}

#[test]
fn two_empty_clusters_take_distinct_far_points() {
    // Two far centres get nothing; the two largest losses are the duplicated point 20
    // (twice): the second empty cluster must skip the copy and take the next point.
    let data = array![[0.0], [1.0], [20.0], [20.0], [2.0]];
    let given = Centres::from_rows(&[[1.0], [-100.0], [-200.0]]).unwrap();
    for algorithm in ALGORITHMS {
        let fitted = fit_from(data.view(), &given, algorithm);
        let report = fitted.report();
        assert!(report.empty_cluster_reseeds >= 2, "{algorithm:?}");
        let mut centres = fitted.centres().as_slice().to_vec();
        centres.sort_by(f64::total_cmp);
        // No two centres coincide, and the copies of 20 have their own centre.
        centres.dedup();
        assert_eq!(centres.len(), 3);
        assert!(centres.iter().any(|c| (c - 20.0).abs() < 1e-12));
        assert_labels_are_nearest(data.view(), &fitted, "two empty clusters");
    }
}

#[test]
fn fewer_distinct_points_than_clusters() {
    let data = array![[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0], [1.0, 1.0]];
    for init in [Init::default(), Init::KMeansPlusPlus, Init::Random] {
        for algorithm in ALGORITHMS {
            let fitted = fit(
                data.view(),
                KMeansParams::new(3)
                    .init(init.clone())
                    .algorithm(algorithm)
                    .n_init(3),
            );
            let report = fitted.report();
            assert!(report.duplicate_centres, "{init:?}");
            // The mean of copies of a point is that point up to rounding.
            assert!(report.inertia < 1e-25, "{}", report.inertia);
            assert_labels_are_nearest(data.view(), &fitted, "duplicates");
        }
    }
    // Exactly k distinct points: no duplicates.
    let fitted = fit(data.view(), KMeansParams::new(2).init(Init::KMeansPlusPlus));
    assert!(!fitted.report().duplicate_centres);
    assert!(fitted.report().inertia < 1e-25);
}

#[test]
fn bad_input_is_an_error() {
    let data = array![[0.0], [1.0]];
    let config = KMeansParams::new(3).check().unwrap();
    assert_eq!(
        config.fit(data.view()).unwrap_err(),
        Error::NotEnoughPoints {
            required: 3,
            found: 2
        }
    );
    let given = Centres::from_rows(&[[0.0, 0.0], [1.0, 1.0]]).unwrap();
    let config = KMeansParams::new(2)
        .init(Init::Given(given))
        .check()
        .unwrap();
    assert!(matches!(
        config.fit(data.view()),
        Err(Error::DimensionMismatch { .. })
    ));
    let config = KMeansParams::new(1).check().unwrap();
    assert!(config.fit(array![[0.0], [f64::NAN]].view()).is_err());
    assert!(
        config
            .fit_weighted(data.view(), array![1.0, -1.0].view())
            .is_err()
    );
    assert!(
        config
            .fit_weighted(data.view(), array![0.0, 0.0].view())
            .is_err()
    );
    assert!(
        config
            .fit_weighted(data.view(), array![1.0].view())
            .is_err()
    );
    let huge = array![[-1e300], [1e300]];
    assert!(config.fit(huge.view()).is_err());
}

#[test]
fn integer_weights_equal_duplicated_points() {
    let data = blobs(300, 3, 4, 2.0, 0.0, 11);
    let mut rng = StreamRng::seed_from(5);
    let weights: Array1<f64> = (0..data.nrows())
        .map(|_| rng.index_below(4) as f64)
        .collect();
    let mut duplicated = Vec::new();
    for (row, &w) in data.rows().into_iter().zip(&weights) {
        for _ in 0..w as usize {
            duplicated.extend(row.iter().copied());
        }
    }
    let duplicated = Array2::from_shape_vec((duplicated.len() / 3, 3), duplicated).unwrap();
    let given = Centres::from_rows(&[
        data.row(0).to_vec(),
        data.row(1).to_vec(),
        data.row(2).to_vec(),
        data.row(3).to_vec(),
    ])
    .unwrap();
    for algorithm in ALGORITHMS {
        let params = KMeansParams::new(4)
            .init(Init::Given(given.clone()))
            .algorithm(algorithm);
        let weighted = params
            .clone()
            .check()
            .unwrap()
            .fit_weighted(data.view(), weights.view())
            .unwrap();
        let copies = fit(duplicated.view(), params);
        let relative =
            (weighted.report().inertia - copies.report().inertia).abs() / copies.report().inertia;
        assert!(relative < 1e-12, "{relative}");
        for (a, b) in weighted
            .centres()
            .as_slice()
            .iter()
            .zip(copies.centres().as_slice())
        {
            assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()));
        }
        assert_eq!(weighted.report().n_iter, copies.report().n_iter);
    }
}

#[test]
fn zero_weights_are_ignored() {
    // Far-away points of weight 0, interleaved with the data, change nothing: not the
    // seeding, not the means, not the inertia (bit for bit).
    let data = blobs(500, 2, 5, 1.0, 0.0, 13);
    let mut rng = StreamRng::seed_from(8);
    let mut values = Vec::new();
    let mut weights = Vec::new();
    let mut is_real = Vec::new();
    for row in data.rows() {
        if rng.next_f64() < 0.3 {
            values.extend([1e6 * rng.standard_normal(), 1e6]);
            weights.push(0.0);
            is_real.push(false);
        }
        values.extend(row.iter().copied());
        weights.push(1.0);
        is_real.push(true);
    }
    let padded = Array2::from_shape_vec((weights.len(), 2), values).unwrap();
    for init in [Init::default(), Init::KMeansPlusPlus, Init::Random] {
        for algorithm in ALGORITHMS {
            let params = KMeansParams::new(5)
                .init(init.clone())
                .algorithm(algorithm)
                .seed(3);
            let plain = fit(data.view(), params.clone());
            let with_zeros = params
                .check()
                .unwrap()
                .fit_weighted(padded.view(), Array1::from(weights.clone()).view())
                .unwrap();
            assert_eq!(with_zeros.centres(), plain.centres(), "{init:?}");
            assert_eq!(with_zeros.report().inertia, plain.report().inertia);
            let real_labels: Vec<usize> = with_zeros
                .labels()
                .iter()
                .zip(&is_real)
                .filter(|(_, real)| **real)
                .map(|(l, _)| *l)
                .collect();
            assert_eq!(real_labels, plain.labels());
        }
    }
}

#[test]
fn restarts_keep_the_lowest_inertia() {
    // Random seeding on many overlapping blobs: restarts end in different local optima.
    let data = blobs(600, 2, 12, 2.5, 0.0, 17);
    let mut improvements = 0;
    for seed in 0..4 {
        let mut previous: Option<KMeans> = None;
        for n_init in 1..=8 {
            let fitted = fit(
                data.view(),
                KMeansParams::new(12)
                    .init(Init::Random)
                    .n_init(n_init)
                    .seed(seed),
            );
            let report = fitted.report();
            assert_eq!(report.n_init, n_init);
            assert!(report.best_init < n_init);
            if let Some(previous) = &previous {
                // Restarts 0..n−1 are those of the previous fit plus one: the best is either
                // the previous best or the new restart, strictly better.
                let before = previous.report();
                assert!(report.inertia <= before.inertia);
                if report.inertia < before.inertia {
                    assert_eq!(report.best_init, n_init - 1);
                    improvements += 1;
                } else {
                    assert_eq!(report.best_init, before.best_init);
                    assert_eq!(fitted.centres(), previous.centres());
                }
            }
            previous = Some(fitted);
        }
    }
    assert!(improvements >= 2, "the test data must make restarts differ");
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    // 70,000 points: more than one group of chunks, restarts one after the other; 3,000
    // points with 4 restarts: restarts side by side.
    let cases = [
        (blobs(70_000, 2, 6, 1.5, 0.0, 19), 6, 1),
        (blobs(3_000, 5, 8, 2.0, 0.0, 23), 8, 4),
    ];
    let weights_for = |n: usize| -> Array1<f64> {
        let mut rng = StreamRng::seed_from(29);
        (0..n).map(|_| rng.next_f64() * 3.0).collect()
    };
    let mut single_point_moves = 0;
    for (data, k, n_init) in &cases {
        for init in [Init::default(), Init::KMeansPlusPlus, Init::Random] {
            for algorithm in [Algorithm::Lloyd, Algorithm::Hamerly] {
                let config = KMeansParams::new(*k)
                    .init(init.clone())
                    .n_init(*n_init)
                    .algorithm(algorithm)
                    .seed(2)
                    .check()
                    .unwrap();
                let weights = weights_for(data.nrows());
                let run = |threads: usize| {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    pool.install(|| {
                        (
                            config.fit(data.view()).unwrap(),
                            config.fit_weighted(data.view(), weights.view()).unwrap(),
                        )
                    })
                };
                let one = run(1);
                let three = run(3);
                single_point_moves += one.0.report().single_point_moves;
                for (a, b) in [(&one.0, &three.0), (&one.1, &three.1)] {
                    assert_eq!(a.labels(), b.labels());
                    let bits = |fit: &KMeans| -> Vec<u64> {
                        fit.centres()
                            .as_slice()
                            .iter()
                            .map(|v| v.to_bits())
                            .collect()
                    };
                    assert_eq!(bits(a), bits(b));
                    assert_eq!(a.report().inertia.to_bits(), b.report().inertia.to_bits());
                    assert_eq!(a.report(), b.report());
                }
            }
        }
    }
    // Hartigan's moves (the default refinement) ran, in sequence, and still agree.
    assert!(single_point_moves > 0);
}

#[test]
fn scaling_and_translating_the_data_moves_the_fit_along() {
    let data = iris();
    let given = Centres::from_rows(&[
        data.row(0).to_vec(),
        data.row(50).to_vec(),
        data.row(100).to_vec(),
    ])
    .unwrap();
    let base = fit(
        data.view(),
        KMeansParams::new(3).init(Init::Given(given.clone())),
    );
    let (scale, shift) = (1000.0, -37.25);
    let moved_data = data.mapv(|x| scale * x + shift);
    let moved_given = Centres::new(
        given.as_slice().iter().map(|x| scale * x + shift).collect(),
        4,
    )
    .unwrap();
    let moved = fit(
        moved_data.view(),
        KMeansParams::new(3).init(Init::Given(moved_given)),
    );
    assert_eq!(moved.labels(), base.labels());
    let ratio = moved.report().inertia / (scale * scale * base.report().inertia);
    assert!((ratio - 1.0).abs() < 1e-12, "{ratio}");
    for (a, b) in moved
        .centres()
        .as_slice()
        .iter()
        .zip(base.centres().as_slice())
    {
        assert!((a - (scale * b + shift)).abs() < 1e-9 * a.abs().max(1.0));
    }
}

#[test]
fn centring_keeps_digits_far_from_the_origin() {
    // Quakes moved 1e7 away: without centring, x − c would be taken between numbers whose
    // leading digits are all offset. The fit must be the fit of the data near the origin,
    // translated (up to the rounding of the translated data themselves).
    let data = quakes();
    let offset = 1e7;
    let far = data.mapv(|x| x + offset);
    let near_fit = fit(data.view(), KMeansParams::new(4).seed(6));
    let given = Centres::new(
        near_fit
            .centres()
            .as_slice()
            .iter()
            .map(|c| c + offset)
            .collect(),
        3,
    )
    .unwrap();
    for algorithm in ALGORITHMS {
        let far_fit = fit_from(far.view(), &given, algorithm);
        assert_eq!(far_fit.labels(), near_fit.labels());
        let relative = (far_fit.report().inertia - near_fit.report().inertia).abs()
            / near_fit.report().inertia;
        assert!(relative < 1e-9, "{relative}");
        assert!(far_fit.report().n_iter <= 2);
    }
}

#[test]
fn the_fitted_model_predicts_its_own_labels() {
    let data = blobs(2000, 3, 5, 1.0, 0.0, 31);
    let fitted = fit(data.view(), KMeansParams::new(5));
    let predicted = fitted.predict_many(data.view()).unwrap();
    for (i, row) in data.rows().into_iter().enumerate() {
        let point = row.as_slice().unwrap();
        if clear_cut(point, fitted.centres()) {
            assert_eq!(predicted[i], fitted.labels()[i]);
            assert_eq!(fitted.predict(point).unwrap(), fitted.labels()[i]);
        }
        let distances = fitted.transform(point).unwrap();
        assert_eq!(distances.len(), 5);
    }
    let score = fitted.score(data.view()).unwrap();
    assert!((score - fitted.report().inertia).abs() < 1e-9 * score);
    assert!(fitted.predict(&[0.0]).is_err());
}

/// The stored reference of scikit-learn (see tests/reference/sklearn_kmeans.py).
#[derive(serde::Deserialize)]
struct Reference {
    cases: Vec<ReferenceCase>,
}

#[derive(serde::Deserialize)]
struct ReferenceCase {
    data: String,
    columns: Vec<usize>,
    n_clusters: usize,
    inertia: f64,
    centres: Vec<Vec<f64>>,
}

#[test]
fn inertia_matches_or_beats_scikit_learn() {
    let reference: Reference =
        serde_json::from_str(include_str!("reference/sklearn_kmeans.json")).unwrap();
    for case in reference.cases {
        let text = match case.data.as_str() {
            "iris.csv" => include_str!("data/iris.csv"),
            "faithful.csv" => include_str!("data/faithful.csv"),
            "xclara.csv" => include_str!("data/xclara.csv"),
            "quakes.csv" => include_str!("data/quakes.csv"),
            other => panic!("unknown data set {other}"),
        };
        let data = csv(text, &case.columns);
        // From scikit-learn's own centres, Lloyd is at (or one step from) a fixed point with
        // the same inertia; Hartigan's moves may go lower (they do on quakes), never higher.
        let given = Centres::from_rows(&case.centres).unwrap();
        let from_given = KMeansParams::new(case.n_clusters).init(Init::Given(given));
        let refined = fit(data.view(), from_given.clone());
        assert!(
            refined.report().inertia <= case.inertia * (1.0 + 1e-12),
            "{}",
            case.data
        );
        let refit = fit(data.view(), from_given.refinement(Refinement::None));
        assert!(
            refit.report().inertia <= case.inertia * (1.0 + 1e-12),
            "{}",
            case.data
        );
        assert!(
            (refit.report().inertia - case.inertia).abs() <= 1e-6 * case.inertia,
            "{}",
            case.data
        );
        // From our own seeding, as many restarts as the reference had reach an inertia as low.
        let ours = fit(
            data.view(),
            KMeansParams::new(case.n_clusters).n_init(50).seed(0),
        );
        assert!(
            ours.report().inertia <= case.inertia * (1.0 + 1e-9),
            "{}: {} > {}",
            case.data,
            ours.report().inertia,
            case.inertia
        );
    }
}

/// A Lloyd fixed point that is not a fixed point of Hartigan's moves: points 0 and 2 around
/// centre 1, four points at 3.3 around centre 3.3. Each point is nearest its own centre, so
/// Lloyd's iteration stays (inertia 2). Moving the point at 2 to the other cluster trades
/// 2/1·1² = 2 for 4/5·1.3² = 1.352: the inertia becomes 0 + 4/5·1.69 = 1.352.
#[test]
fn hartigan_leaves_a_lloyd_fixed_point_that_is_not_its_own() {
    let data = array![[0.0], [2.0], [3.3], [3.3], [3.3], [3.3]];
    let given = Centres::new(vec![1.0, 3.3], 1).unwrap();
    let with = |refinement| {
        fit(
            data.view(),
            KMeansParams::new(2)
                .init(Init::Given(given.clone()))
                .refinement(refinement),
        )
    };
    let lloyd = with(Refinement::None);
    assert_eq!(lloyd.labels(), &[0, 0, 1, 1, 1, 1]);
    assert!((lloyd.report().inertia - 2.0).abs() < 1e-12);
    assert_eq!(lloyd.report().single_point_moves, 0);
    let hartigan = with(Refinement::Hartigan);
    assert_eq!(hartigan.labels(), &[0, 1, 1, 1, 1, 1]);
    assert!((hartigan.report().inertia - 0.8 * 1.69).abs() < 1e-12);
    assert_eq!(hartigan.report().single_point_moves, 1);
    assert!(hartigan.report().converged);
    let centres = hartigan.centres().as_slice();
    assert!((centres[0] - 0.0).abs() < 1e-15 && (centres[1] - 15.2 / 5.0).abs() < 1e-12);
}

/// From the same seed, the refinement never raises the inertia, and on these overlapping
/// blobs it lowers it in most runs; every cluster keeps points. Before the moves Lloyd runs
/// until a pass changes labels of at most 10⁻⁵ of the total weight, which on 1,500 points
/// (weights ≥ 0.1) means none: the Lloyd run compared is the one that stops there too.
#[test]
fn hartigan_never_raises_the_inertia_of_lloyd() {
    let mut lowered = 0;
    let mut runs = 0;
    for (dim, k, std) in [(1, 4, 3.0), (2, 8, 4.0), (10, 12, 8.0), (64, 10, 12.0)] {
        let data = blobs(1500, dim, k, std, 0.0, 40 + dim as u64);
        let mut rng = StreamRng::seed_from(dim as u64);
        let weights: Array1<f64> = (0..1500).map(|_| 0.1 + 2.0 * rng.next_f64()).collect();
        for seed in 0..4 {
            for weighted in [false, true] {
                let run = |refinement| {
                    let mut params = KMeansParams::new(k).seed(seed).refinement(refinement);
                    if refinement == Refinement::None {
                        params = params.stopping(Stopping::ChangedLabels).tol(0.0);
                    }
                    let config = params.check().unwrap();
                    if weighted {
                        config.fit_weighted(data.view(), weights.view()).unwrap()
                    } else {
                        config.fit(data.view()).unwrap()
                    }
                };
                let (lloyd, hartigan) = (run(Refinement::None), run(Refinement::Hartigan));
                let (before, after) = (lloyd.report().inertia, hartigan.report().inertia);
                assert!(after <= before, "d={dim} seed {seed}: {after} > {before}");
                assert_eq!(lloyd.report().n_iter, hartigan.report().n_iter);
                runs += 1;
                if after < before {
                    lowered += 1;
                    assert!(hartigan.report().single_point_moves > 0);
                }
                let mut sizes = vec![0; k];
                for &label in hartigan.labels() {
                    sizes[label] += 1;
                }
                assert!(sizes.iter().all(|&size| size > 0), "d={dim} seed {seed}");
                assert_labels_are_nearest(data.view(), &hartigan, "hartigan");
            }
        }
    }
    assert!(lowered * 2 > runs, "lowered in {lowered} of {runs} runs");
}

/// A cluster whose only point of positive weight would, by the test's formula, gain from
/// leaving (with a weight like 0.1 its mean can differ from the point by rounding, and the
/// factor W/(W − w) is then infinite): the point stays, and no centre becomes NaN.
#[test]
fn hartigan_never_empties_a_cluster() {
    for x in [0.1, 0.3, 0.7, 1.3, 2.9] {
        for w in [0.1, 0.2, 0.7] {
            let data = array![[x], [x - 0.05], [5.0], [5.2], [10.0], [10.1]];
            let weights = array![w, 0.0, 1.0, 1.0, 0.7, 0.3];
            let given = Centres::new(vec![x, 5.1, 10.05], 1).unwrap();
            let fit = KMeansParams::new(3)
                .init(Init::Given(given))
                .refinement(Refinement::Hartigan)
                .check()
                .unwrap()
                .fit_weighted(data.view(), weights.view())
                .unwrap();
            let centres = fit.centres().as_slice();
            assert!(centres.iter().all(|c| c.is_finite()), "x={x} w={w}");
            assert_eq!(fit.labels()[0], 0, "x={x} w={w}");
            assert!((centres[0] - x).abs() < 1e-12, "x={x} w={w}");
            // The point of weight 0 takes its nearest final centre.
            assert_eq!(fit.labels()[1], 0, "x={x} w={w}");
        }
    }
}
