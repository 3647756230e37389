//! Sequential k-means: the conformance suite, the update rules of the spec, decay,
//! reassignment, mini-batches and mergeable statistics.

use ndarray::Array2;
use pacstream::conformance::{assert_send_sync, check_points};
use pacstream::kmeans::{
    CentreStats, Centres, Init, SequentialKMeans, SequentialKMeansParams, SequentialKMeansStep,
};
use pacstream::{Error, OnlineLearner, StreamRng, UnsupervisedLearner};
use proptest::prelude::*;

/// A stream from `n_groups` Gaussian groups in `dim` dimensions, interleaved at random.
fn blobs(n_points: usize, n_groups: usize, dim: usize, spread: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = StreamRng::seed_from(seed);
    let means: Vec<Vec<f64>> = (0..n_groups)
        .map(|_| (0..dim).map(|_| 20.0 * rng.next_f64() - 10.0).collect())
        .collect();
    (0..n_points)
        .map(|_| {
            let group = rng.index_below(n_groups);
            means[group]
                .iter()
                .map(|m| m + spread * rng.standard_normal())
                .collect()
        })
        .collect()
}

/// The conformance suite for the learners `params` configures, each with its seed.
fn conformance(params: SequentialKMeansParams, stream: &[Vec<f64>], cuts: &[usize]) {
    let make = |seed| params.clone().seed(seed).check().unwrap().build();
    check_points(make, stream, cuts).unwrap();
}

#[test]
fn conformance_plain() {
    assert_send_sync::<SequentialKMeans>();
    let stream = blobs(150, 4, 3, 0.5, 1);
    conformance(
        SequentialKMeansParams::new(4),
        &stream,
        &[0, 1, 2, 5, 39, 40, 41, 100, 149],
    );
}

#[test]
fn conformance_with_decay_and_reassignment() {
    let stream = blobs(200, 5, 3, 1.0, 2);
    conformance(
        SequentialKMeansParams::new(6)
            .init_size(12)
            .decay_half_life(25.0)
            .reassignment_ratio(0.2)
            .init(Init::KMeansPlusPlus),
        &stream,
        &[0, 1, 11, 12, 13, 60, 199],
    );
}

#[test]
fn round_one_has_no_loss_and_warm_up_uses_distinct_points() {
    let mut learner = SequentialKMeansParams::new(2)
        .init_size(4)
        .check()
        .unwrap()
        .build();
    let first = learner.learn_one(&[0.0, 0.0]).unwrap();
    assert_eq!((first.round, first.label, first.loss), (1, None, None));
    // The model is now the one distinct point seen.
    let second = learner.learn_one(&[3.0, 4.0]).unwrap();
    assert_eq!((second.label, second.loss), (Some(0), Some(25.0)));
    // A repeated point does not become a second copy of a centre.
    let third = learner.learn_one(&[0.0, 0.0]).unwrap();
    assert_eq!((third.label, third.loss), (Some(0), Some(0.0)));
    assert_eq!(learner.centres().unwrap().n_centres(), 2);
    assert!(learner.is_warming_up());
    let fourth = learner.learn_one(&[3.0, 5.0]).unwrap();
    assert_eq!(fourth.loss, Some(1.0));
    assert!(fourth.initialised);
    assert!(!learner.is_warming_up());
    // Warm-up fit: {(0,0),(0,0)} and {(3,4),(3,5)}.
    let mut counts = learner.counts().to_vec();
    counts.sort_by(f64::total_cmp);
    assert_eq!(counts, vec![2.0, 2.0]);
    assert_eq!(learner.report().warmup_inertia, Some(0.5));
}

