//! The online learner: PACBO's protocol over a stream.

use serde::{Deserialize, Serialize};

use super::cover::CoverCache;
use super::frame::Frame;
use super::means::{KMeansSource, MeansHistory};
use super::memory::PointMemory;
use super::params::{Memory, PacoConfig, Radius};
use super::prior::draw_from_prior;
use super::sampler::{ChainSettings, ProposalRule, SamplerReport, Target, run_chain};
use super::temperature::lambda;
use crate::data::{check_first_point, check_point};
use crate::error::{Error, Result};
use crate::geometry::{squared_distance, squared_norm};
use crate::kmeans::Centres;
use crate::online::{OnlineLearner, Step, UnsupervisedLearner};
use crate::rng::StreamRng;

/// The record of one round of PACBO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacoStep {
    /// The round t (1-based; warm-up rounds count).
    pub round: u64,
    /// ℓ(ĉ_t, x_t), in the learner's internal coordinates (the user's unless the columns are
    /// standardised); `None` for a warm-up point, which was buffered and not predicted.
    pub loss: Option<f64>,
    /// The index of the centre of ĉ_t nearest to x_t (`None` when there was no prediction).
    pub label: Option<usize>,
    /// k̂_t, the number of clusters of the prediction ĉ_t (`None` when there was none).
    pub n_clusters: Option<usize>,
    /// Whether x_t was a warm-up point.
    pub warmup: bool,
    /// The chain run after x_t to draw ĉ_{t+1} (`None` while the warm-up buffers).
    pub sampler: Option<SamplerReport>,
}

impl Step for PacoStep {
    fn round(&self) -> u64 {
        self.round
    }
    fn loss(&self) -> Option<f64> {
        self.loss
    }
}

/// Running totals of what the learner did (none of it is an error).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PacoReport {
    /// Rounds whose chain ran.
    pub sampled_rounds: u64,
    /// Chain iterations run.
    pub iterations: u64,
    /// Moves accepted.
    pub accepted: u64,
    /// Proposals rejected early (before every point in memory was summed).
    pub early_rejections: u64,
    /// Proposals with a centre outside the prior's ball.
    pub outside_prior: u64,
    /// k-means fits run for proposal means.
    pub kmeans_runs: u64,
    /// Points with ‖x − μ_0‖ > R in internal coordinates (after the warm-up): the regret
    /// guarantee assumes there are none; the algorithm keeps running.
    pub points_beyond_radius: u64,
}

/// PACBO: PAC-Bayesian online clustering with an unknown and changing number of clusters,
/// an [`OnlineLearner`] of points.
///
/// Built from a validated [`PacoConfig`]; see the [module documentation](super) for the
/// model and the sampler.
///
/// ```
/// use pacstream::paco::{PacoParams, Radius};
/// use pacstream::OnlineLearner;
///
/// // R given and no centring: round 1 is predicted by a draw from the prior.
/// let mut learner = PacoParams::new()
///     .radius(Radius::Given(10.0))
///     .iterations(100)
///     .seed(3)
///     .check()?
///     .build();
/// assert_eq!(learner.n_clusters(), None, "no prediction before the first point");
/// let step = learner.learn_one(&[1.0, -2.0])?;
/// assert!(step.loss.is_some(), "round 1 is predicted and pays its loss");
/// let chain = step.sampler.expect("a chain drew the next prediction");
/// assert_eq!(chain.iterations, 100);
/// assert_eq!(learner.n_clusters(), Some(chain.n_clusters));
/// assert_eq!(learner.report().sampled_rounds, 1);
///
/// // A learner is serialisable, RNG included: a restored copy continues identically.
/// let text = serde_json::to_string(&learner).unwrap();
/// let mut copy: pacstream::paco::Paco = serde_json::from_str(&text).unwrap();
/// assert_eq!(copy.learn_one(&[0.5, 0.5])?, learner.learn_one(&[0.5, 0.5])?);
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Paco {
    config: PacoConfig,
    rng: StreamRng,
    n_rounds: u64,
    dim: Option<usize>,
    /// The warm-up points (user coordinates), while they are buffered.
    warmup_points: Vec<f64>,
    /// Fixed after the warm-up (or at round 1 when nothing is taken from the data).
    frame: Option<Frame>,
    memory: Option<PointMemory>,
    /// ĉ_t in internal coordinates, row-major.
    centres: Option<Vec<f64>>,
    /// ĉ_t in the user's coordinates.
    model: Option<Centres>,
    history: MeansHistory,
    /// The stable parts of the robust covers (derived from the memory and the proposal
    /// means; rebuilt identically after a restore).
    #[serde(skip)]
    covers: CoverCache,
    /// The report of the last chain.
    last_chain: Option<SamplerReport>,
    report: PacoReport,
}

