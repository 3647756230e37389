//! Lloyd's algorithm: alternate the assignment step and the update step.
//!
//! One iteration assigns every point to its nearest centre (ties: the lowest index), then
//! moves each centre to the weighted mean Σ w(x)·x / Σ w(x) of its points. The loop stops
//!
//! - when an assignment changes no label (*strict convergence*: the centres are then
//!   already the means of their points, and the labels match them);
//! - with [`Stopping::CentreShift`] (the default, the spec's rule and scikit-learn's), when
//!   the total squared centre shift Σ_j ‖c_j' − c_j‖² of the update is at most
//!   `tol` × (mean per-feature variance of the data), where the variance of a feature is
//!   the *weighted population* variance Σ w(x)(x_f − μ_f)² / Σ w(x) (with unit weights,
//!   exactly `numpy.var`); or, with [`Stopping::ChangedLabels`], when the points whose
//!   label changed in the last pass weigh at most `tol` × the total weight (see
//!   [`Stopping`] for where the two differ);
//! - after `max_iter` iterations.
//!
//! **Before Hartigan's moves** ([`Refinement::Hartigan`], the default), the stopping rule ends
//! the loop only once the last pass also changed the labels of at most
//! [`HARTIGAN_HANDOFF`] × the total weight (with unit weights and fewer than 10⁵ points: no
//! label at all), or at strict convergence, or after `max_iter`. Where Lloyd stops changes
//! only the way to the result, which is a fixed point of the moves either way, and the way
//! matters: the centre-shift rule can stop in the middle of a slow drift of two centres
//! across a boundary, which the moves then follow one sequential sweep at a time (blobs
//! 1M × 2 of the k-means spec, seeds 0 and 2: 29 sweeps and about 310,000 moves, 1.6–2
//! times the time of running on). A Lloyd pass runs on every thread (and with Hamerly's
//! bounds pays only for the points near a moving boundary); a sweep visits every point in
//! order on one thread.
//! With `Refinement::None` the spec's rule is unchanged.
//!
//! In the last two cases the points are assigned once more so that the labels match the
//! final centres. The inertia Σ w(x)·‖x − c_{label(x)}‖² is then computed from direct
//! differences (never from the expanded ‖x‖² − 2x·c + ‖c‖²). `n_iter` counts assignment
//! passes inside the loop.
//!
//! **Empty clusters.** A cluster with no mass (no point, or only points of weight 0) has no
//! mean. Its centre is moved to the point with the largest current loss
//! ℓ = ‖x − c_{label(x)}‖², among points of positive weight (the point's weight decides only
//! whether it counts, so that a point of weight 2 behaves like two copies of it), that is
//! not already a centre; the point leaves its old cluster. Several empty clusters take the
//! next-largest losses in turn (ties: the lowest index), skipping points that coincide with
//! a centre placed earlier. Each move is counted. If no such point is left, the centre stays
//! where it is.
//!
//! **Kernels.** The assignment step dominates the cost; [`Algorithm`] picks how it is
//! computed: plain Lloyd (every distance, every iteration) or Hamerly's bounds (a point whose
//! label provably cannot change costs no distance). `Algorithm::Auto` resolves by the
//! dimension, from the benchmark `benches/kmeans_batch.rs` and single-thread runs on blobs
//! (n = 300,000 to 1,000,000, k = 5 to 20): at d ≤ 2 a full scan of k centres costs about as
//! much as Hamerly's per-point bookkeeping (load and update two bounds, a square root), and
//! plain Lloyd was up to 8% faster; from d = 3 on (and at d = 10 and 64 by 10–25%) Hamerly
//! was as fast or faster, more so the more iterations a fit needs. Both give the same run,
//! bit for bit (see `hamerly`), so the choice changes only the time.

use super::assign::{Assigner, PlainLloyd};
use super::chunked::{ClusterSums, WeightedPoints, cluster_sums};
use super::hamerly::Hamerly;
#[cfg(doc)]
use super::params::Refinement;
use super::params::{Algorithm, Stopping};
use crate::geometry::squared_distance;