/// After the warm-up, without decay, each centre is exactly the running mean of the points
/// it received (MacQueen), in the order of the spec.
#[test]
fn macqueen_running_means() {
    let given = Centres::from_rows(&[[0.0], [100.0]]).unwrap();
    let mut learner = SequentialKMeansParams::new(2)
        .init_size(2)
        .init(Init::Given(given))
        .check()
        .unwrap()
        .build();
    learner.learn_one(&[0.0]).unwrap();
    learner.learn_one(&[100.0]).unwrap();
    // Warm-up fit: centres 0 and 100, one point each.
    let step = learner.learn_one(&[2.0]).unwrap();
    assert_eq!((step.label, step.loss), (Some(0), Some(4.0)));
    learner.learn_one(&[4.0]).unwrap();
    learner.learn_one(&[90.0]).unwrap();
    let centres = learner.centres().unwrap();
    assert_eq!(centres.centre(0), &[2.0]); // mean of 0, 2, 4
    assert_eq!(centres.centre(1), &[95.0]); // mean of 100, 90
    assert_eq!(learner.counts(), &[3.0, 2.0]);
    // A weighted point counts as that many copies.
    learner.learn_one_weighted(&[10.0], 3.0).unwrap();
    assert_eq!(learner.centres().unwrap().centre(0), &[6.0]); // (3·2 + 3·10) / 6
    // A zero-weight point pays its loss but moves nothing.
    let before = learner.centres().unwrap().clone();
    let step = learner.learn_one_weighted(&[7.0], 0.0).unwrap();
    assert_eq!(step.loss, Some(1.0));
    assert_eq!(learner.centres().unwrap(), &before);
}

/// With decay, counts follow n ← a·n + w with a = 2^(−1/h): after h points a centre's old
/// mass has halved, and the centre follows a jump in the stream.
#[test]
fn decay_has_the_stated_half_life() {
    let half_life = 50.0;
    let given = Centres::from_rows(&[[0.0]]).unwrap();
    let mut learner = SequentialKMeansParams::new(1)
        .init_size(1)
        .init(Init::Given(given))
        .decay_half_life(half_life)
        .check()
        .unwrap()
        .build();
    learner.learn_one(&[0.0]).unwrap();
    assert_eq!(learner.counts(), &[1.0]);
    for _ in 0..50 {
        learner.learn_one_weighted(&[0.0], 0.0).unwrap();
    }
    assert!((learner.counts()[0] - 0.5).abs() < 1e-12);
    // The stationary count is 1 / (1 − a): a geometric memory of about h / ln 2 points.
    let a = (0.5f64.ln() / half_life).exp();
    for _ in 0..5000 {
        learner.learn_one(&[10.0]).unwrap();
    }
    assert!((learner.counts()[0] - 1.0 / (1.0 - a)).abs() < 1e-9);
    assert!((learner.centres().unwrap().centre(0)[0] - 10.0).abs() < 1e-9);
}

/// Decay lets the model follow drift; without it, the centre is the mean of all history.
#[test]
fn decay_follows_a_drifting_stream() {
    let run = |half_life: Option<f64>| {
        let mut params = SequentialKMeansParams::new(1).init_size(5);
        if let Some(h) = half_life {
            params = params.decay_half_life(h);
        }
        let mut learner = params.check().unwrap().build();
        for t in 0..2000 {
            let x = if t < 1000 { 0.0 } else { 50.0 };
            learner.learn_one(&[x]).unwrap();
        }
        learner.centres().unwrap().centre(0)[0]
    };
    assert!((run(None) - 25.0).abs() < 1e-9);
    assert!((run(Some(20.0)) - 50.0).abs() < 1e-6);
}

