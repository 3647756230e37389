//! The comparison with the best fixed clusterings in hindsight and the bound, as the summary
//! records them.

use pacstream::paco::oracle::{HindsightReport, IdealSamplerBound};
use serde::Serialize;

/// One k of the hindsight oracle, as the summary records it.
#[derive(Serialize)]
struct FitSummary {
    k: usize,
    /// The cumulative loss of the best fixed k-clustering of the predicted rows (k-means,
    /// the best of the restarts: an over-estimate of the true optimum).
    loss: f64,
    /// The learner's cumulative loss minus that (an under-estimate of the true regret).
    regret: f64,
}

/// The comparison with hindsight and the bound, as the summary records them.
#[derive(Serialize)]
pub(super) struct HindsightSummary {
    predicted_rows: u64,
    warmup_rows: u64,
    /// This chain's cumulative loss over the predicted rows.
    cumulative_loss: f64,
    oracle_restarts: usize,
    /// For every k ≤ p: the best fixed k-clustering of the predicted rows in hindsight and
    /// the regret against it.
    regret_by_k: Vec<FitSummary>,
    /// The best fixed clustering in hindsight over every k (least loss).
    best: Option<FitSummary>,
    /// Why there is no comparison, if there is none.
    no_comparison: Option<&'static str>,
    bound: BoundSummary,
}

/// The corollary's bound, labelled.
#[derive(Serialize)]
struct BoundSummary {
    /// What is bounded.
    bounds: &'static str,
    theorem: &'static str,
    warmup_rows: &'static str,
    /// The bound, or none.
    value: Option<f64>,
    /// The temperature multiplier a it is computed for (the run's).
    coeff: f64,
    /// The k that minimises the bound (not the best clustering in hindsight).
    k_minimising_the_bound: Option<usize>,
    /// L*_k there, over every row (warm-up rows included).
    oracle_loss: Option<f64>,
    /// The term outside the infimum and the price of one cluster.
    constant: Option<f64>,
    per_cluster: Option<f64>,
    /// Why there is no bound, if there is none.
    no_bound: Option<String>,
}

impl HindsightSummary {
    pub(super) fn new(report: &HindsightReport, coeff: f64) -> Self {
        let fit = |f: &pacstream::paco::oracle::HindsightFit| FitSummary {
            k: f.n_clusters,
            loss: f.loss,
            regret: f.regret,
        };
        let bound = report.bound.bound();
        Self {
            predicted_rows: report.predicted_rows,
            warmup_rows: report.warmup_rows,
            cumulative_loss: report.cumulative_loss,
            oracle_restarts: report.restarts,
            regret_by_k: report.fits.iter().map(fit).collect(),
            best: report.best().map(fit),
            no_comparison: report.no_fits,
            bound: BoundSummary {
                bounds: IdealSamplerBound::WHAT,
                theorem: IdealSamplerBound::THEOREM,
                warmup_rows: IdealSamplerBound::WARMUP_ROWS,
                value: bound.map(|b| b.value),
                coeff: bound.map_or(coeff, |b| b.settings.coeff),
                k_minimising_the_bound: bound.map(|b| b.bound_k),
                oracle_loss: bound.map(|b| b.oracle_loss),
                constant: bound.map(|b| b.constant),
                per_cluster: bound.map(|b| b.per_cluster),
                no_bound: match &report.bound {
                    IdealSamplerBound::NoBound { reason } => Some(reason.clone()),
                    IdealSamplerBound::Bound(_) => None,
                },
            },
        }
    }
}
