//! The conformance suite: the checks every online learner must pass.
//!
//! One generic harness, run against every learner of the library (and available to users who
//! write their own, with the `conformance` feature), in the spirit of River's
//! `check_estimator`. Given a constructor from a seed, a stream of valid inputs and some
//! invalid ones, it checks that:
//!
//! - **determinism**: two learners from the same seed produce the same steps and the same
//!   final state, bit for bit;
//! - **snapshot/resume**: serialising mid-stream (to JSON text, as the command line's
//!   checkpoints do), restoring and continuing gives exactly the steps and final state of one
//!   uninterrupted run, at every cut point;
//! - **batch = online**: `learn_many` gives the steps and final state of repeated `learn_one`;
//! - **atomic steps**: every invalid input, offered at every cut point after the first round
//!   (before it, the dimension is not fixed yet), returns an error and leaves the learner
//!   exactly as it was (same serialised state, so also the same RNG); inputs that must be
//!   refused even as the first point (a NaN) are also offered before round 1;
//! - **thread-count independence**: the run is the same in a 1-thread and a 3-thread pool;
//! - **`Send + Sync`**: checked at compile time by [`assert_send_sync`].
//!
//! For learners of points, [`InvalidPoints::around`] generates the invalid inputs every such
//! learner must refuse from one valid point (as River's checks generate theirs): the wrong
//! dimension, no coordinate at all, NaN, +∞ and −∞ at the first and at the last coordinate,
//! and coordinates beyond ±[`crate::data::MAX_COORDINATE`]. For the expert rules,
//! [`invalid_advice`], [`invalid_binary_advice`] and [`invalid_losses`] generate the rounds
//! every rule over N experts must refuse.
//!
//! States and steps are compared through their JSON serialisation: `serde_json` writes the
//! shortest text that reads back to the same `f64`, so equal text means equal bits (and it
//! rejects NaN and infinities, which snapshots must not hold).
//!
//! ```
//! use pacstream::conformance::Conformance;
//! use pacstream::kmeans::SequentialKMeansParams;
//!
//! let stream: Vec<Vec<f64>> = (0..60).map(|i| vec![(i % 7) as f64, (i % 3) as f64]).collect();
//! let invalid = vec![vec![1.0], vec![1.0, 2.0, 3.0]];
//! let invalid_first = vec![vec![f64::NAN, 0.0], vec![]];
//! let make = |seed| SequentialKMeansParams::new(3).seed(seed).check().unwrap().build();
//! Conformance::new(make, &stream)
//!     .invalid_inputs(&invalid)
//!     .invalid_first_inputs(&invalid_first)
//!     .check_all()
//!     .unwrap();
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::experts::{AdviceRoundBuf, LossRoundBuf};
use crate::online::OnlineLearner;

/// A failed conformance check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which check failed.
    pub check: &'static str,
    /// What was observed.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conformance check `{}` failed: {}",
            self.check, self.detail
        )
    }
}

impl std::error::Error for Violation {}

/// Compile-time check that a learner can move between and be shared across threads.
pub const fn assert_send_sync<L: Send + Sync>() {}

/// Owned storage for one input of learner `L` (a `Vec<f64>` for point learners).
pub trait OwnedInput<L: OnlineLearner> {
    /// Borrows the stored input in the form `learn_one` takes.
    fn as_input(&self) -> L::Input<'_>;
}

impl<L> OwnedInput<L> for Vec<f64>
where
    L: for<'a> OnlineLearner<Input<'a> = &'a [f64]>,
{
    fn as_input(&self) -> &[f64] {
        self
    }
}

/// The invalid points every learner of points must refuse, generated from one valid point
/// of dimension d.
///
/// ```
/// use pacstream::conformance::InvalidPoints;
///
/// let invalid = InvalidPoints::around(&[1.0, 2.0]);
/// assert!(invalid.after_first.iter().all(|p| p.len() != 2));
/// assert!(invalid.always.iter().any(|p| p.iter().any(|v| v.is_nan())));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidPoints {
    /// Refused once the first point has fixed the dimension: d − 1 (when d > 1), d + 1 and
    /// 2d + 1 coordinates.
    pub after_first: Vec<Vec<f64>>,
    /// Refused even as the first point: no coordinate; NaN, +∞, −∞ at the first and at the
    /// last coordinate; a coordinate beyond ±`MAX_COORDINATE`.
    pub always: Vec<Vec<f64>>,
}

