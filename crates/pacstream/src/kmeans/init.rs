//! Seeding: k-means++ (vanilla and greedy), random points, given centres.
//!
//! Every seeding is weighted: a point x with weight w(x) counts as w(x) copies of itself.
//!
//! - **k-means++** (Arthur & Vassilvitskii 2007; Algorithm 4 of the lecture notes): the
//!   first centre is drawn ∝ w(x); each next one ∝ w(x)·D(x)², where
//!   D(x)² = min over the chosen centres c of ‖x − c‖². Its guarantee,
//!   E\[φ\] ≤ 8(ln k + 2)·φ_OPT, is checked exactly in the test suite.
//! - **Greedy k-means++** (scikit-learn's default): each step draws `n_local_trials`
//!   candidates independently ∝ w·D² and keeps the one whose potential
//!   Σ w(x)·min(D(x)², ‖x − candidate‖²) is lowest (ties: the first drawn).
//! - **Random**: k distinct indices drawn one after the other without replacement, each ∝ w
//!   among the indices not yet drawn (successive sampling).
//! - **Given**: the centres as they are.
//!
//! When every remaining mass w·D² is zero (fewer distinct points of positive weight than k),
//! the remaining centres are drawn ∝ w(x) — "uniformly" in the weighted sense, the law of
//! the first centre — and the seeding reports `duplicate_centres`. Random seeding does the
//! same when fewer than k points have positive weight.
//!
//! # Cost and determinism
//!
//! The cost is the D² update, n distance evaluations per chosen centre (and per greedy
//! candidate). It runs over the fixed chunks of [`super::chunked`] in parallel; each chunk
//! also returns its total mass Σ w·D², and the running totals over chunks are formed in
//! chunk order. A draw takes u ∈ [0, 1) from the stream, finds the chunk whose cumulative
//! mass first exceeds u × total by binary search, then scans that chunk. Randomness comes
//! only from the [`StreamRng`] passed in, one uniform per draw, so the seeding is a fixed
//! function of the seed and the data, whatever the number of threads.

use std::collections::HashSet;
use std::ops::Range;

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use super::assign::{CentreGroups, LANES, MAX_GROUPED_DIM, group_distances};
use super::chunked::{CHUNK, WeightedPoints, quad_dispatched, with_const_dim};
use super::params::Init;
use crate::data::{Points, Weights};
use crate::error::{Error, Result};
use crate::geometry::squared_distance;
use crate::kernels::Quad;
use crate::rng::StreamRng;

/// The seeded centres (row-major, in the coordinates of the points given) and what
/// happened.
#[derive(Debug)]
pub(crate) struct Seeding {
    pub(crate) centres: Vec<f64>,
    /// The index of the point behind each centre (empty for given centres).
    pub(crate) indices: Vec<usize>,
    /// Whether two centres coincide (fewer distinct points of positive weight than k, or
    /// coinciding given centres).
    pub(crate) duplicate_centres: bool,
}

/// Draws the initial centres. `points` holds at least `n_clusters` points and given centres
/// have the points' dimension (checked by the caller); `offset` is subtracted from given
/// centres, which are in the user's coordinates while the points may be centred.
pub(crate) fn seed_centres(
    points: &WeightedPoints<'_>,
    init: &Init,
    n_clusters: usize,
    offset: &[f64],
    rng: &mut StreamRng,
) -> Seeding {
    let (indices, ran_out) = match init {
        Init::Given(given) => {
            let centres: Vec<f64> = given
                .iter()
                .flat_map(|c| c.iter().zip(offset).map(|(x, o)| x - o))
                .collect();
            let duplicate_centres = has_duplicates(&centres, points.dim);
            return Seeding {
                centres,
                indices: Vec::new(),
                duplicate_centres,
            };
        }
        Init::KMeansPlusPlus => kmeans_plus_plus(points, n_clusters, 1, rng),
        Init::GreedyKMeansPlusPlus { n_local_trials } => {
            let trials = Init::local_trials(*n_local_trials, n_clusters);
            kmeans_plus_plus(points, n_clusters, trials, rng)
        }
        Init::Random => random_indices(points, n_clusters, rng),
    };
    let centres: Vec<f64> = indices
        .iter()
        .flat_map(|&i| points.row(i).iter().copied())
        .collect();
    let duplicate_centres = ran_out || has_duplicates(&centres, points.dim);
    Seeding {
        centres,
        indices,
        duplicate_centres,
    }
}

