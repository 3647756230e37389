//! The assignment step of Lloyd's algorithm, and plain Lloyd's kernel.
//!
//! An [`Assigner`] labels every point with its nearest centre (ties: the lowest index) and,
//! in the same pass, accumulates the per-cluster weighted sums of the next update step
//! (reading each point once instead of twice). Every kernel computes each distance with the
//! arithmetic of [`squared_distance`] (the same operations in the same order, whether one
//! distance at a time, four centres side by side or four points side by side) over the same
//! fixed chunks, so wherever two kernels pick the same labels they produce the same sums,
//! the same centres and the same run, bit for bit.
//!
//! At d ≤ 16 one distance is too short to fill an AVX2 vector of four f64, so plain Lloyd
//! puts four consecutive points in the lanes and scans the centres in order (each lane keeps
//! its own running minimum: no reduction across lanes), and Hamerly's per-point
//! recomputations put four centres in the lanes. On the 1,000,000 × 2 benchmark (k = 8)
//! this cut plain Lloyd's pass from 179 to 99 instructions per point (callgrind). Above
//! d = 16 Hamerly's recomputations take their distances from small matrix products (see
//! [`super::expanded`]), with the same labels.

use super::chunked::{ClusterSums, WeightedPoints, fold_chunks, quad_dispatched, with_const_dim};
use crate::data::Weights;
use crate::geometry::squared_distance;
use crate::kernels::Quad;

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

    /// The labels and, for kernels that keep them, per-point bounds valid for the centres
    /// of the last assignment: an upper bound on the distance to the own centre and a lower
    /// bound on the distance to every other (distances, not squared).
    fn into_labels_and_bounds(self) -> (Vec<usize>, Option<Vec<(f64, f64)>>)
    where
        Self: Sized,
    {
        (self.into_labels(), None)
    }
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

/// [`nearest`], and also the second smallest squared distance (∞ when k = 1): the reference
/// the grouped and the blocked kernels of Hamerly's pass are tested against.
#[cfg_attr(not(test), allow(dead_code, reason = "the reference of the tests"))]
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

/// Centres per group of the across-centres kernels (one AVX2 vector of f64).
pub(crate) const LANES: usize = 4;

/// The largest dimension for which the assignment kernels compute four centres at once
/// (below); above it one distance already fills the vectors.
pub(crate) const MAX_GROUPED_DIM: usize = 16;

/// The centres transposed into groups of [`LANES`]: coordinate f of centre g·4 + l is
/// `values[(g·d + f)·4 + l]`, and the lanes past the last centre hold NaN, which no
/// comparison ever prefers. At small d a distance is too short to fill a vector, so the
/// kernels compute the distances from one point to four centres side by side instead.
#[derive(Debug, Default)]
pub(crate) struct CentreGroups {
    values: Vec<f64>,
}

impl CentreGroups {
    pub(crate) fn new(centres: &[f64], dim: usize) -> Self {
        let n_groups = (centres.len() / dim).div_ceil(LANES);
        let mut values = vec![f64::NAN; n_groups * dim * LANES];
        for (j, centre) in centres.chunks_exact(dim).enumerate() {
            let (group, lane) = (j / LANES, j % LANES);
            for (f, &c) in centre.iter().enumerate() {
                values[(group * dim + f) * LANES + lane] = c;
            }
        }
        Self { values }
    }

    /// The groups, each `dim` × [`LANES`] values (coordinate-major, see above).
    pub(crate) fn groups(&self, dim: usize) -> std::slice::ChunksExact<'_, f64> {
        self.values.chunks_exact(dim * LANES)
    }
}