impl InvalidPoints {
    /// The invalid points of the dimension of `valid` (a point of the stream).
    pub fn around(valid: &[f64]) -> Self {
        let dim = valid.len();
        let with = |position: usize, value: f64| {
            let mut point = valid.to_vec();
            point[position] = value;
            point
        };
        let mut after_first = Vec::new();
        if dim > 1 {
            after_first.push(valid[..dim - 1].to_vec());
        }
        for extra in [1, dim + 1] {
            let mut longer = valid.to_vec();
            longer.extend(valid.iter().cycle().take(extra));
            after_first.push(longer);
        }
        let mut always = vec![Vec::new()];
        if dim > 0 {
            let beyond = crate::data::MAX_COORDINATE * 10.0;
            for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, beyond, -beyond] {
                always.push(with(0, value));
                if dim > 1 {
                    always.push(with(dim - 1, value));
                }
            }
        }
        Self {
            after_first,
            always,
        }
    }
}

/// The advice rounds every aggregation rule over `n_experts` must refuse, whatever its
/// state: one advice too few, NaN advice, an infinite outcome, every expert asleep, and an
/// awake list one expert short.
///
/// ```
/// use pacstream::conformance::invalid_advice;
///
/// assert!(invalid_advice(3).iter().any(|round| round.advice.len() != 3));
/// ```
pub fn invalid_advice(n_experts: usize) -> Vec<AdviceRoundBuf> {
    let round = |advice: Vec<f64>, outcome: f64, awake: Option<Vec<bool>>| AdviceRoundBuf {
        advice,
        outcome,
        awake,
    };
    vec![
        round(vec![0.0; n_experts.saturating_sub(1)], 0.0, None),
        round(vec![f64::NAN; n_experts], 0.0, None),
        round(vec![0.0; n_experts], f64::INFINITY, None),
        round(vec![0.0; n_experts], 0.0, Some(vec![false; n_experts])),
        round(
            vec![0.0; n_experts],
            0.0,
            Some(vec![true; n_experts.saturating_sub(1)]),
        ),
    ]
}

/// What the rules on binary advice (weighted majority and its randomised form) must refuse
/// besides [`invalid_advice`]: advice or an outcome outside {0, 1}, and any awake list
/// (they have no sleeping experts).
pub fn invalid_binary_advice(n_experts: usize) -> Vec<AdviceRoundBuf> {
    let mut invalid = invalid_advice(n_experts);
    invalid.push(AdviceRoundBuf {
        advice: vec![0.5; n_experts],
        outcome: 0.0,
        awake: None,
    });
    invalid.push(AdviceRoundBuf {
        advice: vec![0.0; n_experts],
        outcome: 2.0,
        awake: None,
    });
    invalid.push(AdviceRoundBuf {
        advice: vec![0.0; n_experts],
        outcome: 0.0,
        awake: Some(vec![true; n_experts]),
    });
    invalid
}

/// The loss rounds every rule that learns from losses (Hedge, FPL) must refuse: one loss too
/// many, a loss of −∞, every expert asleep.
pub fn invalid_losses(n_experts: usize) -> Vec<LossRoundBuf> {
    vec![
        LossRoundBuf {
            losses: vec![0.0; n_experts + 1],
            awake: None,
        },
        LossRoundBuf {
            losses: vec![f64::NEG_INFINITY; n_experts],
            awake: None,
        },
        LossRoundBuf {
            losses: vec![0.0; n_experts],
            awake: Some(vec![false; n_experts]),
        },
    ]
}

/// The suite, set up for one learner and one stream.
pub struct Conformance<'s, F, S> {
    make: F,
    stream: &'s [S],
    invalid: &'s [S],
    invalid_first: &'s [S],
    cuts: Vec<usize>,
    seeds: [u64; 2],
}

impl<F, S> fmt::Debug for Conformance<'_, F, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conformance")
            .field("stream_len", &self.stream.len())
            .field("invalid_len", &self.invalid.len())
            .field("cuts", &self.cuts)
            .finish()
    }
}

