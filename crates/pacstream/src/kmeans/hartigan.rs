//! Hartigan's single-point moves after Lloyd's iterations (Hartigan & Wong 1979).
//!
//! Lloyd's update puts each centre at the mean of its cluster, and its assignment moves a
//! point to the nearest centre *as the centres stand*. That ignores that moving the point
//! moves the two centres too. Counting it exactly: taking a point x of weight w out of
//! cluster a (mass W_a, mean c_a) lowers that cluster's inertia by
//! w·W_a/(W_a − w)·‖x − c_a‖², and adding it to cluster b raises b's by
//! w·W_b/(W_b + w)·‖x − c_b‖². So the move lowers the inertia exactly when
//!
//! W_b/(W_b + w)·‖x − c_b‖² < W_a/(W_a − w)·‖x − c_a‖²,
//!
//! by w times the difference. At a fixed point of Lloyd's iteration a point can still pass
//! this test (its own centre nearest, but by less than the factors), so single-point moves
//! find lower local optima than Lloyd alone: every fixed point of the moves is a fixed point
//! of Lloyd's iteration (with the factors above 1 on the left and below 1 on the right, the
//! own centre is strictly the nearest), not conversely (Telgarsky & Vattani 2010).
//!
//! **The procedure.** Starting from Lloyd's labels, the centres are set to the exact means
//! of their clusters. A *check pass* (parallel over the fixed chunks, read-only) evaluates
//! the test above for every point against every other cluster; if no point has an
//! improving move, Lloyd's result is already a fixed point and nothing changes. Otherwise,
//! *sweeps*: each visits the points in index order; a point whose best move lowers the
//! inertia is moved at once, and the two centres and masses are updated exactly
//! (c_a ← c_a + w(c_a − x)/(W_a − w), c_b ← c_b + w(x − c_b)/(W_b + w)), so that the next
//! point is tested against the centres as they now are. After each sweep the centres are
//! recomputed as the exact means of the clusters (summed over the fixed chunks in order),
//! which removes the rounding the incremental updates gather. The sweeps stop when one
//! makes no move (a fixed point), or after `max_sweeps`.
//!
//! **Bounds.** A sweep does not compute every distance. Each point keeps an upper bound u
//! on the distance to its own centre and a lower bound l on the distance to every other
//! centre (exact when last evaluated), kept valid as the centres move by the triangle
//! inequality: each centre's drift δ_j (the summed lengths of its moves and of its
//! recomputation) is added to the u of its points and the largest drift taken from every l
//! (Hamerly's bounds, with moves one point at a time). The factor of any other cluster is at
//! least m/(m + w) for the smallest mass m. A point for which even these bounds admit no
//! improving move is skipped; the test carries a relative margin of 1e-9 against rounding
//! in the bounds. A point evaluated in the middle of a sweep, after some centres moved, has
//! its l lowered by the *total* drift of the rest of the sweep (any one centre moves at most
//! that much), since which centre moves is not known in advance.
//!
//! Above d = 16 a point the bounds do not skip is first screened with distances in the
//! expanded form from one small matrix product per block of points, whose error is bounded
//! (`ExpandedScreen`): only a point that form cannot prove has no improving move is
//! evaluated exactly. The moves are the same, bit for bit.
//!
//! A move never empties a cluster: a point that is the only point of positive weight of its
//! cluster stays. (A cluster that is already empty takes the first point whose move lowers
//! the inertia: its factor is 0.) Points of weight 0 move no centre and change no inertia;
//! they are labelled with their nearest final centre at the end.
//!
//! Everything runs in a fixed order (the sweeps sequentially, the passes over fixed chunks
//! folded in order), so the result is the same bit for bit on any number of threads.

use rayon::prelude::*;

use super::assign::{LANES, MAX_GROUPED_DIM, distances_of_four, lanes_of_four, nearest};
use super::chunked::{
    CHUNK, WeightedPoints, cluster_sums, dispatched, quad_dispatched, with_const_dim,
};
use super::expanded;
use crate::data::Weights;
use crate::geometry::{squared_distance, squared_norm};
use crate::kernels::Quad;

/// Relative margin of the skipping test against rounding in the bounds themselves.
const BOUND_MARGIN: f64 = 1e-9;

/// The outcome of the single-point moves.
#[derive(Debug)]
pub(crate) struct HartiganRun {
    /// Row-major centres: the means of the final clusters.
    pub(crate) centres: Vec<f64>,
    pub(crate) labels: Vec<usize>,
    /// Points moved, over every sweep.
    pub(crate) moves: usize,
    /// Sweeps run (0 when Lloyd's labels were already a fixed point of the moves).
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the tests"))]
    pub(crate) sweeps: usize,
    /// Whether the labels are a fixed point of the moves (false only when `max_sweeps`
    /// stopped the sweeps).
    pub(crate) converged: bool,
    /// Σ over the moves of the inertia each lowered, w·(W_a/(W_a − w)‖x − c_a‖² −
    /// W_b/(W_b + w)‖x − c_b‖²), as evaluated when the move was made.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the tests"))]
    pub(crate) gain: f64,
}

/// The bounds of one point (see the module docs), relative to the start of the current
/// sweep: its own centre is at most `own` + δ_own away, every other at least
/// `other` − (the largest drift) or, when `refreshed`, `other` − (the total drift).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    own: f64,
    other: f64,
    refreshed: bool,
}

impl Bounds {
    /// Bounds that rule nothing out (a point that just moved).
    const UNKNOWN: Bounds = Bounds {
        own: f64::INFINITY,
        other: f64::NEG_INFINITY,
        refreshed: false,
    };
}

/// The clusters as the moves change them, and how far each centre has drifted since the
/// current sweep began.
struct Clusters {
    /// Row-major centres, k × d.
    centres: Vec<f64>,
    masses: Vec<f64>,
    /// Points of positive weight per cluster (a move never takes the last one).
    counts: Vec<usize>,
    drift: Vec<f64>,
    max_drift: f64,
    total_drift: f64,
    /// Whether the sweeps skip points by their bounds.
    prune: bool,
}

