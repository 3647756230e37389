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

use super::chunked::{CHUNK, WeightedPoints, dispatched, with_const_dim};
use super::params::Init;
use crate::data::{Points, Weights};
use crate::error::{Error, Result};
use crate::geometry::squared_distance;
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
    while indices.len() < n_clusters {
        if sampler.total() <= 0.0 {
            ran_out = true;
            break;
        }
        let next = if trials == 1 {
            sampler
                .draw(points, &closest, rng.next_f64())
                .expect("invariant: the total mass is positive")
        } else {
            let candidates: Vec<usize> = (0..trials)
                .map(|_| {
                    sampler
                        .draw(points, &closest, rng.next_f64())
                        .expect("invariant: the total mass is positive")
                })
                .collect();
            best_candidate(points, &closest, &candidates)
        };
        indices.push(next);
        if indices.len() < n_clusters {
            sampler.update_closest(points, &mut closest, points.row(next));
        }
    }
    if ran_out {
        closest.fill(1.0);
        sampler.refresh(points, &closest);
        while indices.len() < n_clusters {
            let next = sampler
                .draw(points, &closest, rng.next_f64())
                .expect("invariant: the weights are not all zero");
            indices.push(next);
        }
    }
    (indices, ran_out)
}

/// The candidate with the lowest potential Σ w(x)·min(D(x)², ‖x − candidate‖²); ties go to
/// the first candidate drawn.
fn best_candidate(points: &WeightedPoints<'_>, closest: &[f64], candidates: &[usize]) -> usize {
    // A candidate drawn twice (common once the mass sits on a few far points) is evaluated
    // once; keeping the first occurrences in order keeps "ties go to the first drawn".
    let mut distinct: Vec<usize> = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        if !distinct.contains(&candidate) {
            distinct.push(candidate);
        }
    }
    if distinct.len() == 1 {
        return distinct[0];
    }
    let candidates = &distinct[..];
    let rows: Vec<f64> = candidates
        .iter()
        .flat_map(|&i| points.row(i).iter().copied())
        .collect();
    let partials: Vec<Vec<f64>> = points
        .chunk_ranges()
        .map(|range| {
            let mut potentials = vec![0.0; candidates.len()];
            with_const_dim!(
                points.dim,
                candidate_potentials_fast(points, &rows, range, closest, &mut potentials)
            );
            potentials
        })
        .collect();
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
    candidates[best]
}

dispatched!(candidate_potentials_fast = candidate_potentials(
    points: &'a WeightedPoints<'b>,
    candidates: &'a [f64],
    range: Range<usize>,
    closest: &'a [f64],
    potentials: &'a mut [f64],
));

/// Adds Σ_{i ∈ range} w(i)·min(D(i)², ‖x_i − candidate_t‖²) to `potentials[t]`.
///
/// Up to four candidates at a time, each point visited once for all of them: every
/// candidate's sum still runs over the points in index order (the same bits as one
/// candidate at a time), but the four sums are independent chains of additions, so the
/// processor overlaps them instead of waiting on one addition's latency per point.
#[inline(always)]
fn candidate_potentials<const D: usize>(
    points: &WeightedPoints<'_>,
    candidates: &[f64],
    range: Range<usize>,
    closest: &[f64],
    potentials: &mut [f64],
) {
    let dim = if D == 0 { points.dim } else { D };
    let values = &points.values[range.start * dim..range.end * dim];
    let closest = &closest[range.clone()];
    for (potentials, group) in potentials
        .chunks_mut(GROUP)
        .zip(candidates.chunks(GROUP * dim))
    {
        // A group of fewer than four repeats its last candidate; those sums are dropped.
        let last = potentials.len() - 1;
        let candidate = |t: usize| &group[t.min(last) * dim..(t.min(last) + 1) * dim];
        let group = [candidate(0), candidate(1), candidate(2), candidate(3)];
        // Plain loops rather than iterator folds, which would not be compiled into the
        // dispatched kernel.
        let mut sums = [0.0; GROUP];
        match points.weights {
            Weights::Unit => {
                for (point, d2) in values.chunks_exact(dim).zip(closest) {
                    let point = &point[..dim];
                    for (sum, candidate) in sums.iter_mut().zip(group) {
                        *sum += d2.min(squared_distance(point, candidate));
                    }
                }
            }
            Weights::Given(weights) => {
                let weights = &weights[range.clone()];
                for ((point, d2), w) in values.chunks_exact(dim).zip(closest).zip(weights) {
                    let point = &point[..dim];
                    for (sum, candidate) in sums.iter_mut().zip(group) {
                        *sum += w * d2.min(squared_distance(point, candidate));
                    }
                }
            }
        }
        for (potential, sum) in potentials.iter_mut().zip(sums) {
            *potential += sum;
        }
    }
}

/// Candidates whose potentials are summed side by side.
const GROUP: usize = 4;

dispatched!(update_chunk_fast = update_chunk(
    points: &'a WeightedPoints<'b>,
    first: usize,
    closest: &'a mut [f64],
    centre: &'a [f64],
) -> f64);

/// closest(i) ← min(closest(i), ‖x_i − centre‖²) over one chunk starting at point `first`;
/// returns the chunk's new mass Σ w(i)·closest(i).
#[inline(always)]
fn update_chunk<const D: usize>(
    points: &WeightedPoints<'_>,
    first: usize,
    closest: &mut [f64],
    centre: &[f64],
) -> f64 {
    let dim = if D == 0 { points.dim } else { D };
    let centre = &centre[..dim];
    let values = &points.values[first * dim..(first + closest.len()) * dim];
    for (d2, point) in closest.iter_mut().zip(values.chunks_exact(dim)) {
        *d2 = d2.min(squared_distance(&point[..dim], centre));
    }
    match points.weights {
        Weights::Unit => closest.iter().fold(0.0, |acc, d2| acc + d2),
        Weights::Given(weights) => closest
            .iter()
            .zip(&weights[first..first + closest.len()])
            .fold(0.0, |acc, (d2, w)| acc + w * d2),
    }
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
        available.fill(1.0);
        sampler.refresh(points, &available);
        while indices.len() < n_clusters {
            let next = sampler
                .draw(points, &available, rng.next_f64())
                .expect("invariant: the weights are not all zero");
            indices.push(next);
        }
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
                    with_const_dim!(
                        dim,
                        candidate_potentials_fast(
                            &points,
                            &candidates,
                            0..n,
                            &closest,
                            &mut grouped
                        )
                    );
                    for (t, candidate) in candidates.chunks_exact(dim).enumerate() {
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

    #[test]
    fn greedy_picks_the_candidate_with_the_lowest_potential() {
        // Centre at 0: candidate 10 leaves potential 0 + 1 + 1 + 0 + 1 = 3, candidate 1
        // leaves 0 + 0 + 64 + 81 + 100.
        let values = [0.0, 1.0, 9.0, 10.0, 11.0];
        let points = weighted(&values, 1, Weights::Unit);
        let closest: Vec<f64> = values.iter().map(|x| x * x).collect();
        assert_eq!(best_candidate(&points, &closest, &[1, 3]), 3);
        assert_eq!(best_candidate(&points, &closest, &[3, 1]), 3);
        // Equal potentials: the first drawn wins.
        assert_eq!(best_candidate(&points, &closest, &[2, 4, 2]), 2);
    }
}
