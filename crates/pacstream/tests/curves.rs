//! Sequential principal curves: the conformance suite in every feedback mode, growth of the
//! curve from one segment, the seismic data against the batch reference, projections, the
//! hindsight comparator, and property tests of the polygonal-line geometry.

use pacstream::conformance::{assert_send_sync, check_points};
use pacstream::curves::{
    Comparator, Estimator, Feedback, Memory, Phase, PrincipalCurve, PrincipalCurveLearner,
    PrincipalCurveParams, Radius, learning_rate,
};
use pacstream::geometry::{Part, Polyline, squared_distance};
use pacstream::{Error, OnlineLearner, StreamRng, UnsupervisedLearner};
use proptest::prelude::*;

fn noisy_arc(n: usize, noise: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = StreamRng::seed_from(seed);
    (0..n)
        .map(|_| {
            let angle = std::f64::consts::PI * rng.next_f64();
            vec![
                angle.cos() + noise * rng.standard_normal(),
                angle.sin() + noise * rng.standard_normal(),
            ]
        })
        .collect()
}

/// (long, lat) of the seismic data, in stream (file) order.
fn quakes() -> Vec<Vec<f64>> {
    let text = include_str!("../../../data/quakes.csv");
    text.lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<f64> = line.split(',').map(|v| v.parse().unwrap()).collect();
            vec![fields[1], fields[0]]
        })
        .collect()
}

fn conformance(params: PrincipalCurveParams, stream: &[Vec<f64>], cuts: &[usize]) {
    let make = |seed| params.clone().seed(seed).check().unwrap().build();
    check_points(make, stream, cuts).unwrap();
}

#[test]
fn conformance_full_feedback() {
    assert_send_sync::<PrincipalCurveLearner>();
    let stream = noisy_arc(150, 0.05, 1);
    conformance(
        PrincipalCurveParams::new().max_candidates(64),
        &stream,
        &[0, 1, 19, 20, 21, 75, 149],
    );
}

/// With a budget of 30 atoms the bins double several times within the stream: a snapshot
/// taken anywhere resumes to the same bits (the merges happen at the same points).
#[test]
fn conformance_with_merging_bins() {
    let stream = noisy_arc(150, 0.05, 12);
    for feedback in [Feedback::Full, Feedback::Bandit] {
        conformance(
            PrincipalCurveParams::new()
                .feedback(feedback)
                .explore(0.3)
                .max_atoms(30)
                .max_candidates(64),
            &stream,
            &[0, 20, 21, 33, 75, 149],
        );
    }
}

#[test]
fn conformance_bandit_label_efficient_with_a_window() {
    let stream = noisy_arc(150, 0.05, 2);
    conformance(
        PrincipalCurveParams::new()
            .feedback(Feedback::Bandit)
            .explore(0.3)
            .memory(Memory::Window(40))
            .max_candidates(64),
        &stream,
        &[0, 10, 20, 60, 61, 149],
    );
}

#[test]
fn conformance_bandit_paper_with_a_window() {
    let stream = noisy_arc(150, 0.05, 3);
    conformance(
        PrincipalCurveParams::new()
            .feedback(Feedback::Bandit)
            .estimator(Estimator::Paper)
            .explore(0.3)
            .memory(Memory::Window(50))
            .max_candidates(32),
        &stream,
        &[0, 20, 21, 90, 149],
    );
}

/// The curve starts as one segment and grows: K rises from 1 on a noisy arc, one segment at
/// most per round.
#[test]
fn the_number_of_segments_grows_from_one_on_a_noisy_arc() {
    let stream = noisy_arc(600, 0.03, 4);
    let mut learner = PrincipalCurveParams::new().seed(1).check().unwrap().build();
    let mut segments = Vec::new();
    for point in &stream {
        let step = learner.learn_one(point).unwrap();
        if let Some(k) = step.segments {
            segments.push(k);
        }
    }
    assert_eq!(segments[0], 1, "the first curve is one segment");
    assert!(
        segments.windows(2).all(|w| w[1] <= w[0] + 1),
        "K grows by one segment at most per round"
    );
    let last = *segments.last().unwrap();
    assert!(
        last >= 4,
        "a half circle needs several segments, got {last}"
    );
    // And it fits the arc far better than the first principal component line, whose mean
    // squared distance is Var(sin U) + σ² = 1/2 − 4/π² + 9e-4 ≈ 0.096 (U uniform on [0, π]).
    let curve = learner.curve().unwrap();
    let msd: f64 = stream
        .iter()
        .map(|p| curve.squared_distance(p).unwrap())
        .sum::<f64>()
        / stream.len() as f64;
    assert!(msd < 0.2 * 0.096, "mean squared distance {msd}");
}

