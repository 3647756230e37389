//! The assignment step of Lloyd's algorithm, and plain Lloyd's kernel.
//!
//! An [`Assigner`] labels every point with its nearest centre (ties: the lowest index) and,
//! in the same pass, accumulates the per-cluster weighted sums of the next update step
//! (reading each point once instead of twice). Every kernel uses the same
//! [`squared_distance`] and the same fixed chunks, so wherever two kernels pick the same
//! labels they produce the same sums, the same centres and the same run, bit for bit.

use super::chunked::{ClusterSums, WeightedPoints, dispatched, fold_chunks, with_const_dim};
use crate::geometry::squared_distance;

/// A way of computing the assignment step. Implementations keep whatever per-point state
/// they need between iterations (labels, distance bounds).
pub(crate) trait Assigner {
    /// Assigns every point to its nearest centre in `centres` (row-major, k × d) and sets
    /// `totals` to the cluster sums of the new labels, with the number of changed labels.
    fn assign(&mut self, points: &WeightedPoints<'_>, centres: &[f64], totals: &mut ClusterSums);

    /// The current label of point `index`.
    fn label(&self, index: usize) -> usize;

    /// Moves point `index` to cluster `label` (empty-cluster re-seeding).
    fn relabel(&mut self, index: usize, label: usize);

    /// The centres moved from `old` to `new` since the last assignment.
    fn centres_moved(&mut self, old: &[f64], new: &[f64]);

    /// The labels.
    fn into_labels(self) -> Vec<usize>;
}

/// The nearest of the k row-major `centres` to `point` and its squared distance; ties go to
/// the lowest index. `D` is the dimension if known at compile time, 0 otherwise.
///
/// Written with selects rather than branches: which centre is nearest changes from point to
/// point in no pattern a branch predictor could learn.
#[inline(always)]
pub(crate) fn nearest<const D: usize>(point: &[f64], centres: &[f64], dim: usize) -> (usize, f64) {
    let dim = if D == 0 { dim } else { D };
    let point = &point[..dim];
    let (mut best_index, mut best) = (0, f64::INFINITY);
    for (j, centre) in centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(point, &centre[..dim]);
        let closer = distance < best;
        best = if closer { distance } else { best };
        best_index = if closer { j } else { best_index };
    }
    (best_index, best)
}

/// [`nearest`], and also the second smallest squared distance (∞ when k = 1).
#[inline(always)]
pub(crate) fn nearest_two<const D: usize>(
    point: &[f64],
    centres: &[f64],
    dim: usize,
) -> (usize, f64, f64) {
    let dim = if D == 0 { dim } else { D };
    let point = &point[..dim];
    let (mut best_index, mut best, mut second) = (0, f64::INFINITY, f64::INFINITY);
    for (j, centre) in centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(point, &centre[..dim]);
        // The new second smallest is min(second, max(distance, best)).
        let larger = if distance < best { best } else { distance };
        second = if larger < second { larger } else { second };
        let closer = distance < best;
        best = if closer { distance } else { best };
        best_index = if closer { j } else { best_index };
    }
    (best_index, best, second)
}

/// Plain Lloyd: every distance, every iteration. The reference the other kernels must agree
/// with.
#[derive(Debug)]
pub(crate) struct PlainLloyd {
    labels: Vec<usize>,
    scratch: Vec<ClusterSums>,
}

impl PlainLloyd {
    pub(crate) fn new(n_points: usize) -> Self {
        Self {
            labels: vec![usize::MAX; n_points],
            scratch: Vec::new(),
        }
    }
}

dispatched!(lloyd_chunk_fast = lloyd_chunk(
    points: &'a WeightedPoints<'b>,
    centres: &'a [f64],
    first: usize,
    labels: &'a mut [usize],
    partial: &'a mut ClusterSums,
));

#[inline(always)]
fn lloyd_chunk<const D: usize>(
    points: &WeightedPoints<'_>,
    centres: &[f64],
    first: usize,
    labels: &mut [usize],
    partial: &mut ClusterSums,
) {
    partial.clear();
    for (offset, label) in labels.iter_mut().enumerate() {
        let i = first + offset;
        let point = points.row(i);
        let (best, _) = nearest::<D>(point, centres, points.dim);
        if *label != best {
            *label = best;
            partial.n_changed += 1;
        }
        partial.add(best, point, points.weight(i));
    }
}

impl Assigner for PlainLloyd {
    fn assign(&mut self, points: &WeightedPoints<'_>, centres: &[f64], totals: &mut ClusterSums) {
        let (n_clusters, dim) = (centres.len() / points.dim, points.dim);
        totals.clear();
        fold_chunks(
            &mut self.labels,
            &mut self.scratch,
            || ClusterSums::new(n_clusters, dim),
            |first, labels, partial| {
                with_const_dim!(
                    dim,
                    lloyd_chunk_fast(points, centres, first, labels, partial)
                );
            },
            |partial| totals.merge(partial),
        );
    }

    fn label(&self, index: usize) -> usize {
        self.labels[index]
    }

    fn relabel(&mut self, index: usize, label: usize) {
        self.labels[index] = label;
    }

    fn centres_moved(&mut self, _old: &[f64], _new: &[f64]) {}

    fn into_labels(self) -> Vec<usize> {
        self.labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Weights;
    use crate::rng::StreamRng;

    /// The assignment kernel compiled for this CPU's best instructions (AVX2 here) gives the
    /// bits of the portable build, at a dimension with a compile-time constant (10) and at a
    /// run-time one (64), with a tail shorter than a vector.
    #[test]
    fn dispatched_assignment_has_the_portable_bits() {
        for (dim, n_clusters) in [(10, 20), (64, 10), (3, 7)] {
            let mut rng = StreamRng::seed_from(dim as u64);
            let n = 1000;
            let values: Vec<f64> = (0..n * dim).map(|_| 30.0 * rng.standard_normal()).collect();
            let weights: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            let points = WeightedPoints {
                values: &values,
                dim,
                weights: Weights::Given(&weights),
            };
            let centres: Vec<f64> = (0..n_clusters * dim)
                .map(|_| 30.0 * rng.standard_normal())
                .collect();
            let run = |dispatch: bool| {
                let mut labels = vec![usize::MAX; n];
                let mut sums = ClusterSums::new(n_clusters, dim);
                if dispatch {
                    with_const_dim!(
                        dim,
                        lloyd_chunk_fast(&points, &centres, 0, &mut labels, &mut sums)
                    );
                } else {
                    with_const_dim!(
                        dim,
                        lloyd_chunk(&points, &centres, 0, &mut labels, &mut sums)
                    );
                }
                let bits: Vec<u64> = sums
                    .sums
                    .iter()
                    .chain(&sums.masses)
                    .map(|v| v.to_bits())
                    .collect();
                (labels, bits, sums.n_changed)
            };
            assert_eq!(run(true), run(false), "d = {dim}");
        }
    }
}
