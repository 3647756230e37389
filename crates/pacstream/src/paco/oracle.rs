//! The hindsight oracle and the report of a run: the best fixed clustering in hindsight for
//! each k, the regret of the learner against each, and the bound of the corollary for the
//! ideal sampler.
//!
//! L*_k = inf over k centres of Σ_t ℓ(c, x_t) is approximated by k-means (greedy k-means++ and
//! Lloyd) with restarts on the whole stream, the lowest inertia kept. k-means finds a local
//! optimum, so the computed L*_k is an **over-estimate** of the true infimum: the regrets
//! against it are under-estimates of the true regrets, and a bound computed from it is an
//! over-estimate of the corollary's right-hand side (still a bound). When the data lie within
//! R, the k-means centres, means of data points, lie within R too, so they belong to the
//! corollary's C(k, R). For k at least the number of distinct points, L*_k = 0.
//!
//! [`hindsight_report`] is what a front-end prints after a run ([`HindsightReport`]): it
//! never re-derives the bound or picks the comparator itself.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::bounds::{BoundSettings, LossBound, loss_bound};
use super::learner::Paco;
use super::params::Memory;
use crate::data::Points;
use crate::error::Result;
use crate::kmeans::{Centres, KMeansParams, Refinement};
use crate::online::{OnlineLearner, UnsupervisedLearner};

/// The oracle's clustering for one k.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OracleFit {
    /// k.
    pub n_clusters: usize,
    /// Σ_t min_j ‖x_t − c_j‖² of the best restart (an upper bound on L*_k).
    pub loss: f64,
    /// Its centres, in the coordinates of the data given.
    pub centres: Centres,
}

/// The oracle for k = 1..=`max_k` (fewer when the data hold fewer points), each the best of
/// `restarts` k-means runs seeded from `seed`.
///
/// ```
/// use ndarray::array;
/// use pacstream::paco::oracle::hindsight_oracle;
///
/// let data = array![[0.0], [1.0], [10.0], [11.0]];
/// let fits = hindsight_oracle(data.view(), 5, 3, 1)?;
/// assert_eq!(fits.len(), 4, "no more clusters than points");
/// assert_eq!(fits[0].loss, 101.0); // one centre at 5.5: 2 × 5.5² + 2 × 4.5²
/// assert_eq!(fits[1].loss, 1.0); // centres at 0.5 and 10.5
/// assert_eq!(fits[3].loss, 0.0);
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn hindsight_oracle(
    data: ArrayView2<'_, f64>,
    max_k: usize,
    restarts: usize,
    seed: u64,
) -> Result<Vec<OracleFit>> {
    let points = Points::from_array(data)?;
    let mut fits = Vec::new();
    for k in 1..=max_k.min(points.n_points()) {
        fits.push(fit(&points, data, k, restarts, seed)?);
    }
    Ok(fits)
}

fn fit(
    points: &Points<'_>,
    data: ArrayView2<'_, f64>,
    k: usize,
    restarts: usize,
    seed: u64,
) -> Result<OracleFit> {
    // Lloyd alone, the oracle the bounds were calibrated with; Hartigan's moves would only
    // lower (tighten) these losses.
    let fit = KMeansParams::new(k)
        .n_init(restarts)
        .refinement(Refinement::None)
        .seed(seed)
        .check()?
        .fit(data)?;
    debug_assert_eq!(fit.centres().dim(), points.dim());
    Ok(OracleFit {
        n_clusters: k,
        loss: fit.report().inertia,
        centres: fit.centres().clone(),
    })
}

