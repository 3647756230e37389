//! Batch k-means: seeding, Lloyd's iterations, restarts, and the fitted model.

use ndarray::{Array1, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

use super::centres::Centres;
use super::init::seed_centres;
use super::lloyd::lloyd;
use super::params::KMeansConfig;
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
    /// Whether the winning restart stopped before `max_iter` (assignments stable, or the
    /// centre shift within the scaled tolerance).
    pub converged: bool,
    /// Empty clusters re-seeded (over every restart).
    pub empty_cluster_reseeds: usize,
    /// Whether the seeding ran out of distinct points (fewer distinct points than k) and
    /// fell back to uniform choice (in any restart).
    pub duplicate_centres: bool,
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

    /// Fits k-means with one sample weight per row (finite, ≥ 0, not all zero).
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
    pub(crate) fn fit_points(
        &self,
        points: &Points<'_>,
        weights: Weights<'_>,
        rng: &StreamRng,
    ) -> Result<KMeans> {
        if points.n_points() < self.n_clusters {
            return Err(Error::NotEnoughPoints {
                required: self.n_clusters,
                found: points.n_points(),
            });
        }
        if let super::Init::Given(centres) = &self.init {
            if centres.dim() != points.dim() {
                return Err(Error::DimensionMismatch {
                    row: None,
                    expected: points.dim(),
                    found: centres.dim(),
                });
            }
        }
        let mut best: Option<KMeans> = None;
        let mut empty_cluster_reseeds = 0;
        let mut duplicate_centres = false;
        for restart in 0..self.n_init {
            let mut restart_rng = rng.child(restart as u64);
            let seeding = seed_centres(
                points,
                weights,
                &self.init,
                self.n_clusters,
                &mut restart_rng,
            );
            duplicate_centres |= seeding.duplicate_centres;
            let run = lloyd(points, weights, seeding.centres, self);
            empty_cluster_reseeds += run.empty_cluster_reseeds;
            if best.as_ref().is_none_or(|b| run.inertia < b.report.inertia) {
                best = Some(KMeans {
                    centres: run.centres,
                    labels: run.labels,
                    report: KMeansReport {
                        inertia: run.inertia,
                        n_iter: run.n_iter,
                        converged: run.converged,
                        empty_cluster_reseeds: 0,
                        duplicate_centres: false,
                        best_init: restart,
                        n_init: self.n_init,
                    },
                });
            }
        }
        let mut best = best.expect("invariant: n_init >= 1");
        best.report.empty_cluster_reseeds = empty_cluster_reseeds;
        best.report.duplicate_centres = duplicate_centres;
        Ok(best)
    }
}

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