/// The squared distances from `point` to the four centres of `group`, each with the
/// arithmetic of [`squared_distance`] (coordinate f goes to partial sum f mod 4 while four
/// coordinates are left, the rest to a tail; then (s₀ + s₁) + (s₂ + s₃) + tail), so each
/// lane holds the very bits `squared_distance` returns for that centre.
#[inline(always)]
pub(crate) fn group_distances<Q: Quad, const D: usize>(q: Q, point: &[f64], group: &[f64]) -> Q::V {
    let point = &point[..D];
    let group = &group[..D * LANES];
    let full = D - D % 4;
    let zero = q.splat(0.0);
    let mut partial = [zero; 4];
    for f in 0..full {
        let diff = q.sub(q.splat(point[f]), q.load(group_lane(group, f)));
        partial[f % 4] = q.add(partial[f % 4], q.mul(diff, diff));
    }
    let mut tail = zero;
    for f in full..D {
        let diff = q.sub(q.splat(point[f]), q.load(group_lane(group, f)));
        tail = q.add(tail, q.mul(diff, diff));
    }
    q.add(
        q.add(q.add(partial[0], partial[1]), q.add(partial[2], partial[3])),
        tail,
    )
}

/// Coordinate f of the four centres of a group. (A function, not a closure: closures are
/// not compiled for the instruction set of the kernel that contains them.)
#[inline(always)]
fn group_lane(group: &[f64], f: usize) -> &[f64; LANES] {
    group[f * LANES..(f + 1) * LANES]
        .try_into()
        .expect("invariant: a group holds four lanes per coordinate")
}

/// The lane holding the nearest centre: the smallest lane minimum, ties to the lowest
/// centre index (lane l saw centres l, l + 4, …, each in order).
#[inline(always)]
fn winning_lane(best: &[f64; LANES], best_index: &[f64; LANES]) -> usize {
    let mut winner = 0;
    for lane in 1..LANES {
        if best[lane] < best[winner]
            || (best[lane] == best[winner] && best_index[lane] < best_index[winner])
        {
            winner = lane;
        }
    }
    winner
}

/// [`nearest_two`] for a compile-time dimension D ≥ 1, on grouped centres: the same label
/// (ties: the lowest index) and the same two distances, bit for bit.
#[inline(always)]
pub(crate) fn nearest_two_grouped<Q: Quad, const D: usize>(
    q: Q,
    point: &[f64],
    groups: &CentreGroups,
) -> (usize, f64, f64) {
    let (best, second, best_index) = scan_groups::<Q, D, true>(q, point, groups);
    let winner = winning_lane(&best, &best_index);
    // The second smallest distance overall: the other lanes' minima and every lane's second.
    let mut runner_up = second[winner];
    for lane in 0..LANES {
        if lane != winner && best[lane] < runner_up {
            runner_up = best[lane];
        }
        if second[lane] < runner_up {
            runner_up = second[lane];
        }
    }
    (lane_index(best_index[winner]), best[winner], runner_up)
}

/// [`nearest`]'s label for a compile-time dimension D ≥ 1, on grouped centres.
#[inline(always)]
pub(crate) fn nearest_grouped<Q: Quad, const D: usize>(
    q: Q,
    point: &[f64],
    groups: &CentreGroups,
) -> usize {
    let (best, _, best_index) = scan_groups::<Q, D, false>(q, point, groups);
    lane_index(best_index[winning_lane(&best, &best_index)])
}