/// The corollary's bound with the oracle computed only as far as needed: k grows from 1 and
/// stops once k × (the price of one cluster) alone exceeds the best term found (L*_k ≥ 0, so
/// no larger k can win), or once an oracle loss is 0 (more clusters only add to the price).
/// Returns the bound and the oracle fits computed.
///
/// ```
/// use ndarray::array;
/// use pacstream::paco::bounds::{BoundSettings, loss_bound};
/// use pacstream::paco::oracle::bound_with_oracle;
///
/// let data = array![[0.0], [1.0], [10.0], [11.0]];
/// let settings = BoundSettings {
///     horizon: 4, dim: 1, radius: 11.0, max_norm: 11.0, max_k: 4, eta: 1.0, coeff: 1.0,
/// };
/// let (bound, fits) = bound_with_oracle(data.view(), &settings, 3, 1)?;
/// // The same bound as from every oracle loss: the stopping rule leaves out no winner.
/// let all = [101.0, 1.0, 0.5, 0.0];
/// assert_eq!(bound, loss_bound(&settings, &all)?);
/// assert!(fits.len() <= 4 && bound.bound_k <= fits.len());
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn bound_with_oracle(
    data: ArrayView2<'_, f64>,
    settings: &BoundSettings,
    restarts: usize,
    seed: u64,
) -> Result<(LossBound, Vec<OracleFit>)> {
    let points = Points::from_array(data)?;
    let per_cluster = settings.per_cluster();
    let mut fits: Vec<OracleFit> = Vec::new();
    let mut best = f64::INFINITY;
    for k in 1..=settings.max_k.min(points.n_points()) {
        if k as f64 * per_cluster >= best {
            break;
        }
        let oracle = fit(&points, data, k, restarts, seed)?;
        best = best.min(oracle.loss + k as f64 * per_cluster);
        let exact_zero = oracle.loss == 0.0;
        fits.push(oracle);
        if exact_zero {
            break;
        }
    }
    let losses: Vec<f64> = fits.iter().map(|f| f.loss).collect();
    Ok((loss_bound(settings, &losses)?, fits))
}

/// The best fixed k-clustering of the predicted rows in hindsight, and the learner's regret
/// against it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HindsightFit {
    /// k.
    pub n_clusters: usize,
    /// Its cumulative loss over the predicted rows (k-means, the best of the restarts: an
    /// over-estimate of the true L*_k).
    pub loss: f64,
    /// The learner's cumulative loss minus that (an under-estimate of the true regret).
    pub regret: f64,
    /// Its centres, in the learner's internal coordinates.
    pub centres: Centres,
}

/// The corollary's bound on the ideal sampler's expected loss, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IdealSamplerBound {
    /// The bound of Li, Guedj & Loustau (2018), adaptive corollary, for the run's a.
    Bound(LossBound),
    /// The corollary does not apply to this run.
    NoBound {
        /// Why.
        reason: String,
    },
}

impl IdealSamplerBound {
    /// What the bound bounds, for reports.
    pub const WHAT: &'static str = "the expected cumulative loss of the ideal sampler (exact \
        draws from the quasi-posterior, not this chain) over the predicted rows";

    /// The theorem.
    pub const THEOREM: &'static str =
        "Li, Guedj & Loustau 2018, adaptive corollary, for the run's temperature multiplier a";

    /// What the warm-up rows do in it.
    pub const WARMUP_ROWS: &'static str = "warm-up rows are not predicted; they count in T \
        and in the comparator's loss L*_k";

    /// The bound, if there is one.
    pub fn bound(&self) -> Option<&LossBound> {
        match self {
            IdealSamplerBound::Bound(bound) => Some(bound),
            IdealSamplerBound::NoBound { .. } => None,
        }
    }
}

/// What a run of PACBO can be compared with; see [`hindsight_report`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HindsightReport {
    /// Rows the learner predicted (and paid for).
    pub predicted_rows: u64,
    /// Warm-up rows (buffered, not predicted).
    pub warmup_rows: u64,
    /// The learner's cumulative loss over the predicted rows: this chain's, not the ideal
    /// sampler's.
    pub cumulative_loss: f64,
    /// k-means restarts per k of the oracle.
    pub restarts: usize,
    /// For k = 1, 2, ... up to p (or the number of predicted rows): the best fixed
    /// k-clustering in hindsight and the regret against it. Empty when the predicted rows
    /// are not all in memory (window memory).
    pub fits: Vec<HindsightFit>,
    /// Why `fits` is empty, if it is.
    pub no_fits: Option<&'static str>,
    /// The bound for the ideal sampler, or why there is none.
    pub bound: IdealSamplerBound,
}