/// A centre stranded far from the data dies and is moved to where the data are.
#[test]
fn dying_centres_are_reassigned() {
    let given = Centres::from_rows(&[[0.0], [1000.0], [1.0]]).unwrap();
    let mut learner = SequentialKMeansParams::new(3)
        .init_size(3)
        .init(Init::Given(given))
        .reassignment_ratio(0.05)
        .decay_half_life(10.0)
        .seed(4)
        .check()
        .unwrap()
        .build();
    // Warm-up: one point at each centre, then a stream around 0 and around 50.
    for x in [0.0, 1000.0, 1.0] {
        learner.learn_one(&[x]).unwrap();
    }
    let mut moved = 0;
    for t in 0..400 {
        let x = if t % 2 == 0 {
            0.5
        } else {
            50.0 + (t % 3) as f64
        };
        moved += learner.learn_one(&[x]).unwrap().reassigned;
    }
    assert!(moved >= 1);
    assert_eq!(learner.report().reassignments, moved as u64);
    let centres = learner.centres().unwrap();
    assert!(centres.iter().all(|c| c[0] < 100.0), "{centres:?}");
    assert!(
        centres.iter().any(|c| (c[0] - 51.0).abs() < 2.0),
        "{centres:?}"
    );
}

#[test]
fn reassignment_off_never_moves() {
    let stream = blobs(300, 3, 2, 0.3, 5);
    let mut learner = SequentialKMeansParams::new(8).check().unwrap().build();
    let mut moved = 0;
    learner
        .learn_many(
            stream.iter().map(Vec::as_slice),
            |s: SequentialKMeansStep| moved += s.reassigned,
        )
        .unwrap();
    assert_eq!(moved, 0);
}

fn warmed_up(k: usize, dim: usize, seed: u64) -> SequentialKMeans {
    let mut learner = SequentialKMeansParams::new(k)
        .init_size(4 * k)
        .decay_half_life(500.0)
        .seed(seed)
        .check()
        .unwrap()
        .build();
    for point in blobs(4 * k, k, dim, 1.0, seed) {
        learner.learn_one(&point).unwrap();
    }
    assert!(!learner.is_warming_up());
    learner
}

fn to_array(points: &[Vec<f64>]) -> Array2<f64> {
    let dim = points[0].len();
    Array2::from_shape_vec(
        (points.len(), dim),
        points.iter().flatten().copied().collect(),
    )
    .unwrap()
}

fn assert_close(a: &SequentialKMeans, b: &SequentialKMeans) {
    let (ca, cb) = (a.centres().unwrap(), b.centres().unwrap());
    for (x, y) in ca.as_slice().iter().zip(cb.as_slice()) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{x} vs {y}");
    }
    for (x, y) in a.counts().iter().zip(b.counts()) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{x} vs {y}");
    }
    assert_eq!(a.n_rounds(), b.n_rounds());
}

/// Sculley's mini-batch step equals MacQueen's per-point step with the assignments frozen at
/// the start of the batch: check against a hand-rolled per-point loop.
#[test]
fn mini_batch_is_sculley() {
    let learner = warmed_up(4, 3, 11);
    let batch = blobs(64, 4, 3, 1.0, 12);
    let mut batched = learner.clone();
    let steps = batched.learn_batch(to_array(&batch).view(), None).unwrap();
    assert_eq!(steps.len(), 64);
    // Every point paid its loss against the centres at the start of the batch.
    let start = learner.centres().unwrap().clone();
    let a = (0.5f64.ln() / 500.0).exp();
    let mut centres: Vec<Vec<f64>> = start.iter().map(<[f64]>::to_vec).collect();
    let mut counts: Vec<f64> = learner.counts().iter().map(|n| n * a.powi(64)).collect();
    for (point, step) in batch.iter().zip(&steps) {
        let (label, loss) = start.nearest(point);
        assert_eq!((step.label, step.loss), (Some(label), Some(loss)));
        counts[label] += 1.0;
        for (c, x) in centres[label].iter_mut().zip(point) {
            *c += (x - *c) / counts[label];
        }
    }
    for (j, centre) in centres.iter().enumerate() {
        for (x, y) in centre.iter().zip(batched.centres().unwrap().centre(j)) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()));
        }
    }
}