/// The indices of the points a seeding picks, in the order it picks them (empty for
/// [`Init::Given`]); the same draws as a fit's seeding from the same stream, on the data as
/// given rather than centred. Exposed for the statistical tests of the samplers.
#[doc(hidden)]
pub fn seed_indices(
    data: ArrayView2<'_, f64>,
    weights: Option<ArrayView1<'_, f64>>,
    init: &Init,
    n_clusters: usize,
    rng: &mut StreamRng,
) -> Result<Vec<usize>> {
    init.check(n_clusters)?;
    let points = Points::from_array(data)?;
    if points.n_points() < n_clusters {
        return Err(Error::NotEnoughPoints {
            required: n_clusters,
            found: points.n_points(),
        });
    }
    let weights = weights.map(|w| w.to_vec());
    let weights = Weights::new(weights.as_deref(), points.n_points())?;
    let points = WeightedPoints {
        values: points.as_slice(),
        dim: points.dim(),
        weights,
    };
    let offset = vec![0.0; points.dim];
    Ok(seed_centres(&points, init, n_clusters, &offset, rng).indices)
}

/// k-means++ with `trials` candidates per step (1: vanilla). Returns the chosen indices and
/// whether the masses ran out.
fn kmeans_plus_plus(
    points: &WeightedPoints<'_>,
    n_clusters: usize,
    trials: usize,
    rng: &mut StreamRng,
) -> (Vec<usize>, bool) {
    let n = points.n_points();
    let mut sampler = MassSampler::new(n);
    // D² = 1 everywhere makes the first draw ∝ w.
    let mut closest = vec![1.0; n];
    sampler.refresh(points, &closest);
    let first = sampler
        .draw(points, &closest, rng.next_f64())
        .expect("invariant: the weights are not all zero");
    let mut indices = vec![first];
    closest.fill(f64::INFINITY);
    sampler.update_closest(points, &mut closest, points.row(first));
    let mut ran_out = false;
    let mut kept = Vec::new();
    while indices.len() < n_clusters {
        if sampler.total() <= 0.0 {
            ran_out = true;
            break;
        }
        let (next, updated) = if trials == 1 {
            let next = sampler
                .draw(points, &closest, rng.next_f64())
                .expect("invariant: the total mass is positive");
            (next, false)
        } else {
            let candidates: Vec<usize> = (0..trials)
                .map(|_| {
                    sampler
                        .draw(points, &closest, rng.next_f64())
                        .expect("invariant: the total mass is positive")
                })
                .collect();
            best_candidate(points, &mut closest, &candidates, &mut kept)
        };
        indices.push(next);
        if indices.len() < n_clusters {
            if updated {
                // The same masses as the update's: Σ w·D² over each chunk in point order.
                sampler.refresh(points, &closest);
            } else {
                sampler.update_closest(points, &mut closest, points.row(next));
            }
        }
    }
    if ran_out {
        sampler.complete_by_weight(points, &mut closest, rng, &mut indices, n_clusters);
    }
    (indices, ran_out)
}

/// The candidate with the lowest potential Σ w(x)·min(D(x)², ‖x − candidate‖²); ties go to
/// the first candidate drawn. Returns it and whether `closest` now holds the D² it leaves,
/// min(D(x)², ‖x − winner‖²).
///
/// At d ≥ [`KEEP_MIN_DIM`] the pass keeps every candidate's min(D(x)², ‖x − candidate‖²)
/// (in `kept`, when n × candidates ≤ [`KEEP_MAX_VALUES`]) and the winner's become the new
/// D²: the very values the update would compute (the same distance arithmetic, the same
/// `min`), without a second pass of long distances. Below, the caller updates D² itself.
fn best_candidate(
    points: &WeightedPoints<'_>,
    closest: &mut [f64],
    candidates: &[usize],
    kept: &mut Vec<f64>,
) -> (usize, bool) {
    // A candidate drawn twice (common once the mass sits on a few far points) is evaluated
    // once; keeping the first occurrences in order keeps "ties go to the first drawn".
    let mut distinct: Vec<usize> = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        if !distinct.contains(&candidate) {
            distinct.push(candidate);
        }
    }
    if distinct.len() == 1 {
        return (distinct[0], false);
    }
    let candidates = &distinct[..];
    let rows: Vec<f64> = candidates
        .iter()
        .flat_map(|&i| points.row(i).iter().copied())
        .collect();
    let groups = if points.dim <= MAX_GROUPED_DIM {
        CentreGroups::new(&rows, points.dim)
    } else {
        CentreGroups::default()
    };
    let n_points = points.n_points();
    let keep = points.dim >= KEEP_MIN_DIM && n_points * candidates.len() <= KEEP_MAX_VALUES;
    let width = candidates.len();
    kept.clear();
    if keep {
        kept.resize(n_points * width, 0.0);
    }
    let reading: &[f64] = closest;
    let potentials_of = |range: Range<usize>, kept: &mut [f64]| {
        let mut potentials = vec![0.0; width];
        with_const_dim!(
            points.dim,
            candidate_potentials_fast(
                points,
                &rows,
                &groups,
                range,
                reading,
                kept,
                &mut potentials
            )
        );
        potentials
    };
    let partials: Vec<Vec<f64>> = if keep {
        points
            .chunk_ranges()
            .zip(kept.par_chunks_mut(CHUNK * width))
            .map(|(range, kept)| potentials_of(range, kept))
            .collect()
    } else {
        points
            .chunk_ranges()
            .map(|range| potentials_of(range, &mut []))
            .collect()
    };
    let mut potentials = vec![0.0; candidates.len()];
    for partial in &partials {
        for (total, p) in potentials.iter_mut().zip(partial) {
            *total += p;
        }
    }
    let mut best = 0;
    for (t, &potential) in potentials.iter().enumerate() {
        if potential < potentials[best] {
            best = t;
        }
    }
    if keep {
        for (d2, values) in closest.iter_mut().zip(kept.chunks_exact(width)) {
            *d2 = values[best];
        }
    }
    (candidates[best], keep)
}

