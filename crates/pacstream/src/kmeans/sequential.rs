//! Sequential (online) k-means: MacQueen's running means, with decay, reassignment of dying
//! centres, mini-batches, and mergeable statistics.
//!
//! # The protocol
//!
//! - **Warm-up.** The first `init_size` points (default 10·k) are buffered. Until the buffer
//!   is full the model is the distinct points seen so far (at most k of them): round 1 has no
//!   model and its loss is undefined; later warm-up rounds pay the squared distance to the
//!   nearest of those points. When the buffer is full it is seeded (greedy k-means++ by
//!   default) and fitted with Lloyd; each centre's count n_j starts as the weight of its
//!   cluster.
//! - **`learn_one(x)`** pays ℓ(c, x) = min_j ‖x − c_j‖², then updates the nearest centre j as
//!   a running mean, in this order: (decay, if on) n_i ← a·n_i for every i; n_j ← n_j + w(x);
//!   c_j ← c_j + (w(x)/n_j)(x − c_j).
//! - **Decay** (half-life h points, Spark's semantics): a = exp(ln ½ / h), so a point's
//!   influence halves every h points and the model follows a drifting stream. Without decay
//!   each centre is the exact mean of the points it was given.
//! - **Dying centres.** With `reassignment_ratio` r > 0, after each update a centre whose
//!   count falls below r × the largest count is moved to one of the last `init_size` points,
//!   drawn with probability ∝ the loss that point paid (far, badly served points are
//!   preferred), and its count is set to the smallest count of the healthy centres (as
//!   scikit-learn does, so it is not reassigned again at once).
//! - **Mini-batches** (Sculley 2010): [`SequentialKMeans::learn_batch`] assigns the whole
//!   batch against the centres held at its start (each point pays its loss against them),
//!   then moves each centre with per-centre step sizes from accumulated counts. With fixed
//!   assignments that is exactly the running mean of the old centre (weight n_j) and the new
//!   points, so it is implemented as the application of the batch's [`CentreStats`]; a batch
//!   of b points decays the counts by a^b.

use ndarray::{ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

use super::centres::Centres;
use super::params::{Init, KMeansParams, Refinement, SequentialKMeansConfig};
use super::stats::CentreStats;
use crate::data::{Points, Weights, check_first_point, check_point, check_weight};
use crate::error::{Error, Result};
use crate::online::{OnlineLearner, Step, UnsupervisedLearner};
use crate::rng::StreamRng;

/// The record of one round of sequential k-means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialKMeansStep {
    /// The round index t (1-based).
    pub round: u64,
    /// The index of the centre nearest to the point under the model held before the round
    /// (`None` in round 1). During warm-up the indices refer to the distinct points seen so
    /// far, not to the centres fitted at the end of the warm-up.
    pub label: Option<usize>,
    /// ℓ(c, x) = min_j ‖x − c_j‖² under the model held before the round (`None` in round 1).
    pub loss: Option<f64>,
    /// Whether this round ended the warm-up (the buffer was fitted).
    pub initialised: bool,
    /// Centres moved to a recent point because their count had fallen below the ratio.
    pub reassigned: usize,
}

impl Step for SequentialKMeansStep {
    fn round(&self) -> u64 {
        self.round
    }
    fn loss(&self) -> Option<f64> {
        self.loss
    }
}

/// Running totals of what the learner did (not errors).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SequentialKMeansReport {
    /// Inertia of the warm-up fit on the warm-up points, once fitted.
    pub warmup_inertia: Option<f64>,
    /// Whether the warm-up buffer held fewer distinct points than k (some centres coincide).
    pub duplicate_centres: bool,
    /// Empty clusters re-seeded during the warm-up fit.
    pub empty_cluster_reseeds: usize,
    /// Centres moved by the reassignment rule so far.
    pub reassignments: u64,
}