impl HindsightReport {
    /// The best fixed clustering in hindsight over every k computed: the least loss (on
    /// ties, the fewest clusters).
    pub fn best(&self) -> Option<&HindsightFit> {
        self.fits
            .iter()
            .fold(None, |best: Option<&HindsightFit>, fit| match best {
                Some(b) if b.loss <= fit.loss => Some(b),
                _ => Some(fit),
            })
    }

    /// The fit with `k` clusters, if computed.
    pub fn fit(&self, k: usize) -> Option<&HindsightFit> {
        self.fits.iter().find(|f| f.n_clusters == k)
    }
}

/// The rows in memory as an n × d view (internal coordinates), when memory is exact.
fn rows_in_memory(learner: &Paco) -> Option<(ArrayView2<'_, f64>, usize)> {
    let dim = learner.dim()?;
    let points = learner.memory_points();
    let n = points.len() / dim;
    ArrayView2::from_shape((n, dim), points)
        .ok()
        .map(|view| (view, n))
}

/// Why the corollary does not apply to the first `rows` rows, if it does not.
fn not_covered(learner: &Paco, rows: usize) -> Option<String> {
    if let Memory::Window(window) = learner.config().memory() {
        return Some(format!(
            "window memory ({window} rows): S_t forgets older rows, and the corollary is for \
             exact memory"
        ));
    }
    if rows <= learner.memory_warmup_points() {
        return Some("no row was predicted (the stream ended during the warm-up)".into());
    }
    None
}

