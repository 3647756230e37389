//! The sequential principal curve learner (spec §5): one round per point.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::candidates::{
    Candidate, Limits, Neighbourhood, fingerprint, local_vertices, window_candidates,
};
use super::comparator::{Comparator, HindsightCurve, Objective, hindsight_fit};
use super::evaluate::{Pieces, Pool, Table, TableScratch, Window};
use super::init::initial_curve;
use super::lattice::{Lattice, MAX_BALL_RADII};
use super::model::PrincipalCurve;
use super::params::{Estimator, Feedback, Memory, PrincipalCurveConfig};
use super::partition::{CurveState, StateSettings};
use super::scoring::{Corrections, learning_rate};
use crate::data::{check_first_point, check_point};
use crate::error::{Error, Result};
use crate::experts::win_probability;
use crate::online::{OnlineLearner, Step, UnsupervisedLearner};
use crate::rng::StreamRng;

/// The phase of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// The point was collected before the first curve (its loss is undefined).
    WarmUp,
    /// I_t = 1: the reward of every curve is observed, and the next curve is chosen among
    /// the candidates of every window along the curve.
    Exploration,
    /// I_t = 0: only the chosen curve's reward is observed (bandit feedback), and the next
    /// curve is chosen among the candidates of the window N(x_t).
    Exploitation,
}

/// The record of one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrincipalCurveStep {
    /// The round t (1-based).
    pub round: u64,
    /// Δ(f̂_t, x_t), the squared distance from the point to the curve held before the round
    /// (`None` during the warm-up).
    pub loss: Option<f64>,
    /// The phase of the round.
    pub phase: Phase,
    /// K(f̂_t), the number of segments of the curve that paid (`None` during the warm-up).
    pub segments: Option<usize>,
    /// The number of curves the next one was chosen from, |A_t| (the current curve
    /// included; 0 during the warm-up).
    pub candidates: usize,
    /// Whether the next curve differs from this round's.
    pub changed: bool,
    /// Whether this round ended the warm-up (the first curve exists from the next round).
    pub initialised: bool,
    /// Whether the point lies outside B(μ_0, √d R) (its reward is clipped at 0).
    pub outside_ball: bool,
}

impl Step for PrincipalCurveStep {
    fn round(&self) -> u64 {
        self.round
    }
    fn loss(&self) -> Option<f64> {
        self.loss
    }
}

/// Running totals of what the learner did (not errors).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrincipalCurveReport {
    /// The round that ended the warm-up.
    pub initialised_at: Option<u64>,
    /// Rounds the warm-up waited beyond t_0 because its points could not make a segment
    /// (all equal, or all on one lattice point).
    pub warmup_extension: u64,
    /// Points outside B(μ_0, √d R), warm-up points included.
    pub points_outside_ball: u64,
    /// Exploration rounds after the warm-up.
    pub exploration_rounds: u64,
    /// Exploitation rounds after the warm-up.
    pub exploitation_rounds: u64,
    /// Rounds after which the curve changed.
    pub curve_changes: u64,
    /// Candidate curves scored, the current curves included.
    pub candidates_scored: u64,
}

/// What exists once the warm-up is over.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Fitted {
    state: CurveState,
    /// I_{t+1}: the phase of the next round, drawn when its curve was chosen.
    next_phase: Phase,
    /// P_{t+1}(f̂_{t+1}), the probability that the current curve won its perturbed argmax
    /// (0 when it underflows: an unlikely winner, whose reward then counts as α).
    probability: f64,
    /// |A_t|, the number of curves it was chosen from.
    available: usize,
    corrections: Corrections,
}

/// Sequential learning of a principal curve: an [`OnlineLearner`] of points whose model is a
/// polygonal line ([`PrincipalCurve`]). See the [module documentation](super).
///
/// # Example
///
/// The regret against the hindsight comparators, on points near a line:
///
/// ```
/// use pacstream::curves::{Comparator, PrincipalCurveParams};
/// use pacstream::{OnlineLearner, StreamRng};
///
/// let mut rng = StreamRng::seed_from(7);
/// let mut learner = PrincipalCurveParams::new().warmup(20).seed(1).check()?.build();
/// let mut cumulative_loss = 0.0;
/// for _ in 0..300 {
///     let s = 4.0 * rng.next_f64();
///     let step = learner.learn_one(&[s, 0.5 * s + 0.05 * rng.standard_normal()])?;
///     // The warm-up rounds have no loss.
///     cumulative_loss += step.loss.unwrap_or(0.0);
/// }
/// assert_eq!(learner.report().initialised_at, Some(20));
/// let lattice = learner.lattice().unwrap();
/// assert_eq!(lattice.spacing(), 2.0 * 2f64.sqrt() * lattice.radius() / 100.0);
/// // f* minimises Σ Δ(f, x_s) + κ c_1 K(f)/η_T over the 280 scored rounds, η_T being the
/// // learning rate of the last round; a local optimum, so the regret is a lower estimate.
/// let best = learner.hindsight(Comparator::Penalised).unwrap();
/// assert_eq!(best.n_points, 280);
/// assert_eq!(best.learning_rate, learner.final_learning_rate());
/// let per_segment = learner.config().penalty() * lattice.complexity() / best.learning_rate.unwrap();
/// assert_eq!(best.penalty, per_segment * best.curve.n_segments() as f64);
/// let regret = best.regret(cumulative_loss);
/// assert_eq!(regret, cumulative_loss - (best.loss + best.penalty));
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct PrincipalCurveLearner {
    config: PrincipalCurveConfig,
    rng: StreamRng,
    n_rounds: u64,
    dim: Option<usize>,
    /// The warm-up points (user coordinates, row-major), until the first curve.
    warmup: Vec<f64>,
    fitted: Option<Fitted>,
    report: PrincipalCurveReport,
    /// The current curve in user coordinates (derived).
    #[serde(skip)]
    model: Option<PrincipalCurve>,
    /// Buffers for the next round's tables (a cache: no part of the state).
    #[serde(skip)]
    scratch: TableScratch,
}

