//! Hamerly's bounds (Hamerly 2010, "Making k-means even faster").
//!
//! For every point x with label a, keep an upper bound u ≥ ‖x − c_a‖ and a lower bound
//! l ≤ min_{j≠a} ‖x − c_j‖ (distances, not squared). With s(a) = ½ min_{j≠a} ‖c_a − c_j‖,
//! the triangle inequality gives, for every j ≠ a,
//!
//! - ‖x − c_j‖ ≥ ‖c_a − c_j‖ − ‖x − c_a‖ ≥ 2s(a) − u > u if u < s(a), and
//! - ‖x − c_j‖ ≥ l > u if u < l,
//!
//! so when u < max(s(a), l) the label cannot change and the point costs no distance at all.
//! Otherwise u is first tightened to the exact ‖x − c_a‖ and the test repeated; only then
//! are all k distances computed, which also resets u and l. When the centres move by
//! p(j) = ‖c_j' − c_j‖, the bounds stay valid as u ← u + p(a) and l ← l − max_{j≠a} p(j).
//!
//! **Exactness in floating point.** The bounds are kept conservative: every computed
//! distance, movement and bound is widened by a relative slack δ = (d + 8)·ε_mach that
//! exceeds the rounding error of a d-term squared distance, its square root and one
//! addition (about (d/2 + 3)·ε_mach/2) several times over, upper bounds upward and lower
//! bounds downward. The inequalities are strict, so a point at an exact tie is always
//! recomputed and goes to the lowest index, as in plain Lloyd. A skipped point therefore
//! keeps the label that is nearest in exact arithmetic; plain Lloyd, which compares rounded
//! distances, can only disagree where the two nearest distances are within rounding of
//! each other. When a point is recomputed it uses the same distance function as plain
//! Lloyd, and gets the same label.

use super::assign::{Assigner, CentreGroups, MAX_GROUPED_DIM, nearest_two_grouped};
use super::chunked::{ClusterSums, WeightedPoints, fold_chunks, quad_dispatched, with_const_dim};
use super::expanded;
use crate::geometry::{squared_distance, squared_norm};
use crate::kernels::Quad;
use rayon::prelude::*;

/// A point's label and its distance bounds.
#[derive(Clone, Copy, Debug)]
struct Bounded {
    label: usize,
    /// Upper bound on the distance to the assigned centre.
    upper: f64,
    /// Lower bound on the distance to every other centre.
    lower: f64,
}

/// Hamerly's kernel: labels, bounds, and the centre movements not yet applied to the bounds
/// (they are applied lazily, point by point, in the next assignment pass, so the update
/// costs no extra pass over the data).
#[derive(Debug)]
pub(crate) struct Hamerly {
    points: Vec<Bounded>,
    /// Upper bounds on how far each centre moved since the last assignment.
    movement: Vec<f64>,
    /// Whether the points have been assigned once (before that, bounds mean nothing).
    assigned: bool,
    /// The relative slack δ that makes the bounds conservative.
    slack: f64,
    /// ‖x‖² of every point at d > [`MAX_GROUPED_DIM`] (computed in the first pass), for the
    /// expanded distances: the points do not move, so neither do their norms.
    point_norms: Vec<f64>,
    scratch: Vec<ClusterSums>,
}