validated_snapshot!(Paco);

impl PacoConfig {
    /// A learner with these settings and no data yet.
    pub fn build(&self) -> Paco {
        Paco {
            config: self.clone(),
            rng: StreamRng::seed_from(self.seed),
            n_rounds: 0,
            dim: None,
            warmup_points: Vec::new(),
            frame: None,
            memory: None,
            centres: None,
            model: None,
            history: MeansHistory::default(),
            covers: CoverCache::default(),
            last_chain: None,
            report: PacoReport::default(),
        }
    }
}

impl Paco {
    /// The validated settings.
    pub fn config(&self) -> &PacoConfig {
        &self.config
    }

    /// The prediction for the next point ĉ_{t+1}, in the user's coordinates (`None` before
    /// the first prediction exists).
    pub fn centres(&self) -> Option<&Centres> {
        self.model.as_ref()
    }

    /// k̂_{t+1}, the number of clusters of the next prediction.
    pub fn n_clusters(&self) -> Option<usize> {
        self.model.as_ref().map(Centres::n_centres)
    }

    /// The coordinate frame (μ_0, scales, R) once fixed.
    pub fn frame(&self) -> Option<&Frame> {
        self.frame.as_ref()
    }

    /// Whether the warm-up is still buffering points.
    pub fn is_warming_up(&self) -> bool {
        self.frame.is_none() && self.config.warmup > 0
    }

    /// What the learner did so far.
    pub fn report(&self) -> &PacoReport {
        &self.report
    }

    /// The report of the most recent chain.
    pub fn last_chain(&self) -> Option<&SamplerReport> {
        self.last_chain.as_ref()
    }

    /// The points in memory, in internal coordinates (row-major, oldest first): every point
    /// in exact memory (warm-up points included), the last W in window memory.
    pub fn memory_points(&self) -> &[f64] {
        self.memory.as_ref().map_or(&[], PointMemory::rows)
    }

    /// ℓ̂_s, the loss paid on each point in memory (0 for warm-up points).
    pub fn memory_losses(&self) -> &[f64] {
        self.memory
            .as_ref()
            .map_or(&[], PointMemory::predicted_losses)
    }

    /// The number of points in memory that were warm-up points (not predicted).
    pub fn memory_warmup_points(&self) -> usize {
        let Some(memory) = &self.memory else {
            return 0;
        };
        let first = memory.pushed() - memory.len() as u64;
        (self.config.warmup as u64)
            .saturating_sub(first)
            .min(memory.len() as u64) as usize
    }

