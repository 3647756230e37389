//! The hindsight oracle: the best clustering of the whole stream for each k.
//!
//! L*_k = inf over k centres of Σ_t ℓ(c, x_t) is approximated by k-means (greedy k-means++ and
//! Lloyd) with restarts on the whole stream, the lowest inertia kept. k-means finds a local
//! optimum, so the computed L*_k is an **over-estimate** of the true infimum, and a bound
//! computed from it is an over-estimate of the corollary's right-hand side. (When the data
//! lie within R, the k-means centres, means of data points, lie within R too, so they belong
//! to the corollary's C(k, R).) For k at least the number of distinct points, L*_k = 0.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::bounds::{BoundSettings, RegretBound, regret_bound};
use crate::data::Points;
use crate::error::Result;
use crate::kmeans::{Centres, KMeansParams};

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
    let fit = KMeansParams::new(k)
        .n_init(restarts)
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
/// use pacstream::paco::bounds::{BoundSettings, regret_bound};
/// use pacstream::paco::oracle::bound_with_oracle;
///
/// let data = array![[0.0], [1.0], [10.0], [11.0]];
/// let settings =
///     BoundSettings { horizon: 4, dim: 1, radius: 11.0, max_norm: 11.0, max_k: 4, eta: 1.0 };
/// let (bound, fits) = bound_with_oracle(data.view(), &settings, 3, 1)?;
/// // The same bound as from every oracle loss: the stopping rule leaves out no winner.
/// let all = [101.0, 1.0, 0.5, 0.0];
/// assert_eq!(bound, regret_bound(&settings, &all)?);
/// assert!(fits.len() <= 4 && bound.best_k <= fits.len());
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn bound_with_oracle(
    data: ArrayView2<'_, f64>,
    settings: &BoundSettings,
    restarts: usize,
    seed: u64,
) -> Result<(RegretBound, Vec<OracleFit>)> {
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
    Ok((regret_bound(settings, &losses)?, fits))
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
        };
        let (bound, computed) = bound_with_oracle(data.view(), &settings, 3, 1).unwrap();
        let all: Vec<f64> = fits.iter().map(|f| f.loss).collect();
        assert_eq!(bound, regret_bound(&settings, &all).unwrap());
        assert!(computed.len() <= 4);
    }
}
