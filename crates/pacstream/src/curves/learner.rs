//! The sequential principal curve learner (spec §5): one round per point.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::candidates::{
    Candidate, Limits, Neighbourhood, fingerprint, local_vertices, window_candidates,
};
use super::comparator::{HindsightCurve, hindsight_fit};
use super::evaluate::{Pieces, Pool, Scoring, Table, Window};
use super::init::initial_curve;
use super::lattice::{Lattice, MAX_BALL_RADII};
use super::model::PrincipalCurve;
use super::params::{Estimator, Feedback, Memory, PrincipalCurveConfig};
use super::partition::CurveState;
use super::scoring::{Corrections, learning_rate};
use crate::data::{check_first_point, check_point};
use crate::error::{Error, Result};
use crate::experts::win_probability;
use crate::geometry::Polyline;
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
/// The regret against the hindsight comparator, on points near a line:
///
/// ```
/// use pacstream::curves::PrincipalCurveParams;
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
/// // f* is fitted on the 280 scored rounds; the regret against it is a lower estimate.
/// let best = learner.hindsight().unwrap();
/// assert_eq!(best.n_points, 280);
/// assert!(best.loss <= cumulative_loss);
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

    /// The hindsight comparator on the stored points of the scored rounds (spec §7): the
    /// deterministic best-improvement local search started from the current curve. With
    /// window memory it sees only the last W points. `None` during the warm-up.
    pub fn hindsight(&self) -> Option<HindsightCurve> {
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
        Some(hindsight_fit(
            &state.lattice,
            state.keys.clone(),
            first_round.unwrap_or(first_scored),
            points,
            &self.config,
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
        self.model = self.fitted.as_ref().map(|fitted| {
            let state = &fitted.state;
            let dim = state.dim;
            let mut vertices = vec![0.0; state.vertices.len()];
            for (internal, user) in state
                .vertices
                .chunks_exact(dim)
                .zip(vertices.chunks_exact_mut(dim))
            {
                state.lattice.to_user(internal, user);
            }
            PrincipalCurve::from_line(Polyline::new_unchecked(vertices, dim))
        });
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
        let mut state = CurveState::new(lattice, keys, 1, internal, vec![true; n]);
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
        self.report.initialised_at = Some(round);
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

    fn scoring(&self, loss_bound: f64) -> Scoring {
        match (self.config.feedback, self.config.estimator) {
            (Feedback::Full, _) => Scoring {
                explored_only: false,
                weight: 1.0,
                loss_bound,
            },
            (Feedback::Bandit, Estimator::LabelEfficient) => Scoring {
                explored_only: true,
                weight: 1.0 / self.config.explore,
                loss_bound,
            },
            (Feedback::Bandit, Estimator::Paper) => Scoring {
                explored_only: true,
                weight: 1.0,
                loss_bound,
            },
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
        let scoring = self.scoring(loss_bound);
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
            scoring,
            &round_rng,
            round,
            &windows,
            uses_corrections && next_phase == Phase::Exploitation,
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

/// Scores the available candidates (the current curve first) and moves to the winner.
#[allow(clippy::too_many_arguments, reason = "the parts of one round's choice")]
fn choose_next(
    state: &mut CurveState,
    corrections: &Corrections,
    config: &PrincipalCurveConfig,
    scoring: Scoring,
    round_rng: &StreamRng,
    round: u64,
    windows: &[Window],
    needs_probability: bool,
) -> Choice {
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
    let current_fingerprint = fingerprint(&state.keys);
    let mut seen: HashSet<u64> = HashSet::new();
    seen.insert(current_fingerprint);
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
    for candidate in &candidates {
        let (pool, _) = pools[candidate.window]
            .as_ref()
            .expect("invariant: a window with candidates has a pool");
        let table = tables[candidate.window]
            .get_or_insert_with(|| Table::new(state, pool, |i| scoring.counts(state, i)));
        pool.pieces(candidate.order(), &mut pieces);
        let change = table.change(pool, &pieces, scoring);
        let correction = corrections.total(candidate.fingerprint) - current_correction;
        let penalty = per_segment * (candidate.n_segments as f64 - current_segments as f64);
        scores.push(eta * (change.reward + correction) - penalty);
    }
    let mut perturbation = round_rng.child(PERTURBATION_STREAM);
    let mut best = (f64::NEG_INFINITY, 0);
    for (index, score) in scores.iter().enumerate() {
        // z ~ Exp(1) by inversion: −ln U with U in (0, 1].
        let z = -perturbation.next_f64_nonzero().ln();
        if score + z > best.0 {
            best = (score + z, index);
        }
    }
    let winner = best.1;
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
        return Choice {
            available,
            changed: false,
            probability,
        };
    }
    let candidate = &candidates[winner - 1];
    let window = windows[candidate.window];
    let (pool, local) = pools[candidate.window]
        .as_ref()
        .expect("invariant: a window with candidates has a pool");
    // Applying a change needs every stored point of the modified cells.
    let table = match tables[candidate.window].take() {
        Some(table) if !scoring.explored_only => table,
        _ => Table::new(state, pool, |_| true),
    };
    pool.pieces(candidate.order(), &mut pieces);
    let changes = table.updates(state, pool, &pieces);
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
        for (feedback, memory) in [
            (Feedback::Full, Memory::All),
            (Feedback::Bandit, Memory::All),
            (Feedback::Full, Memory::Window(60)),
        ] {
            let mut learner = PrincipalCurveParams::new()
                .feedback(feedback)
                .memory(memory)
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
        }
    }
}