    /// The next round's target and current state, in internal coordinates, for the
    /// statistical tests of the sampler: (points, ℓ̂_s, w_s, λ_t, R, p, η, ĉ_t).
    #[cfg(feature = "testing")]
    #[allow(clippy::type_complexity, reason = "a hidden test entry point")]
    pub(crate) fn round_target(
        &self,
    ) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>, f64, f64, usize, f64, Vec<f64>)> {
        let frame = self.frame.as_ref()?;
        let memory = self.memory.as_ref()?;
        let centres = self.centres.as_ref()?;
        let config = &self.config;
        Some((
            memory.rows().to_vec(),
            memory.predicted_losses().to_vec(),
            memory.variance_weights().to_vec(),
            lambda(
                config.coeff,
                memory.dim(),
                memory.len() as u64,
                frame.radius(),
            ),
            frame.radius(),
            config.max_k,
            config.eta,
            centres.clone(),
        ))
    }

    fn check_input(&self, point: &[f64]) -> Result<()> {
        match self.dim {
            Some(dim) => check_point(point, dim),
            None => {
                check_first_point(point)?;
                self.config.check_dim(point.len())
            }
        }
    }

    /// A point in internal coordinates; refused (before anything changes) if its squared
    /// norm overflows.
    fn internal(frame: &Frame, point: &[f64]) -> Result<Vec<f64>> {
        let mut internal = vec![0.0; point.len()];
        frame.to_internal(point, &mut internal);
        let norm = squared_norm(&internal);
        if !norm.is_finite() {
            let column = internal
                .iter()
                .position(|v| !v.is_finite() || v.abs() > 1e150)
                .unwrap_or(0);
            return Err(Error::ValueTooLarge {
                row: None,
                column,
                value: point[column],
            });
        }
        Ok(internal)
    }

    fn learn(&mut self, point: &[f64]) -> Result<PacoStep> {
        self.check_input(point)?;
        let dim = point.len();
        let round = self.n_rounds + 1;
        if self.is_warming_up() {
            return self.warm_up(point, round);
        }
        let frame = match &self.frame {
            Some(frame) => frame.clone(),
            None => match self.config.radius {
                Radius::Given(radius) => Frame::plain(dim, radius),
                Radius::Auto => {
                    return Err(Error::InvalidSnapshot(
                        "PACBO: radius `auto` without a warm-up".into(),
                    ));
                }
            },
        };
        let internal = Self::internal(&frame, point)?;
        // Nothing below can fail: the round is committed from here on.
        if self.centres.is_none() {
            // Round 1 with R given: ĉ_1 is a draw from the prior, made without x_1.
            let centres = draw_from_prior(
                self.config.eta,
                self.config.max_k,
                dim,
                frame.radius(),
                &mut self.rng,
            );
            self.model = Some(user_centres(&frame, &centres));
            self.centres = Some(centres);
            self.memory = Some(PointMemory::with_summation(
                dim,
                self.config.memory,
                self.config.summation,
            ));
            self.frame = Some(frame.clone());
            self.dim = Some(dim);
        }
        let centres = self.centres.as_ref().expect("invariant: set above");
        let (label, loss) = nearest(centres, &internal);
        let n_clusters = centres.len() / dim;
        if squared_norm(&internal) > frame.radius() * frame.radius() {
            self.report.points_beyond_radius += 1;
        }
        let memory = self.memory.as_mut().expect("invariant: set with the frame");
        // w_t = λ_{t−1}/2, with n_{t−1} the points held before x_t (λ_0 := λ_1).
        let previous_lambda = lambda(self.config.coeff, dim, memory.len() as u64, frame.radius());
        memory.push(&internal, loss, previous_lambda / 2.0);
        let report = self.sample(round);
        self.n_rounds = round;
        Ok(PacoStep {
            round,
            loss: Some(loss),
            label: Some(label),
            n_clusters: Some(n_clusters),
            warmup: false,
            sampler: Some(report),
        })
    }

    /// Buffers a warm-up point; the last one fixes the frame and runs the first chain.
    fn warm_up(&mut self, point: &[f64], round: u64) -> Result<PacoStep> {
        let dim = point.len();
        let buffered = self.warmup_points.len() / dim;
        let mut step = PacoStep {
            round,
            loss: None,
            label: None,
            n_clusters: None,
            warmup: true,
            sampler: None,
        };
        if buffered + 1 < self.config.warmup {
            self.warmup_points.extend_from_slice(point);
            self.dim = Some(dim);
            self.n_rounds = round;
            return Ok(step);
        }
        let mut points = self.warmup_points.clone();
        points.extend_from_slice(point);
        // The fallible part, before anything changes.
        let frame = Frame::from_points(&points, dim, &self.config)?;
        let internal: Vec<Vec<f64>> = points
            .chunks_exact(dim)
            .map(|p| Self::internal(&frame, p))
            .collect::<Result<_>>()?;
        let mut memory =
            PointMemory::with_summation(dim, self.config.memory, self.config.summation);
        let radius_squared = frame.radius() * frame.radius();
        for point in &internal {
            // Warm-up points were not predicted: their variance weight is 0.
            memory.push(point, 0.0, 0.0);
            if squared_norm(point) > radius_squared {
                self.report.points_beyond_radius += 1;
            }
        }
        // The chain starts from one centre at the mean of the memory.
        let mut start = vec![0.0; dim];
        for point in memory.rows().chunks_exact(dim) {
            for (s, x) in start.iter_mut().zip(point) {
                *s += x;
            }
        }
        for s in &mut start {
            *s /= memory.len() as f64;
        }
        self.centres = Some(start);
        self.memory = Some(memory);
        self.frame = Some(frame);
        self.warmup_points = Vec::new();
        self.dim = Some(dim);
        step.sampler = Some(self.sample(round));
        self.n_rounds = round;
        Ok(step)
    }

    /// Runs the chain of round `round` + 1 from the current prediction and replaces it.
    ///
    /// A round whose sums may run in parallel waves (point by point, on a memory of more
    /// than 65,536 points) runs inside the rayon pool (`rayon::scope` moves it onto a
    /// worker thread when called from outside): each wave then costs a work-stealing join
    /// instead of a hand-off from an outside thread and back. Every other round has no
    /// parallel part, so it runs on the calling thread: entering the pool cost a wake-up of
    /// a worker and of the caller per round (about 4 % of the CPU time of a T = 10⁴ run in
    /// system calls, and the idle worker's spinning beside it). Either way the results are
    /// the same bits, since no result depends on the thread that computes it.
    fn sample(&mut self, round: u64) -> SamplerReport {
        let parallel = self
            .memory
            .as_ref()
            .is_some_and(|memory| memory.may_sum_in_parallel());
        if parallel {
            rayon::scope(|_| self.sample_in_pool(round))
        } else {
            self.sample_in_pool(round)
        }
    }

    fn sample_in_pool(&mut self, round: u64) -> SamplerReport {
        let frame = self
            .frame
            .as_ref()
            .expect("invariant: sampling needs a frame");
        let memory = self.memory.as_ref().expect("invariant: and a memory");
        let start = self.centres.take().expect("invariant: and a start state");
        let config = &self.config;
        let dim = memory.dim();
        let n_points = memory.len() as u64;
        let target = Target {
            memory,
            lambda: lambda(config.coeff, dim, n_points, frame.radius()),
            radius: frame.radius(),
            max_k: config.max_k,
            eta: config.eta,
            n_points,
        };
        let mut source =
            KMeansSource::new(memory, &mut self.history, round, &self.rng, config.max_k);
        let outcome = run_chain(
            target,
            ProposalRule {
                scale: config.proposal,
                multiplier: config.proposal_scale,
            },
            &mut source,
            &mut self.covers,
            start,
            &mut self.rng,
            ChainSettings::round(config.iterations, config.restart),
        );
        let report = outcome.report;
        self.memory
            .as_mut()
            .expect("invariant: the memory sampled above")
            .review_index(
                report.nodes_per_evaluation,
                report.direct_fraction,
                report.data_fraction,
            );
        self.model = Some(user_centres(frame, &outcome.centres));
        self.centres = Some(outcome.centres);
        self.report.sampled_rounds += 1;
        self.report.iterations += report.iterations as u64;
        self.report.accepted += report.accepted as u64;
        self.report.early_rejections += report.early_rejections as u64;
        self.report.outside_prior += report.outside_prior as u64;
        self.report.kmeans_runs += report.kmeans_runs as u64;
        self.last_chain = Some(report.clone());
        report
    }

    fn validate_snapshot(&self) -> Result<()> {
        let invalid = |what: &str| Err(Error::InvalidSnapshot(format!("PACBO: {what}")));
        self.config.validate_snapshot()?;
        let config = &self.config;
        let Some(dim) = self.dim else {
            if self.n_rounds == 0
                && self.frame.is_none()
                && self.memory.is_none()
                && self.centres.is_none()
                && self.warmup_points.is_empty()
            {
                return Ok(());
            }
            return invalid("the dimension is missing");
        };
        if dim == 0 {
            return invalid("the dimension is 0");
        }
        config.check_dim(dim)?;
        self.history.validate(Some(dim), config.max_k)?;
        match &self.frame {
            None => {
                let buffered = self.warmup_points.len() / dim;
                if config.warmup == 0
                    || self.warmup_points.len() != buffered * dim
                    || buffered as u64 != self.n_rounds
                    || buffered >= config.warmup
                    || crate::data::check_coordinates(&self.warmup_points).is_err()
                    || self.memory.is_some()
                    || self.centres.is_some()
                    || self.model.is_some()
                {
                    return invalid("the warm-up buffer is inconsistent");
                }
                Ok(())
            }
            Some(frame) => {
                frame.validate(dim)?;
                if let (Radius::Given(radius), false) = (config.radius, config.scale) {
                    if frame.radius() != radius {
                        return invalid("the radius differs from the settings");
                    }
                }
                let (Some(memory), Some(centres), Some(model)) =
                    (&self.memory, &self.centres, &self.model)
                else {
                    return invalid("a learner past its warm-up needs a memory and a model");
                };
                if !self.warmup_points.is_empty()
                    || memory.dim() != dim
                    || memory.pushed() != self.n_rounds
                    || memory.window() != window_of(config.memory)
                {
                    return invalid("the memory does not match the rounds played");
                }
                let k = centres.len() / dim;
                if centres.len() != k * dim
                    || !(1..=config.max_k).contains(&k)
                    || centres.iter().any(|v| !v.is_finite())
                {
                    return invalid("the current centres are inconsistent");
                }
                if user_centres(frame, centres) != *model {
                    return invalid("the model does not match the current centres");
                }
                Ok(())
            }
        }
    }
}