impl Serialize for PrincipalCurveLearner {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        PrincipalCurveLearner::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for PrincipalCurveLearner {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let mut learner = PrincipalCurveLearner::deserialize(deserializer)?;
        learner
            .validate_snapshot()
            .map_err(<D::Error as serde::de::Error>::custom)?;
        if let Some(spacing) = learner.lattice().map(Lattice::spacing) {
            let settings = learner.state_settings(spacing);
            if let Some(fitted) = &mut learner.fitted {
                fitted.state.rebuild(settings);
            }
        }
        learner.refresh_model();
        Ok(learner)
    }
}

/// Child streams of a round's generator.
const PHASE_STREAM: u64 = 0;
const BUDGET_STREAM: u64 = 1;
const CANDIDATE_STREAM: u64 = 2;
const PERTURBATION_STREAM: u64 = 3;

impl PrincipalCurveConfig {
    /// A learner with these settings and no data yet.
    pub fn build(&self) -> PrincipalCurveLearner {
        PrincipalCurveLearner {
            config: self.clone(),
            rng: StreamRng::seed_from(self.seed),
            n_rounds: 0,
            dim: None,
            warmup: Vec::new(),
            fitted: None,
            report: PrincipalCurveReport::default(),
            model: None,
            scratch: TableScratch::default(),
        }
    }
}

impl PrincipalCurveLearner {
    /// The current curve (`None` during the warm-up).
    pub fn curve(&self) -> Option<&PrincipalCurve> {
        self.model.as_ref()
    }

    /// The lattice fixed by the warm-up.
    pub fn lattice(&self) -> Option<&Lattice> {
        self.fitted.as_ref().map(|f| &f.state.lattice)
    }

    /// The integer lattice coordinates of the current curve's vertices, row-major.
    pub fn curve_keys(&self) -> Option<&[i64]> {
        self.fitted.as_ref().map(|f| f.state.keys.as_slice())
    }

    /// What the learner did so far.
    pub fn report(&self) -> &PrincipalCurveReport {
        &self.report
    }

    /// The validated settings.
    pub fn config(&self) -> &PrincipalCurveConfig {
        &self.config
    }

    /// Whether the learner is still collecting its warm-up points.
    pub fn is_warming_up(&self) -> bool {
        self.fitted.is_none()
    }

    /// The stored points (all, or the last W), oldest first, as (round, user coordinates).
    pub fn stored_points(&self) -> Vec<(u64, Vec<f64>)> {
        let Some(fitted) = &self.fitted else {
            let dim = self.dim.unwrap_or(1);
            return self
                .warmup
                .chunks_exact(dim)
                .enumerate()
                .map(|(i, row)| (i as u64 + 1, row.to_vec()))
                .collect();
        };
        let state = &fitted.state;
        let mut user = vec![0.0; state.dim];
        state
            .live()
            .map(|index| {
                state.lattice.to_user(state.point(index), &mut user);
                (
                    state.oldest_round() + (index - state.live().start) as u64,
                    user.clone(),
                )
            })
            .collect()
    }

    /// A hindsight comparator on the stored points of the scored rounds (spec §7, and the
    /// module [`comparator`](super::Comparator)): a deterministic local search for the curve
    /// minimising `comparator`'s objective, started from the current curve and from the
    /// first principal component segment. With window memory it sees only the last W
    /// points. `None` during the warm-up.
    ///
    /// Its cost is that of a few dozen of the learner's exploration rounds, except for
    /// [`Comparator::Unpenalised`], which climbs to p segments when p is large.
    pub fn hindsight(&self, comparator: Comparator) -> Option<HindsightCurve> {
        let fitted = self.fitted.as_ref()?;
        let state = &fitted.state;
        let first_scored = self.report.initialised_at.map_or(1, |r| r + 1);
        let mut points = Vec::new();
        let mut first_round = None;
        for index in state.live() {
            let round = state.oldest_round() + (index - state.live().start) as u64;
            if round >= first_scored {
                first_round.get_or_insert(round);
                points.extend_from_slice(state.point(index));
            }
        }
        let lattice = &state.lattice;
        let objective = match comparator {
            Comparator::Penalised => {
                let eta = self.final_learning_rate()?;
                Objective {
                    comparator,
                    per_segment: self.config.penalty * lattice.complexity() / eta,
                    learning_rate: Some(eta),
                    max_segments: self.config.max_segments,
                }
            }
            Comparator::SameSegments => Objective {
                comparator,
                per_segment: 0.0,
                learning_rate: None,
                max_segments: state.n_segments(),
            },
            Comparator::Unpenalised => Objective {
                comparator,
                per_segment: 0.0,
                learning_rate: None,
                max_segments: self.config.max_segments,
            },
        };
        let bin_side = match self.config.memory {
            Memory::All if self.config.bin_side > 0.0 => {
                Some(self.config.bin_side * lattice.spacing())
            }
            _ => None,
        };
        let bins = (bin_side, self.config.max_atoms);
        Some(hindsight_fit(
            lattice,
            state.keys.clone(),
            first_round.unwrap_or(first_scored),
            points,
            &self.config,
            objective,
            bins,
        ))
    }

