//! Lloyd's algorithm.
//!
//! Minimal reference implementation; the full version replaces it.

use super::centres::Centres;
use super::params::KMeansConfig;
use crate::data::{Points, Weights};

/// The outcome of one Lloyd run.
pub(crate) struct LloydRun {
    pub(crate) centres: Centres,
    pub(crate) labels: Vec<usize>,
    pub(crate) inertia: f64,
    pub(crate) n_iter: usize,
    pub(crate) converged: bool,
    pub(crate) empty_cluster_reseeds: usize,
}

/// Runs Lloyd's iterations from `centres`.
pub(crate) fn lloyd(
    points: &Points<'_>,
    weights: Weights<'_>,
    mut centres: Centres,
    config: &KMeansConfig,
) -> LloydRun {
    let (n, d, k) = (points.n_points(), points.dim(), centres.n_centres());
    let mut labels = vec![usize::MAX; n];
    let mut n_iter = 0;
    let mut converged = false;
    while n_iter < config.max_iter {
        n_iter += 1;
        let mut changed = false;
        for (i, p) in points.rows().enumerate() {
            let (label, _) = centres.nearest(p);
            changed |= label != labels[i];
            labels[i] = label;
        }
        if !changed {
            converged = true;
            break;
        }
        let mut sums = vec![0.0; k * d];
        let mut mass = vec![0.0; k];
        for (i, p) in points.rows().enumerate() {
            let w = weights.get(i);
            mass[labels[i]] += w;
            for (s, x) in sums[labels[i] * d..(labels[i] + 1) * d].iter_mut().zip(p) {
                *s += w * x;
            }
        }
        for j in 0..k {
            if mass[j] > 0.0 {
                for (c, s) in centres
                    .centre_mut(j)
                    .iter_mut()
                    .zip(&sums[j * d..(j + 1) * d])
                {
                    *c = s / mass[j];
                }
            }
        }
    }
    let mut inertia = 0.0;
    for (i, p) in points.rows().enumerate() {
        let (label, distance) = centres.nearest(p);
        labels[i] = label;
        inertia += weights.get(i) * distance;
    }
    LloydRun {
        centres,
        labels,
        inertia,
        n_iter,
        converged,
        empty_cluster_reseeds: 0,
    }
}