/// Sequential k-means, an [`OnlineLearner`] of points.
///
/// Built from a validated [`SequentialKMeansConfig`]; see the module documentation for the
/// update rules and [`super::SequentialKMeansParams`] for an example.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SequentialKMeans {
    config: SequentialKMeansConfig,
    rng: StreamRng,
    n_rounds: u64,
    /// Fixed by the first point.
    dim: Option<usize>,
    /// The model: the distinct points seen so far during warm-up, the centres after.
    centres: Option<Centres>,
    /// Count n_j of every centre (empty during warm-up).
    counts: Vec<f64>,
    /// Warm-up buffer (row-major) and its weights; emptied when fitted.
    warmup_points: Vec<f64>,
    warmup_weights: Vec<f64>,
    /// The last `init_size` points and the losses they paid (ring buffer, kept only when
    /// reassignment is on). A point chosen as a new centre has its loss set to 0.
    recent_points: Vec<f64>,
    recent_losses: Vec<f64>,
    recent_next: usize,
    report: SequentialKMeansReport,
}

validated_snapshot!(SequentialKMeans);

/// The child stream of the warm-up fit (the main stream draws reassignment targets).
const WARMUP_STREAM: u64 = 0;

impl SequentialKMeansConfig {
    /// A learner with these settings and no data yet.
    pub fn build(&self) -> SequentialKMeans {
        SequentialKMeans {
            config: self.clone(),
            rng: StreamRng::seed_from(self.seed),
            n_rounds: 0,
            dim: None,
            centres: None,
            counts: Vec::new(),
            warmup_points: Vec::new(),
            warmup_weights: Vec::new(),
            recent_points: Vec::new(),
            recent_losses: Vec::new(),
            recent_next: 0,
            report: SequentialKMeansReport::default(),
        }
    }
}

impl SequentialKMeans {
    /// The current centres (`None` before the first point; fewer than k during warm-up if
    /// fewer distinct points have been seen).
    pub fn centres(&self) -> Option<&Centres> {
        self.centres.as_ref()
    }

    /// The count n_j of every centre (empty during warm-up).
    pub fn counts(&self) -> &[f64] {
        &self.counts
    }

    /// Whether the learner is still buffering its warm-up points.
    pub fn is_warming_up(&self) -> bool {
        self.counts.is_empty()
    }

    /// What the learner did so far.
    pub fn report(&self) -> &SequentialKMeansReport {
        &self.report
    }

    /// The validated settings.
    pub fn config(&self) -> &SequentialKMeansConfig {
        &self.config
    }

    /// Learns one point with sample weight `weight` (finite, ≥ 0); `learn_one` is weight 1.
    pub fn learn_one_weighted(
        &mut self,
        point: &[f64],
        weight: f64,
    ) -> Result<SequentialKMeansStep> {
        self.check_input(point)?;
        check_weight(weight)?;
        let (label, loss) = match &self.centres {
            Some(centres) => {
                let (label, loss) = centres.nearest(point);
                (Some(label), Some(loss))
            }
            None => (None, None),
        };
        let mut step = SequentialKMeansStep {
            round: self.n_rounds + 1,
            label,
            loss,
            initialised: false,
            reassigned: 0,
        };
        if self.is_warming_up() {
            // The only fallible part of an update: done before anything is changed.
            step.initialised = self.warm_up(point, weight)?;
        } else {
            let label = label.expect("invariant: a model exists after warm-up");
            self.decay(1);
            self.move_centre(label, point, weight);
            step.reassigned = self.remember_and_reassign(point, loss.unwrap_or(0.0));
        }
        self.dim = Some(point.len());
        self.n_rounds += 1;
        Ok(step)
    }