    /// The number of atoms the learner scores candidates on (a point, or the points of one
    /// small bin summarised by count, mean and scatter; see the module documentation): with
    /// every point kept it stops growing at the `max_atoms` budget, and the cost of a round
    /// with it. 0 during the warm-up.
    ///
    /// ```
    /// use pacstream::curves::PrincipalCurveParams;
    /// use pacstream::{OnlineLearner, StreamRng};
    ///
    /// let mut rng = StreamRng::seed_from(2);
    /// let mut learner = PrincipalCurveParams::new().max_atoms(64).seed(1).check()?.build();
    /// for _ in 0..2000 {
    ///     let s = 4.0 * rng.next_f64();
    ///     learner.learn_one(&[s, 0.5 * s + 0.05 * rng.standard_normal()])?;
    /// }
    /// // 2000 points, at most 64 atoms: the bins merged them.
    /// assert!(learner.n_atoms() > 0 && learner.n_atoms() <= 64);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    pub fn n_atoms(&self) -> usize {
        self.fitted.as_ref().map_or(0, |f| f.state.n_atoms())
    }

    /// η_T, the learning rate with which the current curve was chosen at the end of the
    /// last round T (e_mult included); `None` during the warm-up.
    pub fn final_learning_rate(&self) -> Option<f64> {
        let lattice = self.lattice()?;
        Some(learning_rate(
            self.n_rounds,
            lattice.loss_bound(),
            lattice.complexity(),
            self.config.max_segments,
            self.config.eta_scale,
        ))
    }

    fn check_input(&self, point: &[f64]) -> Result<()> {
        match self.dim {
            Some(dim) => check_point(point, dim)?,
            None => {
                check_first_point(point)?;
                self.config.check_dim(point.len())?;
            }
        }
        if let Some(fitted) = &self.fitted {
            let lattice = &fitted.state.lattice;
            let mut y = vec![0.0; point.len()];
            lattice.to_internal(point, &mut y);
            if !lattice.within_reach(&y) {
                return Err(Error::InconsistentInput(format!(
                    "a point lies {:?} from the warm-up mean, more than {MAX_BALL_RADII:e} \
                     times the ball radius √d R = {:?}: the radius R is far too small for \
                     the data",
                    y.iter().map(|v| v * v).sum::<f64>().sqrt(),
                    lattice.ball_radius()
                )));
            }
        }
        Ok(())
    }

    fn refresh_model(&mut self) {
        self.model = self.fitted.as_ref().map(|fitted| fitted.state.user_curve());
    }

    /// The warm-up round: collect, and initialise once t_0 points can make a segment.
    fn warm_up(&mut self, point: &[f64]) -> Result<PrincipalCurveStep> {
        let round = self.n_rounds + 1;
        let dim = point.len();
        let mut step = PrincipalCurveStep {
            round,
            loss: None,
            phase: Phase::WarmUp,
            segments: None,
            candidates: 0,
            changed: false,
            initialised: false,
            outside_ball: false,
        };
        let collected = self.warmup.len() / dim + 1;
        if collected < self.config.warmup {
            self.warmup.extend_from_slice(point);
            return Ok(step);
        }
        let mut buffer = Vec::with_capacity(self.warmup.len() + dim);
        buffer.extend_from_slice(&self.warmup);
        buffer.extend_from_slice(point);
        // The only fallible part (a δ larger than the R the data give): before any change.
        let Some((lattice, keys)) = initial_curve(&buffer, dim, &self.config)? else {
            self.warmup = buffer;
            self.report.warmup_extension += 1;
            return Ok(step);
        };
        let mut internal = vec![0.0; buffer.len()];
        let mut outside = 0;
        for (user, y) in buffer.chunks_exact(dim).zip(internal.chunks_exact_mut(dim)) {
            lattice.to_internal(user, y);
            outside += u64::from(!lattice.ball_contains(y));
        }
        step.outside_ball = !lattice.ball_contains(&internal[internal.len() - dim..]);
        let n = buffer.len() / dim;
        self.report.initialised_at = Some(round);
        let settings = self.state_settings(lattice.spacing());
        let mut state = CurveState::new(lattice, keys, 1, internal, vec![true; n], settings);
        if let Memory::Window(size) = self.config.memory {
            while state.n_points() > size {
                state.evict_oldest();
            }
        }
        let next_phase = self.draw_phase(round + 1);
        self.fitted = Some(Fitted {
            state,
            next_phase,
            probability: 1.0,
            available: 1,
            corrections: Corrections::default(),
        });
        self.warmup = Vec::new();
        self.report.points_outside_ball += outside;
        self.refresh_model();
        step.initialised = true;
        Ok(step)
    }

    /// I_t ~ Bernoulli(ε), from the round's own stream.
    fn draw_phase(&self, round: u64) -> Phase {
        let mut rng = self.rng.child(round).child(PHASE_STREAM);
        if rng.next_f64() < self.config.explore {
            Phase::Exploration
        } else {
            Phase::Exploitation
        }
    }

    /// The weight of a stored point in the estimated cumulative rewards R̂_t, by how it was
    /// observed (warm-up, exploration, exploitation), and how points are merged:
    ///
    /// - full feedback: every point counts once;
    /// - bandit, label-efficient: r̂ = r · I/ε, so an exploration point counts 1/ε times and
    ///   an exploitation point not at all; a warm-up point was observed for certain (its
    ///   I is 1 with probability 1, not ε) and counts once;
    /// - bandit, paper: exploration and warm-up points count once (the α and importance-
    ///   weighted terms of exploitation rounds are the corrections).
    fn state_settings(&self, spacing: f64) -> StateSettings {
        let weights = match (self.config.feedback, self.config.estimator) {
            (Feedback::Full, _) => [1.0, 1.0, 1.0],
            (Feedback::Bandit, Estimator::LabelEfficient) => [1.0, 1.0 / self.config.explore, 0.0],
            (Feedback::Bandit, Estimator::Paper) => [1.0, 1.0, 0.0],
        };
        let bin_side = match self.config.memory {
            Memory::All if self.config.bin_side > 0.0 => Some(self.config.bin_side * spacing),
            _ => None,
        };
        StateSettings {
            weights,
            bin_side,
            max_atoms: self.config.max_atoms,
            warmup_end: self.report.initialised_at.unwrap_or(0),
        }
    }

    fn uses_corrections(&self) -> bool {
        self.config.feedback == Feedback::Bandit && self.config.estimator == Estimator::Paper
    }

    /// A round after the warm-up.
    fn play(&mut self, point: &[f64]) -> PrincipalCurveStep {
        let round = self.n_rounds + 1;
        let next_phase = self.draw_phase(round + 1);
        let uses_corrections = self.uses_corrections();
        let alpha = self.config.alpha;
        let memory = self.config.memory;
        let loss_bound = match &self.fitted {
            Some(fitted) => fitted.state.lattice.loss_bound(),
            None => unreachable!("invariant: play after the warm-up"),
        };
        let fitted = self
            .fitted
            .as_mut()
            .expect("invariant: play after the warm-up");
        let phase = fitted.next_phase;
        let state = &mut fitted.state;
        let mut y = vec![0.0; state.dim];
        state.lattice.to_internal(point, &mut y);
        let outside_ball = !state.lattice.ball_contains(&y);
        let segments = state.n_segments();
        let (part, loss) = state.push(&y, phase == Phase::Exploration);
        if uses_corrections && phase == Phase::Exploitation {
            // Only the chosen curve's reward is observed: importance-weighted when its
            // probability clears β = 1/(2|A|).
            let beta = 1.0 / (2.0 * fitted.available as f64);
            if fitted.probability > beta {
                let alpha = alpha.unwrap_or(0.5 * loss_bound);
                let reward = (loss_bound - loss).max(0.0);
                fitted.corrections.push(
                    round,
                    fingerprint(&state.keys),
                    reward / fitted.probability - alpha,
                );
            }
        }
        if let Memory::Window(size) = memory {
            while state.n_points() > size {
                state.evict_oldest();
            }
            fitted.corrections.forget_before(state.oldest_round());
        }
        let windows = match next_phase {
            Phase::Exploration => Window::all(segments),
            _ => vec![Window::around(part, segments)],
        };
        let round_rng = self.rng.child(round);
        let choice = choose_next(
            state,
            &fitted.corrections,
            &self.config,
            loss_bound,
            &round_rng,
            round,
            &windows,
            uses_corrections && next_phase == Phase::Exploitation,
            &mut self.scratch,
        );
        fitted.next_phase = next_phase;
        fitted.probability = choice.probability;
        fitted.available = choice.available;
        match phase {
            Phase::Exploration => self.report.exploration_rounds += 1,
            _ => self.report.exploitation_rounds += 1,
        }
        self.report.points_outside_ball += u64::from(outside_ball);
        self.report.candidates_scored += choice.available as u64;
        if choice.changed {
            self.report.curve_changes += 1;
            self.refresh_model();
        }
        PrincipalCurveStep {
            round,
            loss: Some(loss),
            phase,
            segments: Some(segments),
            candidates: choice.available,
            changed: choice.changed,
            initialised: false,
            outside_ball,
        }
    }

    fn validate_snapshot(&self) -> Result<()> {
        let invalid = |what: &str| Err(Error::InvalidSnapshot(format!("principal curve: {what}")));
        self.config.validate()?;
        if let Some(dim) = self.dim {
            self.config.check_dim(dim)?;
        }
        match (&self.fitted, self.dim) {
            (None, None) => {
                if self.n_rounds != 0 || !self.warmup.is_empty() {
                    return invalid("rounds were played but no dimension is known");
                }
            }
            (None, Some(dim)) => {
                if dim == 0
                    || self.warmup.len() % dim != 0
                    || self.warmup.len() / dim != self.n_rounds as usize
                    || self.warmup.iter().any(|v| !v.is_finite())
                {
                    return invalid("the warm-up buffer does not match the rounds played");
                }
            }
            (Some(fitted), Some(dim)) => {
                let state = &fitted.state;
                if state.dim != dim || !self.warmup.is_empty() {
                    return invalid("the curve's dimension differs from the data's");
                }
                if state.end_round() != self.n_rounds + 1 {
                    return invalid("the stored points do not end at the last round");
                }
                if let Memory::Window(size) = self.config.memory {
                    if state.n_points() > size {
                        return invalid("more points are stored than the window holds");
                    }
                }
                if state.n_segments() > self.config.max_segments {
                    return invalid("the curve has more segments than allowed");
                }
                if !(0.0..=1.0).contains(&fitted.probability) || fitted.available == 0 {
                    return invalid("the probability of the current curve is out of range");
                }
                if fitted.next_phase == Phase::WarmUp {
                    return invalid("a round after the warm-up cannot be a warm-up round");
                }
                let corrections = &fitted.corrections;
                if (!self.uses_corrections() && corrections.len() > 0)
                    || !corrections.values_are_finite()
                    || corrections
                        .oldest_round()
                        .is_some_and(|r| r < state.oldest_round() || r > self.n_rounds)
                {
                    return invalid("the estimator's corrections are inconsistent");
                }
            }
            (Some(_), None) => return invalid("a curve exists but no dimension is known"),
        }
        Ok(())
    }
}