fn mean_squared_distance(curve: &PrincipalCurve, points: &[Vec<f64>]) -> f64 {
    points
        .iter()
        .map(|p| curve.squared_distance(p).unwrap())
        .sum::<f64>()
        / points.len() as f64
}

/// The seismic data, (long, lat) in stream order, default settings: the final curve's mean
/// squared distance is at most 0.8 degrees² (with L = ∞ the few-segment curves that fit
/// best zigzag across the scatter, far below R princurve's smooth batch fit, 4.07, and the
/// first principal component line, 18.5), and the lattice is centred (δ well under a degree;
/// uncentred it would be about 5.6°).
#[test]
fn quakes_with_the_defaults_reach_a_mean_squared_distance_of_at_most_0_8() {
    let points = quakes();
    let mut learner = PrincipalCurveParams::new().check().unwrap().build();
    for point in &points {
        learner.learn_one(point).unwrap();
    }
    let curve = learner.curve().unwrap();
    let msd = mean_squared_distance(curve, &points);
    assert!(msd <= 0.8, "MSD {msd}, K = {}", curve.n_segments());
    let lattice = learner.lattice().unwrap();
    assert!(lattice.spacing() < 1.0, "δ = {}", lattice.spacing());
}

/// With a length bound comparable to R princurve's curve (41.3°), L = 40: a curve at most 40
/// long whose mean squared distance is at most princurve's batch fit, 4.07 degrees² (stored
/// reference from princurve 2.1.6, see benches/compare/run-curves.sh).
#[test]
fn quakes_with_a_length_bound_of_40_beat_the_batch_fit() {
    const PRINCURVE_MSD: f64 = 4.07;
    let points = quakes();
    let mut learner = PrincipalCurveParams::new()
        .max_length(40.0)
        .check()
        .unwrap()
        .build();
    for point in &points {
        learner.learn_one(point).unwrap();
    }
    let curve = learner.curve().unwrap();
    let msd = mean_squared_distance(curve, &points);
    assert!(curve.length() <= 40.0, "length {}", curve.length());
    assert!(
        msd <= PRINCURVE_MSD,
        "MSD {msd}, K = {}, length {}",
        curve.n_segments(),
        curve.length()
    );
}