impl Clusters {
    /// The smallest mass, which bounds every other cluster's gain factor from below.
    fn min_mass(&self) -> f64 {
        self.masses.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Runs single-point moves from `labels` (any labelling; the centres start at the means of
/// its clusters, `centres` giving the position of a cluster without mass). `known`, when
/// given, holds per point an upper bound on the distance to its own centre and a lower
/// bound on the distance to every other, valid for `centres` (Hamerly's bounds at the end
/// of Lloyd's run): the first sweep then starts from them instead of from a check pass.
pub(crate) fn hartigan(
    points: &WeightedPoints<'_>,
    centres: Vec<f64>,
    labels: Vec<usize>,
    known: Option<Vec<(f64, f64)>>,
    max_sweeps: usize,
) -> HartiganRun {
    hartigan_with(points, centres, labels, known, max_sweeps, true)
}

/// [`hartigan`], with the skipping test on or off (off: every point of every sweep is
/// evaluated exactly; the tests compare the two).
fn hartigan_with(
    points: &WeightedPoints<'_>,
    centres: Vec<f64>,
    mut labels: Vec<usize>,
    known: Option<Vec<(f64, f64)>>,
    max_sweeps: usize,
    prune: bool,
) -> HartiganRun {
    let dim = points.dim;
    let n_clusters = centres.len() / dim;
    let totals = cluster_sums(points, |i| labels[i], n_clusters);
    let counts = match points.weights {
        // A mass of unit weights is a sum of ones, exact below 2⁵³: the count itself, without
        // a sequential pass over the labels.
        Weights::Unit => totals.masses.iter().map(|&mass| mass as usize).collect(),
        Weights::Given(_) => {
            let mut counts = vec![0; n_clusters];
            for (i, &label) in labels.iter().enumerate() {
                counts[label] += usize::from(points.weight(i) > 0.0);
            }
            counts
        }
    };
    let mut clusters = Clusters {
        centres,
        masses: totals.masses.clone(),
        counts,
        drift: vec![0.0; n_clusters],
        max_drift: 0.0,
        total_drift: 0.0,
        prune,
    };
    // Written in parallel, once: a fresh buffer's pages fault at their first write (24 bytes
    // a point: 24 MB for 10⁶ points), which the threads then share.
    let mut bounds = Vec::with_capacity(points.n_points());
    let (mut moves, mut sweeps, mut gain) = (0, 0, 0.0);
    let mut converged = false;
    if let Some(known) = known {
        // From the given centres to the means: a jump each bound must absorb.
        for (j, drift) in clusters.drift.iter_mut().enumerate() {
            let range = j * dim..(j + 1) * dim;
            let mean: Vec<f64> = totals.sums[range.clone()]
                .iter()
                .map(|s| s / totals.masses[j])
                .collect();
            if totals.masses[j] > 0.0 {
                *drift = squared_distance(&mean, &clusters.centres[range]).sqrt();
            }
        }
        clusters.max_drift = clusters.drift.iter().copied().fold(0.0, f64::max);
        clusters.centres = totals.means(&clusters.centres);
        let (drift, max_drift) = (&clusters.drift, clusters.max_drift);
        bounds.par_extend(known.par_iter().zip(labels.par_iter()).map(
            |(&(own, other), &label)| Bounds {
                own: own + drift[label],
                other: other - max_drift,
                refreshed: false,
            },
        ));
    } else {
        bounds.par_extend(rayon::iter::repeat_n(Bounds::UNKNOWN, points.n_points()));
        clusters.centres = totals.means(&clusters.centres);
        let min_mass = clusters.min_mass();
        let factors =
            UnitFactors::new(&clusters, min_mass, matches!(points.weights, Weights::Unit));
        let n_movable = ordered_count(bounds.par_chunks_mut(CHUNK).enumerate().map(
            |(chunk, bounds)| {
                with_const_dim!(
                    dim,
                    check_chunk_fast(points, &clusters, &factors, &labels, chunk * CHUNK, bounds)
                )
            },
        ));
        converged = n_movable == 0;
    }
    // Above the grouped dimensions the sweeps screen points in the expanded form
    // ([`ExpandedScreen`]), which needs every ‖x‖²; the exhaustive sweeps of the tests
    // (`prune` off) stay the plain reference.
    let expanded_norms: Vec<f64> = if prune && dim > MAX_GROUPED_DIM && !converged {
        points.values.par_chunks(dim).map(squared_norm).collect()
    } else {
        Vec::new()
    };
    while !converged && sweeps < max_sweeps {
        sweeps += 1;
        clusters.drift.fill(0.0);
        clusters.max_drift = 0.0;
        clusters.total_drift = 0.0;
        let (swept, swept_gain) = if expanded_norms.is_empty() {
            with_const_dim!(
                dim,
                sweep_fast(points, &mut clusters, &mut labels, &mut bounds)
            )
        } else {
            sweep_expanded_fast::<0>(
                points,
                &mut clusters,
                &mut labels,
                &mut bounds,
                &expanded_norms,
            )
        };
        moves += swept;
        gain += swept_gain;
        converged = swept == 0;
        if swept > 0 {
            recentre(points, &mut clusters, &labels);
            fold_bounds(&mut bounds, &labels, &clusters);
        }
    }
    // Points of weight 0 followed no one; give them their nearest centre.
    if matches!(points.weights, Weights::Given(_)) {
        for (i, label) in labels.iter_mut().enumerate() {
            if points.weight(i) == 0.0 {
                *label = nearest::<0>(points.row(i), &clusters.centres, dim).0;
            }
        }
    }
    HartiganRun {
        centres: clusters.centres,
        labels,
        moves,
        sweeps,
        converged,
        gain,
    }
}

/// Replaces the incrementally updated centres by the exact means of the clusters, adding
/// the distance each centre jumps to its drift.
fn recentre(points: &WeightedPoints<'_>, clusters: &mut Clusters, labels: &[usize]) {
    let dim = points.dim;
    let totals = cluster_sums(points, |i| labels[i], clusters.masses.len());
    let means = totals.means(&clusters.centres);
    for (j, drift) in clusters.drift.iter_mut().enumerate() {
        let range = j * dim..(j + 1) * dim;
        let jump = squared_distance(&means[range.clone()], &clusters.centres[range]).sqrt();
        *drift += jump;
        clusters.total_drift += jump;
    }
    clusters.max_drift = clusters.drift.iter().copied().fold(0.0, f64::max);
    clusters.centres = means;
    clusters.masses = totals.masses;
}

/// Makes every point's bounds relative to the state at the end of the sweep (the start of
/// the next one).
fn fold_bounds(bounds: &mut [Bounds], labels: &[usize], clusters: &Clusters) {
    bounds
        .par_iter_mut()
        .zip(labels.par_iter())
        .for_each(|(bound, &label)| {
            let others = if bound.refreshed {
                clusters.total_drift
            } else {
                clusters.max_drift
            };
            *bound = Bounds {
                own: bound.own + clusters.drift[label],
                other: bound.other - others,
                refreshed: false,
            };
        });
}

/// Sums counts in chunk order.
fn ordered_count(partials: impl IndexedParallelIterator<Item = usize>) -> usize {
    partials.collect::<Vec<_>>().iter().sum()
}

/// W/(W + w): the factor of a cluster of mass W gaining a point of weight w.
#[inline(always)]
fn gain_factor(mass: f64, weight: f64) -> f64 {
    mass / (mass + weight)
}

/// For point x (weight w, in cluster `own`): the squared distance to its own centre; the
/// other cluster whose gain of x adds the least inertia, W_b/(W_b + w)·‖x − c_b‖² (ties:
/// the lowest index), with that cost; and the smallest squared distance to another centre.
/// `gains`, with unit weights, holds every cluster's W_b/(W_b + 1) (the same bits as
/// computing it here).
#[inline(always)]
fn evaluate<const D: usize>(
    point: &[f64],
    weight: f64,
    own: usize,
    clusters: &Clusters,
    dim: usize,
    gains: Option<&[f64]>,
) -> (f64, usize, f64, f64) {
    let dim = if D == 0 { dim } else { D };
    let point = &point[..dim];
    let (mut own_distance, mut best, mut best_cost, mut nearest_other) =
        (0.0, usize::MAX, f64::INFINITY, f64::INFINITY);
    for (j, centre) in clusters.centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(point, &centre[..dim]);
        if j == own {
            own_distance = distance;
            continue;
        }
        let factor = match gains {
            Some(gains) => gains[j],
            None => gain_factor(clusters.masses[j], weight),
        };
        let cost = factor * distance;
        if cost < best_cost {
            best_cost = cost;
            best = j;
        }
        nearest_other = nearest_other.min(distance);
    }
    (own_distance, best, best_cost, nearest_other)
}

/// Whether a point of weight w may leave cluster `own` at all (it has weight, and it is
/// not the last point of positive weight there), and if so the factor W_a/(W_a − w).
#[inline(always)]
fn leave_factor(clusters: &Clusters, own: usize, weight: f64) -> Option<f64> {
    (weight > 0.0 && clusters.counts[own] > 1)
        .then(|| clusters.masses[own] / (clusters.masses[own] - weight))
}

quad_dispatched!(check_chunk_fast = check_chunk(
    points: &'a WeightedPoints<'b>,
    clusters: &'a Clusters,
    factors: &'a UnitFactors,
    labels: &'a [usize],
    first: usize,
    bounds: &'a mut [Bounds],
) -> usize);

/// The exact test for the points of one chunk: sets their bounds and returns how many
/// have an improving move.
///
/// With unit weights and a compile-time dimension, four points go side by side in the
/// lanes ([`lanes_of_four`], [`distances_of_four`]: each distance the bits of
/// [`squared_distance`]). Only the values of the least cost and of the nearest other
/// distance are needed, not which cluster gives them, so a running minimum replaces the
/// scalar scan's strict comparison (the same value whichever of equal costs comes first),
/// and the own cluster's lane takes +∞ instead of a branch. The factors are
/// [`UnitFactors`]', the bits [`leave_factor`] and [`gain_factor`] give with weight 1, so
/// the bounds and the count are those of the scalar loop, which runs the rest.
#[inline(always)]
fn check_chunk<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    clusters: &Clusters,
    factors: &UnitFactors,
    labels: &[usize],
    first: usize,
    bounds: &mut [Bounds],
) -> usize {
    let mut n_movable = 0;
    let mut n_done = 0;
    if let (Some(gains), true) = (factors.gains(), D > 0) {
        let infinity = quad.splat(f64::INFINITY);
        let one = quad.splat(1.0);
        n_done = bounds.len() - bounds.len() % LANES;
        for (block, bounds) in bounds[..n_done].chunks_exact_mut(LANES).enumerate() {
            let i = first + block * LANES;
            let coordinates = lanes_of_four::<Q, D>(quad, &points.values[i * D..(i + LANES) * D]);
            let own_labels = &labels[i..i + LANES];
            let own = quad.load(&[
                own_labels[0] as f64,
                own_labels[1] as f64,
                own_labels[2] as f64,
                own_labels[3] as f64,
            ]);
            let (mut own_distance, mut best_cost, mut nearest_other) =
                (infinity, infinity, infinity);
            let mut index = quad.splat(0.0);
            for (centre, &gain) in clusters.centres.chunks_exact(D).zip(gains) {
                let distance = distances_of_four::<Q, D>(quad, &coordinates, centre);
                let other = quad.ne(index, own);
                own_distance = quad.select(other, own_distance, distance);
                let cost = quad.mul(quad.splat(gain), distance);
                best_cost = quad.min(best_cost, quad.select(other, cost, infinity));
                nearest_other = quad.min(nearest_other, quad.select(other, distance, infinity));
                index = quad.add(index, one);
            }
            let (own_distance, best_cost, nearest_other) = (
                quad.to_array(own_distance),
                quad.to_array(best_cost),
                quad.to_array(nearest_other),
            );
            for (lane, bound) in bounds.iter_mut().enumerate() {
                if let Some(factor) = factors.leave[own_labels[lane]] {
                    n_movable += usize::from(best_cost[lane] < factor * own_distance[lane]);
                }
                *bound = Bounds {
                    own: own_distance[lane].sqrt(),
                    other: nearest_other[lane].sqrt(),
                    refreshed: false,
                };
            }
        }
    }
    for (offset, bound) in bounds.iter_mut().enumerate().skip(n_done) {
        let i = first + offset;
        let (weight, own) = (points.weight(i), labels[i]);
        let (own_distance, _, best_cost, nearest_other) =
            evaluate::<D>(points.row(i), weight, own, clusters, points.dim, None);
        if let Some(factor) = leave_factor(clusters, own, weight) {
            n_movable += usize::from(best_cost < factor * own_distance);
        }
        *bound = Bounds {
            own: own_distance.sqrt(),
            other: nearest_other.sqrt(),
            refreshed: false,
        };
    }
    n_movable
}

/// [`leave_factor`] and [`gain_factor`] of every cluster, and [`gain_factor`] of the
/// lightest one, for a point of weight 1 (empty when the weights are not all 1).
struct UnitFactors {
    leave: Vec<Option<f64>>,
    gain: Vec<f64>,
    min_gain: f64,
}

impl UnitFactors {
    fn new(clusters: &Clusters, min_mass: f64, unit: bool) -> Self {
        if !unit {
            return Self {
                leave: Vec::new(),
                gain: Vec::new(),
                min_gain: f64::NAN,
            };
        }
        Self {
            leave: (0..clusters.masses.len())
                .map(|j| leave_factor(clusters, j, 1.0))
                .collect(),
            gain: clusters
                .masses
                .iter()
                .map(|&mass| gain_factor(mass, 1.0))
                .collect(),
            min_gain: gain_factor(min_mass, 1.0),
        }
    }

