//! `Ewa::predict_among`: the forecast a round with some experts asleep would play, computed
//! without playing it. The front-ends (Python's River-compatible regressor, whose experts
//! given by feature name sleep on the rounds their feature is missing) use it for
//! `predict_one`, so it must be exactly the prediction the next `learn_advice` makes.

use pacstream::experts::{AdviceRound, Aggregator, EwaParams, LearningRate, Loss};

/// A stream where the experts fall asleep in turns, under every learning-rate schedule
/// that keeps per-round state (fixed, AdaHedge, anytime, doubling).
#[test]
fn predict_among_is_the_prediction_the_round_then_plays() {
    let schedules = [
        Some(LearningRate::Fixed(0.7)),
        None,
        Some(LearningRate::Anytime),
        Some(LearningRate::Doubling),
    ];
    for schedule in schedules {
        let mut params = EwaParams::new(4).loss(Loss::Square).loss_bound(50.0);
        if let Some(rate) = schedule {
            params = params.learning_rate(rate);
        }
        let mut ewa = params.check().unwrap().build();
        for t in 0..40_u32 {
            let tf = f64::from(t);
            let advice = [tf.sin(), 2.0 * tf.cos(), 0.5, -1.0 + 0.1 * tf];
            let awake: Vec<bool> = (0..4_u32).map(|i| (t + i) % 3 != 0).collect();
            // An asleep expert's advice is ignored, whatever it is.
            let mut shown = advice;
            for (value, &is_awake) in shown.iter_mut().zip(&awake) {
                if !is_awake {
                    *value = f64::NAN;
                }
            }
            let predicted = ewa.predict_among(&shown, Some(&awake)).unwrap();
            let round = AdviceRound {
                advice: &advice,
                outcome: (0.3 * tf).sin(),
                awake: Some(&awake),
            };
            let step = ewa.learn_advice(round, Loss::Square).unwrap();
            assert_eq!(
                step.prediction,
                Some(predicted),
                "round {t}, schedule {schedule:?}"
            );
        }
        // Every expert awake: the same as `predict`.
        let advice = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(
            ewa.predict_among(&advice, None).unwrap(),
            ewa.predict(&advice).unwrap()
        );
    }
}

#[test]
fn predict_among_refuses_a_round_with_no_expert_awake() {
    let ewa = EwaParams::new(2).check().unwrap().build();
    assert!(
        ewa.predict_among(&[1.0, 2.0], Some(&[false, false]))
            .is_err()
    );
    assert!(ewa.predict_among(&[1.0], None).is_err());
}