/// Every lane's smallest distance from `point` to the grouped centres, its centre's index,
/// and (with `SECOND`; else infinite) its second smallest distance. A compile-time flag, so
/// that the label alone costs no more than it did before the second distance was kept.
#[inline(always)]
fn scan_groups<Q: Quad, const D: usize, const SECOND: bool>(
    q: Q,
    point: &[f64],
    groups: &CentreGroups,
) -> ([f64; LANES], [f64; LANES], [f64; LANES]) {
    let mut best = q.splat(f64::INFINITY);
    let mut second = best;
    let mut best_index = q.splat(0.0);
    // Centre indices as f64 (exact below 2^53), so that they travel in the same vectors.
    let mut index = q.load(&[0.0, 1.0, 2.0, 3.0]);
    let step = q.splat(LANES as f64);
    for group in groups.values.chunks_exact(D * LANES) {
        let distance = group_distances::<Q, D>(q, point, group);
        let closer = q.lt(distance, best);
        if SECOND {
            // The new second smallest is min(second, max(distance, best)), written with the
            // comparisons of the one-centre-at-a-time kernel.
            let larger = q.select(closer, best, distance);
            second = q.select(q.lt(larger, second), larger, second);
        }
        best = q.select(closer, distance, best);
        best_index = q.select(closer, index, best_index);
        index = q.add(index, step);
    }
    (q.to_array(best), q.to_array(second), q.to_array(best_index))
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

/// The coordinates of four consecutive points (`rows`: 4·D values) for a compile-time
/// dimension D ≥ 1, feature by feature: lane l of entry f is coordinate f of point l.
#[inline(always)]
pub(crate) fn lanes_of_four<Q: Quad, const D: usize>(q: Q, rows: &[f64]) -> [Q::V; D] {
    let rows = &rows[..LANES * D];
    let mut coordinates = [q.splat(0.0); D];
    for (f, coordinate) in coordinates.iter_mut().enumerate() {
        *coordinate = q.load(&[rows[f], rows[D + f], rows[2 * D + f], rows[3 * D + f]]);
    }
    coordinates
}

/// The squared distances of four points (from [`lanes_of_four`]) to `centre`, each with the
/// arithmetic of [`squared_distance`] (the same partial sums, added in the same order), so
/// every lane holds the bits the scalar function gives.
#[inline(always)]
pub(crate) fn distances_of_four<Q: Quad, const D: usize>(
    q: Q,
    coordinates: &[Q::V; D],
    centre: &[f64],
) -> Q::V {
    let centre = &centre[..D];
    let zero = q.splat(0.0);
    let full = D - D % 4;
    let mut partial = [zero; 4];
    for f in 0..full {
        let diff = q.sub(coordinates[f], q.splat(centre[f]));
        partial[f % 4] = q.add(partial[f % 4], q.mul(diff, diff));
    }
    let mut tail = zero;
    for f in full..D {
        let diff = q.sub(coordinates[f], q.splat(centre[f]));
        tail = q.add(tail, q.mul(diff, diff));
    }
    q.add(
        q.add(q.add(partial[0], partial[1]), q.add(partial[2], partial[3])),
        tail,
    )
}

/// The labels of four consecutive points (`rows`: 4·D values) for a compile-time dimension
/// D ≥ 1, the points side by side in the lanes: every distance has the arithmetic of
/// [`squared_distance`] and the centres are scanned in order with a strict comparison, so
/// each lane gets [`nearest`]'s label (ties: the lowest index) without any reduction across
/// lanes.
#[inline(always)]
fn nearest_of_four<Q: Quad, const D: usize>(q: Q, rows: &[f64], centres: &[f64]) -> [f64; LANES] {
    let coordinates = lanes_of_four::<Q, D>(q, rows);
    let zero = q.splat(0.0);
    let mut best = q.splat(f64::INFINITY);
    let mut best_index = zero;
    let mut index = zero;
    let one = q.splat(1.0);
    for centre in centres.chunks_exact(D) {
        let distance = distances_of_four::<Q, D>(q, &coordinates, centre);
        let closer = q.lt(distance, best);
        best = q.select(closer, distance, best);
        best_index = q.select(closer, index, best_index);
        index = q.add(index, one);
    }
    q.to_array(best_index)
}

quad_dispatched!(lloyd_chunk_fast = lloyd_chunk(
    points: &'a WeightedPoints<'b>,
    centres: &'a [f64],
    groups: &'a CentreGroups,
    first: usize,
    labels: &'a mut [usize],
    partial: &'a mut ClusterSums,
));

#[inline(always)]
fn lloyd_chunk<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    centres: &[f64],
    groups: &CentreGroups,
    first: usize,
    labels: &mut [usize],
    partial: &mut ClusterSums,
) {
    partial.clear();
    if D == 0 {
        for (offset, label) in labels.iter_mut().enumerate() {
            let i = first + offset;
            let point = points.row(i);
            let best = nearest::<D>(point, centres, points.dim).0;
            let weight = points.weight(i);
            if *label != best {
                *label = best;
                partial.n_changed += 1;
                partial.changed_mass += weight;
            }
            partial.add(best, point, weight);
        }
        return;
    }
    // A compile-time dimension: the rows, the weights and the cluster sums are sliced once
    // per chunk and every per-point loop unrolls.
    let values = &points.values[first * D..(first + labels.len()) * D];
    match points.weights {
        Weights::Unit => {
            lloyd_blocks::<Q, D, false>(quad, values, &[], centres, groups, labels, partial);
        }
        Weights::Given(weights) => {
            let weights = &weights[first..first + labels.len()];
            lloyd_blocks::<Q, D, true>(quad, values, weights, centres, groups, labels, partial);
        }
    }
}