impl Hamerly {
    pub(crate) fn new(n_points: usize, n_clusters: usize, dim: usize) -> Self {
        Self {
            points: vec![
                Bounded {
                    label: usize::MAX,
                    upper: f64::INFINITY,
                    lower: 0.0,
                };
                n_points
            ],
            movement: vec![0.0; n_clusters],
            assigned: false,
            slack: (dim as f64 + 8.0) * f64::EPSILON,
            point_norms: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// What every point of a pass needs to know about the centres.
struct CentreInfo<'a> {
    centres: &'a [f64],
    /// The centres in groups of four, for the kernels at d ≤ `MAX_GROUPED_DIM`.
    groups: CentreGroups,
    /// s(j), a lower bound on half the distance from centre j to its nearest other centre.
    half_gap: Vec<f64>,
    /// The movement of each centre, widened.
    movement: &'a [f64],
    /// The centre that moved most, and the two largest movements.
    farthest_moved: usize,
    largest_move: f64,
    second_largest_move: f64,
    /// The centres transposed for the expanded distances' products, at large d.
    columns: expanded::CentreColumns,
    /// ‖c_j‖² and (widened) max_j ‖c_j‖², for the expanded distances at large d.
    squared_norms: Vec<f64>,
    /// ‖x‖² of every point, at large d.
    point_norms: &'a [f64],
    largest_squared_norm: f64,
    /// E / (‖x‖ + max‖c‖)², the bound on the error of an expanded distance.
    expansion_error: f64,
    /// Whether the bounds are meaningful (false on the first pass).
    assigned: bool,
    slack: f64,
}

impl CentreInfo<'_> {
    #[inline(always)]
    fn up(&self, value: f64) -> f64 {
        value * (1.0 + self.slack)
    }

    #[inline(always)]
    fn down(&self, value: f64) -> f64 {
        value * (1.0 - self.slack)
    }

    /// Applies the centre movements since the last pass to a point's bounds (u ← u + p(a),
    /// l ← l − max_{j≠a} p(j), both widened) and returns max(s(a), l), the bound u must stay
    /// under for the label to be kept without a distance. The point must have a label.
    #[inline(always)]
    fn move_bounds(&self, state: &mut Bounded) -> f64 {
        let label = state.label;
        state.upper = self.up(state.upper + self.movement[label]);
        let others_moved = if label == self.farthest_moved {
            self.second_largest_move
        } else {
            self.largest_move
        };
        state.lower = self.down(state.lower - others_moved).max(0.0);
        self.half_gap[label].max(state.lower)
    }
}

quad_dispatched!(hamerly_chunk_fast = hamerly_chunk(
    points: &'a WeightedPoints<'b>,
    info: &'a CentreInfo<'b>,
    first: usize,
    states: &'a mut [Bounded],
    partial: &'a mut ClusterSums,
));

#[inline(always)]
fn hamerly_chunk<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    info: &CentreInfo<'_>,
    first: usize,
    states: &mut [Bounded],
    partial: &mut ClusterSums,
) {
    if D == 0 {
        hamerly_chunk_blocked(quad, points, info, first, states, partial);
        return;
    }
    let dim = D;
    let centre = |j: usize| &info.centres[j * dim..(j + 1) * dim];
    partial.clear();
    for (offset, state) in states.iter_mut().enumerate() {
        let i = first + offset;
        let point = &points.row(i)[..dim];
        let previous = state.label;
        let mut recompute = !info.assigned || previous == usize::MAX;
        if !recompute {
            let bound = info.move_bounds(state);
            if state.upper >= bound {
                state.upper = info.up(squared_distance(point, centre(previous)).sqrt());
                recompute = state.upper >= bound;
            }
        }
        if recompute {
            let best = nearest_two_grouped::<Q, D>(quad, point, &info.groups);
            state.label = best.0;
            state.upper = info.up(best.1.sqrt());
            state.lower = info.down(best.2.sqrt());
        }
        let weight = points.weight(i);
        if state.label != previous {
            partial.n_changed += 1;
            partial.changed_mass += weight;
        }
        partial.add_row::<D>(state.label, point, weight);
    }
}