/// Statistics computed on shares of a batch, merged in any grouping and applied, equal the
/// batch learned whole.
#[test]
fn merged_statistics_equal_the_whole_batch() {
    let learner = warmed_up(5, 2, 21);
    let batch = blobs(90, 5, 2, 1.0, 22);
    let mut whole = learner.clone();
    whole.learn_batch(to_array(&batch).view(), None).unwrap();

    let shares: Vec<CentreStats> = batch
        .chunks(30)
        .map(|share| learner.batch_stats(to_array(share).view()).unwrap())
        .collect();
    // ((a + b) + c) and (c + (b + a)).
    let mut left = shares[0].clone();
    left.merge(&shares[1]).unwrap();
    left.merge(&shares[2]).unwrap();
    let mut right = shares[1].clone();
    right.merge(&shares[0]).unwrap();
    let mut right_outer = shares[2].clone();
    right_outer.merge(&right).unwrap();
    for stats in [&left, &right_outer] {
        let mut merged = learner.clone();
        merged.apply_stats(stats).unwrap();
        assert_close(&whole, &merged);
    }
}

/// A mini-batch of weightless points pays its losses and moves nothing but the decay.
#[test]
fn a_weightless_batch_is_learned_and_moves_nothing() {
    let mut learner = warmed_up(3, 2, 81);
    let before = learner.centres().unwrap().clone();
    let batch = to_array(&blobs(5, 3, 2, 1.0, 82));
    let zeros = ndarray::Array1::zeros(5);
    let steps = learner
        .learn_batch(batch.view(), Some(zeros.view()))
        .unwrap();
    assert_eq!(steps.len(), 5);
    assert!(steps.iter().all(|s| s.loss.is_some()));
    assert_eq!(learner.centres().unwrap(), &before);
    let negative = ndarray::Array1::from_vec(vec![1.0, 1.0, -1.0, 1.0, 1.0]);
    let err = learner
        .learn_batch(batch.view(), Some(negative.view()))
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidWeight { row: Some(2), .. }),
        "{err}"
    );
}

#[test]
fn statistics_are_refused_when_they_do_not_fit() {
    let mut learner = warmed_up(3, 2, 31);
    let before = learner.clone();
    assert!(learner.apply_stats(&CentreStats::new(4, 2)).is_err());
    assert!(learner.apply_stats(&CentreStats::new(3, 3)).is_err());
    assert_eq!(learner, before);
    let mut fresh = SequentialKMeansParams::new(3).check().unwrap().build();
    assert!(fresh.apply_stats(&CentreStats::new(3, 2)).is_err());
}

#[test]
fn batches_are_atomic() {
    let mut learner = warmed_up(3, 2, 41);
    let before = learner.clone();
    let mut bad = to_array(&blobs(10, 3, 2, 1.0, 42));
    bad[[7, 1]] = f64::NAN;
    let err = learner.learn_batch(bad.view(), None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NonFinite {
                row: Some(7),
                column: 1,
                ..
            }
        ),
        "{err}"
    );
    let wrong_width = to_array(&blobs(10, 3, 3, 1.0, 42));
    assert!(learner.learn_batch(wrong_width.view(), None).is_err());
    assert_eq!(learner, before);
}

/// A batch that straddles the end of the warm-up gives the same steps as feeding its
/// warm-up part one at a time and the rest as a batch.
#[test]
fn batch_straddling_the_warm_up() {
    let stream = blobs(50, 3, 2, 1.0, 51);
    let make = || {
        SequentialKMeansParams::new(3)
            .init_size(20)
            .seed(3)
            .check()
            .unwrap()
            .build()
    };
    let mut straddling = make();
    let steps = straddling
        .learn_batch(to_array(&stream).view(), None)
        .unwrap();
    let mut split = make();
    let mut expected = Vec::new();
    for point in &stream[..20] {
        expected.push(split.learn_one(point).unwrap());
    }
    expected.extend(
        split
            .learn_batch(to_array(&stream[20..]).view(), None)
            .unwrap(),
    );
    assert_eq!(steps, expected);
    assert_eq!(straddling, split);
    assert!(steps[19].initialised);
}