    /// The factors after a move from `own` to `to`, as [`UnitFactors::new`] would compute
    /// them: only those two clusters' masses and counts changed (and the smallest mass
    /// maybe), so only their factors are computed again, without a new allocation per move.
    fn moved(&mut self, clusters: &Clusters, min_mass: f64, own: usize, to: usize) {
        if self.leave.is_empty() {
            return;
        }
        for j in [own, to] {
            self.leave[j] = leave_factor(clusters, j, 1.0);
            self.gain[j] = gain_factor(clusters.masses[j], 1.0);
        }
        self.min_gain = gain_factor(min_mass, 1.0);
    }

    /// Every cluster's gain factor, with unit weights.
    fn gains(&self) -> Option<&[f64]> {
        (!self.gain.is_empty()).then_some(self.gain.as_slice())
    }
}

dispatched!(sweep_fast = sweep(
    points: &'a WeightedPoints<'b>,
    clusters: &'a mut Clusters,
    labels: &'a mut [usize],
    bounds: &'a mut [Bounds],
) -> (usize, f64));

/// One sweep of single-point moves in index order (see the module docs); returns the
/// number of moves and the inertia they lowered.
#[inline(always)]
fn sweep<const D: usize>(
    points: &WeightedPoints<'_>,
    clusters: &mut Clusters,
    labels: &mut [usize],
    bounds: &mut [Bounds],
) -> (usize, f64) {
    sweep_screened::<D, _>(points, clusters, labels, bounds, &mut NoScreen)
}

quad_dispatched!(sweep_expanded_fast = sweep_expanded(
    points: &'a WeightedPoints<'b>,
    clusters: &'a mut Clusters,
    labels: &'a mut [usize],
    bounds: &'a mut [Bounds],
    point_norms: &'a [f64],
) -> (usize, f64));

/// [`sweep`] at d > [`MAX_GROUPED_DIM`], where the points the bounds cannot skip are first
/// screened in the expanded form ([`ExpandedScreen`]): the same moves, bit for bit.
#[inline(always)]
fn sweep_expanded<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    clusters: &mut Clusters,
    labels: &mut [usize],
    bounds: &mut [Bounds],
    point_norms: &[f64],
) -> (usize, f64) {
    let mut screen = ExpandedScreen::new(quad, points.dim, point_norms);
    sweep_screened::<D, _>(points, clusters, labels, bounds, &mut screen)
}