/// The hindsight search against exhaustive enumeration. Noise-free points on a V whose three
/// vertices are lattice points (R = 1, δ = 1/2: 25 lattice points), a learner held near its
/// first segment (e_mult = 1) and K ≤ 2: every curve of the class is enumerated (600 of one
/// segment, 14,400 of two). The unpenalised search must find the V itself (loss 0) from the
/// learner's one-segment curve or the principal component segment; the penalised one the
/// curve of least loss + κ c_1 K/η_T.
#[test]
fn hindsight_searches_reach_the_exhaustive_optimum_on_a_small_lattice() {
    // Dyadic positions on both arms, paired so that the mean is exactly 0: the lattice's
    // origin, so that the V's vertices (−1, 1/2), (0, −1/2), (1, 1/2) are lattice points.
    let mut shape = Vec::new();
    for k in 1..16 {
        let t = k as f64 / 16.0;
        shape.push(vec![-1.0 + t, 0.5 - t]);
        shape.push(vec![t, -0.5 + t]);
    }
    let mut stream = shape.clone();
    let mut rng = StreamRng::seed_from(5);
    for _ in 0..150 {
        stream.push(shape[rng.index_below(shape.len())].clone());
    }
    let mut learner = PrincipalCurveParams::new()
        .radius(Radius::Given(1.0))
        .delta(0.5)
        .warmup(30)
        .max_segments(2)
        .eta_scale(1.0)
        .seed(2)
        .check()
        .unwrap()
        .build();
    for point in &stream {
        learner.learn_one(point).unwrap();
    }
    let lattice = learner.lattice().unwrap();
    assert_eq!(lattice.origin(), &[0.0, 0.0]);
    let fitted = &stream[30..];
    let nodes: Vec<[f64; 2]> = (-2..=2)
        .flat_map(|i| (-2..=2).map(move |j| [0.5 * i as f64, 0.5 * j as f64]))
        .filter(|p| p[0] * p[0] + p[1] * p[1] <= 2.0)
        .collect();
    assert_eq!(nodes.len(), 25);
    let loss_of = |vertices: &[[f64; 2]]| {
        let curve = PrincipalCurve::from_vertices(vertices.concat(), 2).unwrap();
        fitted
            .iter()
            .map(|p| curve.squared_distance(p).unwrap())
            .sum::<f64>()
    };
    let mut best = [f64::INFINITY; 3];
    for (a, p) in nodes.iter().enumerate() {
        for (b, q) in nodes.iter().enumerate() {
            if a == b {
                continue;
            }
            best[1] = best[1].min(loss_of(&[*p, *q]));
            for (c, r) in nodes.iter().enumerate() {
                if c != b {
                    best[2] = best[2].min(loss_of(&[*p, *q, *r]));
                }
            }
        }
    }
    assert_eq!(best[2], 0.0, "the V is in the class");
    assert!(learner.curve().unwrap().n_segments() == 1 || best[1] > 0.0);

    let unpenalised = learner.hindsight(Comparator::Unpenalised).unwrap();
    assert!(
        unpenalised.objective <= 1e-12,
        "{} segments, loss {}",
        unpenalised.curve.n_segments(),
        unpenalised.loss
    );
    let penalised = learner.hindsight(Comparator::Penalised).unwrap();
    let per_segment = penalised.penalty_per_segment;
    // η_T of the last round T = 180, e_mult = 1, p = 2 (κ = 1).
    let eta = learning_rate(180, lattice.loss_bound(), lattice.complexity(), 2, 1.0);
    assert_eq!(penalised.learning_rate, Some(eta));
    assert_eq!(per_segment, lattice.complexity() / eta);
    let optimum = (best[1] + per_segment).min(best[2] + 2.0 * per_segment);
    assert!(
        (penalised.objective - optimum).abs() <= 1e-9 * optimum,
        "found {} ({} segments), optimum {optimum}",
        penalised.objective,
        penalised.curve.n_segments()
    );
    let direct = loss_of(
        &penalised
            .curve
            .vertex_rows()
            .map(|v| [v[0], v[1]])
            .collect::<Vec<_>>(),
    );
    assert!((direct - penalised.loss).abs() <= 1e-9 * (1.0 + direct));
}

#[test]
fn warm_up_rounds_have_no_loss_and_fix_the_lattice() {
    let stream = noisy_arc(40, 0.05, 5);
    let mut learner = PrincipalCurveParams::new()
        .warmup(10)
        .check()
        .unwrap()
        .build();
    for (t, point) in stream.iter().enumerate() {
        let step = learner.learn_one(point).unwrap();
        if t < 10 {
            assert_eq!((step.loss, step.phase), (None, Phase::WarmUp));
            assert_eq!(step.initialised, t == 9);
        } else {
            assert!(step.loss.is_some() && step.phase != Phase::WarmUp);
            // The loss paid is the distance to the curve held before the round.
            assert!(step.segments.is_some());
        }
    }
    let report = learner.report();
    assert_eq!(report.initialised_at, Some(10));
    assert_eq!(report.exploration_rounds + report.exploitation_rounds, 30);
    let lattice = learner.lattice().unwrap();
    let mean: Vec<f64> = (0..2)
        .map(|j| stream[..10].iter().map(|p| p[j]).sum::<f64>() / 10.0)
        .collect();
    for (a, b) in lattice.origin().iter().zip(&mean) {
        assert!((a - b).abs() < 1e-12);
    }
}

/// The loss of each round is the squared distance to the model held before it.
#[test]
fn losses_are_paid_by_the_model_before_the_round() {
    let stream = noisy_arc(200, 0.05, 6);
    let mut learner = PrincipalCurveParams::new().check().unwrap().build();
    for point in &stream {
        let before = learner.model().cloned();
        let step = learner.learn_one(point).unwrap();
        if let (Some(model), Some(loss)) = (before, step.loss) {
            let direct = model.squared_distance(point).unwrap();
            assert!(
                (direct - loss).abs() <= 1e-9 * (1.0 + direct),
                "{direct} vs {loss}"
            );
        }
    }
}