/// The corollary's bound on the ideal sampler's expected loss over the predicted rows among
/// the first `rows` rows of the stream (warm-up rows included in `rows`), for the learner's
/// settings; or why there is none (window memory, nothing predicted, a row beyond R).
///
/// # Errors
/// If `rows` exceeds the rows seen, or the oracle's k-means fails.
pub fn ideal_sampler_bound(
    learner: &Paco,
    rows: usize,
    restarts: usize,
    seed: u64,
) -> Result<IdealSamplerBound> {
    if let Some(reason) = not_covered(learner, rows) {
        return Ok(IdealSamplerBound::NoBound { reason });
    }
    let (Some((data, n)), Some(frame)) = (rows_in_memory(learner), learner.frame()) else {
        return Ok(IdealSamplerBound::NoBound {
            reason: "no row was predicted".into(),
        });
    };
    if rows > n {
        return Err(crate::error::Error::InconsistentInput(format!(
            "{rows} rows asked for, {n} seen"
        )));
    }
    let (prefix, _) = data.split_at(ndarray::Axis(0), rows);
    let max_norm = prefix
        .rows()
        .into_iter()
        .map(|row| row.iter().map(|v| v * v).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let config = learner.config();
    let settings = BoundSettings {
        horizon: rows as u64,
        dim: data.ncols(),
        radius: frame.radius(),
        max_norm,
        max_k: config.max_k(),
        eta: config.eta(),
        coeff: config.coeff(),
    };
    if !settings.radius_covers_data() {
        let beyond = prefix
            .rows()
            .into_iter()
            .filter(|row| row.iter().map(|v| v * v).sum::<f64>() > frame.radius().powi(2))
            .count();
        return Ok(IdealSamplerBound::NoBound {
            reason: format!(
                "{beyond} rows lie beyond R = {} (the corollary assumes ‖x_t − μ_0‖ ≤ R)",
                frame.radius()
            ),
        });
    }
    let (bound, _) = bound_with_oracle(prefix, &settings, restarts, seed)?;
    Ok(IdealSamplerBound::Bound(bound))
}

/// The report of a run: the learner's cumulative loss over the rows it predicted, the best
/// fixed k-clustering of those rows in hindsight for every k ≤ p with the regret against
/// each (k-means with `restarts` restarts, seeded from `seed`), and the corollary's bound on
/// the ideal sampler's expected loss for the run's a (or why there is none).
///
/// ```
/// use pacstream::paco::oracle::{IdealSamplerBound, hindsight_report};
/// use pacstream::paco::{Memory, PacoParams};
/// use pacstream::{OnlineLearner, StreamRng};
///
/// let mut rng = StreamRng::seed_from(1);
/// let mut learner = PacoParams::new().warmup(20).max_k(4).iterations(50).seed(2).check()?.build();
/// for t in 0..120 {
///     let centre = if t % 2 == 0 { -4.0 } else { 4.0 };
///     learner.learn_one(&[centre + 0.3 * rng.standard_normal()])?;
/// }
/// let report = hindsight_report(&learner, 3, 1)?;
/// assert_eq!((report.predicted_rows, report.warmup_rows), (100, 20));
/// assert_eq!(report.fits.len(), 4, "k = 1..=p");
/// let two = report.fit(2).unwrap();
/// assert!((two.regret - (report.cumulative_loss - two.loss)).abs() < 1e-9);
/// let IdealSamplerBound::Bound(bound) = &report.bound else { panic!("a bound") };
/// assert_eq!(bound.settings.coeff, 20.0, "the run's a, not 1");
///
/// // Window memory forgets: no bound, and no oracle (older rows are gone).
/// let mut windowed = PacoParams::new().memory(Memory::Window(30)).iterations(20).check()?.build();
/// for t in 0..60 {
///     windowed.learn_one(&[t as f64 % 3.0])?;
/// }
/// let report = hindsight_report(&windowed, 3, 1)?;
/// assert!(report.fits.is_empty() && report.bound.bound().is_none());
/// # Ok::<(), pacstream::Error>(())
/// ```
///
/// # Errors
/// If the oracle's k-means fails.
pub fn hindsight_report(learner: &Paco, restarts: usize, seed: u64) -> Result<HindsightReport> {
    let warmup_rows = learner.memory_warmup_points();
    let losses = learner.memory_losses();
    let exact = learner.config().memory() == Memory::All;
    let predicted_rows = learner.n_rounds().saturating_sub(warmup_rows as u64);
    let cumulative_loss = if exact {
        losses[warmup_rows.min(losses.len())..].iter().sum()
    } else {
        f64::NAN
    };
    let mut fits = Vec::new();
    let mut no_fits = None;
    match rows_in_memory(learner) {
        Some((data, n)) if exact && n > warmup_rows => {
            let (_, predicted) = data.split_at(ndarray::Axis(0), warmup_rows);
            for oracle in hindsight_oracle(predicted, learner.config().max_k(), restarts, seed)? {
                fits.push(HindsightFit {
                    n_clusters: oracle.n_clusters,
                    loss: oracle.loss,
                    regret: cumulative_loss - oracle.loss,
                    centres: oracle.centres,
                });
            }
        }
        _ if !exact => {
            no_fits = Some(
                "window memory keeps only the last rows; the oracle needs every predicted row",
            );
        }
        _ => no_fits = Some("no row was predicted"),
    }
    let rows = learner.memory_points().len() / learner.dim().unwrap_or(1).max(1);
    let bound = ideal_sampler_bound(learner, rows, restarts, seed)?;
    Ok(HindsightReport {
        predicted_rows,
        warmup_rows: warmup_rows as u64,
        cumulative_loss,
        restarts,
        fits,
        no_fits,
        bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn oracle_on_a_hand_computed_set() {
        let data = array![[0.0], [2.0], [10.0], [12.0]];
        let fits = hindsight_oracle(data.view(), 5, 3, 1).unwrap();
        assert_eq!(fits.len(), 4);
        // k = 1: mean 6, losses 36 + 16 + 16 + 36. k = 2: {0, 2}, {10, 12}: 4 × 1.
        assert_eq!(fits[0].loss, 104.0);
        assert_eq!(fits[1].loss, 4.0);
        assert_eq!(fits[3].loss, 0.0);
        let settings = BoundSettings {
            horizon: 4,
            dim: 1,
            radius: 12.0,
            max_norm: 12.0,
            max_k: 5,
            eta: 1.0,
            coeff: 3.0,
        };
        let (bound, computed) = bound_with_oracle(data.view(), &settings, 3, 1).unwrap();
        let all: Vec<f64> = fits.iter().map(|f| f.loss).collect();
        assert_eq!(bound, loss_bound(&settings, &all).unwrap());
        assert!(computed.len() <= 4);
    }
}