/// The most values [`best_candidate`] keeps (32 MB): beyond, it lets the caller update D².
const KEEP_MAX_VALUES: usize = 1 << 22;

/// The smallest dimension at which [`best_candidate`] keeps the candidates' D², from
/// callgrind on the data sets of the k-means benchmark (one thread, the whole fit): on
/// digits (d = 64) keeping removed the update's 28 million instructions of 443 million for
/// about 2 million of stores and copying back; on blobs 100,000 × 10, keeping (with the
/// candidates in the lanes of a vector) took 133 million instructions where the update
/// takes 132 million, and moved work from the parallel update to the sequential copy.
const KEEP_MIN_DIM: usize = MAX_GROUPED_DIM + 1;

quad_dispatched!(candidate_potentials_fast = candidate_potentials(
    points: &'a WeightedPoints<'b>,
    candidates: &'a [f64],
    groups: &'a CentreGroups,
    range: Range<usize>,
    closest: &'a [f64],
    kept: &'a mut [f64],
    potentials: &'a mut [f64],
));

/// Adds Σ_{i ∈ range} w(i)·min(D(i)², ‖x_i − candidate_t‖²) to `potentials[t]`, and, when
/// `kept` is not empty, stores min(D(i)², ‖x_i − candidate_t‖²) in
/// `kept[(i − range.start)·m + t]` for the m candidates.
///
/// Up to four candidates at a time, each point visited once for all of them: every
/// candidate's sum still runs over the points in index order (the same bits as one
/// candidate at a time), but the four sums are independent chains of additions, so the
/// processor overlaps them instead of waiting on one addition's latency per point. At a
/// compile-time dimension D ≤ 16 (`groups`: the candidates in groups of four lanes) the
/// four candidates sit in the lanes of one vector, each distance with the arithmetic of
/// [`squared_distance`] ([`group_distances`]): a distance of a few coordinates fills no
/// vector, four of them side by side do. Above, one distance is long enough to fill the
/// vectors by itself and the candidates are taken one after the other per point.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "the kernel's inputs, passed through dispatch"
)]
fn candidate_potentials<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    candidates: &[f64],
    groups: &CentreGroups,
    range: Range<usize>,
    closest: &[f64],
    kept: &mut [f64],
    potentials: &mut [f64],
) {
    if D == 0 {
        candidate_potentials_each(quad, points, candidates, range, closest, kept, potentials);
        return;
    }
    // Nothing is kept at d ≤ 16 (`KEEP_MIN_DIM`).
    debug_assert!(kept.is_empty());
    let values = &points.values[range.start * D..range.end * D];
    let closest = &closest[range.clone()];
    // Lanes past the last candidate hold NaN; their sums are dropped by the zip below.
    for (potentials, group) in potentials.chunks_mut(LANES).zip(groups.groups(D)) {
        let mut sums = quad.splat(0.0);
        match points.weights {
            Weights::Unit => {
                for (point, &d2) in values.chunks_exact(D).zip(closest) {
                    let distance = group_distances::<Q, D>(quad, point, group);
                    // `min` keeps d2 only where it is the smaller: f64::min's value here
                    // (no NaN in a real lane, and no −0: both are sums of squares).
                    sums = quad.add(sums, quad.min(quad.splat(d2), distance));
                }
            }
            Weights::Given(weights) => {
                let weights = &weights[range.clone()];
                for ((point, &d2), &w) in values.chunks_exact(D).zip(closest).zip(weights) {
                    let distance = group_distances::<Q, D>(quad, point, group);
                    let nearer = quad.min(quad.splat(d2), distance);
                    sums = quad.add(sums, quad.mul(quad.splat(w), nearer));
                }
            }
        }
        for (potential, sum) in potentials.iter_mut().zip(quad.to_array(sums)) {
            *potential += sum;
        }
    }
}