/// The outcome of choosing the next curve.
struct Choice {
    available: usize,
    changed: bool,
    probability: f64,
}

/// The candidates of a round, with the pool (and local vertex set) of each window that has
/// some.
struct RoundCandidates {
    candidates: Vec<Candidate>,
    pools: Vec<Option<(Pool, Vec<i64>)>>,
}

impl RoundCandidates {
    /// The pool and local vertex set of a candidate's window.
    fn pool_of(&self, candidate: &Candidate) -> (&Pool, &[i64]) {
        let (pool, local) = self.pools[candidate.window]
            .as_ref()
            .expect("invariant: a window with candidates has a pool");
        (pool, local)
    }
}

/// The candidates of the windows (spec §3), the budget spread evenly over them (the
/// remainder from a window drawn from the round's stream).
fn round_candidates(
    state: &CurveState,
    config: &PrincipalCurveConfig,
    round_rng: &StreamRng,
    windows: &[Window],
) -> RoundCandidates {
    let n_windows = windows.len();
    let total = config.max_candidates;
    let (base, extra) = (total / n_windows, total % n_windows);
    let offset = if extra > 0 {
        round_rng.child(BUDGET_STREAM).index_below(n_windows)
    } else {
        0
    };
    let limits = Limits {
        max_segments: config.max_segments,
        max_length: config.max_length,
    };
    let mut seen: HashSet<u64> = HashSet::new();
    seen.insert(fingerprint(&state.keys));
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut pools: Vec<Option<(Pool, Vec<i64>)>> = Vec::with_capacity(n_windows);
    for (index, &window) in windows.iter().enumerate() {
        let budget = base + usize::from((index + n_windows - offset) % n_windows < extra);
        if budget == 0 {
            pools.push(None);
            continue;
        }
        let hood = Neighbourhood::new(state, window);
        let mut rng = round_rng.child(CANDIDATE_STREAM).child(index as u64);
        let local = local_vertices(state, window, &hood, config.local_vertices, &mut rng);
        let before = candidates.len();
        window_candidates(
            state,
            index,
            window,
            &hood,
            &local,
            budget,
            limits,
            &mut rng,
            &mut seen,
            &mut candidates,
        );
        pools.push((candidates.len() > before).then(|| (Pool::new(state, window, &local), local)));
    }
    RoundCandidates { candidates, pools }
}