/// What a sweep may learn about a point before evaluating it exactly: that it has no
/// improving move, with valid bounds ([`ExpandedScreen`]), or nothing ([`NoScreen`]).
trait Screen {
    /// `Some(bounds)` when point `index` (weight `weight`, in cluster `own`, whose leave
    /// factor is `own_factor`) provably has no move that lowers the inertia: bounds valid
    /// for the centres as they stand, relative to the drifts so far. `None`: evaluate it.
    fn no_move(
        &mut self,
        sweep: &SweepView<'_, '_>,
        index: usize,
        weight: f64,
        own: usize,
        own_factor: f64,
    ) -> Option<Bounds>;

    /// A point moved from cluster `own` to `to`: those two centres changed.
    fn moved(&mut self, clusters: &Clusters, own: usize, to: usize);
}

/// The state of a sweep at the point a [`Screen`] is asked about.
struct SweepView<'s, 'p> {
    points: &'s WeightedPoints<'p>,
    clusters: &'s Clusters,
    factors: &'s UnitFactors,
    min_mass: f64,
    labels: &'s [usize],
    bounds: &'s [Bounds],
}

/// Every point the bounds cannot skip is evaluated exactly.
struct NoScreen;

impl Screen for NoScreen {
    #[inline(always)]
    fn no_move(
        &mut self,
        _: &SweepView<'_, '_>,
        _: usize,
        _: f64,
        _: usize,
        _: f64,
    ) -> Option<Bounds> {
        None
    }

    #[inline(always)]
    fn moved(&mut self, _: &Clusters, _: usize, _: usize) {}
}

/// Points per block of [`ExpandedScreen`]'s products.
const SCREEN_BLOCK: usize = 64;