/// [`candidate_potentials`] at a run-time dimension: per point, the distances to four
/// candidates at once ([`four_distances`]), each sum in point order.
#[inline(always)]
fn candidate_potentials_each<Q: Quad>(
    quad: Q,
    points: &WeightedPoints<'_>,
    candidates: &[f64],
    range: Range<usize>,
    closest: &[f64],
    kept: &mut [f64],
    potentials: &mut [f64],
) {
    let dim = points.dim;
    let width = potentials.len();
    let values = &points.values[range.start * dim..range.end * dim];
    let closest = &closest[range.clone()];
    for (g, (potentials, group)) in potentials
        .chunks_mut(GROUP)
        .zip(candidates.chunks(GROUP * dim))
        .enumerate()
    {
        let (first, in_group) = (g * GROUP, potentials.len());
        // A group of fewer than four repeats its last candidate; those sums are dropped.
        let last = potentials.len() - 1;
        let candidate = |t: usize| &group[t.min(last) * dim..(t.min(last) + 1) * dim];
        let group = [candidate(0), candidate(1), candidate(2), candidate(3)];
        // Plain loops rather than iterator folds, which would not be compiled into the
        // dispatched kernel.
        let mut sums = [0.0; GROUP];
        match points.weights {
            Weights::Unit => {
                for (p, (point, d2)) in values.chunks_exact(dim).zip(closest).enumerate() {
                    let distances = four_distances(quad, point, group);
                    for (sum, distance) in sums.iter_mut().zip(distances) {
                        *sum += d2.min(distance);
                    }
                    keep_nearer(kept, p * width + first, *d2, &distances[..in_group]);
                }
            }
            Weights::Given(weights) => {
                let weights = &weights[range.clone()];
                for (p, ((point, d2), w)) in values
                    .chunks_exact(dim)
                    .zip(closest)
                    .zip(weights)
                    .enumerate()
                {
                    let distances = four_distances(quad, point, group);
                    for (sum, distance) in sums.iter_mut().zip(distances) {
                        *sum += w * d2.min(distance);
                    }
                    keep_nearer(kept, p * width + first, *d2, &distances[..in_group]);
                }
            }
        }
        for (potential, sum) in potentials.iter_mut().zip(sums) {
            *potential += sum;
        }
    }
}

/// The squared distances from `point` to four candidates (rows of the point's length), each
/// with the arithmetic of [`squared_distance`]: coordinate f of the whole blocks of four
/// goes to lane f mod 4 of that candidate's vector, the rest to a tail, and the result is
/// (l₀ + l₁) + (l₂ + l₃) + tail, the same bits. Each block of the point is loaded once for
/// the four candidates, and the four sums are independent chains, which is where this
/// gains over four calls of [`squared_distance`] at a run-time dimension.
#[inline(always)]
fn four_distances<Q: Quad>(quad: Q, point: &[f64], candidates: [&[f64]; 4]) -> [f64; 4] {
    let dim = point.len();
    let full = dim - dim % 4;
    let zero = quad.splat(0.0);
    let mut sums = [zero; 4];
    for ((((x, c0), c1), c2), c3) in point[..full]
        .chunks_exact(4)
        .zip(candidates[0][..full].chunks_exact(4))
        .zip(candidates[1][..full].chunks_exact(4))
        .zip(candidates[2][..full].chunks_exact(4))
        .zip(candidates[3][..full].chunks_exact(4))
    {
        let x = quad.load(block(x));
        for (sum, c) in sums.iter_mut().zip([c0, c1, c2, c3]) {
            let diff = quad.sub(x, quad.load(block(c)));
            *sum = quad.add(*sum, quad.mul(diff, diff));
        }
    }
    let mut distances = [0.0; 4];
    for ((distance, sum), candidate) in distances.iter_mut().zip(sums).zip(candidates) {
        let mut tail = 0.0;
        for (x, c) in point[full..].iter().zip(&candidate[full..dim]) {
            let diff = x - c;
            tail += diff * diff;
        }
        *distance = crate::kernels::sum_quad(quad.to_array(sum)) + tail;
    }
    distances
}

/// Stores min(d2, distance_t) at `kept[at + t]` for each distance, unless `kept` is empty.
#[inline(always)]
fn keep_nearer(kept: &mut [f64], at: usize, d2: f64, distances: &[f64]) {
    if !kept.is_empty() {
        for (slot, distance) in kept[at..at + distances.len()].iter_mut().zip(distances) {
            *slot = d2.min(*distance);
        }
    }
}

/// A block of four values from `chunks_exact(4)`. (A function, not a closure, so that it is
/// compiled for the instruction set of the kernel that calls it.)
#[inline(always)]
fn block(values: &[f64]) -> &[f64; 4] {
    values
        .try_into()
        .expect("invariant: chunks_exact(4) gives blocks of four")
}

/// Candidates whose potentials are summed side by side.
const GROUP: usize = 4;

quad_dispatched!(update_chunk_fast = update_chunk(
    points: &'a WeightedPoints<'b>,
    first: usize,
    closest: &'a mut [f64],
    centre: &'a [f64],
) -> f64);