/// Hamerly's pass over one chunk at d > [`MAX_GROUPED_DIM`]: the points whose bounds fail
/// are gathered and their distances to every centre computed at once in the expanded form
/// (see [`super::expanded`], which bounds its error |a_j − s_j| ≤ E against the value s_j
/// that [`squared_distance`] returns). With a₁ the smallest a_j, a centre with
/// a_j > a₁ + 2E has s_j > a₁ + E ≥ s of the centre of a₁: it is neither the nearest nor tied
/// with it. So the nearest under `squared_distance` (ties: the lowest index), the label plain
/// Lloyd gives, is among the candidates a_j ≤ a₁ + 2E; when there is one, it is that one,
/// and when there are several (a near tie) their s_j are computed and compared as
/// [`super::assign::nearest_two`] compares them.
///
/// The bounds are then u = √(s of the winner) when it was computed, else √(a₁ + E), and
/// l = √ of the smallest of the other candidates' s_j and of a_j − E outside them: valid
/// bounds, widened by the slack as everywhere else. The labels are plain Lloyd's whatever
/// the instruction set or the number of threads; only which points the bounds let skip
/// later may differ, which changes the time, not the run (a skipped point's label is the
/// exact nearest by a margin wider than rounding, so plain Lloyd gives it too).
///
/// Inlined into the dispatched kernel so that the distances and sums around the product are
/// compiled for the same instruction set.
#[inline(always)]
fn hamerly_chunk_blocked<Q: Quad>(
    quad: Q,
    points: &WeightedPoints<'_>,
    info: &CentreInfo<'_>,
    first: usize,
    states: &mut [Bounded],
    partial: &mut ClusterSums,
) {
    let dim = points.dim;
    let n_clusters = info.centres.len() / dim;
    let centre = |j: usize| &info.centres[j * dim..(j + 1) * dim];
    partial.clear();
    let mut pending = Vec::new();
    for (offset, state) in states.iter_mut().enumerate() {
        let previous = state.label;
        if !info.assigned || previous == usize::MAX {
            pending.push(offset);
            continue;
        }
        let bound = info.move_bounds(state);
        if state.upper >= bound {
            let point = points.row(first + offset);
            state.upper = info.up(squared_distance(point, centre(previous)).sqrt());
            if state.upper >= bound {
                pending.push(offset);
            }
        }
    }
    if !pending.is_empty() {
        let rows: Vec<&[f64]> = pending
            .iter()
            .map(|&offset| points.row(first + offset))
            .collect();
        let mut products = Vec::new();
        expanded::products(quad, &rows, &info.columns, &mut products);
        let mut approximate = vec![0.0; n_clusters];
        for ((&offset, &point), products) in pending
            .iter()
            .zip(&rows)
            .zip(products.chunks_exact(info.columns.width()))
        {
            let state = &mut states[offset];
            let previous = state.label;
            let norm = info.point_norms[first + offset];
            let (mut smallest, mut next) = (f64::INFINITY, f64::INFINITY);
            for ((a, &product), &centre_norm) in approximate
                .iter_mut()
                .zip(&products[..n_clusters])
                .zip(&info.squared_norms)
            {
                *a = norm + centre_norm - 2.0 * product;
                let larger = if *a < smallest { smallest } else { *a };
                next = if larger < next { larger } else { next };
                smallest = if *a < smallest { *a } else { smallest };
            }
            let error =
                expanded::error_bound(norm, info.largest_squared_norm, info.expansion_error);
            let within = smallest + 2.0 * error;
            let (label, upper, lower) = if next > within {
                // One candidate: the argument above settles the label without s_j.
                let label = approximate
                    .iter()
                    .position(|&a| a == smallest)
                    .expect("invariant: the smallest value is one of them");
                (label, smallest + error, next - error)
            } else {
                // Exact distances for the candidates, compared in index order as
                // `nearest_two` compares them; the rest bound the second from below.
                let (mut label, mut best, mut second) = (0, f64::INFINITY, f64::INFINITY);
                let mut outside = f64::INFINITY;
                for (j, &a) in approximate.iter().enumerate() {
                    if a > within {
                        outside = outside.min(a - error);
                        continue;
                    }
                    let distance = squared_distance(point, centre(j));
                    let larger = if distance < best { best } else { distance };
                    second = if larger < second { larger } else { second };
                    let closer = distance < best;
                    best = if closer { distance } else { best };
                    label = if closer { j } else { label };
                }
                (label, best, second.min(outside))
            };
            state.label = label;
            state.upper = info.up(upper.sqrt());
            state.lower = info.down(lower.max(0.0).sqrt());
            if label != previous {
                partial.n_changed += 1;
                partial.changed_mass += points.weight(first + offset);
            }
        }
    }
    // The sums in index order, as in every other kernel: the same bits.
    for (offset, state) in states.iter().enumerate() {
        let i = first + offset;
        partial.add(state.label, points.row(i), points.weight(i));
    }
}

impl Assigner for Hamerly {
    fn assign(&mut self, points: &WeightedPoints<'_>, centres: &[f64], totals: &mut ClusterSums) {
        let (n_clusters, dim) = (centres.len() / points.dim, points.dim);
        let (farthest_moved, largest_move, second_largest_move) = two_largest(&self.movement);
        if dim > MAX_GROUPED_DIM && self.point_norms.is_empty() {
            self.point_norms = points.values.par_chunks(dim).map(squared_norm).collect();
        }
        let info = CentreInfo {
            centres,
            groups: if dim <= MAX_GROUPED_DIM {
                CentreGroups::new(centres, dim)
            } else {
                CentreGroups::default()
            },
            half_gap: half_gaps(centres, dim, self.slack),
            columns: if dim > MAX_GROUPED_DIM {
                expanded::CentreColumns::new(centres, dim)
            } else {
                expanded::CentreColumns::default()
            },
            squared_norms: if dim > MAX_GROUPED_DIM {
                centres.chunks_exact(dim).map(squared_norm).collect()
            } else {
                Vec::new()
            },
            largest_squared_norm: centres
                .chunks_exact(dim)
                .map(squared_norm)
                .fold(0.0, f64::max)
                * (1.0 + self.slack),
            point_norms: &self.point_norms,
            expansion_error: expanded::error_scale(dim),
            movement: &self.movement,
            farthest_moved,
            largest_move,
            second_largest_move,
            assigned: self.assigned,
            slack: self.slack,
        };
        totals.clear();
        fold_chunks(
            &mut self.points,
            &mut self.scratch,
            || ClusterSums::new(n_clusters, dim),
            |first, states, partial| {
                with_const_dim!(
                    dim,
                    hamerly_chunk_fast(points, &info, first, states, partial)
                );
            },
            |partial| totals.merge(partial),
        );
        self.movement.fill(0.0);
        self.assigned = true;
    }