impl<'s, L, F, S> Conformance<'s, F, S>
where
    L: OnlineLearner + Serialize + DeserializeOwned + Send,
    L::Step: Serialize,
    F: Fn(u64) -> L + Sync,
    S: OwnedInput<L> + Sync,
{
    /// The suite for learners built by `make(seed)`, run on `stream`. Cut points default to
    /// 0, 1, 2, 3, a third, a half and two thirds of the stream, and its last round.
    pub fn new(make: F, stream: &'s [S]) -> Self {
        let n = stream.len();
        let mut cuts = vec![0, 1, 2, 3, n / 3, n / 2, 2 * n / 3, n.saturating_sub(1)];
        cuts.retain(|&c| c < n.max(1));
        cuts.sort_unstable();
        cuts.dedup();
        Self {
            make,
            stream,
            invalid: &[],
            invalid_first: &[],
            cuts,
            seeds: [7, 20_251_121],
        }
    }

    /// Inputs that `learn_one` must reject without changing the learner once it has seen a
    /// point (a NaN, a point of the wrong dimension).
    #[must_use]
    pub fn invalid_inputs(mut self, invalid: &'s [S]) -> Self {
        self.invalid = invalid;
        self
    }

    /// Inputs that `learn_one` must reject even as the very first input (a NaN, an empty
    /// point); offered before round 1 and at every other cut point.
    #[must_use]
    pub fn invalid_first_inputs(mut self, invalid_first: &'s [S]) -> Self {
        self.invalid_first = invalid_first;
        self
    }

    /// The rounds after which snapshots are taken and invalid inputs offered.
    #[must_use]
    pub fn cuts(mut self, cuts: &[usize]) -> Self {
        self.cuts = cuts.to_vec();
        self
    }

    /// Runs every check; the first violation is returned.
    pub fn check_all(&self) -> Result<(), Violation> {
        self.check_determinism()?;
        self.check_snapshot_resume()?;
        self.check_learn_many()?;
        self.check_atomic_on_invalid()?;
        self.check_thread_count_independence()
    }

    /// Same seed, same stream → same steps and same final state.
    pub fn check_determinism(&self) -> Result<(), Violation> {
        for &seed in &self.seeds {
            let first = self.run_from(&mut (self.make)(seed), 0, "determinism")?;
            let second = self.run_from(&mut (self.make)(seed), 0, "determinism")?;
            compare("determinism", &first, &second, 0)?;
        }
        Ok(())
    }

    /// Snapshot after each cut point, restore, continue → the uninterrupted run.
    pub fn check_snapshot_resume(&self) -> Result<(), Violation> {
        let seed = self.seeds[0];
        let whole = self.run_from(&mut (self.make)(seed), 0, "snapshot/resume")?;
        for &cut in &self.cuts {
            let mut learner = (self.make)(seed);
            let head = self.run_range(&mut learner, 0, cut, "snapshot/resume")?;
            let text = to_json(&learner, "snapshot/resume")?;
            let mut restored: L = serde_json::from_str(&text).map_err(|e| Violation {
                check: "snapshot/resume",
                detail: format!("the snapshot taken after round {cut} does not restore: {e}"),
            })?;
            let restored_text = to_json(&restored, "snapshot/resume")?;
            if restored_text != text {
                return Err(Violation {
                    check: "snapshot/resume",
                    detail: format!("restoring the snapshot of round {cut} changed the state"),
                });
            }
            let tail = self.run_from(&mut restored, cut, "snapshot/resume")?;
            let mut steps = head.steps;
            steps.extend(tail.steps);
            let resumed = Run {
                steps,
                state: tail.state,
            };
            compare("snapshot/resume", &whole, &resumed, cut)?;
        }
        Ok(())
    }

    /// `learn_many` over the stream → the steps and state of repeated `learn_one`.
    pub fn check_learn_many(&self) -> Result<(), Violation> {
        let seed = self.seeds[1];
        let one_by_one = self.run_from(&mut (self.make)(seed), 0, "learn_many")?;
        let mut learner = (self.make)(seed);
        let mut steps = Vec::with_capacity(self.stream.len());
        let mut step_error = None;
        learner
            .learn_many(
                self.stream.iter().map(|s| s.as_input()),
                |step| match serde_json::to_string(&step) {
                    Ok(text) => steps.push(text),
                    Err(e) => step_error = Some(e.to_string()),
                },
            )
            .map_err(|e| Violation {
                check: "learn_many",
                detail: format!("learn_many failed on the valid stream: {e}"),
            })?;
        if let Some(e) = step_error {
            return Err(Violation {
                check: "learn_many",
                detail: format!("a step does not serialise: {e}"),
            });
        }
        let many = Run {
            steps,
            state: to_json(&learner, "learn_many")?,
        };
        compare("learn_many", &one_by_one, &many, 0)
    }

    /// Each invalid input, offered after each cut point, is rejected and changes nothing.
    pub fn check_atomic_on_invalid(&self) -> Result<(), Violation> {
        let seed = self.seeds[0];
        for &cut in &self.cuts {
            let mut learner = (self.make)(seed);
            self.run_range(&mut learner, 0, cut, "atomic steps")?;
            let before = to_json(&learner, "atomic steps")?;
            let offered: &[S] = if cut == 0 { &[] } else { self.invalid };
            for (index, bad) in offered.iter().chain(self.invalid_first).enumerate() {
                if learner.learn_one(bad.as_input()).is_ok() {
                    return Err(Violation {
                        check: "atomic steps",
                        detail: format!("invalid input #{index} was accepted after round {cut}"),
                    });
                }
                let after = to_json(&learner, "atomic steps")?;
                if after != before {
                    return Err(Violation {
                        check: "atomic steps",
                        detail: format!(
                            "rejecting invalid input #{index} after round {cut} changed the learner"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The run in a 1-thread pool equals the run in a 3-thread pool.
    pub fn check_thread_count_independence(&self) -> Result<(), Violation> {
        let run_in = |threads: usize| -> Result<Run, Violation> {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| Violation {
                    check: "thread-count independence",
                    detail: format!("cannot build a {threads}-thread pool: {e}"),
                })?;
            pool.install(|| {
                self.run_from(
                    &mut (self.make)(self.seeds[1]),
                    0,
                    "thread-count independence",
                )
            })
        };
        let single = run_in(1)?;
        let multi = run_in(3)?;
        compare("thread-count independence", &single, &multi, 0)
    }

    fn run_from(
        &self,
        learner: &mut L,
        start: usize,
        check: &'static str,
    ) -> Result<Run, Violation> {
        let steps = self.run_range(learner, start, self.stream.len(), check)?;
        Ok(Run {
            steps: steps.steps,
            state: to_json(learner, check)?,
        })
    }

    fn run_range(
        &self,
        learner: &mut L,
        start: usize,
        end: usize,
        check: &'static str,
    ) -> Result<Run, Violation> {
        let mut steps = Vec::with_capacity(end.saturating_sub(start));
        for (offset, input) in self.stream[start..end].iter().enumerate() {
            let step = learner.learn_one(input.as_input()).map_err(|e| Violation {
                check,
                detail: format!(
                    "valid input of round {} was rejected: {e}",
                    start + offset + 1
                ),
            })?;
            steps.push(to_json(&step, check)?);
        }
        Ok(Run {
            steps,
            state: String::new(),
        })
    }
}

/// A run's steps and final state, serialised.
struct Run {
    steps: Vec<String>,
    state: String,
}

impl<'s, F> Conformance<'s, F, Vec<f64>> {
    /// Offers the generated invalid points ([`InvalidPoints::around`]): those refused after
    /// the first round at every cut point, those refused always before round 1 too.
    #[must_use]
    pub fn invalid_points(mut self, invalid: &'s InvalidPoints) -> Self {
        self.invalid = &invalid.after_first;
        self.invalid_first = &invalid.always;
        self
    }
}

/// The whole suite for a learner of points on `stream`, snapshots taken at `cuts`, with the
/// invalid points generated around the stream's first point ([`InvalidPoints::around`]):
/// the run every family of point learners makes.
///
/// ```
/// use pacstream::conformance::check_points;
/// use pacstream::kmeans::SequentialKMeansParams;
///
/// let stream: Vec<Vec<f64>> = (0..40).map(|i| vec![f64::from(i % 7), 1.0]).collect();
/// let make = |seed| SequentialKMeansParams::new(2).seed(seed).check().unwrap().build();
/// assert!(check_points(make, &stream, &[0, 1, 20, 39]).is_ok());
/// ```
pub fn check_points<L, F>(make: F, stream: &[Vec<f64>], cuts: &[usize]) -> Result<(), Violation>
where
    L: OnlineLearner + Serialize + DeserializeOwned + Send,
    L::Step: Serialize,
    F: Fn(u64) -> L + Sync,
    Vec<f64>: OwnedInput<L>,
{
    let invalid = InvalidPoints::around(stream.first().map_or(&[], Vec::as_slice));
    Conformance::new(make, stream)
        .invalid_points(&invalid)
        .cuts(cuts)
        .check_all()
}

fn to_json<T: Serialize>(value: &T, check: &'static str) -> Result<String, Violation> {
    serde_json::to_string(value).map_err(|e| Violation {
        check,
        detail: format!("does not serialise (NaN or infinity in the state?): {e}"),
    })
}

fn compare(check: &'static str, expected: &Run, found: &Run, cut: usize) -> Result<(), Violation> {
    if expected.steps.len() != found.steps.len() {
        return Err(Violation {
            check,
            detail: format!(
                "{} steps against {} (cut at round {cut})",
                found.steps.len(),
                expected.steps.len()
            ),
        });
    }
    if let Some(index) = (0..expected.steps.len()).find(|&i| expected.steps[i] != found.steps[i]) {
        return Err(Violation {
            check,
            detail: format!(
                "round {} differs (cut at round {cut}):\n  expected {}\n  found    {}",
                index + 1,
                expected.steps[index],
                found.steps[index]
            ),
        });
    }
    if expected.state != found.state {
        return Err(Violation {
            check,
            detail: format!("the final states differ (cut at round {cut})"),
        });
    }
    Ok(())
}