/// closest(i) ← min(closest(i), ‖x_i − centre‖²) over one chunk starting at point `first`;
/// returns the chunk's new mass Σ w(i)·closest(i), summed in point order.
///
/// At a compile-time dimension D ≥ 1 four consecutive points sit in the lanes of one
/// vector (as in plain Lloyd's pass), each distance with the arithmetic of
/// [`squared_distance`], so every closest(i) has the bits of the one-point loop.
#[inline(always)]
fn update_chunk<Q: Quad, const D: usize>(
    quad: Q,
    points: &WeightedPoints<'_>,
    first: usize,
    closest: &mut [f64],
    centre: &[f64],
) -> f64 {
    let dim = if D == 0 { points.dim } else { D };
    let centre = &centre[..dim];
    let values = &points.values[first * dim..(first + closest.len()) * dim];
    let n_full = if D == 0 {
        0
    } else {
        closest.len() - closest.len() % LANES
    };
    let (full, rest) = closest.split_at_mut(n_full);
    let (full_values, rest_values) = values.split_at(n_full * dim);
    if D > 0 {
        let zero = quad.splat(0.0);
        let centre_lanes: [Q::V; D] = std::array::from_fn(|f| quad.splat(centre[f]));
        let full_dims = D - D % 4;
        for (d2, rows) in full
            .chunks_exact_mut(LANES)
            .zip(full_values.chunks_exact(LANES * D))
        {
            let rows = &rows[..LANES * D];
            let d2: &mut [f64; LANES] =
                d2.try_into().expect("invariant: a block holds four points");
            let mut partial = [zero; 4];
            let mut tail = zero;
            for f in 0..D {
                let x = quad.load(&[rows[f], rows[D + f], rows[2 * D + f], rows[3 * D + f]]);
                let diff = quad.sub(x, centre_lanes[f]);
                if f < full_dims {
                    partial[f % 4] = quad.add(partial[f % 4], quad.mul(diff, diff));
                } else {
                    tail = quad.add(tail, quad.mul(diff, diff));
                }
            }
            let distance = quad.add(
                quad.add(
                    quad.add(partial[0], partial[1]),
                    quad.add(partial[2], partial[3]),
                ),
                tail,
            );
            // `min` keeps the old value only where it is the smaller: f64::min's value here
            // (no NaN, and no −0: both are sums of squares or +∞).
            quad.store(d2, quad.min(quad.load(d2), distance));
        }
    }
    for (d2, point) in rest.iter_mut().zip(rest_values.chunks_exact(dim)) {
        *d2 = d2.min(squared_distance(&point[..dim], centre));
    }
    let mut mass = 0.0;
    match points.weights {
        Weights::Unit => {
            for d2 in closest.iter() {
                mass += d2;
            }
        }
        Weights::Given(weights) => {
            for (d2, w) in closest.iter().zip(&weights[first..first + closest.len()]) {
                mass += w * d2;
            }
        }
    }
    mass
}

/// k distinct indices, each drawn ∝ w among those not drawn yet. Returns the indices and
/// whether the positive weights ran out (then the rest are drawn ∝ w with replacement).
fn random_indices(
    points: &WeightedPoints<'_>,
    n_clusters: usize,
    rng: &mut StreamRng,
) -> (Vec<usize>, bool) {
    let n = points.n_points();
    let mut sampler = MassSampler::new(n);
    // A factor of 1 for the indices still available, 0 for those drawn.
    let mut available = vec![1.0; n];
    sampler.refresh(points, &available);
    let mut indices = Vec::with_capacity(n_clusters);
    let mut ran_out = false;
    while indices.len() < n_clusters {
        let Some(next) = sampler.draw(points, &available, rng.next_f64()) else {
            ran_out = true;
            break;
        };
        indices.push(next);
        available[next] = 0.0;
        sampler.refresh_chunk(points, &available, next / CHUNK);
    }
    if ran_out {
        sampler.complete_by_weight(points, &mut available, rng, &mut indices, n_clusters);
    }
    (indices, ran_out)
}

/// Draws indices with probability ∝ w(i)·factor(i) (factor: D², or an availability flag).
///
/// Holds the mass of every chunk and the running totals over chunks, both formed in a fixed
/// order, so that a draw is a fixed function of the uniform it is given.
#[derive(Debug)]
struct MassSampler {
    chunk_masses: Vec<f64>,
    /// `cumulative[c]` = mass of chunks 0..=c.
    cumulative: Vec<f64>,
}

impl MassSampler {
    fn new(n_points: usize) -> Self {
        let n_chunks = n_points.div_ceil(CHUNK);
        Self {
            chunk_masses: vec![0.0; n_chunks],
            cumulative: vec![0.0; n_chunks],
        }
    }

    fn total(&self) -> f64 {
        *self
            .cumulative
            .last()
            .expect("invariant: at least one chunk")
    }

    fn chunk_mass(points: &WeightedPoints<'_>, factors: &[f64], chunk: usize) -> f64 {
        let range = chunk * CHUNK..((chunk + 1) * CHUNK).min(factors.len());
        range.fold(0.0, |acc, i| acc + points.weight(i) * factors[i])
    }

    fn accumulate(&mut self) {
        let mut running = 0.0;
        for (cumulative, mass) in self.cumulative.iter_mut().zip(&self.chunk_masses) {
            running += mass;
            *cumulative = running;
        }
    }