    fn label(&self, index: usize) -> usize {
        self.points[index].label
    }

    fn relabel(&mut self, index: usize, label: usize) {
        // The bounds refer to the old label: make the point recompute everything.
        self.points[index] = Bounded {
            label,
            upper: f64::INFINITY,
            lower: 0.0,
        };
    }

    fn centres_moved(&mut self, old: &[f64], new: &[f64]) {
        let dim = old.len() / self.movement.len();
        for (j, movement) in self.movement.iter_mut().enumerate() {
            let range = j * dim..(j + 1) * dim;
            let moved = squared_distance(&old[range.clone()], &new[range]).sqrt();
            *movement = (*movement + moved) * (1.0 + self.slack);
        }
    }

    fn into_labels(self) -> Vec<usize> {
        self.points.into_iter().map(|p| p.label).collect()
    }

    fn into_labels_and_bounds(self) -> (Vec<usize>, Option<Vec<(f64, f64)>>) {
        let bounds = self.points.iter().map(|p| (p.upper, p.lower)).collect();
        (self.into_labels(), Some(bounds))
    }
}

/// The index of the largest value, the largest and the second largest (0 for k = 1).
fn two_largest(values: &[f64]) -> (usize, f64, f64) {
    let mut top = (0, 0.0);
    let mut second = 0.0;
    for (j, &v) in values.iter().enumerate() {
        if v > top.1 {
            second = top.1;
            top = (j, v);
        } else if v > second {
            second = v;
        }
    }
    (top.0, top.1, second)
}