/// The share of the total weight that the labels changed by Lloyd's last pass may weigh
/// before Hartigan's moves take over (see the module docs). Chosen on blobs 1M × 2 of the
/// k-means spec (docs/benchmarks.md, k-means) against 0, 10⁻⁴ and 10⁻³: 0 took a few more
/// Lloyd passes for the same result; 10⁻⁴ and 10⁻³ were no faster, left 17–410 moves
/// instead of 1–7, and 10⁻⁴ ended at another fixed point on two seeds of five.
pub(crate) const HARTIGAN_HANDOFF: f64 = 1e-5;

/// How Lloyd's loop runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LloydSettings {
    pub(crate) max_iter: usize,
    /// The rule and its absolute threshold: a weight of changed points (tol × total weight)
    /// or a total squared centre shift (tol × mean variance).
    pub(crate) stopping: Stopping,
    pub(crate) threshold: f64,
    pub(crate) algorithm: Algorithm,
    /// When Hartigan's moves follow: the stopping rule ends the loop only once a pass also
    /// changes labels of at most this weight (see the module docs); `None`: the rule alone.
    pub(crate) handoff: Option<f64>,
}

/// The outcome of one Lloyd run.
#[derive(Debug)]
pub(crate) struct LloydRun {
    /// Row-major final centres, in the coordinates of the points given.
    pub(crate) centres: Vec<f64>,
    pub(crate) labels: Vec<usize>,
    pub(crate) inertia: f64,
    pub(crate) n_iter: usize,
    pub(crate) converged: bool,
    pub(crate) empty_cluster_reseeds: usize,
    /// Points moved by the refinement after Lloyd (set by the caller that runs it).
    pub(crate) single_point_moves: usize,
    /// Per point, bounds on the distances to its own centre (upper) and to every other
    /// (lower) for the final centres, where the kernel keeps them (Hamerly's).
    pub(crate) bounds: Option<Vec<(f64, f64)>>,
}

/// Runs Lloyd's iterations from `centres` (row-major, k × d).
pub(crate) fn lloyd(
    points: &WeightedPoints<'_>,
    centres: Vec<f64>,
    settings: &LloydSettings,
) -> LloydRun {
    let (n_points, dim) = (points.n_points(), points.dim);
    let n_clusters = centres.len() / dim;
    match resolve(settings.algorithm, dim) {
        Algorithm::Lloyd => run(points, centres, settings, PlainLloyd::new(n_points)),
        _ => run(
            points,
            centres,
            settings,
            Hamerly::new(n_points, n_clusters, dim),
        ),
    }
}

/// The kernel `Algorithm::Auto` stands for at dimension `dim` (see the module docs).
pub(crate) fn resolve(algorithm: Algorithm, dim: usize) -> Algorithm {
    match algorithm {
        Algorithm::Auto if dim <= 2 => Algorithm::Lloyd,
        Algorithm::Auto => Algorithm::Hamerly,
        chosen => chosen,
    }
}

