//! Every count has a documented upper bound that `check()` enforces before anything is
//! allocated, and that a snapshot or a config read from JSON cannot get around; values that
//! would make a loss, a weight or a regret NaN are refused, leaving the learner as it was.

use pacstream::OnlineLearner;
use pacstream::curves::{self, PrincipalCurveConfig, PrincipalCurveParams};
use pacstream::experts::{
    self, AdviceRound, EwaParams, FplParams, HedgeParams, LearningRate, LossRound,
    RandomizedWeightedMajorityParams,
};
use pacstream::kmeans::{self, KMeansConfig, KMeansParams, SequentialKMeansParams};
use pacstream::paco::{self, Memory, PacoConfig, PacoParams};

/// `result` is an error naming parameter `name`.
fn refuses<T: std::fmt::Debug>(result: pacstream::Result<T>, name: &str) {
    let error = result.expect_err(name).to_string();
    assert!(error.contains(&format!("`{name}`")), "{name}: {error}");
}

#[test]
fn kmeans_counts_are_bounded() {
    use kmeans::limits::*;
    assert!(KMeansParams::new(MAX_CLUSTERS).check().is_ok());
    refuses(KMeansParams::new(MAX_CLUSTERS + 1).check(), "n_clusters");
    refuses(KMeansParams::new(usize::MAX).check(), "n_clusters");
    assert!(KMeansParams::new(2).n_init(MAX_N_INIT).check().is_ok());
    refuses(
        KMeansParams::new(2).n_init(MAX_N_INIT + 1).check(),
        "n_init",
    );
    refuses(KMeansParams::new(2).n_init(1_000_000_000).check(), "n_init");
    refuses(
        KMeansParams::new(2).max_iter(MAX_ITER + 1).check(),
        "max_iter",
    );
    refuses(
        KMeansParams::new(2)
            .init(kmeans::Init::GreedyKMeansPlusPlus {
                n_local_trials: Some(MAX_LOCAL_TRIALS + 1),
            })
            .check(),
        "n_local_trials",
    );
    // 10·k cannot overflow: k is checked first.
    refuses(
        SequentialKMeansParams::new(usize::MAX).check(),
        "n_clusters",
    );
    assert!(
        SequentialKMeansParams::new(MAX_CLUSTERS)
            .check()
            .is_ok_and(|c| c.init_size() == 10 * MAX_CLUSTERS)
    );
    refuses(
        SequentialKMeansParams::new(2)
            .init_size(MAX_INIT_SIZE + 1)
            .check(),
        "init_size",
    );
}

#[test]
fn paco_counts_are_bounded() {
    use paco::limits::*;
    assert!(PacoParams::new().max_k(MAX_K).check().is_ok());
    refuses(PacoParams::new().max_k(MAX_K + 1).check(), "max_k");
    refuses(PacoParams::new().max_k(usize::MAX).check(), "max_k");
    refuses(
        PacoParams::new().iterations(MAX_ITERATIONS + 1).check(),
        "iterations",
    );
    refuses(
        PacoParams::new().iterations(usize::MAX).check(),
        "iterations",
    );
    refuses(PacoParams::new().warmup(MAX_WARMUP + 1).check(), "warmup");
    refuses(
        PacoParams::new()
            .memory(Memory::Window(MAX_WINDOW + 1))
            .check(),
        "window",
    );
    assert!(PacoParams::new().eta(MAX_ETA).check().is_ok());
    refuses(PacoParams::new().eta(1e308).check(), "eta");
    // p × d, when d is known: before the first point changes anything.
    let config = PacoParams::new().max_k(50).check().expect("valid");
    assert!(config.check_dim(MAX_MODEL_VALUES / 50).is_ok());
    refuses(config.check_dim(MAX_MODEL_VALUES / 50 + 1), "max_k");
    let mut learner = config.build();
    let before = serde_json::to_string(&learner).expect("serialisable");
    let wide = vec![0.5; MAX_MODEL_VALUES / 50 + 1];
    refuses(learner.learn_one(&wide), "max_k");
    assert_eq!(
        serde_json::to_string(&learner).expect("serialisable"),
        before
    );
}

#[test]
fn curve_counts_and_dimension_are_bounded() {
    use curves::limits::*;
    refuses(
        PrincipalCurveParams::new()
            .max_segments(MAX_SEGMENTS + 1)
            .check(),
        "max_segments",
    );
    assert!(
        PrincipalCurveParams::new()
            .local_vertices(MAX_LOCAL_VERTICES)
            .check()
            .is_ok()
    );
    refuses(
        PrincipalCurveParams::new()
            .local_vertices(MAX_LOCAL_VERTICES + 1)
            .check(),
        "local_vertices",
    );
    refuses(
        PrincipalCurveParams::new()
            .max_candidates(MAX_CANDIDATES + 1)
            .check(),
        "max_candidates",
    );
    refuses(
        PrincipalCurveParams::new().warmup(MAX_WARMUP + 1).check(),
        "warmup",
    );
    refuses(
        PrincipalCurveParams::new()
            .memory(curves::Memory::Window(MAX_WINDOW + 1))
            .check(),
        "window",
    );
    let mut learner = PrincipalCurveParams::new().check().expect("valid").build();
    let before = serde_json::to_string(&learner).expect("serialisable");
    assert!(learner.learn_one(&vec![1.0; MAX_DIM + 1]).is_err());
    assert_eq!(
        serde_json::to_string(&learner).expect("serialisable"),
        before
    );
    assert!(learner.learn_one(&vec![1.0; MAX_DIM]).is_ok());
}