    /// Learns a mini-batch (Sculley 2010): every point pays its loss against the centres
    /// held at the start of the batch, then the centres move to the running means of their
    /// old value and the batch points assigned to them. Points that arrive during the
    /// warm-up go through it one at a time first. `weights` defaults to 1 per point.
    ///
    /// Atomic: every point is validated before anything is learned.
    pub fn learn_batch(
        &mut self,
        points: ArrayView2<'_, f64>,
        weights: Option<ArrayView1<'_, f64>>,
    ) -> Result<Vec<SequentialKMeansStep>> {
        let points = Points::from_array(points)?;
        let weights = weights.map(|w| w.to_vec());
        // Each weight is checked as `learn_one_weighted` checks it: a batch whose points all
        // weigh 0 is a legitimate part of a stream (it pays its losses and moves nothing).
        if let Some(weights) = &weights {
            if weights.len() != points.n_points() {
                return Err(Error::InconsistentInput(format!(
                    "{} sample weights for {} points",
                    weights.len(),
                    points.n_points()
                )));
            }
            for (row, &weight) in weights.iter().enumerate() {
                check_weight(weight).map_err(|e| e.at_row(row))?;
            }
        }
        let weights = weights.as_deref().map_or(Weights::Unit, Weights::Given);
        if let Some(first) = points.rows().next() {
            self.check_input(first)?;
        }
        let mut steps = Vec::with_capacity(points.n_points());
        let mut start = 0;
        while start < points.n_points() && self.is_warming_up() {
            steps.push(self.learn_one_weighted(points.row(start), weights.get(start))?);
            start += 1;
        }
        if start == points.n_points() {
            return Ok(steps);
        }
        let centres = self
            .centres
            .as_ref()
            .expect("invariant: fitted after warm-up");
        let mut stats = CentreStats::new(centres.n_centres(), centres.dim());
        for index in start..points.n_points() {
            let point = points.row(index);
            let (label, loss) = centres.nearest(point);
            stats.add_assigned(label, point, weights.get(index));
            self.n_rounds += 1;
            steps.push(SequentialKMeansStep {
                round: self.n_rounds,
                label: Some(label),
                loss: Some(loss),
                initialised: false,
                reassigned: 0,
            });
        }
        self.apply_validated_stats(&stats);
        if self.config.reassignment_ratio > 0.0 {
            for index in start..points.n_points() {
                let loss = steps[index].loss.unwrap_or(0.0);
                self.remember(points.row(index), loss);
            }
            if let Some(last) = steps.last_mut() {
                last.reassigned = self.reassign();
            }
        }
        Ok(steps)
    }

    /// Applies statistics computed elsewhere against the current centres (for example on
    /// several machines, then merged): the counts decay by a^b for the b points summarised,
    /// then c_j ← (n_j c_j + S_j) / (n_j + W_j) and n_j ← n_j + W_j. The summarised points
    /// count as rounds of this learner, but no per-round record is made for them.
    ///
    /// Only after the warm-up, and only with statistics of the learner's number of centres
    /// and dimension.
    pub fn apply_stats(&mut self, stats: &CentreStats) -> Result<()> {
        let centres = self.centres.as_ref().filter(|_| !self.is_warming_up());
        let Some(centres) = centres else {
            return Err(Error::InconsistentInput(
                "statistics can be applied only after the warm-up".into(),
            ));
        };
        stats.check_shape(centres)?;
        self.apply_validated_stats(stats);
        self.n_rounds += stats.n_points();
        Ok(())
    }

    /// Statistics of a batch against the current centres, ready to be merged and applied.
    pub fn batch_stats(&self, points: ArrayView2<'_, f64>) -> Result<CentreStats> {
        let centres = self.centres.as_ref().filter(|_| !self.is_warming_up());
        let Some(centres) = centres else {
            return Err(Error::InconsistentInput(
                "statistics can be computed only after the warm-up".into(),
            ));
        };
        let points = Points::from_array(points)?;
        let mut stats = CentreStats::new(centres.n_centres(), centres.dim());
        for point in points.rows() {
            check_point(point, centres.dim())?;
            let (label, _) = centres.nearest(point);
            stats.add_assigned(label, point, 1.0);
        }
        Ok(stats)
    }

