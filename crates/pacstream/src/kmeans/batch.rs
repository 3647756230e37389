//! Batch k-means: seeding, Lloyd's iterations, restarts, and the fitted model.

use ndarray::{Array1, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use super::centres::Centres;
use super::chunked::{CHUNK, WeightedPoints};
use super::hartigan::hartigan;
use super::init::seed_centres;
use super::lloyd::{HARTIGAN_HANDOFF, LloydRun, LloydSettings, lloyd};
use super::params::KMeansConfig;
use super::{Init, Refinement, Stopping};
use crate::data::{Points, Weights, check_point};
use crate::error::{Error, Result};
use crate::geometry::squared_distance;
use crate::rng::StreamRng;

/// What happened during a fit. None of these are errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KMeansReport {
    /// The weighted inertia φ = Σ w(x)·min_j ‖x − c_j‖² of the returned centres on the
    /// training data, computed from direct differences.
    pub inertia: f64,
    /// Lloyd iterations of the winning restart.
    pub n_iter: usize,
    /// Whether the winning restart stopped before `max_iter` (assignments stable, or within
    /// the tolerance of the stopping rule).
    pub converged: bool,
    /// Empty clusters re-seeded (over every restart).
    pub empty_cluster_reseeds: usize,
    /// Whether the seeding ran out of distinct points (fewer distinct points than k) and
    /// fell back to uniform choice (in any restart).
    pub duplicate_centres: bool,
    /// Points moved by Hartigan's single-point moves after Lloyd in the winning restart
    /// (0 without [`Refinement::Hartigan`]).
    #[serde(default)]
    pub single_point_moves: usize,
    /// The index of the winning restart.
    pub best_init: usize,
    /// The number of restarts run.
    pub n_init: usize,
}

/// A fitted batch k-means model: the centres, the labels of the training points, and the
/// report of the fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KMeans {
    centres: Centres,
    labels: Vec<usize>,
    report: KMeansReport,
}

impl KMeansConfig {
    /// Fits k-means to the rows of `data` (n × d, n ≥ k, every value finite).
    pub fn fit(&self, data: ArrayView2<'_, f64>) -> Result<KMeans> {
        let points = Points::from_array(data)?;
        self.fit_points(&points, Weights::Unit, &StreamRng::seed_from(self.seed))
    }

    /// Fits k-means with one sample weight per row (finite, ≥ 0, not all zero). A point of
    /// integer weight m counts as m copies of it; points of weight 0 are ignored (they get a
    /// label but move no centre).
    pub fn fit_weighted(
        &self,
        data: ArrayView2<'_, f64>,
        weights: ArrayView1<'_, f64>,
    ) -> Result<KMeans> {
        let points = Points::from_array(data)?;
        let weights = weights.to_vec();
        let weights = Weights::new(Some(&weights), points.n_points())?;
        self.fit_points(&points, weights, &StreamRng::seed_from(self.seed))
    }