fn run<A: Assigner + Sync>(
    points: &WeightedPoints<'_>,
    mut centres: Vec<f64>,
    settings: &LloydSettings,
    mut assigner: A,
) -> LloydRun {
    let dim = points.dim;
    let n_clusters = centres.len() / dim;
    let mut totals = ClusterSums::new(n_clusters, dim);
    let mut n_iter = 0;
    let mut converged = false;
    let mut labels_match_centres = false;
    let mut empty_cluster_reseeds = 0;
    while n_iter < settings.max_iter {
        n_iter += 1;
        assigner.assign(points, &centres, &mut totals);
        if totals.n_changed == 0 {
            converged = true;
            labels_match_centres = true;
            break;
        }
        let mut labels_settled = totals.changed_mass <= settings.threshold;
        let mut reseeded = false;
        if totals.masses.iter().any(|&mass| mass <= 0.0) {
            let moved = reseed_empty_clusters(points, &centres, &totals.masses, &mut assigner);
            // A re-seeded centre has not been through an assignment yet.
            labels_settled &= moved == 0;
            reseeded = moved > 0;
            empty_cluster_reseeds += moved;
            totals = cluster_sums(points, |i| assigner.label(i), n_clusters);
        }
        let new_centres = totals.means(&centres);
        let shift = centre_shift(&centres, &new_centres, dim);
        assigner.centres_moved(&centres, &new_centres);
        centres = new_centres;
        let few_changed = settings
            .handoff
            .is_none_or(|handoff| totals.changed_mass <= handoff && !reseeded);
        let stop = few_changed
            && match settings.stopping {
                Stopping::ChangedLabels => labels_settled,
                Stopping::CentreShift => shift <= settings.threshold,
            };
        if stop {
            converged = true;
            break;
        }
    }
    if !labels_match_centres {
        assigner.assign(points, &centres, &mut totals);
    }
    let (labels, bounds) = assigner.into_labels_and_bounds();
    let inertia = points.inertia(&centres, &labels);
    LloydRun {
        centres,
        labels,
        inertia,
        n_iter,
        converged,
        empty_cluster_reseeds,
        single_point_moves: 0,
        bounds,
    }
}

/// Moves the centre of every cluster without mass to a far point (see the module docs) and
/// relabels that point. Returns the number of centres moved.
fn reseed_empty_clusters<A: Assigner + Sync>(
    points: &WeightedPoints<'_>,
    centres: &[f64],
    masses: &[f64],
    assigner: &mut A,
) -> usize {
    let dim = points.dim;
    let empty: Vec<usize> = (0..masses.len()).filter(|&j| masses[j] <= 0.0).collect();
    let mut losses: Vec<f64> = (0..points.n_points())
        .map(|i| {
            if points.weight(i) > 0.0 {
                let label = assigner.label(i);
                squared_distance(points.row(i), &centres[label * dim..(label + 1) * dim])
            } else {
                0.0
            }
        })
        .collect();
    let mut placed: Vec<usize> = Vec::new();
    for &cluster in &empty {
        loop {
            // The largest loss; ties go to the lowest index.
            let Some(far) = losses
                .iter()
                .enumerate()
                .filter(|(_, loss)| **loss > 0.0)
                .fold(None, |best: Option<(usize, f64)>, (i, &loss)| match best {
                    Some((_, top)) if top >= loss => best,
                    _ => Some((i, loss)),
                })
                .map(|(i, _)| i)
            else {
                return placed.len();
            };
            losses[far] = 0.0;
            // A point with positive loss is not at its nearest centre, so at no centre;
            // but it may coincide with a point placed a moment ago.
            if placed
                .iter()
                .any(|&other| points.row(other) == points.row(far))
            {
                continue;
            }
            assigner.relabel(far, cluster);
            placed.push(far);
            break;
        }
    }
    placed.len()
}