/// Follow the perturbed leader: the index of argmax_f (a_f + z_f) with z_f ~ Exp(1) drawn
/// afresh for every entry in order (by inversion, z = −ln U with U in (0, 1]), the first on
/// a tie. Entry i wins with probability [`win_probability`]`(scores, i)`.
pub(crate) fn perturbed_leader(scores: &[f64], rng: &mut StreamRng) -> usize {
    let mut best = (f64::NEG_INFINITY, 0);
    for (index, score) in scores.iter().enumerate() {
        let z = -rng.next_f64_nonzero().ln();
        if score + z > best.0 {
            best = (score + z, index);
        }
    }
    best.1
}

/// A candidate's score a_f, held to the finite range. Extreme settings (e_mult, κ or α near
/// the largest f64, which validation accepts) can overflow a_f to ±∞, or to NaN as ∞ − ∞;
/// the win probability needs finite scores. ±∞ becomes ±f64::MAX and NaN −f64::MAX, which
/// the perturbed leader treats as it treats ±∞ and NaN (a perturbation z < 10³⁰⁸ neither
/// lifts −f64::MAX above the current curve's 0 nor changes which of several f64::MAX wins,
/// the first), so every choice is the one the raw scores give.
#[inline]
fn finite_score(score: f64) -> f64 {
    if score.is_nan() {
        -f64::MAX
    } else {
        score.clamp(-f64::MAX, f64::MAX)
    }
}

/// Scores the available candidates (the current curve first) and moves to the winner.
#[allow(clippy::too_many_arguments, reason = "the parts of one round's choice")]
fn choose_next(
    state: &mut CurveState,
    corrections: &Corrections,
    config: &PrincipalCurveConfig,
    loss_bound: f64,
    round_rng: &StreamRng,
    round: u64,
    windows: &[Window],
    needs_probability: bool,
    scratch: &mut TableScratch,
) -> Choice {
    let n_windows = windows.len();
    let round_candidates = round_candidates(state, config, round_rng, windows);
    let candidates = &round_candidates.candidates;
    let current_fingerprint = fingerprint(&state.keys);
    let lattice = &state.lattice;
    let eta = learning_rate(
        round,
        lattice.loss_bound(),
        lattice.complexity(),
        config.max_segments,
        config.eta_scale,
    );
    let per_segment = config.penalty * lattice.complexity();
    let current_segments = state.n_segments();
    let current_correction = corrections.total(current_fingerprint);
    // a_f = η (R̂(f) − R̂(current)) − (h(f) − h(current)); the current curve first.
    let mut scores = Vec::with_capacity(candidates.len() + 1);
    scores.push(0.0);
    let mut tables: Vec<Option<Table>> = (0..n_windows).map(|_| None).collect();
    let mut pieces = Pieces::default();
    for candidate in candidates {
        let (pool, _) = round_candidates.pool_of(candidate);
        let table = tables[candidate.window].get_or_insert_with(|| {
            Table::new_in(state, pool, |a| state.atom_mass(a) > 0.0, scratch)
        });
        pool.pieces(candidate.order(), &mut pieces);
        let change = table.change(pool, &pieces, loss_bound);
        let correction = corrections.total(candidate.fingerprint) - current_correction;
        let penalty = per_segment * (candidate.n_segments as f64 - current_segments as f64);
        scores.push(finite_score(eta * (change.reward + correction) - penalty));
    }
    let winner = perturbed_leader(&scores, &mut round_rng.child(PERTURBATION_STREAM));
    let probability = if needs_probability {
        // The quadrature may round a certain win a hair above 1.
        win_probability(&scores, winner)
            .expect("invariant: finite scores")
            .clamp(0.0, 1.0)
    } else {
        1.0
    };
    let available = scores.len();
    if winner == 0 {
        tables
            .into_iter()
            .flatten()
            .for_each(|t| scratch.recycle(t));
        return Choice {
            available,
            changed: false,
            probability,
        };
    }
    let candidate = &candidates[winner - 1];
    let window = windows[candidate.window];
    let (pool, local) = round_candidates.pool_of(candidate);
    // Applying a change needs every atom of the modified cells.
    let table = match tables[candidate.window].take() {
        Some(table) if state.every_point_counts() => table,
        other => {
            other.into_iter().for_each(|t| scratch.recycle(t));
            Table::new_in(state, pool, |_| true, scratch)
        }
    };
    tables
        .into_iter()
        .flatten()
        .for_each(|t| scratch.recycle(t));
    pool.pieces(candidate.order(), &mut pieces);
    let changes = table.updates(state, pool, &pieces);
    scratch.recycle(table);
    let new_keys = candidate.new_keys(local, state.dim);
    state.replace(window.first, window.last, &new_keys, &changes);
    Choice {
        available,
        changed: true,
        probability,
    }
}