#[test]
fn given_centres_of_the_wrong_dimension_are_refused_at_the_first_point() {
    let given = Centres::from_rows(&[[0.0, 0.0], [1.0, 1.0]]).unwrap();
    let mut learner = SequentialKMeansParams::new(2)
        .init(Init::Given(given))
        .check()
        .unwrap()
        .build();
    assert!(learner.learn_one(&[1.0, 2.0, 3.0]).is_err());
    assert_eq!(learner.n_rounds(), 0);
    assert!(learner.learn_one(&[1.0, 2.0]).is_ok());
}

#[test]
fn corrupt_snapshots_are_refused() {
    let learner = warmed_up(3, 2, 61);
    let json = serde_json::to_value(&learner).unwrap();
    let mut bad = json.clone();
    bad["counts"] = serde_json::json!([1.0, 2.0]);
    assert!(serde_json::from_value::<SequentialKMeans>(bad).is_err());
    let mut bad = json.clone();
    bad["dim"] = serde_json::json!(5);
    assert!(serde_json::from_value::<SequentialKMeans>(bad).is_err());
    let mut bad = json.clone();
    bad["config"]["n_clusters"] = serde_json::json!(0);
    assert!(serde_json::from_value::<SequentialKMeans>(bad).is_err());
    let restored: SequentialKMeans = serde_json::from_value(json).unwrap();
    assert_eq!(restored, learner);
}

#[test]
fn model_is_exposed_through_the_trait() {
    let learner = warmed_up(2, 2, 71);
    let model = UnsupervisedLearner::model(&learner).unwrap();
    assert_eq!(model.n_centres(), 2);
    assert_eq!(UnsupervisedLearner::dim(&learner), Some(2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Merging is commutative (exactly) and associative (to rounding), and losses are
    /// non-negative.
    #[test]
    fn merge_is_commutative_and_associative(
        points in prop::collection::vec(prop::collection::vec(-1e3f64..1e3, 2), 3..40),
        weights in prop::collection::vec(0.0f64..5.0, 40),
    ) {
        let centres = Centres::from_rows(&[[0.0, 0.0], [100.0, 0.0], [0.0, -100.0]]).unwrap();
        let thirds: Vec<CentreStats> = points
            .chunks(points.len().div_ceil(3))
            .enumerate()
            .map(|(c, chunk)| {
                let mut stats = CentreStats::new(3, 2);
                for (i, p) in chunk.iter().enumerate() {
                    let (_, loss) = stats.add(&centres, p, weights[(c * 13 + i) % 40]).unwrap();
                    assert!(loss >= 0.0);
                }
                stats
            })
            .collect();
        let (a, b) = (&thirds[0], &thirds[thirds.len() - 1]);
        let mut ab = a.clone();
        ab.merge(b).unwrap();
        let mut ba = b.clone();
        ba.merge(a).unwrap();
        prop_assert_eq!(&ab, &ba);
        if thirds.len() == 3 {
            let mut left = thirds[0].clone();
            left.merge(&thirds[1]).unwrap();
            left.merge(&thirds[2]).unwrap();
            let mut right = thirds[1].clone();
            right.merge(&thirds[2]).unwrap();
            let mut outer = thirds[0].clone();
            outer.merge(&right).unwrap();
            prop_assert_eq!(left.n_points(), outer.n_points());
            for j in 0..3 {
                let scale = 1.0 + left.weight(j).abs() * 1e3;
                prop_assert!((left.weight(j) - outer.weight(j)).abs() <= 1e-12 * scale);
                for (x, y) in left.sum(j).iter().zip(outer.sum(j)) {
                    prop_assert!((x - y).abs() <= 1e-12 * scale);
                }
            }
        }
    }
}
