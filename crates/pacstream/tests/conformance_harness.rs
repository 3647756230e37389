//! The conformance suite must be able to fail: each check is run against a learner broken in
//! exactly the way that check exists to catch.

use pacstream::conformance::{Conformance, InvalidPoints};
use pacstream::data::check_point;
use pacstream::{OnlineLearner, Result, Step, StreamRng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Round {
    round: u64,
    loss: Option<f64>,
}

impl Step for Round {
    fn round(&self) -> u64 {
        self.round
    }
    fn loss(&self) -> Option<f64> {
        self.loss
    }
}

/// The ways a learner can be broken.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
enum Defect {
    None,
    /// Counts the round before validating the input.
    NotAtomic,
    /// Keeps state that the snapshot does not carry.
    HiddenState,
    /// Draws randomness from a source that is not seeded.
    Unseeded,
    /// `learn_many` skips every other input.
    BatchDiffers,
    /// Results depend on the size of the thread pool.
    ThreadDependent,
    /// Checks the dimension and NaN, but lets an infinite coordinate in.
    AcceptsInfinity,
}

/// A running mean with random jitter, broken as asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Toy {
    defect: Defect,
    rng: StreamRng,
    mean: Option<f64>,
    n_rounds: u64,
    #[serde(skip)]
    hidden: u64,
}

impl Toy {
    fn new(seed: u64, defect: Defect) -> Self {
        Self {
            defect,
            rng: StreamRng::seed_from(seed),
            mean: None,
            n_rounds: 0,
            hidden: 0,
        }
    }
}

static CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl OnlineLearner for Toy {
    type Input<'a> = &'a [f64];
    type Step = Round;

    fn learn_one(&mut self, point: &[f64]) -> Result<Round> {
        if self.defect == Defect::NotAtomic {
            self.n_rounds += 1;
            check_point(point, 1)?;
            self.n_rounds -= 1;
        }
        let lets_in =
            self.defect == Defect::AcceptsInfinity && point.len() == 1 && point[0].is_infinite();
        if !lets_in {
            check_point(point, 1)?;
        }
        let loss = self.mean.map(|m| (point[0] - m).powi(2));
        let mut jitter = 1e-3 * self.rng.next_f64();
        match self.defect {
            Defect::HiddenState => {
                self.hidden += 1;
                jitter += self.hidden as f64;
            }
            Defect::Unseeded => {
                jitter += CLOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as f64;
            }
            Defect::ThreadDependent => jitter += rayon::current_num_threads() as f64,
            _ => {}
        }
        self.n_rounds += 1;
        let rate = 1.0 / self.n_rounds as f64;
        let mean = self.mean.unwrap_or(point[0]);
        self.mean = Some(mean + rate * (point[0] - mean) + jitter);
        Ok(Round {
            round: self.n_rounds,
            loss,
        })
    }

    fn n_rounds(&self) -> u64 {
        self.n_rounds
    }

    fn learn_many<'a, I>(&mut self, inputs: I, mut on_step: impl FnMut(Round)) -> Result<()>
    where
        I: IntoIterator<Item = &'a [f64]>,
    {
        for (index, input) in inputs.into_iter().enumerate() {
            if self.defect == Defect::BatchDiffers && index % 2 == 1 {
                continue;
            }
            on_step(self.learn_one(input)?);
        }
        Ok(())
    }
}

fn suite_result(defect: Defect) -> std::result::Result<(), pacstream::conformance::Violation> {
    let stream: Vec<Vec<f64>> = (0..30).map(|i| vec![(i % 7) as f64]).collect();
    let invalid = vec![vec![1.0, 2.0]];
    let invalid_first = vec![vec![f64::NAN]];
    Conformance::new(move |seed| Toy::new(seed, defect), &stream)
        .invalid_inputs(&invalid)
        .invalid_first_inputs(&invalid_first)
        .check_all()
}

#[test]
fn a_correct_learner_passes() {
    suite_result(Defect::None).unwrap();
}

#[test]
fn each_defect_is_caught_by_its_check() {
    for (defect, check) in [
        (Defect::NotAtomic, "atomic steps"),
        (Defect::HiddenState, "snapshot/resume"),
        (Defect::Unseeded, "determinism"),
        (Defect::BatchDiffers, "learn_many"),
        (Defect::ThreadDependent, "thread-count independence"),
    ] {
        let violation = suite_result(defect).unwrap_err();
        assert_eq!(violation.check, check, "{defect:?}: {violation}");
    }
}

/// The invalid points the suite generates catch what a hand-written list missed: a learner
/// that refuses the wrong dimension and NaN but takes an infinite coordinate.
#[test]
fn generated_invalid_points_catch_an_infinity_let_in() {
    suite_result(Defect::AcceptsInfinity).unwrap();
    let stream: Vec<Vec<f64>> = (0..30).map(|i| vec![(i % 7) as f64]).collect();
    let generated = InvalidPoints::around(&stream[0]);
    Conformance::new(|seed| Toy::new(seed, Defect::None), &stream)
        .invalid_points(&generated)
        .check_all()
        .unwrap();
    let violation = Conformance::new(|seed| Toy::new(seed, Defect::AcceptsInfinity), &stream)
        .invalid_points(&generated)
        .check_all()
        .unwrap_err();
    assert_eq!(violation.check, "atomic steps", "{violation}");
}