/// The body of [`lloyd_chunk`] at a compile-time dimension, compiled apart for unit weights
/// (`WEIGHTED` false: every weight is 1, and w·x is x) and for given weights.
#[inline(always)]
fn lloyd_blocks<Q: Quad, const D: usize, const WEIGHTED: bool>(
    quad: Q,
    values: &[f64],
    weights: &[f64],
    centres: &[f64],
    groups: &CentreGroups,
    labels: &mut [usize],
    partial: &mut ClusterSums,
) {
    let n_full = labels.len() - labels.len() % LANES;
    let (labels, last_labels) = labels.split_at_mut(n_full);
    let (values, last_values) = values.split_at(n_full * D);
    for (block, (labels, rows)) in labels
        .chunks_exact_mut(LANES)
        .zip(values.chunks_exact(LANES * D))
        .enumerate()
    {
        let nearest = nearest_of_four::<Q, D>(quad, rows, centres);
        for (lane, (label, point)) in labels.iter_mut().zip(rows.chunks_exact(D)).enumerate() {
            let best = lane_index(nearest[lane]);
            record::<D>(
                partial,
                label,
                best,
                point,
                weight::<WEIGHTED>(weights, block * LANES + lane),
            );
        }
    }
    for (offset, (label, point)) in last_labels
        .iter_mut()
        .zip(last_values.chunks_exact(D))
        .enumerate()
    {
        let best = nearest_grouped::<Q, D>(quad, point, groups);
        record::<D>(
            partial,
            label,
            best,
            point,
            weight::<WEIGHTED>(weights, n_full + offset),
        );
    }
}

/// The weight of point `index` of a chunk (1 without weights). A function, not a closure, so
/// that it is compiled for the instruction set of the kernel.
#[inline(always)]
fn weight<const WEIGHTED: bool>(weights: &[f64], index: usize) -> f64 {
    if WEIGHTED { weights[index] } else { 1.0 }
}

/// A centre index carried in an f64 lane (a whole number below 2^52) as a `usize`. Adding
/// 2^52 puts the number, exactly, into the low bits of the significand, so the index is the
/// difference of two bit patterns: three instructions instead of the saturating `as`
/// conversion's dozen.
#[inline(always)]
pub(crate) fn lane_index(index: f64) -> usize {
    const TWO_TO_52: f64 = 4_503_599_627_370_496.0;
    debug_assert!((0.0..TWO_TO_52).contains(&index) && index.fract() == 0.0);
    (index + TWO_TO_52)
        .to_bits()
        .wrapping_sub(TWO_TO_52.to_bits()) as usize
}

/// Sets a point's label to `best`, counting the change, and adds it to the cluster sums.
#[inline(always)]
fn record<const D: usize>(
    partial: &mut ClusterSums,
    label: &mut usize,
    best: usize,
    point: &[f64],
    weight: f64,
) {
    if *label != best {
        *label = best;
        partial.n_changed += 1;
        partial.changed_mass += weight;
    }
    partial.add_row::<D>(best, point, weight);
}