    /// Recomputes every chunk's mass.
    fn refresh(&mut self, points: &WeightedPoints<'_>, factors: &[f64]) {
        self.chunk_masses
            .par_iter_mut()
            .enumerate()
            .for_each(|(c, mass)| *mass = Self::chunk_mass(points, factors, c));
        self.accumulate();
    }

    /// When the draws ran out of mass (fewer distinct points with weight than clusters): the
    /// remaining indices drawn by weight alone (`factors` set to 1), repeats allowed.
    fn complete_by_weight(
        &mut self,
        points: &WeightedPoints<'_>,
        factors: &mut [f64],
        rng: &mut StreamRng,
        indices: &mut Vec<usize>,
        n_clusters: usize,
    ) {
        factors.fill(1.0);
        self.refresh(points, factors);
        while indices.len() < n_clusters {
            let next = self
                .draw(points, factors, rng.next_f64())
                .expect("invariant: the weights are not all zero");
            indices.push(next);
        }
    }

    /// Recomputes the mass of one chunk whose factors changed.
    fn refresh_chunk(&mut self, points: &WeightedPoints<'_>, factors: &[f64], chunk: usize) {
        self.chunk_masses[chunk] = Self::chunk_mass(points, factors, chunk);
        self.accumulate();
    }

    /// closest(x) ← min(closest(x), ‖x − centre‖²) for every point, and the chunk masses of
    /// the new D².
    fn update_closest(&mut self, points: &WeightedPoints<'_>, closest: &mut [f64], centre: &[f64]) {
        closest
            .par_chunks_mut(CHUNK)
            .zip(self.chunk_masses.par_iter_mut())
            .enumerate()
            .for_each(|(c, (chunk, mass))| {
                *mass = with_const_dim!(
                    points.dim,
                    update_chunk_fast(points, c * CHUNK, chunk, centre)
                );
            });
        self.accumulate();
    }

    /// The index whose cumulative mass first exceeds `uniform` × total, or `None` if the
    /// total mass is zero. `uniform` ∈ [0, 1).
    fn draw(&self, points: &WeightedPoints<'_>, factors: &[f64], uniform: f64) -> Option<usize> {
        let total = self.total();
        if total <= 0.0 {
            return None;
        }
        let target = uniform * total;
        // The first chunk whose running total exceeds the target; rounding can leave the
        // target at the very top, which belongs to the last chunk with mass.
        let chunk = match self.cumulative.partition_point(|&c| c <= target) {
            c if c < self.cumulative.len() => c,
            _ => self
                .chunk_masses
                .iter()
                .rposition(|&m| m > 0.0)
                .expect("invariant: the total mass is positive"),
        };
        let before = if chunk == 0 {
            0.0
        } else {
            self.cumulative[chunk - 1]
        };
        let local_target = target - before;
        let mut running = 0.0;
        let mut last_with_mass = None;
        for i in chunk * CHUNK..((chunk + 1) * CHUNK).min(factors.len()) {
            let mass = points.weight(i) * factors[i];
            if mass > 0.0 {
                running += mass;
                last_with_mass = Some(i);
                if running > local_target {
                    return Some(i);
                }
            }
        }
        Some(last_with_mass.expect("invariant: the chosen chunk has mass"))
    }
}