#[test]
fn configs_read_from_json_are_checked_again() {
    let config = KMeansParams::new(2).check().expect("valid");
    let mut json: serde_json::Value = serde_json::to_value(&config).expect("serialisable");
    assert_eq!(
        serde_json::from_value::<KMeansConfig>(json.clone()).expect("round trip"),
        config
    );
    json["n_init"] = 1_000_000_000u64.into();
    assert!(serde_json::from_value::<KMeansConfig>(json).is_err());

    let config = SequentialKMeansParams::new(2).check().expect("valid");
    let mut json = serde_json::to_value(&config).expect("serialisable");
    json["init_size"] = 100_000_000u64.into();
    assert!(serde_json::from_value::<kmeans::SequentialKMeansConfig>(json).is_err());

    let config = PacoParams::new().check().expect("valid");
    let mut json = serde_json::to_value(&config).expect("serialisable");
    json["iterations"] = u64::MAX.into();
    assert!(serde_json::from_value::<PacoConfig>(json).is_err());

    let config = PrincipalCurveParams::new().check().expect("valid");
    let mut json = serde_json::to_value(&config).expect("serialisable");
    json["local_vertices"] = 100_000u64.into();
    assert!(serde_json::from_value::<PrincipalCurveConfig>(json).is_err());

    // The experts' parameters inside a learner's snapshot.
    let hedge = HedgeParams::new(2)
        .learning_rate(LearningRate::Fixed(0.5))
        .loss_bound(1.0)
        .check()
        .expect("valid")
        .build();
    let mut json = serde_json::to_value(&hedge).expect("serialisable");
    assert!(serde_json::from_value::<experts::Hedge>(json.clone()).is_ok());
    json["params"]["rate"] = serde_json::json!({"Fixed": -1.0});
    let error = serde_json::from_value::<experts::Hedge>(json)
        .expect_err("a negative rate")
        .to_string();
    assert!(error.contains("eta"), "{error}");
}

#[test]
fn experts_settings_are_bounded() {
    use experts::limits::*;
    refuses(HedgeParams::new(MAX_EXPERTS + 1).check(), "n_experts");
    refuses(
        EwaParams::new(2)
            .learning_rate(LearningRate::Fixed(1e51))
            .loss_bound(1.0)
            .check(),
        "eta",
    );
    refuses(
        FplParams::new(2, 1.0)
            .learning_rate(LearningRate::Fixed(1e308))
            .check(),
        "eta",
    );
    refuses(
        RandomizedWeightedMajorityParams::new(2)
            .learning_rate(LearningRate::Horizon(MAX_HORIZON + 1))
            .check(),
        "horizon",
    );
    refuses(FplParams::new(2, 1e-41).check(), "loss_bound");
    refuses(FplParams::new(2, 1e201).check(), "loss_bound");
    refuses(EwaParams::new(2).prior(vec![1e308, 1e308]).check(), "prior");
    assert!(EwaParams::new(2).prior(vec![1e307, 1e307]).check().is_ok());
    refuses(experts::ExpWeights::new(2, Some(&[1e308, 1e308])), "prior");
}

/// Advice, outcomes and losses beyond the limits are refused, the learner unchanged; at the
/// limits, every number stays finite.
#[test]
fn experts_values_are_bounded_and_never_make_nan() {
    use experts::limits::*;
    let mut ewa = EwaParams::new(2).check().expect("valid").build();
    for advice in [[MAX_ADVICE, -MAX_ADVICE], [1.0, -MAX_ADVICE]] {
        let step = ewa
            .learn_one(AdviceRound::new(&advice, MAX_ADVICE))
            .expect("within the limits");
        assert!(step.loss.is_finite() && step.regret.is_finite(), "{step:?}");
    }
    let before = serde_json::to_string(&ewa).expect("serialisable");
    assert!(ewa.learn_one(AdviceRound::new(&[1e200, 0.0], 0.0)).is_err());
    assert!(ewa.learn_one(AdviceRound::new(&[0.0, 0.0], 1e101)).is_err());
    assert_eq!(serde_json::to_string(&ewa).expect("serialisable"), before);
    let step = ewa
        .learn_one(AdviceRound::new(&[1.0, 2.0], 1.5))
        .expect("a plain round");
    assert!(step.loss.is_finite() && step.regret.is_finite());
    assert!(ewa.weights().iter().all(|w| w.is_finite()));

    let mut hedge = HedgeParams::new(2)
        .learning_rate(LearningRate::Fixed(MAX_ETA))
        .loss_bound(1.0)
        .check()
        .expect("valid")
        .build();
    for _ in 0..3 {
        let step = hedge
            .learn_one(LossRound::new(&[MAX_LOSS, 0.0]))
            .expect("within the limits");
        assert!(step.loss.is_finite() && step.regret.is_finite(), "{step:?}");
    }
    assert!(hedge.weights().iter().all(|w| w.is_finite()));
    let before = serde_json::to_string(&hedge).expect("serialisable");
    assert!(hedge.learn_one(LossRound::new(&[2e201, 0.0])).is_err());
    assert_eq!(serde_json::to_string(&hedge).expect("serialisable"), before);
}