/// Screens points at large d in the expanded form ‖x‖² + ‖c‖² − 2x·c: the products x·c of
/// the points of a block that the bounds cannot skip, with every centre, are computed at
/// once as one small matrix product ([`expanded::products`]), instead of k direct distances
/// per point whose four partial sums wait on each other's additions. With a_j the expanded
/// value for centre j, E_j the bound on |a_j − s_j| of [`expanded`] (s_j the value
/// [`squared_distance`] returns, which the exact test uses) and f_j the factor that test
/// multiplies s_j by, a point of cluster a is screened out when
///
/// min_{b≠a} f_b ⊗ (a_b ⊖ E_b) ≥ f_a ⊗ (a_a ⊕ E_a)
///
/// (⊗, ⊖, ⊕: the rounded operations). In exact arithmetic a_b − E_b ≤ s_b and
/// s_a ≤ a_a + E_a, and rounding is monotone, so a_b ⊖ E_b ≤ s_b, f_b ⊗ (a_b ⊖ E_b) ≤
/// f_b ⊗ s_b, and likewise on the own side: the least cost of the exact test is at least
/// its own cost, and that test (a move when the least cost is *strictly* below the own)
/// makes no move. So a screened point keeps its label, as [`evaluate`] would decide;
/// any other point (a near decision, or an improving move) is evaluated exactly. The
/// bounds a screened point keeps are a_a ⊕ E_a above its own distance and
/// min_{b≠a} a_b ⊖ E_b below the others': valid, if looser than exact ones, so they change
/// which points later tests skip, never a move. A move changes two centres, so the block's
/// products are computed again from the next point on (moves are rare: 1–537 per restart
/// of digits, the k-means spec's data set, against about 2,000 evaluations).
struct ExpandedScreen<'n, Q> {
    quad: Q,
    dim: usize,
    /// ‖x‖² of every point.
    point_norms: &'n [f64],
    scale: f64,
    /// The points from `start` to `end` (exclusive) have been screened against the current
    /// centres; `slots[i − start]` is the row of point i in `products`, or `usize::MAX`
    /// for a point the bounds skip.
    start: usize,
    end: usize,
    slots: Vec<usize>,
    products: Vec<f64>,
    /// The centres transposed for the products, their ‖c‖² and ‖c‖: set at the first block
    /// and then kept up to date centre by centre, as moves change two at a time.
    columns: Option<expanded::CentreColumns>,
    centre_norms: Vec<f64>,
    centre_roots: Vec<f64>,
}

impl<'n, Q: Quad> ExpandedScreen<'n, Q> {
    fn new(quad: Q, dim: usize, point_norms: &'n [f64]) -> Self {
        Self {
            quad,
            dim,
            point_norms,
            scale: expanded::error_scale(dim),
            start: 0,
            end: 0,
            slots: Vec::new(),
            products: Vec::new(),
            columns: None,
            centre_norms: Vec::new(),
            centre_roots: Vec::new(),
        }
    }

    /// Screens the block of points from `first` on: those the bounds cannot skip get their
    /// products with the current centres.
    #[inline(always)]
    fn fill(&mut self, sweep: &SweepView<'_, '_>, first: usize) {
        let SweepView {
            points,
            clusters,
            factors,
            min_mass,
            labels,
            bounds,
        } = *sweep;
        let dim = self.dim;
        self.start = first;
        self.end = (first + SCREEN_BLOCK).min(labels.len());
        self.slots.clear();
        let mut rows: Vec<&[f64]> = Vec::with_capacity(SCREEN_BLOCK);
        for i in first..self.end {
            let weight = points.weight(i);
            let open = movable(&bounds[i], labels[i], weight, clusters, factors, min_mass);
            self.slots.push(if open.is_some() {
                rows.len()
            } else {
                usize::MAX
            });
            if open.is_some() {
                rows.push(points.row(i));
            }
        }
        let columns = self.columns.get_or_insert_with(|| {
            self.centre_norms = clusters
                .centres
                .chunks_exact(dim)
                .map(squared_norm)
                .collect();
            self.centre_roots = self.centre_norms.iter().map(|norm| norm.sqrt()).collect();
            expanded::CentreColumns::new(&clusters.centres, dim)
        });
        expanded::products(self.quad, &rows, columns, &mut self.products);
    }
}

impl<Q: Quad> Screen for ExpandedScreen<'_, Q> {
    #[inline(always)]
    fn no_move(
        &mut self,
        sweep: &SweepView<'_, '_>,
        index: usize,
        weight: f64,
        own: usize,
        own_factor: f64,
    ) -> Option<Bounds> {
        // The sweep asks in index order, so a point past the block starts the next one.
        if index >= self.end {
            self.fill(sweep, index);
        }
        let (clusters, factors) = (sweep.clusters, sweep.factors);
        let slot = self.slots[index - self.start];
        if slot == usize::MAX {
            return None;
        }
        let norm = self.point_norms[index];
        let root = norm.sqrt();
        let width = self
            .columns
            .as_ref()
            .map_or(0, expanded::CentreColumns::width);
        let products = &self.products[slot * width..][..clusters.masses.len()];
        let gains = factors.gains();
        let (mut own_above, mut least_cost, mut others_below) =
            (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        for (j, ((&product, &centre_norm), &centre_root)) in products
            .iter()
            .zip(&self.centre_norms)
            .zip(&self.centre_roots)
            .enumerate()
        {
            let approximate = norm + centre_norm - 2.0 * product;
            let reach = root + centre_root;
            let error = self.scale * reach * reach;
            if j == own {
                own_above = approximate + error;
                continue;
            }
            let below = approximate - error;
            let factor = match gains {
                Some(gains) => gains[j],
                None => gain_factor(clusters.masses[j], weight),
            };
            least_cost = least_cost.min(factor * below);
            others_below = others_below.min(below);
        }
        (least_cost >= own_factor * own_above).then(|| Bounds {
            own: own_above.sqrt() - clusters.drift[own],
            other: others_below.max(0.0).sqrt() + clusters.total_drift,
            refreshed: true,
        })
    }

    #[inline(always)]
    fn moved(&mut self, clusters: &Clusters, own: usize, to: usize) {
        self.end = 0;
        if let Some(columns) = &mut self.columns {
            for j in [own, to] {
                let centre = &clusters.centres[j * self.dim..(j + 1) * self.dim];
                columns.set_centre(j, centre);
                self.centre_norms[j] = squared_norm(centre);
                self.centre_roots[j] = self.centre_norms[j].sqrt();
            }
        }
    }
}