    /// Fits on validated points; restart r draws from `rng.child(r)`, so the result does not
    /// depend on the order (or the threads) in which restarts run.
    ///
    /// The data are first translated by their weighted mean μ (and the centres translated
    /// back at the end). k-means is translation invariant, but floating point is not: with
    /// ‖x‖ large against the spread of the clusters, the differences x − c would be taken
    /// between numbers carrying mostly the offset. Centred, they keep their digits.
    pub(crate) fn fit_points(
        &self,
        points: &Points<'_>,
        weights: Weights<'_>,
        rng: &StreamRng,
    ) -> Result<KMeans> {
        let (n_points, dim) = (points.n_points(), points.dim());
        if n_points < self.n_clusters {
            return Err(Error::NotEnoughPoints {
                required: self.n_clusters,
                found: n_points,
            });
        }
        if let Init::Given(centres) = &self.init {
            if centres.dim() != dim {
                return Err(Error::DimensionMismatch {
                    row: None,
                    expected: dim,
                    found: centres.dim(),
                });
            }
        }
        let raw = WeightedPoints {
            values: points.as_slice(),
            dim,
            weights,
        };
        let mean = raw.weighted_mean();
        // Written in one parallel pass over a zeroed buffer rather than copied and then
        // centred: the copy was a sequential pass of its own, and every page of a fresh
        // buffer faults at its first write, which the threads now share (blobs 1M × 2: 16 MB).
        let mut centred = vec![0.0; points.as_slice().len()];
        centred
            .par_chunks_mut(dim * CHUNK)
            .zip(points.as_slice().par_chunks(dim * CHUNK))
            .for_each(|(chunk, values)| {
                for (row, values) in chunk.chunks_exact_mut(dim).zip(values.chunks_exact(dim)) {
                    for ((x, value), m) in row.iter_mut().zip(values).zip(&mean) {
                        *x = value - m;
                    }
                }
            });
        let data = WeightedPoints {
            values: &centred,
            dim,
            weights,
        };
        let mean_variance =
            data.weighted_spread(&vec![0.0; dim]) / (data.total_weight() * dim as f64);
        if !(mean.iter().all(|m| m.is_finite()) && mean_variance.is_finite()) {
            return Err(Error::InconsistentInput(
                "the values are too large: their squared distances overflow f64".into(),
            ));
        }
        let settings = LloydSettings {
            max_iter: self.max_iter,
            stopping: self.stopping,
            threshold: match self.stopping {
                Stopping::ChangedLabels => self.tol * data.total_weight(),
                Stopping::CentreShift => self.tol * mean_variance,
            },
            algorithm: self.algorithm,
            handoff: (self.refinement == Refinement::Hartigan)
                .then(|| HARTIGAN_HANDOFF * data.total_weight()),
        };
        let run_restart = |restart: usize| {
            let mut restart_rng = rng.child(restart as u64);
            let seeding = seed_centres(&data, &self.init, self.n_clusters, &mean, &mut restart_rng);
            let mut run = lloyd(&data, seeding.centres, &settings);
            if self.refinement == Refinement::Hartigan {
                let refined = hartigan(
                    &data,
                    run.centres,
                    run.labels,
                    run.bounds.take(),
                    self.max_iter,
                );
                run.inertia = data.inertia(&refined.centres, &refined.labels);
                run.centres = refined.centres;
                run.labels = refined.labels;
                run.single_point_moves = refined.moves;
                run.converged &= refined.converged;
            }
            run.bounds = None;
            (seeding.duplicate_centres, run)
        };
        // Restarts are independent, so running them side by side changes nothing but the
        // time; on small data it is the only parallelism there is. On large data each
        // restart is parallel inside, and running them one after the other keeps only one
        // restart's per-point state in memory.
        let mut best: Option<(usize, LloydRun)> = None;
        let mut empty_cluster_reseeds = 0;
        let mut duplicate_centres = false;
        let mut keep = |restart: usize, (duplicates, run): (bool, LloydRun)| {
            empty_cluster_reseeds += run.empty_cluster_reseeds;
            duplicate_centres |= duplicates;
            if best.as_ref().is_none_or(|(_, b)| run.inertia < b.inertia) {
                best = Some((restart, run));
            }
        };
        if self.n_init > 1 && n_points <= PARALLEL_RESTARTS_MAX_POINTS {
            let runs: Vec<_> = (0..self.n_init).into_par_iter().map(run_restart).collect();
            for (restart, run) in runs.into_iter().enumerate() {
                keep(restart, run);
            }
        } else {
            for restart in 0..self.n_init {
                keep(restart, run_restart(restart));
            }
        }
        let (best_init, run) = best.expect("invariant: n_init >= 1");
        let mut values = run.centres;
        for centre in values.chunks_exact_mut(dim) {
            for (c, m) in centre.iter_mut().zip(&mean) {
                *c += m;
            }
        }
        Ok(KMeans {
            centres: Centres::new(values, dim)?,
            labels: run.labels,
            report: KMeansReport {
                inertia: run.inertia,
                n_iter: run.n_iter,
                converged: run.converged,
                empty_cluster_reseeds,
                duplicate_centres,
                single_point_moves: run.single_point_moves,
                best_init,
                n_init: self.n_init,
            },
        })
    }
}

/// Up to this many points, restarts run in parallel with each other.
const PARALLEL_RESTARTS_MAX_POINTS: usize = 64 * CHUNK;

impl KMeans {
    /// The fitted centres.
    pub fn centres(&self) -> &Centres {
        &self.centres
    }

    /// The label of every training point (index of its nearest final centre).
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// The report of the fit.
    pub fn report(&self) -> &KMeansReport {
        &self.report
    }

    /// The label of the nearest centre to `point`.
    pub fn predict(&self, point: &[f64]) -> Result<usize> {
        self.centres.predict(point)
    }

    /// The labels of the nearest centres to the rows of `data`.
    pub fn predict_many(&self, data: ArrayView2<'_, f64>) -> Result<Array1<usize>> {
        let points = self.points_of(data)?;
        Ok(points.rows().map(|p| self.centres.nearest(p).0).collect())
    }

    /// The squared distances from `point` to every centre.
    pub fn transform(&self, point: &[f64]) -> Result<Vec<f64>> {
        self.centres.transform(point)
    }

    /// The inertia of the fitted centres on `data`: Σ_x min_j ‖x − c_j‖².
    pub fn score(&self, data: ArrayView2<'_, f64>) -> Result<f64> {
        let points = self.points_of(data)?;
        Ok(points
            .rows()
            .map(|p| {
                self.centres
                    .iter()
                    .map(|c| squared_distance(p, c))
                    .fold(f64::INFINITY, f64::min)
            })
            .sum())
    }

    fn points_of<'a>(&self, data: ArrayView2<'a, f64>) -> Result<Points<'a>> {
        let points = Points::from_array(data)?;
        if let Some(first) = points.rows().next() {
            check_point(first, self.centres.dim())?;
        }
        Ok(points)
    }
}