/// How far the centres moved in one pass: the sum of the squared distances between each
/// centre and its update.
fn centre_shift(centres: &[f64], new_centres: &[f64], dim: usize) -> f64 {
    centres
        .chunks_exact(dim)
        .zip(new_centres.chunks_exact(dim))
        .map(|(old, new)| squared_distance(old, new))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Weights;
    use crate::kmeans::chunked::ClusterSums;
    use crate::rng::StreamRng;

    /// Replays plain Lloyd from the same centres and records, per iteration, the weight of
    /// the points that changed cluster and the total squared centre shift.
    fn replay(
        points: &WeightedPoints<'_>,
        mut centres: Vec<f64>,
        passes: usize,
    ) -> Vec<(f64, f64)> {
        let dim = points.dim;
        let mut assigner = PlainLloyd::new(points.n_points());
        let mut totals = ClusterSums::new(centres.len() / dim, dim);
        let mut trace = Vec::new();
        for _ in 0..passes {
            assigner.assign(points, &centres, &mut totals);
            assert!(
                totals.masses.iter().all(|&m| m > 0.0),
                "no empty cluster here"
            );
            let new_centres = totals.means(&centres);
            let shift = centre_shift(&centres, &new_centres, dim);
            trace.push((totals.changed_mass, shift));
            centres = new_centres;
        }
        trace
    }

    /// Each rule stops at the first iteration whose measure is within its threshold, not
    /// before and not after: overlapping weighted blobs, where both measures shrink slowly
    /// over many iterations.
    #[test]
    fn each_rule_stops_at_the_first_iteration_within_its_threshold() {
        let mut rng = StreamRng::seed_from(5);
        let (n, dim, k) = (4000, 2, 6);
        let values: Vec<f64> = (0..n * dim)
            .map(|i| 2.5 * rng.standard_normal() + 4.0 * ((i / dim) % 3) as f64)
            .collect();
        let weights: Vec<f64> = (0..n).map(|_| 0.5 + rng.next_f64()).collect();
        let points = WeightedPoints {
            values: &values,
            dim,
            weights: Weights::Given(&weights),
        };
        let start: Vec<f64> = values[..k * dim].to_vec();
        let trace = replay(&points, start.clone(), 40);
        // The measures must keep changing for the test to say anything.
        assert!(trace[10].0 > 0.0 && trace[10].1 > 0.0);
        for (stopping, measure) in [(Stopping::ChangedLabels, 0), (Stopping::CentreShift, 1)] {
            for target in [3, 6, 10] {
                // A threshold just at the measure of iteration `target` (1-based): the run
                // must stop exactly there unless an earlier iteration is already within it.
                let threshold = if measure == 0 {
                    trace[target - 1].0
                } else {
                    trace[target - 1].1
                };
                let expected = 1 + trace
                    .iter()
                    .position(|m| if measure == 0 { m.0 } else { m.1 } <= threshold)
                    .unwrap();
                for algorithm in [Algorithm::Lloyd, Algorithm::Hamerly] {
                    let settings = LloydSettings {
                        max_iter: 300,
                        stopping,
                        threshold,
                        algorithm,
                        handoff: None,
                    };
                    let run = lloyd(&points, start.clone(), &settings);
                    assert_eq!(run.n_iter, expected, "{stopping:?}, {algorithm:?}");
                    assert!(run.converged);
                    // Just below that threshold, iteration `target` no longer qualifies.
                    let below = threshold * (1.0 - 1e-12);
                    let expected_below = 1 + trace
                        .iter()
                        .position(|m| if measure == 0 { m.0 } else { m.1 } <= below)
                        .unwrap();
                    let run = lloyd(
                        &points,
                        start.clone(),
                        &LloydSettings {
                            threshold: below,
                            ..settings
                        },
                    );
                    assert_eq!(run.n_iter, expected_below, "{stopping:?}, {algorithm:?}");
                    assert!(expected_below > expected);
                }
            }
        }
        // Before Hartigan's moves: the centre-shift rule stops the loop only at an iteration
        // whose changed labels also weigh at most the handoff's threshold.
        let shift_threshold = trace[2].1;
        for target in [6, 10, 14] {
            let handoff = trace[target - 1].0;
            let expected = 1 + trace
                .iter()
                .position(|m| m.1 <= shift_threshold && m.0 <= handoff)
                .unwrap();
            assert!(expected > 3, "the handoff must be what decides");
            for algorithm in [Algorithm::Lloyd, Algorithm::Hamerly] {
                let run = lloyd(
                    &points,
                    start.clone(),
                    &LloydSettings {
                        max_iter: 300,
                        stopping: Stopping::CentreShift,
                        threshold: shift_threshold,
                        algorithm,
                        handoff: Some(handoff),
                    },
                );
                assert_eq!(run.n_iter, expected, "handoff at {target}, {algorithm:?}");
                assert!(run.converged);
            }
        }
    }
}
