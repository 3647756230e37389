//! Sequential principal curves: the conformance suite in every feedback mode, growth of the
//! curve from one segment, the seismic data against the batch reference, projections, the
//! hindsight comparator, and property tests of the polygonal-line geometry.

use pacstream::conformance::{Conformance, assert_send_sync};
use pacstream::curves::{
    Estimator, Feedback, Memory, Phase, PrincipalCurve, PrincipalCurveLearner,
    PrincipalCurveParams, Radius,
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

fn invalid_after_first() -> Vec<Vec<f64>> {
    vec![vec![1.0], vec![1.0, 2.0, 3.0], vec![0.0, f64::INFINITY]]
}

fn invalid_always() -> Vec<Vec<f64>> {
    vec![vec![f64::NAN, 0.0], vec![], vec![1e200, 0.0]]
}

fn conformance(params: PrincipalCurveParams, stream: &[Vec<f64>], cuts: &[usize]) {
    let make = |seed| params.clone().seed(seed).check().unwrap().build();
    Conformance::new(make, stream)
        .invalid_inputs(&invalid_after_first())
        .invalid_first_inputs(&invalid_always())
        .cuts(cuts)
        .check_all()
        .unwrap();
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

/// The seismic data, (long, lat) in stream order, default settings: the final curve's mean
/// squared distance is within 1.5× of R princurve's batch fit (4.07 degrees², stored
/// reference from princurve 2.1.6, see benches/compare/run-curves.sh), and far below the
/// first principal component line (18.5).
#[test]
fn quakes_mean_squared_distance_is_near_the_batch_fit() {
    const PRINCURVE_MSD: f64 = 4.07;
    let points = quakes();
    let mut learner = PrincipalCurveParams::new().check().unwrap().build();
    for point in &points {
        learner.learn_one(point).unwrap();
    }
    let curve = learner.curve().unwrap();
    let msd: f64 = points
        .iter()
        .map(|p| curve.squared_distance(p).unwrap())
        .sum::<f64>()
        / points.len() as f64;
    assert!(
        msd <= 1.5 * PRINCURVE_MSD,
        "MSD {msd}, K = {}",
        curve.n_segments()
    );
    // The lattice is centred: δ is well under a degree (uncentred it would be about 5.6°).
    let lattice = learner.lattice().unwrap();
    assert!(lattice.spacing() < 1.0, "δ = {}", lattice.spacing());
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