fn window_of(memory: Memory) -> Option<usize> {
    match memory {
        Memory::All => None,
        Memory::Window(w) => Some(w),
    }
}

/// The centres in the user's coordinates. Finite internal centres inside the ball map to
/// finite values (R ≤ 1e150).
fn user_centres(frame: &Frame, centres: &[f64]) -> Centres {
    Centres::new(frame.to_user(centres), frame.dim())
        .expect("invariant: centres in the prior's ball map to finite user coordinates")
}

/// The nearest centre and its squared distance (ties: the lowest index), by direct
/// differences.
pub(crate) fn nearest(centres: &[f64], point: &[f64]) -> (usize, f64) {
    let dim = point.len();
    let mut best = (0, f64::INFINITY);
    for (index, centre) in centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(point, centre);
        if distance < best.1 {
            best = (index, distance);
        }
    }
    best
}

impl OnlineLearner for Paco {
    type Input<'a> = &'a [f64];
    type Step = PacoStep;

    /// Pays ℓ(ĉ_t, x_t), stores x_t with it, and draws ĉ_{t+1} with the round's chain
    /// (during the warm-up: buffers x_t, and the last warm-up point fixes the frame and runs
    /// the first chain).
    fn learn_one(&mut self, point: &[f64]) -> Result<PacoStep> {
        self.learn(point)
    }

    fn n_rounds(&self) -> u64 {
        self.n_rounds
    }
}

impl UnsupervisedLearner for Paco {
    type Model = Centres;

    fn model(&self) -> Option<&Centres> {
        self.model.as_ref()
    }

    fn dim(&self) -> Option<usize> {
        self.dim
    }
}