#[test]
fn identical_warm_up_points_extend_the_warm_up() {
    let mut learner = PrincipalCurveParams::new()
        .warmup(5)
        .check()
        .unwrap()
        .build();
    for _ in 0..8 {
        assert!(!learner.learn_one(&[1.0, 1.0]).unwrap().initialised);
    }
    assert!(learner.is_warming_up());
    assert_eq!(learner.report().warmup_extension, 4);
    let step = learner.learn_one(&[2.0, 3.0]).unwrap();
    assert!(step.initialised);
    assert_eq!(learner.curve().unwrap().n_segments(), 1);
}

#[test]
fn points_outside_the_ball_are_counted() {
    let mut learner = PrincipalCurveParams::new()
        .radius(Radius::Given(1.0))
        .warmup(4)
        .check()
        .unwrap()
        .build();
    for point in [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]] {
        learner.learn_one(&point).unwrap();
    }
    let step = learner.learn_one(&[50.0, 50.0]).unwrap();
    assert!(step.outside_ball);
    assert!(step.loss.unwrap() > 1000.0);
    assert_eq!(learner.report().points_outside_ball, 1);
}

#[test]
fn a_spacing_larger_than_the_data_is_refused_atomically() {
    let mut learner = PrincipalCurveParams::new()
        .delta(10.0)
        .warmup(3)
        .check()
        .unwrap()
        .build();
    learner.learn_one(&[0.0, 0.0]).unwrap();
    learner.learn_one(&[1.0, 0.0]).unwrap();
    let before = serde_json::to_string(&learner).unwrap();
    let error = learner.learn_one(&[0.0, 1.0]).unwrap_err();
    assert!(matches!(
        error,
        Error::InvalidParameter { name: "delta", .. }
    ));
    assert_eq!(serde_json::to_string(&learner).unwrap(), before);
}

/// Scales a lattice cannot represent are refused with an error naming the setting, before
/// any change: a spacing 10⁹ times finer than the ball, a radius far smaller than the data,
/// a radius whose losses would overflow, and, after the warm-up, a point 10⁶ ball radii away.
#[test]
fn unrepresentable_scales_are_refused_atomically() {
    let warm = |learner: &mut PrincipalCurveLearner| {
        learner.learn_one(&[0.0, 0.0]).unwrap();
        learner.learn_one(&[1.0, 0.0]).unwrap();
    };
    for (params, name) in [
        (PrincipalCurveParams::new().delta(1e-300), "delta"),
        (
            PrincipalCurveParams::new().radius(Radius::Given(1e-300)),
            "radius",
        ),
    ] {
        let mut learner = params.warmup(3).check().unwrap().build();
        warm(&mut learner);
        let before = serde_json::to_string(&learner).unwrap();
        let error = learner.learn_one(&[0.0, 1.0]).unwrap_err();
        assert!(
            matches!(error, Error::InvalidParameter { name: n, .. } if n == name),
            "{error}"
        );
        assert_eq!(serde_json::to_string(&learner).unwrap(), before);
    }
    assert!(
        PrincipalCurveParams::new()
            .radius(Radius::Given(1e300))
            .check()
            .is_err()
    );

    let mut learner = PrincipalCurveParams::new()
        .warmup(3)
        .check()
        .unwrap()
        .build();
    warm(&mut learner);
    learner.learn_one(&[0.0, 1.0]).unwrap();
    // Far outside the ball but representable: counted, not refused.
    learner.learn_one(&[1e3, 0.0]).unwrap();
    let before = serde_json::to_string(&learner).unwrap();
    let error = learner.learn_one(&[1e12, 0.0]).unwrap_err();
    assert!(error.to_string().contains("far too small"), "{error}");
    assert_eq!(serde_json::to_string(&learner).unwrap(), before);
    learner.learn_one(&[0.5, 0.5]).unwrap();
}

#[test]
fn window_memory_keeps_the_last_points() {
    let stream = noisy_arc(120, 0.05, 7);
    let mut learner = PrincipalCurveParams::new()
        .memory(Memory::Window(30))
        .check()
        .unwrap()
        .build();
    for point in &stream {
        learner.learn_one(point).unwrap();
    }
    let stored = learner.stored_points();
    assert_eq!(stored.len(), 30);
    assert_eq!(stored[0].0, 91);
    for ((round, point), original) in stored.iter().zip(&stream[90..]) {
        assert!(squared_distance(point, original) < 1e-24, "round {round}");
    }
}