impl Assigner for PlainLloyd {
    fn assign(&mut self, points: &WeightedPoints<'_>, centres: &[f64], totals: &mut ClusterSums) {
        let (n_clusters, dim) = (centres.len() / points.dim, points.dim);
        let groups = if dim <= MAX_GROUPED_DIM {
            CentreGroups::new(centres, dim)
        } else {
            CentreGroups::default()
        };
        totals.clear();
        fold_chunks(
            &mut self.labels,
            &mut self.scratch,
            || ClusterSums::new(n_clusters, dim),
            |first, labels, partial| {
                with_const_dim!(
                    dim,
                    lloyd_chunk_fast(points, centres, &groups, first, labels, partial)
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
    use crate::kernels::Portable;
    use crate::rng::StreamRng;

    /// Every index a lane can carry comes back exactly, up to the largest below 2^52.
    #[test]
    fn lane_index_is_exact() {
        for index in (0..5000).chain([1 << 31, (1 << 40) + 7, (1 << 52) - 1]) {
            assert_eq!(lane_index(index as f64), index);
        }
    }

    fn lloyd_chunk_portable<const D: usize>(
        points: &WeightedPoints<'_>,
        centres: &[f64],
        groups: &CentreGroups,
        first: usize,
        labels: &mut [usize],
        partial: &mut ClusterSums,
    ) {
        lloyd_chunk::<Portable, D>(Portable, points, centres, groups, first, labels, partial);
    }

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
                let groups = CentreGroups::new(&centres, dim);
                if dispatch {
                    with_const_dim!(
                        dim,
                        lloyd_chunk_fast(&points, &centres, &groups, 0, &mut labels, &mut sums)
                    );
                } else {
                    with_const_dim!(
                        dim,
                        lloyd_chunk_portable(&points, &centres, &groups, 0, &mut labels, &mut sums)
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

    /// The across-centres kernels return the label, the nearest and the second nearest
    /// distance of the one-centre-at-a-time kernel, bit for bit, at every grouped dimension,
    /// for k a multiple of four and not, with exact ties (repeated centres, a point on a
    /// centre) that must go to the lowest index.
    #[test]
    fn grouped_kernels_match_one_centre_at_a_time() {
        fn check<const D: usize>(rng: &mut StreamRng) {
            for n_clusters in [1, 3, 4, 5, 8, 9, 20] {
                let mut centres: Vec<f64> = (0..n_clusters * D)
                    .map(|_| 3.0 * rng.standard_normal())
                    .collect();
                if n_clusters >= 5 {
                    // Centre 4 repeats centre 1 (different lanes, later index).
                    let repeated = centres[D..2 * D].to_vec();
                    centres[4 * D..5 * D].copy_from_slice(&repeated);
                }
                let groups = CentreGroups::new(&centres, D);
                let mut points: Vec<Vec<f64>> = (0..400)
                    .map(|_| (0..D).map(|_| 3.0 * rng.standard_normal()).collect())
                    .collect();
                // Points on a repeated centre (a tie between centres 1 and 4) and on
                // centre 0, inside the blocks of four as well as alone.
                for _ in 0..3 {
                    points.push(centres[D.min(centres.len() - D)..][..D].to_vec());
                    points.push(centres[..D].to_vec());
                }
                for block in points.chunks_exact(LANES) {
                    let rows: Vec<f64> = block.iter().flatten().copied().collect();
                    let labels = nearest_of_four::<_, D>(Portable, &rows, &centres);
                    for (point, label) in block.iter().zip(labels) {
                        assert_eq!(label as usize, nearest::<D>(point, &centres, D).0);
                    }
                }
                for point in &points {
                    let (label, best, second) = nearest_two::<D>(point, &centres, D);
                    let grouped = nearest_two_grouped::<_, D>(Portable, point, &groups);
                    assert_eq!(grouped.0, label, "d = {D}, k = {n_clusters}");
                    assert_eq!(grouped.1.to_bits(), best.to_bits());
                    assert_eq!(grouped.2.to_bits(), second.to_bits());
                    assert_eq!(nearest_grouped::<_, D>(Portable, point, &groups), label);
                }
            }
        }
        let mut rng = StreamRng::seed_from(7);
        check::<1>(&mut rng);
        check::<2>(&mut rng);
        check::<3>(&mut rng);
        check::<4>(&mut rng);
        check::<5>(&mut rng);
        check::<7>(&mut rng);
        check::<10>(&mut rng);
        check::<16>(&mut rng);
    }
}