impl OnlineLearner for PrincipalCurveLearner {
    type Input<'a> = &'a [f64];
    type Step = PrincipalCurveStep;

    fn learn_one(&mut self, point: &[f64]) -> Result<PrincipalCurveStep> {
        self.check_input(point)?;
        let step = if self.fitted.is_none() {
            self.warm_up(point)?
        } else {
            self.play(point)
        };
        self.dim = Some(point.len());
        self.n_rounds += 1;
        Ok(step)
    }

    fn n_rounds(&self) -> u64 {
        self.n_rounds
    }
}

impl UnsupervisedLearner for PrincipalCurveLearner {
    type Model = PrincipalCurve;

    fn model(&self) -> Option<&PrincipalCurve> {
        self.model.as_ref()
    }

    fn dim(&self) -> Option<usize> {
        self.dim
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curves::PrincipalCurveParams;
    use crate::curves::evaluate::SpreadSelection;
    use crate::geometry::Part;
    use crate::kernels::{Path, on_path};

    fn noisy_arc(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = StreamRng::seed_from(seed);
        (0..n)
            .map(|_| {
                let angle = std::f64::consts::PI * rng.next_f64();
                vec![
                    angle.cos() + 0.03 * rng.standard_normal(),
                    angle.sin() + 0.03 * rng.standard_normal(),
                ]
            })
            .collect()
    }

    /// The incremental partition equals a fresh projection of every stored point, in every
    /// mode, after every round.
    #[test]
    fn incremental_partition_matches_a_fresh_one() {
        for (feedback, memory, max_atoms) in [
            (Feedback::Full, Memory::All, 0),
            (Feedback::Bandit, Memory::All, 0),
            (Feedback::Full, Memory::All, 40),
            (Feedback::Bandit, Memory::All, 40),
            (Feedback::Full, Memory::Window(60), 0),
        ] {
            let mut learner = PrincipalCurveParams::new()
                .feedback(feedback)
                .memory(memory)
                .max_atoms(max_atoms)
                .max_candidates(64)
                .seed(5)
                .check()
                .unwrap()
                .build();
            for point in noisy_arc(300, 2) {
                learner.learn_one(&point).unwrap();
                if let Some(fitted) = &learner.fitted {
                    fitted.state.check_partition().unwrap();
                }
            }
            assert!(learner.report().curve_changes > 0);
            if max_atoms > 0 {
                let state = &learner.fitted.as_ref().unwrap().state;
                let first = 0.5 * state.lattice.spacing();
                assert!(
                    state.bin_side().unwrap() >= 4.0 * first,
                    "the bins coarsened"
                );
                assert!(state.live_atoms().len() <= max_atoms);
            }
        }
    }

    /// A learner fed `points`, and its state.
    fn learner_after(params: PrincipalCurveParams, points: &[Vec<f64>]) -> PrincipalCurveLearner {
        let mut learner = params.check().unwrap().build();
        for point in points {
            learner.learn_one(point).unwrap();
        }
        learner
    }

    /// The spread term of an atom (packed scatter) on a part of `curve`.
    fn spread_on(scatter: &[f64], curve: &CurveState, part: Part) -> f64 {
        if scatter.is_empty() {
            return 0.0;
        }
        curve.spread_of(scatter, part)
    }

    /// The incremental score of every candidate of an exploration round (the table of its
    /// window: modified cells, atoms the new parts come near, pool distances, kernels)
    /// equals a brute-force sum over every stored atom of the change of its weighted reward
    /// and loss, computed by projecting the atom's mean on the whole candidate curve. With
    /// every point its own atom that is the exact Σ_x w(x) (r(f', x) − r(f, x)); with merged
    /// points, the atom-level sum, itself within the stated bound of the point-level one:
    /// Σ_x w(x) (4r√Δ(x) + 4r²) for each of f and f', r the bins' diagonal.
    #[test]
    fn incremental_scores_match_brute_force() {
        let points = noisy_arc(2500, 11);
        for (feedback, bin_side, max_atoms) in [
            (Feedback::Full, 0.0, 0),
            (Feedback::Bandit, 0.0, 0),
            (Feedback::Full, 0.5, 0),
            (Feedback::Bandit, 1.0, 0),
            (Feedback::Full, 0.5, 200),
        ] {
            let mut checked = 0;
            let mut merged_atoms = 0;
            for n in [200, 2500] {
                let learner = learner_after(
                    PrincipalCurveParams::new()
                        .feedback(feedback)
                        .bin_side(bin_side)
                        .max_atoms(max_atoms)
                        .explore(0.3)
                        .seed(4),
                    &points[..n],
                );
                let state = &learner.fitted.as_ref().unwrap().state;
                let dim = state.dim;
                let loss_bound = state.lattice.loss_bound();
                let windows = Window::all(state.n_segments());
                let rng = StreamRng::seed_from(99);
                let round = round_candidates(state, &learner.config, &rng, &windows);
                assert!(round.candidates.len() > 50, "{}", round.candidates.len());
                let counts = |a: usize| state.atom_mass(a) > 0.0;
                merged_atoms += state
                    .live_atoms()
                    .filter(|&a| state.atom_count(a) > 1.0)
                    .count();
                let mut tables: Vec<Option<Table>> = windows.iter().map(|_| None).collect();
                let mut pieces = Pieces::default();
                let radius = (dim as f64).sqrt() * state.bin_side().unwrap_or(0.0);
                for candidate in &round.candidates {
                    let (pool, local) = round.pool_of(candidate);
                    let table = tables[candidate.window]
                        .get_or_insert_with(|| Table::new(state, pool, counts));
                    pool.pieces(candidate.order(), &mut pieces);
                    let change = table.change(pool, &pieces, loss_bound);
                    // Both ways of keeping the nearest piece's spread, on every instruction
                    // set the kernels run on: the same bits.
                    for path in Path::available() {
                        for selection in [SpreadSelection::InPlace, SpreadSelection::TwoBuffers] {
                            let held = on_path(path, || {
                                selection.hold(|| table.change(pool, &pieces, loss_bound))
                            });
                            assert_eq!(
                                (held.reward.to_bits(), held.loss.to_bits()),
                                (change.reward.to_bits(), change.loss.to_bits()),
                                "{path:?}, {selection:?}: {held:?} against {change:?}"
                            );
                        }
                    }
                    // The candidate curve, whole.
                    let window = windows[candidate.window];
                    let mut keys = state.keys[..window.first * dim].to_vec();
                    keys.extend(candidate.new_keys(local, dim));
                    keys.extend_from_slice(&state.keys[(window.last + 1) * dim..]);
                    let probe = CurveState::new(
                        state.lattice.clone(),
                        keys,
                        1,
                        Vec::new(),
                        Vec::new(),
                        state.settings(),
                    );
                    let clip = |d: f64| (loss_bound - d).max(0.0);
                    let (mut reward, mut loss, mut scale) = (0.0, 0.0, 0.0);
                    for a in state.live_atoms().filter(|&a| counts(a)) {
                        let mass = state.atom_mass(a);
                        let (part, d) = probe.nearest(state.atom_mean(a));
                        let scatter = if state.merges_points() {
                            state.atom_scatter(a)
                        } else {
                            &[]
                        };
                        let spread = spread_on(scatter, &probe, part) - state.atom_spread(a);
                        let old = state.atom_distance(a);
                        reward += mass * (clip(d) - clip(old)) - spread;
                        loss += mass * (d - old) + spread;
                        scale += mass * (d + old + loss_bound);
                    }
                    let tolerance = 1e-12 * scale;
                    assert!(
                        (change.reward - reward).abs() <= tolerance
                            && (change.loss - loss).abs() <= tolerance,
                        "{feedback:?} b = {bin_side}, t = {n}: incremental {change:?}, brute \
                         force reward {reward} loss {loss}"
                    );
                    // Against the points themselves.
                    let (mut point_loss, mut bound) = (0.0, 0.0);
                    for index in state.live() {
                        let weight = state.point_weight(index);
                        if weight == 0.0 {
                            continue;
                        }
                        let x = state.point(index);
                        let (new, old) = (probe.nearest(x).1, state.nearest(x).1);
                        point_loss += weight * (new - old);
                        bound += weight
                            * (4.0 * radius * (new.sqrt() + old.sqrt()) + 8.0 * radius * radius);
                    }
                    assert!(
                        (change.loss - point_loss).abs() <= bound + tolerance,
                        "{feedback:?} b = {bin_side}, t = {n}: atoms {} points {point_loss} \
                         bound {bound}",
                        change.loss
                    );
                    checked += 1;
                }
            }
            assert!(checked > 100);
            if bin_side > 0.0 {
                assert!(merged_atoms > 100, "{merged_atoms} atoms of several points");
            }
        }
    }

    /// Follow the perturbed leader picks each entry with the probability the `paper`
    /// estimator uses (`win_probability`): over 200,000 draws, every frequency is within
    /// 5 binomial standard errors of it (a false alarm has probability about 3.5e-6).
    /// Settings at the edge of what validation accepts (the learning-rate multiplier, the
    /// penalty or the `paper` estimator's α near the largest f64) overflow the scores; the
    /// learner goes on rather than panic (a fuzzing finding: `pacstream curve --estimator
    /// paper --eta-scale 1e308`).
    /// Tables built in the buffers of earlier ones (the learner's scratch, which keeps them
    /// from round to round) are the tables built afresh: pool columns equal to
    /// `squared_distance` bit for bit (they are built a coordinate at a time below four
    /// coordinates), and the same score and the same updates, bit for bit, for every
    /// candidate of an exploration round, in 2, 3 and 5 coordinates, with points alone and
    /// with merged atoms. Each table is scored on several candidates of its window, so that
    /// segment columns computed for one candidate serve the next, as in a round.
    #[test]
    fn tables_in_recycled_buffers_are_the_tables_built_afresh() {
        for dim in [2, 3, 5] {
            let points: Vec<Vec<f64>> = noisy_arc(1500, 5)
                .into_iter()
                .enumerate()
                .map(|(i, mut point)| {
                    point.extend((2..dim).map(|k| 0.05 * ((i * k) % 7) as f64));
                    point
                })
                .collect();
            for (feedback, bin_side) in [
                (Feedback::Full, 0.0),
                (Feedback::Full, 0.5),
                (Feedback::Bandit, 1.0),
            ] {
                let learner = learner_after(
                    PrincipalCurveParams::new()
                        .feedback(feedback)
                        .bin_side(bin_side)
                        .explore(0.3)
                        .seed(6),
                    &points,
                );
                let state = &learner.fitted.as_ref().unwrap().state;
                let merged = state
                    .live_atoms()
                    .filter(|&a| state.atom_count(a) > 1.0)
                    .count();
                assert_eq!(merged > 0, bin_side > 0.0, "{dim} {feedback:?} {bin_side}");
                let loss_bound = state.lattice.loss_bound();
                let windows = Window::all(state.n_segments());
                let round =
                    round_candidates(state, &learner.config, &StreamRng::seed_from(8), &windows);
                let counts = |a: usize| state.atom_mass(a) > 0.0;
                let mut scratch = TableScratch::default();
                let mut pieces = Pieces::default();
                let mut compared = 0;
                // Twice over the round, so that the second pass builds every table in the
                // first pass's buffers (of other windows, other sizes).
                for _ in 0..2 {
                    for (window, _) in windows.iter().enumerate() {
                        let of_window: Vec<_> = round
                            .candidates
                            .iter()
                            .filter(|c| c.window == window)
                            .collect();
                        let Some(first) = of_window.first() else {
                            continue;
                        };
                        let (pool, _) = round.pool_of(first);
                        let mut fresh = Table::new(state, pool, counts);
                        let mut reused = Table::new_in(state, pool, counts, &mut scratch);
                        reused.assert_pool_columns(state, pool);
                        for candidate in of_window {
                            pool.pieces(candidate.order(), &mut pieces);
                            let (a, b) = (
                                fresh.change(pool, &pieces, loss_bound),
                                reused.change(pool, &pieces, loss_bound),
                            );
                            assert_eq!(
                                (a.reward.to_bits(), a.loss.to_bits()),
                                (b.reward.to_bits(), b.loss.to_bits()),
                                "{dim} {feedback:?} {bin_side}: {a:?} against {b:?}"
                            );
                            compared += 1;
                        }
                        let changes = |table: &Table| {
                            table
                                .updates(state, pool, &pieces)
                                .into_iter()
                                .map(|(atom, distance, part)| (atom, distance.to_bits(), part))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(changes(&fresh), changes(&reused));
                        scratch.recycle(reused);
                        scratch.recycle(fresh);
                    }
                }
                assert!(compared > 100, "{compared}");
            }
        }
    }

    #[test]
    fn overflowing_scores_do_not_stop_the_learner() {
        let mut rng = StreamRng::seed_from(2);
        let points: Vec<[f64; 2]> = (0..120)
            .map(|i| {
                let angle = std::f64::consts::PI * f64::from(i % 40) / 40.0;
                [
                    angle.cos() + 0.05 * rng.standard_normal(),
                    angle.sin() + 0.05 * rng.standard_normal(),
                ]
            })
            .collect();
        for params in [
            PrincipalCurveParams::new().eta_scale(1e308),
            PrincipalCurveParams::new().penalty(1e308),
            PrincipalCurveParams::new().alpha(1e308),
        ] {
            let mut learner = params
                .feedback(Feedback::Bandit)
                .estimator(Estimator::Paper)
                .explore(0.5)
                .seed(1)
                .check()
                .expect("valid parameters")
                .build();
            for point in &points {
                let step = learner.learn_one(point).expect("a valid point");
                assert!(step.loss.is_none_or(f64::is_finite));
            }
            assert_eq!(learner.n_rounds(), points.len() as u64);
        }
    }

    #[test]
    fn perturbed_leader_frequencies_match_win_probabilities() {
        let scores = [0.0, 0.7, -0.4, 1.5, 1.2, -2.0, 1.45];
        let draws = 200_000;
        let mut rng = StreamRng::seed_from(2024);
        let mut wins = [0usize; 7];
        for _ in 0..draws {
            wins[perturbed_leader(&scores, &mut rng)] += 1;
        }
        for (index, &won) in wins.iter().enumerate() {
            let p = win_probability(&scores, index).unwrap();
            let frequency = won as f64 / draws as f64;
            let margin = 5.0 * (p * (1.0 - p) / draws as f64).sqrt();
            assert!(
                (frequency - p).abs() <= margin,
                "entry {index}: frequency {frequency}, probability {p}, margin {margin}"
            );
        }
    }

    /// The estimated cumulative rewards weigh each stored point by how it was observed:
    /// warm-up points once (observed for certain), exploration points 1/ε times and
    /// exploitation points not at all with the label-efficient estimator; exploration and
    /// warm-up points once with the paper's; every point once with full feedback. The atoms'
    /// masses add up to the same total.
    #[test]
    fn stored_points_weigh_what_their_observation_is_worth() {
        let explore = 0.25;
        let points = noisy_arc(400, 3);
        for (feedback, estimator) in [
            (Feedback::Bandit, Estimator::LabelEfficient),
            (Feedback::Bandit, Estimator::Paper),
            (Feedback::Full, Estimator::LabelEfficient),
        ] {
            for bin_side in [0.0, 1.0] {
                let learner = learner_after(
                    PrincipalCurveParams::new()
                        .feedback(feedback)
                        .estimator(estimator)
                        .explore(explore)
                        .warmup(30)
                        .bin_side(bin_side),
                    &points,
                );
                let state = &learner.fitted.as_ref().unwrap().state;
                let mut total = 0.0;
                for index in state.live() {
                    let round = state.oldest_round() + (index - state.live().start) as u64;
                    let expected = match (feedback, estimator) {
                        (Feedback::Full, _) => 1.0,
                        _ if round <= 30 => 1.0,
                        (_, Estimator::LabelEfficient) if state.point_explored(index) => {
                            1.0 / explore
                        }
                        (_, Estimator::Paper) if state.point_explored(index) => 1.0,
                        _ => 0.0,
                    };
                    assert_eq!(state.point_weight(index), expected, "round {round}");
                    total += expected;
                }
                let mass: f64 = state.live_atoms().map(|a| state.atom_mass(a)).sum();
                assert!((mass - total).abs() <= 1e-9 * total, "{mass} vs {total}");
            }
        }
    }
}