/// Whether two of the row-major centres coincide exactly.
fn has_duplicates(centres: &[f64], dim: usize) -> bool {
    let mut seen = HashSet::new();
    // +0.0 == -0.0: normalise the sign of zero before comparing bit patterns.
    !centres.chunks_exact(dim).all(|centre| {
        seen.insert(
            centre
                .iter()
                .map(|&v| if v == 0.0 { 0 } else { v.to_bits() })
                .collect::<Vec<u64>>(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Portable;

    fn weighted<'a>(values: &'a [f64], dim: usize, weights: Weights<'a>) -> WeightedPoints<'a> {
        WeightedPoints {
            values,
            dim,
            weights,
        }
    }

    #[test]
    fn the_sampler_skips_zero_mass_and_covers_every_chunk() {
        let n = 3 * CHUNK + 17;
        let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let points = weighted(&values, 1, Weights::Unit);
        let mut factors = vec![0.0; n];
        factors[5] = 1.0;
        factors[2 * CHUNK + 3] = 3.0;
        let mut sampler = MassSampler::new(n);
        sampler.refresh(&points, &factors);
        assert_eq!(sampler.total(), 4.0);
        assert_eq!(sampler.draw(&points, &factors, 0.0), Some(5));
        assert_eq!(sampler.draw(&points, &factors, 0.2499), Some(5));
        assert_eq!(sampler.draw(&points, &factors, 0.25), Some(2 * CHUNK + 3));
        assert_eq!(
            sampler.draw(&points, &factors, 1.0 - f64::EPSILON / 2.0),
            Some(2 * CHUNK + 3)
        );
        factors.fill(0.0);
        sampler.refresh(&points, &factors);
        assert_eq!(sampler.draw(&points, &factors, 0.5), None);
    }

    #[test]
    fn random_seeding_draws_distinct_indices_and_never_zero_weights() {
        let values: Vec<f64> = (0..10).map(f64::from).collect();
        let weights = [0.0, 1.0, 0.0, 2.0, 1.0, 0.0, 0.0, 5.0, 0.0, 1.0];
        let points = weighted(&values, 1, Weights::Given(&weights));
        for seed in 0..50 {
            let mut rng = StreamRng::seed_from(seed);
            let (indices, ran_out) = random_indices(&points, 5, &mut rng);
            assert!(!ran_out);
            let mut sorted = indices.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [1, 3, 4, 7, 9]);
        }
        let mut rng = StreamRng::seed_from(0);
        let (indices, ran_out) = random_indices(&points, 6, &mut rng);
        assert!(ran_out);
        assert!(indices.iter().all(|&i| weights[i] > 0.0));
    }

    #[test]
    fn kmeans_plus_plus_runs_out_on_duplicates() {
        let values = [1.0, 1.0, 1.0, 2.0, 2.0];
        let points = weighted(&values, 1, Weights::Unit);
        let mut rng = StreamRng::seed_from(3);
        let seeding = seed_centres(&points, &Init::default(), 3, &[0.0], &mut rng);
        assert!(seeding.duplicate_centres);
        let mut centres = seeding.centres.clone();
        centres.sort_by(f64::total_cmp);
        centres.dedup();
        assert_eq!(centres, [1.0, 2.0]);
        let seeding = seed_centres(&points, &Init::KMeansPlusPlus, 2, &[0.0], &mut rng);
        assert!(!seeding.duplicate_centres);
    }

    /// The potentials summed four candidates at a time have the bits of one candidate's
    /// sum over the points in order, for every number of candidates (groups of four and a
    /// padded remainder), with and without weights, at compile-time and run-time dimensions.
    #[test]
    fn grouped_potentials_have_the_bits_of_one_candidate_at_a_time() {
        let mut rng = StreamRng::seed_from(11);
        for dim in [1, 2, 3, 7, 20] {
            let n = 700;
            let values: Vec<f64> = (0..n * dim).map(|_| rng.standard_normal()).collect();
            let closest: Vec<f64> = (0..n).map(|_| 4.0 * rng.next_f64()).collect();
            let given: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            for weights in [Weights::Unit, Weights::Given(&given)] {
                let points = weighted(&values, dim, weights);
                for n_candidates in 1..=9 {
                    let candidates: Vec<f64> = (0..n_candidates * dim)
                        .map(|_| rng.standard_normal())
                        .collect();
                    let mut grouped = vec![0.5; n_candidates];
                    let groups = if dim <= MAX_GROUPED_DIM {
                        CentreGroups::new(&candidates, dim)
                    } else {
                        CentreGroups::default()
                    };
                    with_const_dim!(
                        dim,
                        candidate_potentials_fast(
                            &points,
                            &candidates,
                            &groups,
                            0..n,
                            &closest,
                            &mut [],
                            &mut grouped
                        )
                    );
                    let mut portable = vec![0.5; n_candidates];
                    with_const_dim!(
                        dim,
                        candidate_potentials_portable(
                            &points,
                            &candidates,
                            &groups,
                            0..n,
                            &closest,
                            &mut [],
                            &mut portable
                        )
                    );
                    for (t, candidate) in candidates.chunks_exact(dim).enumerate() {
                        assert_eq!(grouped[t].to_bits(), portable[t].to_bits());
                        let mut sum = 0.0;
                        for i in 0..n {
                            let w = points.weight(i);
                            let d2 = closest[i].min(squared_distance(points.row(i), candidate));
                            sum += if matches!(weights, Weights::Unit) {
                                d2
                            } else {
                                w * d2
                            };
                        }
                        assert_eq!(
                            grouped[t].to_bits(),
                            (0.5 + sum).to_bits(),
                            "d {dim}, {n_candidates} candidates, candidate {t}"
                        );
                    }
                }
            }
        }
    }

    fn candidate_potentials_portable<const D: usize>(
        points: &WeightedPoints<'_>,
        candidates: &[f64],
        groups: &CentreGroups,
        range: Range<usize>,
        closest: &[f64],
        kept: &mut [f64],
        potentials: &mut [f64],
    ) {
        candidate_potentials::<Portable, D>(
            Portable, points, candidates, groups, range, closest, kept, potentials,
        );
    }

    fn update_chunk_portable<const D: usize>(
        points: &WeightedPoints<'_>,
        first: usize,
        closest: &mut [f64],
        centre: &[f64],
    ) -> f64 {
        update_chunk::<Portable, D>(Portable, points, first, closest, centre)
    }

    /// The D² update, four points per vector at compile-time dimensions, has the bits of
    /// the one-point loop (closest(i) ← min(closest(i), ‖x_i − c‖²), then the mass summed in
    /// point order) on this CPU's instructions and on the portable build, with and without
    /// weights, for a chunk that starts inside the data and ends in fewer than four points;
    /// some points sit on the centre and some D² are still infinite.
    #[test]
    fn grouped_update_has_the_bits_of_one_point_at_a_time() {
        let mut rng = StreamRng::seed_from(12);
        for dim in [1, 2, 3, 4, 5, 10, 16, 20] {
            let n = 1500;
            let mut values: Vec<f64> = (0..n * dim).map(|_| rng.standard_normal()).collect();
            let centre: Vec<f64> = (0..dim).map(|_| rng.standard_normal()).collect();
            for i in [9, 10, 400] {
                values[i * dim..(i + 1) * dim].copy_from_slice(&centre);
            }
            let closest: Vec<f64> = (0..n)
                .map(|i| {
                    if i % 5 == 0 {
                        f64::INFINITY
                    } else {
                        3.0 * dim as f64 * rng.next_f64()
                    }
                })
                .collect();
            let given: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            let (first, len) = (7, 1023);
            for weights in [Weights::Unit, Weights::Given(&given)] {
                let points = weighted(&values, dim, weights);
                let mut expected = closest[first..first + len].to_vec();
                let mut mass = 0.0;
                for (offset, d2) in expected.iter_mut().enumerate() {
                    let i = first + offset;
                    *d2 = d2.min(squared_distance(points.row(i), &centre));
                    mass += if matches!(weights, Weights::Unit) {
                        *d2
                    } else {
                        points.weight(i) * *d2
                    };
                }
                let bits = |values: &[f64]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                let mut fast = closest[first..first + len].to_vec();
                let fast_mass =
                    with_const_dim!(dim, update_chunk_fast(&points, first, &mut fast, &centre));
                let mut portable = closest[first..first + len].to_vec();
                let portable_mass = with_const_dim!(
                    dim,
                    update_chunk_portable(&points, first, &mut portable, &centre)
                );
                assert_eq!(bits(&fast), bits(&expected), "d {dim}");
                assert_eq!(bits(&portable), bits(&expected), "d {dim}");
                assert_eq!(fast_mass.to_bits(), mass.to_bits(), "d {dim}");
                assert_eq!(portable_mass.to_bits(), mass.to_bits(), "d {dim}");
            }
        }
    }

    /// From d = 17 on, the potentials' pass leaves the winner's min(D², ‖x − winner‖²) in
    /// `closest`: the bits the D² update computes, with and without weights, with a
    /// candidate drawn twice and one whose D² is already 0; at d ≤ 16 it leaves `closest`
    /// alone. The winner is the one whose potential, summed one candidate at a time, is
    /// lowest.
    #[test]
    fn kept_distances_are_the_update_of_the_winner() {
        let mut rng = StreamRng::seed_from(13);
        for dim in [2, 10, 17, 20, 64] {
            let n = 2 * CHUNK + 300;
            let values: Vec<f64> = (0..n * dim).map(|_| rng.standard_normal()).collect();
            let given: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
            for weights in [Weights::Unit, Weights::Given(&given)] {
                let points = weighted(&values, dim, weights);
                let mut closest: Vec<f64> = (0..n).map(|_| 3.0 * rng.next_f64()).collect();
                closest[2000] = 0.0;
                let candidates = [5, 1500, 2000, 1500, 77, 2100];
                let mut kept = Vec::new();
                let mut updated = closest.clone();
                let (winner, done) = best_candidate(&points, &mut updated, &candidates, &mut kept);
                assert_eq!(done, dim >= KEEP_MIN_DIM, "d {dim}");
                let potential = |c: usize| {
                    (0..n).fold(0.0, |acc, i| {
                        acc + points.weight(i)
                            * closest[i].min(squared_distance(points.row(i), points.row(c)))
                    })
                };
                let lowest = candidates
                    .iter()
                    .copied()
                    .min_by(|&a, &b| potential(a).total_cmp(&potential(b)))
                    .unwrap();
                assert_eq!(winner, lowest, "d {dim}");
                let mut expected = closest.clone();
                if done {
                    let mut sampler = MassSampler::new(n);
                    sampler.update_closest(&points, &mut expected, points.row(winner));
                }
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&updated), bits(&expected), "d {dim}");
            }
        }
    }

    #[test]
    fn greedy_picks_the_candidate_with_the_lowest_potential() {
        // Centre at 0: candidate 10 leaves potential 0 + 1 + 1 + 0 + 1 = 3, candidate 1
        // leaves 0 + 0 + 64 + 81 + 100.
        let values = [0.0, 1.0, 9.0, 10.0, 11.0];
        let points = weighted(&values, 1, Weights::Unit);
        let closest: Vec<f64> = values.iter().map(|x| x * x).collect();
        let best = |candidates: &[usize]| {
            best_candidate(&points, &mut closest.clone(), candidates, &mut Vec::new()).0
        };
        assert_eq!(best(&[1, 3]), 3);
        assert_eq!(best(&[3, 1]), 3);
        // Equal potentials: the first drawn wins.
        assert_eq!(best(&[2, 4, 2]), 2);
    }
}