#[test]
fn corrupt_snapshots_are_refused() {
    let stream = noisy_arc(60, 0.05, 9);
    let mut learner = PrincipalCurveParams::new().check().unwrap().build();
    for point in &stream {
        learner.learn_one(point).unwrap();
    }
    let text = serde_json::to_string(&learner).unwrap();
    let restored: PrincipalCurveLearner = serde_json::from_str(&text).unwrap();
    assert_eq!(restored.curve(), learner.curve());
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["n_rounds"] = serde_json::json!(7);
    assert!(serde_json::from_value::<PrincipalCurveLearner>(value).is_err());
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys = value["fitted"]["state"]["keys"].as_array_mut().unwrap();
    let first = keys[0].clone();
    let second = keys[1].clone();
    keys[2] = first;
    keys[3] = second;
    assert!(serde_json::from_value::<PrincipalCurveLearner>(value).is_err());
}

#[test]
fn projection_of_new_points_on_a_fitted_curve() {
    let curve = PrincipalCurve::from_vertices(vec![0.0, 0.0, 2.0, 0.0, 2.0, 2.0], 2).unwrap();
    let p = curve.project(&[1.0, -0.5]).unwrap();
    assert_eq!(
        (p.part, p.arc_length, p.squared_distance),
        (Part::Segment(0), 1.0, 0.25)
    );
    assert_eq!(p.point, vec![1.0, 0.0]);
    let p = curve.project(&[3.0, 3.0]).unwrap();
    assert_eq!(
        (p.part, p.arc_length, p.squared_distance),
        (Part::Vertex(2), 4.0, 2.0)
    );
    assert!(curve.project(&[f64::NAN, 0.0]).is_err());
}

fn polyline_strategy() -> impl Strategy<Value = (Polyline, Vec<Vec<f64>>)> {
    (1usize..4).prop_flat_map(|dim| {
        (
            prop::collection::vec(prop::collection::vec(-10.0f64..10.0, dim), 2..8),
            prop::collection::vec(prop::collection::vec(-15.0f64..15.0, dim), 1..20),
        )
            .prop_filter_map(
                "consecutive vertices must differ",
                move |(vertices, points)| {
                    let flat: Vec<f64> = vertices.concat();
                    Polyline::new(flat, dim).ok().map(|line| (line, points))
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A point's projection is never farther than any vertex, and is the point of the line
    /// at the reported arc length.
    #[test]
    fn projections_are_never_farther_than_a_vertex((line, points) in polyline_strategy()) {
        for point in &points {
            let p = line.project(point);
            for vertex in line.vertex_rows() {
                prop_assert!(p.squared_distance <= squared_distance(point, vertex));
            }
            prop_assert!(p.arc_length >= 0.0 && p.arc_length <= line.length() * (1.0 + 1e-12));
            let recomputed = squared_distance(point, &p.point);
            prop_assert!((recomputed - p.squared_distance).abs() <= 1e-9 * (1.0 + recomputed));
        }
    }

    /// The cells partition the points: each point is in exactly one cell, the first part
    /// (along the line) of smallest distance among the 2k + 1 parts.
    #[test]
    fn cells_cover_every_point_exactly_once((line, points) in polyline_strategy()) {
        let cells = line.partition(points.iter().map(Vec::as_slice));
        prop_assert_eq!(cells.len(), points.len());
        let k = line.n_segments();
        for (point, cell) in points.iter().zip(&cells) {
            // Distance of every part (None: a segment whose nearest point is an end).
            let mut parts = Vec::new();
            for i in 0..=k {
                parts.push((Part::Vertex(i), Some(squared_distance(point, line.vertex(i)))));
                if i < k {
                    let d = pacstream::geometry::segment_interior(
                        point,
                        line.vertex(i),
                        line.vertex(i + 1),
                    )
                    .map(|(d, _)| d);
                    parts.push((Part::Segment(i), d));
                }
            }
            let best = parts.iter().filter_map(|(_, d)| *d).fold(f64::INFINITY, f64::min);
            let holders: Vec<Part> = parts
                .iter()
                .filter(|(_, d)| *d == Some(best))
                .map(|(p, _)| *p)
                .collect();
            prop_assert!(!holders.is_empty());
            // Exactly one cell holds the point: the first holder along the line.
            prop_assert_eq!(*cell, holders[0]);
            prop_assert!(holders.iter().all(|p| p.rank() >= cell.rank()));
        }
    }
}