    fn check_input(&self, point: &[f64]) -> Result<()> {
        match self.dim {
            Some(dim) => check_point(point, dim),
            None => {
                check_first_point(point)?;
                // Given centres must match the data: found now rather than at the end of
                // the warm-up, when the buffered points could no longer be refused.
                match &self.config.init {
                    Init::Given(centres) if centres.dim() != point.len() => {
                        Err(Error::DimensionMismatch {
                            row: None,
                            expected: centres.dim(),
                            found: point.len(),
                        })
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// Buffers a warm-up point; fits the buffer when it is full. Returns whether it fitted.
    fn warm_up(&mut self, point: &[f64], weight: f64) -> Result<bool> {
        let dim = point.len();
        if self.warmup_weights.len() + 1 == self.config.init_size {
            let mut values = self.warmup_points.clone();
            values.extend_from_slice(point);
            let mut weights = self.warmup_weights.clone();
            weights.push(weight);
            let points = Points::from_slice(&values, dim)?;
            // Lloyd alone, as the warm-up has always been (kmeans.md §3), so that the
            // streams' outputs do not depend on the batch refinement.
            let fit = KMeansParams::new(self.config.n_clusters)
                .init(self.config.init.clone())
                .refinement(Refinement::None)
                .check()?
                .fit_points(
                    &points,
                    Weights::new(Some(&weights), points.n_points())?,
                    &self.rng.child(WARMUP_STREAM),
                )?;
            let mut counts = vec![0.0; self.config.n_clusters];
            for (label, w) in fit.labels().iter().zip(&weights) {
                counts[*label] += w;
            }
            let report = fit.report();
            self.report.warmup_inertia = Some(report.inertia);
            self.report.duplicate_centres = report.duplicate_centres;
            self.report.empty_cluster_reseeds = report.empty_cluster_reseeds;
            self.centres = Some(fit.centres().clone());
            self.counts = counts;
            self.warmup_points = Vec::new();
            self.warmup_weights = Vec::new();
            if self.config.reassignment_ratio > 0.0 {
                for (row, &w) in points.rows().zip(&weights) {
                    let loss = w * fit.centres().nearest(row).1;
                    self.remember(row, loss);
                }
            }
            return Ok(true);
        }
        self.warmup_points.extend_from_slice(point);
        self.warmup_weights.push(weight);
        match &mut self.centres {
            None => self.centres = Some(Centres::single(point)),
            Some(centres) => {
                if centres.n_centres() < self.config.n_clusters
                    && centres.iter().all(|c| c != point)
                {
                    centres.push(point);
                }
            }
        }
        Ok(false)
    }

    /// Multiplies every count by a^b (no-op without decay).
    fn decay(&mut self, n_points: u64) {
        if let Some(a) = self.config.decay {
            let factor = if n_points == 1 {
                a
            } else {
                a.powf(n_points as f64)
            };
            for count in &mut self.counts {
                *count *= factor;
            }
        }
    }

    /// MacQueen's step: n_j ← n_j + w, c_j ← c_j + (w / n_j)(x − c_j).
    #[inline]
    fn move_centre(&mut self, label: usize, point: &[f64], weight: f64) {
        self.counts[label] += weight;
        let count = self.counts[label];
        if weight > 0.0 {
            let rate = weight / count;
            let centres = self.centres.as_mut().expect("invariant: fitted");
            for (c, x) in centres.centre_mut(label).iter_mut().zip(point) {
                *c += rate * (x - *c);
            }
        }
    }

    fn apply_validated_stats(&mut self, stats: &CentreStats) {
        self.decay(stats.n_points());
        let centres = self.centres.as_mut().expect("invariant: fitted");
        for label in 0..stats.n_centres() {
            let added = stats.weight(label);
            if added <= 0.0 {
                continue;
            }
            let old = self.counts[label];
            let total = old + added;
            for (c, s) in centres.centre_mut(label).iter_mut().zip(stats.sum(label)) {
                // (n c + S) / (n + W), written as a step from c so that a centre with a
                // huge count moves by a well-rounded small amount.
                *c += (s - added * *c) / total;
            }
            self.counts[label] = total;
        }
    }

    /// Remembers a point and its loss, then applies the reassignment rule. Returns the
    /// number of centres moved.
    fn remember_and_reassign(&mut self, point: &[f64], loss: f64) -> usize {
        if self.config.reassignment_ratio <= 0.0 {
            return 0;
        }
        self.remember(point, loss);
        self.reassign()
    }

    fn remember(&mut self, point: &[f64], loss: f64) {
        let capacity = self.config.init_size;
        if self.recent_losses.len() < capacity {
            self.recent_points.extend_from_slice(point);
            self.recent_losses.push(loss);
        } else {
            let slot = self.recent_next;
            let dim = point.len();
            self.recent_points[slot * dim..(slot + 1) * dim].copy_from_slice(point);
            self.recent_losses[slot] = loss;
        }
        self.recent_next = (self.recent_next + 1) % capacity;
    }

    /// Moves every centre whose count is below ratio × the largest count to a recent point
    /// drawn ∝ its loss.
    fn reassign(&mut self) -> usize {
        let largest = self.counts.iter().copied().fold(0.0, f64::max);
        let threshold = self.config.reassignment_ratio * largest;
        let dying: Vec<usize> = (0..self.counts.len())
            .filter(|&j| self.counts[j] < threshold)
            .collect();
        if dying.is_empty() {
            return 0;
        }
        let healthy_min = (0..self.counts.len())
            .filter(|j| !dying.contains(j))
            .map(|j| self.counts[j])
            .fold(f64::INFINITY, f64::min);
        let dim = self.dim.unwrap_or(0).max(1);
        let mut moved = 0;
        for &label in &dying {
            let total: f64 = self.recent_losses.iter().sum();
            // Losses are finite and non-negative, so the total is never NaN.
            if total <= 0.0 {
                break;
            }
            let target = self.rng.next_f64() * total;
            let mut acc = 0.0;
            let mut chosen = None;
            for (index, &loss) in self.recent_losses.iter().enumerate() {
                if loss > 0.0 {
                    chosen = Some(index);
                    acc += loss;
                    if acc > target {
                        break;
                    }
                }
            }
            let Some(index) = chosen else { break };
            let centres = self.centres.as_mut().expect("invariant: fitted");
            centres
                .centre_mut(label)
                .copy_from_slice(&self.recent_points[index * dim..(index + 1) * dim]);
            self.recent_losses[index] = 0.0;
            self.counts[label] = healthy_min;
            moved += 1;
        }
        self.report.reassignments += moved as u64;
        moved
    }

    fn validate_snapshot(&self) -> Result<()> {
        let invalid = |what: &str| {
            Err(Error::InvalidSnapshot(format!(
                "sequential k-means: {what}"
            )))
        };
        let config = &self.config;
        let k = config.n_clusters;
        if config.check_limits().is_err() {
            return invalid("n_clusters and init_size are out of range");
        }
        if config.decay.is_some_and(|a| !(a > 0.0 && a < 1.0))
            || !(0.0..1.0).contains(&config.reassignment_ratio)
        {
            return invalid("decay or reassignment ratio out of range");
        }
        let dim = match (self.dim, &self.centres) {
            (None, None) if self.n_rounds == 0 && self.warmup_weights.is_empty() => return Ok(()),
            (Some(dim), Some(centres)) if centres.dim() == dim => dim,
            _ => return invalid("the dimension and the centres disagree"),
        };
        let n_centres = self.centres.as_ref().map_or(0, Centres::n_centres);
        let warming_up = self.counts.is_empty();
        if n_centres > k
            || (!warming_up && (self.counts.len() != k || n_centres != k))
            || self.counts.iter().any(|c| !(c.is_finite() && *c >= 0.0))
        {
            return invalid("the counts do not match the centres");
        }
        if self.warmup_points.len() != self.warmup_weights.len() * dim
            || self.warmup_weights.len() >= config.init_size
            || (!warming_up && !self.warmup_weights.is_empty())
            || self.warmup_points.iter().any(|v| !v.is_finite())
            || self
                .warmup_weights
                .iter()
                .any(|w| !(w.is_finite() && *w >= 0.0))
        {
            return invalid("the warm-up buffer is inconsistent");
        }
        if self.recent_points.len() != self.recent_losses.len() * dim
            || self.recent_losses.len() > config.init_size
            || (self.recent_next >= config.init_size.max(1))
            || self.recent_points.iter().any(|v| !v.is_finite())
            || self
                .recent_losses
                .iter()
                .any(|l| !(l.is_finite() && *l >= 0.0))
        {
            return invalid("the buffer of recent points is inconsistent");
        }
        Ok(())
    }
}

impl OnlineLearner for SequentialKMeans {
    type Input<'a> = &'a [f64];
    type Step = SequentialKMeansStep;

    fn learn_one(&mut self, point: &[f64]) -> Result<SequentialKMeansStep> {
        self.learn_one_weighted(point, 1.0)
    }

    fn n_rounds(&self) -> u64 {
        self.n_rounds
    }
}

impl UnsupervisedLearner for SequentialKMeans {
    type Model = Centres;

    fn model(&self) -> Option<&Centres> {
        self.centres.as_ref()
    }

    fn dim(&self) -> Option<usize> {
        self.dim
    }
}