/// s(j) = ½ min_{j'≠j} ‖c_j − c_j'‖ for every centre, widened downward (∞ when k = 1).
fn half_gaps(centres: &[f64], dim: usize, slack: f64) -> Vec<f64> {
    let n_clusters = centres.len() / dim;
    let mut nearest = vec![f64::INFINITY; n_clusters];
    for a in 0..n_clusters {
        for b in a + 1..n_clusters {
            let d2 = squared_distance(
                &centres[a * dim..(a + 1) * dim],
                &centres[b * dim..(b + 1) * dim],
            );
            nearest[a] = nearest[a].min(d2);
            nearest[b] = nearest[b].min(d2);
        }
    }
    nearest
        .into_iter()
        .map(|d2| 0.5 * d2.sqrt() * (1.0 - slack))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Weights;
    use crate::kmeans::assign::{PlainLloyd, nearest_two};
    use crate::rng::StreamRng;

    /// Drives both kernels through centres that move arbitrarily between passes (small
    /// drifts, far jumps, two centres meeting), which Lloyd's own updates would rarely do,
    /// and checks Hamerly's labels and sums against plain Lloyd's at every pass.
    #[test]
    fn bounds_survive_arbitrary_centre_moves() {
        for (dim, n_clusters) in [(1, 3), (2, 6), (5, 4), (20, 7)] {
            let mut rng = StreamRng::seed_from(dim as u64);
            let n = 3000;
            let values: Vec<f64> = (0..n * dim)
                .map(|_| 4.0 * rng.standard_normal() + (rng.index_below(3) as f64) * 6.0)
                .collect();
            let weights: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            let points = WeightedPoints {
                values: &values,
                dim,
                weights: Weights::Given(&weights),
            };
            let mut centres: Vec<f64> = (0..n_clusters * dim)
                .map(|_| 8.0 * rng.standard_normal())
                .collect();
            let mut hamerly = Hamerly::new(n, n_clusters, dim);
            let mut plain = PlainLloyd::new(n);
            let (mut from_hamerly, mut from_plain) = (
                ClusterSums::new(n_clusters, dim),
                ClusterSums::new(n_clusters, dim),
            );
            let mut stable_labels_seen = false;
            for pass in 0..40 {
                hamerly.assign(&points, &centres, &mut from_hamerly);
                plain.assign(&points, &centres, &mut from_plain);
                for i in 0..n {
                    assert_eq!(hamerly.label(i), plain.label(i), "d = {dim}, pass {pass}");
                }
                assert_eq!(from_hamerly.sums, from_plain.sums);
                assert_eq!(from_hamerly.masses, from_plain.masses);
                assert_eq!(from_hamerly.n_changed, from_plain.n_changed);
                assert_eq!(from_hamerly.changed_mass, from_plain.changed_mass);
                stable_labels_seen |= pass > 0 && from_hamerly.n_changed < n;
                let old = centres.clone();
                let scale = match pass % 4 {
                    0 => 0.01,
                    1 => 0.3,
                    2 => 3.0,
                    _ => 0.0,
                };
                for c in &mut centres {
                    *c += scale * rng.standard_normal();
                }
                if pass % 7 == 6 && n_clusters > 1 {
                    // Centre 1 jumps onto centre 0: every point near them is a tie.
                    let first = centres[..dim].to_vec();
                    centres[dim..2 * dim].copy_from_slice(&first);
                }
                hamerly.centres_moved(&old, &centres);
            }
            assert!(stable_labels_seen);
        }
    }

    /// At d > 16 the recomputations go through expanded distances. Far from the origin
    /// (‖x‖ ≈ 1e4·√d against a spread of 1) with points near the midpoint of two centres, the expanded values misorder some of them (checked here, so that the data
    /// can catch a kernel that trusts them); the labels and sums must still be plain
    /// Lloyd's, bit for bit, on every pass.
    #[test]
    fn blocked_recomputations_give_plain_labels_through_cancellation() {
        for dim in [17, 20, 64] {
            let mut rng = StreamRng::seed_from(40 + dim as u64);
            let (n, offset) = (1500, 1e4);
            // Four centres in random directions around the offset; every other point sits
            // at the midpoint of centres 0 and 1, moved along their difference by at most
            // 1e-7 of it (a gap of up to about 14 ulps of ‖x‖² between the two distances).
            let mut centres: Vec<f64> = (0..4 * dim)
                .map(|_| offset + rng.standard_normal())
                .collect();
            let mut values = Vec::with_capacity(n * dim);
            for i in 0..n {
                let shift = 2e-7 * (rng.next_f64() - 0.5);
                for f in 0..dim {
                    let (a, b) = (centres[f], centres[dim + f]);
                    values.push(if i % 2 == 0 {
                        0.5 * (a + b) + shift * (a - b)
                    } else {
                        offset + rng.standard_normal()
                    });
                }
            }
            let points = WeightedPoints {
                values: &values,
                dim,
                weights: Weights::Unit,
            };
            let (products, width) = expanded::products_of(&values, &centres, dim);
            let misordered = values
                .chunks_exact(dim)
                .enumerate()
                .filter(|(i, x)| {
                    let expanded: Vec<f64> = centres
                        .chunks_exact(dim)
                        .enumerate()
                        .map(|(j, c)| {
                            squared_norm(x) + squared_norm(c) - 2.0 * products[i * width + j]
                        })
                        .collect();
                    // Strictly: some other centre's expanded value is below the nearest's.
                    let nearest = nearest_two::<0>(x, &centres, dim).0;
                    expanded.iter().any(|&a| a < expanded[nearest])
                })
                .count();
            assert!(
                misordered > 0,
                "d = {dim}: the data must defeat the expansion"
            );
            let mut hamerly = Hamerly::new(n, 4, dim);
            let mut plain = PlainLloyd::new(n);
            let (mut from_hamerly, mut from_plain) =
                (ClusterSums::new(4, dim), ClusterSums::new(4, dim));
            for pass in 0..6 {
                hamerly.assign(&points, &centres, &mut from_hamerly);
                plain.assign(&points, &centres, &mut from_plain);
                for i in 0..n {
                    assert_eq!(hamerly.label(i), plain.label(i), "d = {dim}, pass {pass}");
                }
                assert_eq!(from_hamerly.sums, from_plain.sums);
                assert_eq!(from_hamerly.n_changed, from_plain.n_changed);
                let old = centres.clone();
                for c in &mut centres {
                    *c += 1e-3 * rng.standard_normal();
                }
                hamerly.centres_moved(&old, &centres);
            }
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(two_largest(&[1.0, 5.0, 3.0, 5.0]), (1, 5.0, 5.0));
        assert_eq!(two_largest(&[2.0]), (0, 2.0, 0.0));
        let gaps = half_gaps(&[0.0, 4.0, 10.0], 1, 0.0);
        assert_eq!(gaps, [2.0, 2.0, 3.0]);
        assert_eq!(half_gaps(&[1.0, 2.0], 2, 0.0), [f64::INFINITY]);
    }
}