/// The bounds' test of a sweep for one point: `None` when the point cannot leave its
/// cluster (no weight, or its last point) or when its bounds admit no improving move;
/// otherwise the factor W_a/(W_a − w) of leaving.
#[inline(always)]
fn movable(
    bound: &Bounds,
    own: usize,
    weight: f64,
    clusters: &Clusters,
    factors: &UnitFactors,
    min_mass: f64,
) -> Option<f64> {
    let (own_factor, min_gain) = if factors.leave.is_empty() {
        (
            leave_factor(clusters, own, weight)?,
            gain_factor(min_mass, weight),
        )
    } else {
        (factors.leave[own]?, factors.min_gain)
    };
    let own_bound = bound.own + clusters.drift[own];
    let other_bound = bound.other
        - if bound.refreshed {
            clusters.total_drift
        } else {
            clusters.max_drift
        };
    let skip = clusters.prune
        && other_bound > 0.0
        && min_gain * other_bound * other_bound
            > own_factor * own_bound * own_bound * (1.0 + BOUND_MARGIN);
    (!skip).then_some(own_factor)
}

/// [`sweep`], with `screen` consulted before each exact evaluation.
#[inline(always)]
fn sweep_screened<const D: usize, S: Screen>(
    points: &WeightedPoints<'_>,
    clusters: &mut Clusters,
    labels: &mut [usize],
    bounds: &mut [Bounds],
    screen: &mut S,
) -> (usize, f64) {
    let dim = if D == 0 { points.dim } else { D };
    let mut min_mass = clusters.min_mass();
    let (mut moves, mut gain) = (0, 0.0);
    // With unit weights the factors depend on the cluster only: computed once per cluster
    // (and again after each move) instead of two divisions per point, with the same bits.
    let unit = matches!(points.weights, Weights::Unit);
    let mut unit_factors = UnitFactors::new(clusters, min_mass, unit);
    for i in 0..labels.len() {
        let own = labels[i];
        let weight = if unit { 1.0 } else { points.weight(i) };
        let Some(own_factor) = movable(&bounds[i], own, weight, clusters, &unit_factors, min_mass)
        else {
            continue;
        };
        let sweep = SweepView {
            points,
            clusters,
            factors: &unit_factors,
            min_mass,
            labels,
            bounds,
        };
        if let Some(screened) = screen.no_move(&sweep, i, weight, own, own_factor) {
            bounds[i] = screened;
            continue;
        }
        let point = &points.row(i)[..dim];
        let (own_distance, to, to_cost, nearest_other) =
            evaluate::<D>(point, weight, own, clusters, dim, unit_factors.gains());
        let own_cost = own_factor * own_distance;
        // False also when there is no other cluster (an infinite cost).
        let improves = to_cost < own_cost;
        if !improves {
            // Exact now; relative to the drifts so far, which the end of the sweep adds.
            bounds[i] = Bounds {
                own: own_distance.sqrt() - clusters.drift[own],
                other: nearest_other.sqrt() + clusters.total_drift,
                refreshed: true,
            };
            continue;
        }
        let to_distance = squared_distance(point, &clusters.centres[to * dim..(to + 1) * dim]);
        let (own_rest, to_total) = (clusters.masses[own] - weight, clusters.masses[to] + weight);
        for (c, x) in clusters.centres[own * dim..(own + 1) * dim]
            .iter_mut()
            .zip(point)
        {
            *c += weight * (*c - x) / own_rest;
        }
        for (c, x) in clusters.centres[to * dim..(to + 1) * dim]
            .iter_mut()
            .zip(point)
        {
            *c += weight * (x - *c) / to_total;
        }
        let own_shift = weight * own_distance.sqrt() / own_rest;
        let to_shift = weight * to_distance.sqrt() / to_total;
        clusters.drift[own] += own_shift;
        clusters.drift[to] += to_shift;
        clusters.total_drift += own_shift + to_shift;
        clusters.max_drift = clusters
            .max_drift
            .max(clusters.drift[own])
            .max(clusters.drift[to]);
        clusters.masses[own] = own_rest;
        clusters.masses[to] = to_total;
        min_mass = clusters.min_mass();
        clusters.counts[own] -= 1;
        clusters.counts[to] += 1;
        unit_factors.moved(clusters, min_mass, own, to);
        screen.moved(clusters, own, to);
        labels[i] = to;
        bounds[i] = Bounds::UNKNOWN;
        moves += 1;
        gain += weight * (own_cost - to_cost);
    }
    (moves, gain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Portable;
    use crate::kmeans::lloyd::{LloydSettings, lloyd};
    use crate::kmeans::{Algorithm, Stopping};
    use crate::rng::StreamRng;

    /// Overlapping Gaussian blobs (many points near the boundaries, where moves happen),
    /// optionally with weights in [0.5, 1.5) and a few zeros.
    fn blobs(
        n: usize,
        dim: usize,
        n_blobs: usize,
        seed: u64,
        weighted: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut rng = StreamRng::seed_from(seed);
        let values = (0..n * dim)
            .map(|i| 1.5 * rng.standard_normal() + 2.0 * ((i / dim) % n_blobs) as f64)
            .collect();
        let weights = (0..n)
            .map(|i| {
                if !weighted {
                    1.0
                } else if i % 17 == 3 {
                    0.0
                } else {
                    0.5 + rng.next_f64()
                }
            })
            .collect();
        (values, weights)
    }

    fn points<'a>(
        values: &'a [f64],
        weights: &'a [f64],
        dim: usize,
        weighted: bool,
    ) -> WeightedPoints<'a> {
        WeightedPoints {
            values,
            dim,
            weights: if weighted {
                Weights::Given(weights)
            } else {
                Weights::Unit
            },
        }
    }

    fn lloyd_from_first_points(
        data: &WeightedPoints<'_>,
        k: usize,
    ) -> crate::kmeans::lloyd::LloydRun {
        let settings = LloydSettings {
            max_iter: 300,
            stopping: Stopping::ChangedLabels,
            threshold: 0.0,
            algorithm: Algorithm::Auto,
            handoff: None,
        };
        lloyd(data, data.values[..k * data.dim].to_vec(), &settings)
    }

    fn cases() -> Vec<(usize, usize, usize, u64, bool)> {
        // (n, dim, k, seed, weighted)
        vec![
            (400, 2, 5, 1, false),
            (400, 2, 5, 2, true),
            (300, 5, 6, 3, false),
            (300, 5, 6, 4, true),
            (200, 64, 4, 5, false),
            (2500, 3, 8, 6, false),
            // Few points per cluster: each move shifts the centres far, which tests the
            // bounds' drift terms.
            (60, 2, 6, 7, false),
            (90, 3, 9, 8, true),
            // Above the grouped dimensions, where the sweeps screen points in the expanded
            // form, weighted and not.
            (300, 24, 6, 9, true),
            (400, 40, 5, 10, false),
            (120, 20, 8, 11, false),
        ]
    }

    /// The skipping test only saves work: the sweeps with it make the very moves of sweeps
    /// that evaluate every point, bit for bit.
    #[test]
    fn pruned_sweeps_make_the_moves_of_exhaustive_sweeps() {
        let (mut total_moves, mut screened_moves) = (0, 0);
        for (n, dim, k, seed, weighted) in cases() {
            let (values, weights) = blobs(n, dim, k / 2, seed, weighted);
            let data = points(&values, &weights, dim, weighted);
            let run = lloyd_from_first_points(&data, k);
            let exhaustive = hartigan_with(
                &data,
                run.centres.clone(),
                run.labels.clone(),
                None,
                1000,
                false,
            );
            for known in [None, run.bounds.clone()] {
                let pruned = hartigan_with(
                    &data,
                    run.centres.clone(),
                    run.labels.clone(),
                    known,
                    1000,
                    true,
                );
                assert_eq!(pruned.labels, exhaustive.labels, "case {seed}");
                assert_eq!(pruned.centres, exhaustive.centres, "case {seed}");
                assert_eq!(pruned.moves, exhaustive.moves, "case {seed}");
                assert!(pruned.converged && exhaustive.converged);
                // A sweep that moves is always followed by one that confirms the fixed point.
                assert!(pruned.moves == 0 || pruned.sweeps >= 2, "case {seed}");
            }
            total_moves += exhaustive.moves;
            if dim > MAX_GROUPED_DIM {
                screened_moves += exhaustive.moves;
            }
        }
        assert!(
            total_moves > 20,
            "the cases must exercise the moves: {total_moves}"
        );
        assert!(
            screened_moves > 10,
            "the screened sweeps must make moves: {screened_moves}"
        );
    }

    /// The check pass's four-lane kernel (unit weights, a compile-time dimension) sets the
    /// bounds and counts the movable points with the bits of the scalar test, which the
    /// factors of given weights select: every dimension the kernel is compiled for and one
    /// beyond, chunk lengths that leave one to three points to the scalar tail, on the
    /// dispatched instruction set and on plain f64 lanes.
    #[test]
    fn the_check_pass_has_the_bits_of_the_scalar_test() {
        let bits = |bounds: &[Bounds]| -> Vec<(u64, u64, bool)> {
            bounds
                .iter()
                .map(|b| (b.own.to_bits(), b.other.to_bits(), b.refreshed))
                .collect()
        };
        let mut total_movable = 0;
        for dim in 1..=17 {
            for (n, k) in [(403, 5), (130, 1), (61, 9)] {
                let (values, _) = blobs(n, dim, 3, 40 + dim as u64, false);
                let data = points(&values, &[], dim, false);
                let run = lloyd_from_first_points(&data, k);
                let totals = cluster_sums(&data, |i| run.labels[i], k);
                let clusters = Clusters {
                    centres: totals.means(&run.centres),
                    counts: (0..k)
                        .map(|j| run.labels.iter().filter(|&&l| l == j).count())
                        .collect(),
                    masses: totals.masses,
                    drift: vec![0.0; k],
                    max_drift: 0.0,
                    total_drift: 0.0,
                    prune: true,
                };
                let min_mass = clusters.min_mass();
                let (unit, general) = (
                    UnitFactors::new(&clusters, min_mass, true),
                    UnitFactors::new(&clusters, min_mass, false),
                );
                let first = 2;
                let check = |factors: &UnitFactors, plain_lanes: bool| {
                    let mut bounds = vec![Bounds::UNKNOWN; n - first];
                    // The plain-lane kernel at a few compile-time dimensions.
                    macro_rules! plain {
                        ($dim:literal) => {
                            check_chunk::<_, $dim>(
                                Portable,
                                &data,
                                &clusters,
                                factors,
                                &run.labels,
                                first,
                                &mut bounds,
                            )
                        };
                    }
                    let count = match (plain_lanes, dim) {
                        (true, 2) => plain!(2),
                        (true, 5) => plain!(5),
                        (true, 16) => plain!(16),
                        _ => with_const_dim!(
                            dim,
                            check_chunk_fast(
                                &data,
                                &clusters,
                                factors,
                                &run.labels,
                                first,
                                &mut bounds
                            )
                        ),
                    };
                    (count, bits(&bounds))
                };
                let expected = check(&general, false);
                let mut paths = vec![("dispatched", check(&unit, false))];
                if [2, 5, 16].contains(&dim) {
                    paths.push(("plain lanes", check(&unit, true)));
                }
                for (path, (count, bounds)) in paths {
                    let first_difference = bounds.iter().zip(&expected.1).position(|(a, b)| a != b);
                    assert_eq!(
                        (count, first_difference),
                        (expected.0, None),
                        "{path}, d = {dim}, n = {n}, k = {k}"
                    );
                }
                total_movable += expected.0;
            }
        }
        assert!(
            total_movable > 50,
            "the cases must have movable points: {total_movable}"
        );
    }

    /// With unit weights the sweeps use factors kept per cluster and updated at each move;
    /// the general path computes them from the masses for every point. Given weights that
    /// are all 1 take the general path: the moves, labels and centres must be the same bits.
    #[test]
    fn unit_weights_use_the_factors_the_general_path_computes() {
        let mut total_moves = 0;
        for (n, dim, k, seed, _) in cases() {
            let (values, _) = blobs(n, dim, k / 2, seed, false);
            let ones = vec![1.0; n];
            let unit = points(&values, &ones, dim, false);
            let given = points(&values, &ones, dim, true);
            let run = lloyd_from_first_points(&unit, k);
            let refined = |data: &WeightedPoints<'_>| {
                hartigan(data, run.centres.clone(), run.labels.clone(), None, 1000)
            };
            let (by_unit, by_given) = (refined(&unit), refined(&given));
            assert_eq!(by_unit.labels, by_given.labels, "case {seed}");
            assert_eq!(by_unit.centres, by_given.centres, "case {seed}");
            assert_eq!(by_unit.moves, by_given.moves, "case {seed}");
            assert_eq!(
                by_unit.gain.to_bits(),
                by_given.gain.to_bits(),
                "case {seed}"
            );
            total_moves += by_unit.moves;
        }
        assert!(
            total_moves > 20,
            "the cases must exercise the moves: {total_moves}"
        );
    }

    /// A move never takes the last point of a cluster. Here it would pay if it could: the
    /// first point leaves a two-point cluster in the first sweep, and the incremental update
    /// leaves the centre 3e-17 away from the point that stays (0.1 + 0.2 is not 0.3 in
    /// floating point), so that point's leaving factor W/(W − w) = 1/0 makes any move look
    /// infinitely good. Taken, it would empty the cluster and divide its centre by zero.
    #[test]
    fn the_last_point_of_a_cluster_stays() {
        let values = [0.2, 0.1, 0.25, 0.26, 0.27];
        let data = points(&values, &[], 1, false);
        let labels = vec![0, 0, 1, 1, 1];
        // The premise: after the first point leaves, the centre is not the second point.
        let mean = (0.2 + 0.1) / 2.0;
        let after: f64 = mean + (mean - 0.2) / 1.0;
        assert_ne!(after, 0.1);
        let refined = hartigan(&data, vec![0.0, 0.0], labels, None, 10);
        assert_eq!(refined.labels[0], 1, "the first point moves");
        assert_eq!(refined.labels[1], 0, "the last point stays");
        assert!(refined.centres.iter().all(|c| c.is_finite()));
        assert_eq!(refined.centres[0], 0.1);
    }

    /// The inertia falls by exactly the gains the moves were made for: Lloyd's inertia minus
    /// the summed gains is the inertia of the result, computed from scratch.
    #[test]
    fn the_inertia_falls_by_the_gains_of_the_moves() {
        for (n, dim, k, seed, weighted) in cases() {
            let (values, weights) = blobs(n, dim, k / 2, seed, weighted);
            let data = points(&values, &weights, dim, weighted);
            let run = lloyd_from_first_points(&data, k);
            let refined = hartigan(&data, run.centres.clone(), run.labels.clone(), None, 1000);
            let inertia = data.inertia(&refined.centres, &refined.labels);
            assert!(refined.gain >= 0.0);
            assert!(
                (run.inertia - refined.gain - inertia).abs() <= 1e-9 * run.inertia,
                "case {seed}: {} - {} vs {inertia}",
                run.inertia,
                refined.gain
            );
            if refined.moves > 0 {
                assert!(inertia < run.inertia, "case {seed}");
            }
        }
    }

    /// Σ w‖x − mean‖² of the labelling, from scratch (means recomputed).
    fn inertia_of(data: &WeightedPoints<'_>, labels: &[usize], k: usize) -> f64 {
        let dim = data.dim;
        let mut sums = vec![0.0; k * dim];
        let mut masses = vec![0.0; k];
        for (i, &label) in labels.iter().enumerate() {
            masses[label] += data.weight(i);
            for (s, x) in sums[label * dim..(label + 1) * dim]
                .iter_mut()
                .zip(data.row(i))
            {
                *s += data.weight(i) * x;
            }
        }
        let means: Vec<f64> = (0..k * dim)
            .map(|f| {
                if masses[f / dim] > 0.0 {
                    sums[f] / masses[f / dim]
                } else {
                    0.0
                }
            })
            .collect();
        data.inertia(&means, labels)
    }

    /// The result is a fixed point of the single-point moves, checked by brute force (move
    /// every point to every other cluster and recompute the inertia from scratch), and a
    /// fixed point of Lloyd's iteration: every point's own centre is strictly its nearest,
    /// and Lloyd's iteration started there stops at once without changing a label.
    #[test]
    fn results_are_fixed_points_of_the_moves_and_of_lloyd() {
        for (n, dim, k, seed, weighted) in cases().into_iter().filter(|c| c.0 <= 400) {
            let (values, weights) = blobs(n, dim, k / 2, seed, weighted);
            let data = points(&values, &weights, dim, weighted);
            let run = lloyd_from_first_points(&data, k);
            let refined = hartigan(&data, run.centres.clone(), run.labels.clone(), None, 1000);
            assert!(refined.converged);
            let mut labels = refined.labels.clone();
            let inertia = inertia_of(&data, &labels, k);
            for i in 0..n {
                let own = labels[i];
                let others_in_own = (0..n)
                    .filter(|&j| j != i && labels[j] == own && data.weight(j) > 0.0)
                    .count();
                if data.weight(i) == 0.0 || others_in_own == 0 {
                    continue;
                }
                for to in (0..k).filter(|&to| to != own) {
                    labels[i] = to;
                    let moved = inertia_of(&data, &labels, k);
                    assert!(
                        moved >= inertia * (1.0 - 1e-12),
                        "case {seed}: point {i} to {to}: {moved} < {inertia}"
                    );
                }
                labels[i] = own;
            }
            for i in 0..n {
                let own = labels[i];
                let own_distance =
                    squared_distance(data.row(i), &refined.centres[own * dim..(own + 1) * dim]);
                for j in (0..k).filter(|&j| j != own) {
                    let other =
                        squared_distance(data.row(i), &refined.centres[j * dim..(j + 1) * dim]);
                    assert!(
                        own_distance < other || (data.weight(i) == 0.0 && own_distance <= other),
                        "case {seed}: point {i}"
                    );
                }
            }
            let settings = LloydSettings {
                max_iter: 300,
                stopping: Stopping::ChangedLabels,
                threshold: 0.0,
                algorithm: Algorithm::Lloyd,
                handoff: None,
            };
            let again = lloyd(&data, refined.centres.clone(), &settings);
            // The first pass counts every label as new; the second changes none.
            assert_eq!(again.n_iter, 2, "case {seed}");
            assert_eq!(again.labels, refined.labels, "case {seed}");
            assert_eq!(again.centres, refined.centres, "case {seed}");
        }
    }
}
