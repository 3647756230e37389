//! The proposal means m^{(k')}: fixed for a round, computed once per round and cached.
//!
//! For each k' the chain proposes, m^{(k')} are the k'-means centres of the points in memory:
//! Lloyd's algorithm warm-started from the most recent m^{(k')} (the previous round's, when
//! k' was proposed then), or seeded by greedy k-means++ the first time, from the child stream
//! `rng.child(t).child(k')`, so that the means do not depend on the order in which values of
//! k' are first proposed in a round.
//!
//! **Re-seeding** (beyond the spec, which warm-starts only): every [`RESEED_PERIOD`] rounds a
//! fresh greedy k-means++ seeding (from the same child stream) is run beside the warm start,
//! and the lower inertia wins. A warm start alone keeps a poor local optimum for ever (on
//! eight well-separated clusters in d = 5 it kept one with 2.4 times the optimal inertia —
//! two clusters merged, one split — and the chain, whose proposals centre on these means,
//! settled on the wrong clustering); the periodic fresh seeding gives it a way out at a
//! small cost. A fresh fit costs O(n_t), so a fixed period would make a run of exact
//! memory quadratic in T through the fits alone (at t = 9,000, d = 5 they were 14 % of a
//! round); the period doubles each time n_t doubles past [`RESEED_GROWTH`] points
//! ([`reseeds`]), which keeps about a hundred fresh seedings per doubling of the memory and
//! their total cost linear in T. Below [`RESEED_GROWTH`] points, and in a window of at most
//! that many, the period stays [`RESEED_PERIOD`]. With the means fixed for the round the proposal is a
//! fixed kernel (and the chain an exact Metropolis–Hastings chain for the round's target).
//! Each mean comes with n_j, the number of points in memory assigned to it, which the Laplace
//! proposal scale uses.
//!
//! If k' exceeds the number n_d of distinct points in memory, the first n_d means are those
//! points (in order of first appearance, n_j their multiplicities) and the k' − n_d surplus
//! centres are proposed from the prior U_{B_d(2R)} itself, so every k ≤ p stays reachable and
//! the target is never truncated.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::filtering::{self, Assignment};
use super::index::NodeLayout;
use super::memory::PointMemory;
use crate::error::{Error, Result};
use crate::kmeans::seed_indices;
use crate::kmeans::{Centres, Init};
use crate::rng::StreamRng;

/// The proposal means for one k': the first `counts.len()` slots have a mean (row-major in
/// `means`) and a count n_j; the remaining k' − counts.len() slots are surplus slots,
/// proposed from the prior.
#[derive(Clone, Debug, PartialEq)]
pub struct ProposalMeans {
    /// k'.
    pub n_clusters: usize,
    /// The means of the slots that have one, row-major.
    pub means: Vec<f64>,
    /// n_j for each slot with a mean.
    pub counts: Vec<f64>,
}

impl ProposalMeans {
    /// The number of slots with a mean, min(k', n_d).
    pub fn n_with_mean(&self) -> usize {
        self.counts.len()
    }
}

/// A fresh k-means++ seeding competes with the warm start every this many rounds while the
/// memory holds fewer than [`RESEED_GROWTH`] points.
pub(crate) const RESEED_PERIOD: u64 = 10;

/// The memory size beyond which the period of the fresh seedings doubles with each doubling
/// of the memory (module docs).
pub(crate) const RESEED_GROWTH: usize = 1000;

/// Whether round `round`, with `n_points` in memory, runs a fresh seeding: every
/// [`RESEED_PERIOD`] · 2^j rounds, 2^j the largest power of two at most
/// max(1, `n_points` / [`RESEED_GROWTH`]).
pub(crate) fn reseeds(round: u64, n_points: usize) -> bool {
    let ratio = (n_points / RESEED_GROWTH).max(1) as u64;
    let doubling = 1u64 << ratio.ilog2();
    round % RESEED_PERIOD.saturating_mul(doubling) == 0
}

/// Where the sampler gets its proposal means.
pub(crate) trait MeansSource {
    /// The proposal means for `n_clusters` clusters (the same every time in a round).
    fn means(&mut self, n_clusters: usize) -> &ProposalMeans;
    /// The number of k-means fits run so far.
    fn kmeans_runs(&self) -> usize {
        0
    }
}

/// A source behind a reference (a test drives the chain with either kind through one call).
impl<S: MeansSource + ?Sized> MeansSource for &mut S {
    fn means(&mut self, n_clusters: usize) -> &ProposalMeans {
        (**self).means(n_clusters)
    }

    fn kmeans_runs(&self) -> usize {
        (**self).kmeans_runs()
    }
}

/// The most recent means for each k', with their assignment of the memory, kept across
/// rounds for warm starts (part of the learner's state).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeansHistory {
    /// Snapshots made before the assignments were kept hold only (k', means), sorted by k'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    latest: Vec<(usize, Vec<f64>)>,
    /// Per k' (increasing), the latest means and their assignment of the memory.
    #[serde(default)]
    assignments: Vec<Assignment>,
}

/// What the history holds for one k'.
enum Previous<'a> {
    Assigned(&'a Assignment),
    Means(&'a [f64]),
}

impl MeansHistory {
    fn get(&self, n_clusters: usize, dim: usize) -> Option<Previous<'_>> {
        if let Ok(i) = self
            .assignments
            .binary_search_by_key(&n_clusters, |a| a.counts.len())
        {
            return Some(Previous::Assigned(&self.assignments[i]));
        }
        self.latest
            .binary_search_by_key(&n_clusters, |(k, _)| *k)
            .ok()
            .map(|i| self.latest[i].1.as_slice())
            .filter(|means| means.len() == n_clusters * dim)
            .map(Previous::Means)
    }

    fn set(&mut self, assignment: Assignment) {
        let n_clusters = assignment.counts.len();
        if let Ok(i) = self.latest.binary_search_by_key(&n_clusters, |(k, _)| *k) {
            self.latest.remove(i);
        }
        match self
            .assignments
            .binary_search_by_key(&n_clusters, |a| a.counts.len())
        {
            Ok(i) => self.assignments[i] = assignment,
            Err(i) => self.assignments.insert(i, assignment),
        }
    }

    /// The latest means for k', if any.
    #[cfg(test)]
    fn means(&self, n_clusters: usize, dim: usize) -> Option<&[f64]> {
        match self.get(n_clusters, dim)? {
            Previous::Assigned(a) => Some(&a.means),
            Previous::Means(m) => Some(m),
        }
    }

    pub(crate) fn validate(&self, dim: Option<usize>, max_k: usize) -> Result<()> {
        let ordered = self.latest.windows(2).all(|w| w[0].0 < w[1].0)
            && self
                .assignments
                .windows(2)
                .all(|w| w[0].counts.len() < w[1].counts.len());
        let shaped = self.latest.iter().all(|(k, means)| {
            (1..=max_k).contains(k)
                && dim.is_some_and(|d| means.len() == k * d)
                && means.iter().all(|v| v.is_finite())
        }) && self.assignments.iter().all(|a| {
            (1..=max_k).contains(&a.counts.len())
                && dim.is_some_and(|d| a.is_consistent(a.counts.len(), d))
        });
        if ordered && shaped {
            Ok(())
        } else {
            Err(Error::InvalidSnapshot(
                "PACBO: the stored proposal means are inconsistent".into(),
            ))
        }
    }
}

/// The learner's source of means: k-means on the memory, cached for the round.
pub(crate) struct KMeansSource<'a> {
    memory: &'a PointMemory,
    history: &'a mut MeansHistory,
    /// The round t and its child stream `rng.child(t)`; k' adds `.child(k')`.
    round: u64,
    round_rng: StreamRng,
    cache: Vec<Option<ProposalMeans>>,
    kmeans_runs: usize,
    distinct: DistinctScan,
    /// The shift tolerance of Lloyd's loop ([`filtering::tolerance`]), a function of the
    /// memory alone, which does not change within the round: computed once, at the first
    /// k' that needs it (point by point it costs two passes over the memory, which every
    /// k' proposed in the round used to pay again for the same bits).
    tolerance: Option<f64>,
}

impl<'a> KMeansSource<'a> {
    pub(crate) fn new(
        memory: &'a PointMemory,
        history: &'a mut MeansHistory,
        round: u64,
        rng: &StreamRng,
        max_k: usize,
    ) -> Self {
        Self {
            memory,
            history,
            round,
            round_rng: rng.child(round),
            cache: vec![None; max_k],
            kmeans_runs: 0,
            distinct: DistinctScan::default(),
            tolerance: None,
        }
    }

    /// The means for k' (module docs): the warm start brought up to date with the memory
    /// (a Lloyd pass only if the means must move, see [`super::filtering`]) and, every
    /// [`RESEED_PERIOD`] rounds or more ([`reseeds`]) or the first time, a fresh fit from a
    /// greedy k-means++ seeding. The fresh fit wins if its inertia is lower by more than a
    /// relative [`RESEED_MARGIN`] and it is another optimum: its means, put in the order of
    /// the warm start's by the optimal matching ([`in_order_of`]), must be farther from them
    /// than Lloyd's shift tolerance ([`same_optimum`]).
    ///
    /// Why the second condition: the fresh fit finds the same optimum as the warm start in
    /// almost every reseeding round, its means in another order and converged a little
    /// further (the warm start stops within the shift tolerance), so that its inertia is
    /// lower by 10⁻⁶–10⁻⁴ relative. In the run of T = 10⁴, d = 5 (four clusters) it won 718
    /// times, 679 of them within the tolerance once matched (the 39 others, mostly at
    /// k' ≥ 5, were other optima); each time the means of that k' moved by up to a whole
    /// distance between clusters (30–50 σ_j at k' = 4), and the round's cover of k' was
    /// rebuilt from scratch (464 of the run's 1,175 rebuilds of the covers' stable parts
    /// came with a move of at least 5 σ_j).
    fn compute(&mut self, n_clusters: usize) -> ProposalMeans {
        let dim = self.memory.dim();
        let rows = self.memory.rows();
        if !self.distinct.at_least(rows, dim, n_clusters) {
            return self.distinct.as_means(rows, dim, n_clusters);
        }
        let memory = self.memory;
        let tolerance = *self
            .tolerance
            .get_or_insert_with(|| filtering::tolerance(memory));
        let warm = self.history.get(n_clusters, dim).map(|previous| {
            let mut assignment = match previous {
                Previous::Assigned(a) if a.extends_to(memory) => {
                    let mut a = a.clone();
                    a.extend(memory);
                    a
                }
                Previous::Assigned(a) => filtering::pass(memory, a.means.clone()),
                Previous::Means(m) => filtering::pass(memory, m.to_vec()),
            };
            if let Some(moved) = filtering::must_move(&assignment, dim, tolerance) {
                assignment = filtering::fit(memory, moved, tolerance);
            }
            assignment
        });
        let reseed = warm.is_none() || reseeds(self.round, memory.len());
        let fresh = reseed.then(|| {
            let start = self.seeding(n_clusters);
            filtering::fit(memory, start, tolerance)
        });
        self.kmeans_runs += usize::from(warm.is_some()) + usize::from(fresh.is_some());
        let best = match (warm, fresh) {
            (Some(warm), Some(fresh)) if fresh.inertia < warm.inertia * (1.0 - RESEED_MARGIN) => {
                let fresh = in_order_of(fresh, &warm.means, dim);
                if same_optimum(&fresh.means, &warm.means, tolerance) {
                    warm
                } else {
                    fresh
                }
            }
            (Some(warm), _) => warm,
            (None, Some(fresh)) => fresh,
            (None, None) => unreachable!("a fresh fit runs when there is no warm start"),
        };
        let means = ProposalMeans {
            n_clusters,
            means: best.means.clone(),
            counts: best.counts.clone(),
        };
        self.history.set(best);
        means
    }

    /// A greedy k-means++ seeding from the child stream `rng.child(t).child(k')`: on the
    /// index's summary (the means of the tree nodes of at most [`SUMMARY_NODE`] points,
    /// weighted by their counts, so that the seeding costs O(t/`SUMMARY_NODE`)), or on the
    /// points themselves without the index.
    fn seeding(&mut self, n_clusters: usize) -> Vec<f64> {
        let dim = self.memory.dim();
        let (values, weights) = if self.memory.uses_index() {
            summary(self.memory, n_clusters)
        } else {
            (self.memory.rows().to_vec(), vec![1.0; self.memory.len()])
        };
        let n = weights.len();
        let seeded = ndarray::ArrayView2::from_shape((n, dim), &values)
            .ok()
            .and_then(|data| {
                seed_indices(
                    data,
                    Some(ndarray::ArrayView1::from(&weights)),
                    &Init::GreedyKMeansPlusPlus {
                        n_local_trials: None,
                    },
                    n_clusters,
                    &mut self.round_rng.child(n_clusters as u64),
                )
                .ok()
            });
        match seeded {
            Some(indices) => indices
                .iter()
                .flat_map(|&i| values[i * dim..(i + 1) * dim].iter().copied())
                .collect(),
            // Only values whose squared distances overflow can make the seeding fail: the
            // first k' distinct points serve.
            None => {
                let rows = self.memory.rows();
                self.distinct.first_as_means(rows, dim, n_clusters).means
            }
        }
    }
}

/// The relative improvement of the inertia by which a fresh fit replaces the warm start.
pub(crate) const RESEED_MARGIN: f64 = 1e-6;

/// `assignment` with its means (and their sums and counts) in the order of `reference`
/// (means of the same k', row-major): mean i goes to the slot of the reference mean that
/// the assignment of least total squared distance pairs it with ([`super::relabel`]).
fn in_order_of(assignment: Assignment, reference: &[f64], dim: usize) -> Assignment {
    let k = assignment.counts.len();
    let mut cost = Vec::with_capacity(k * k);
    for mean in assignment.means.chunks_exact(dim) {
        for other in reference.chunks_exact(dim) {
            cost.push(crate::geometry::squared_distance(mean, other));
        }
    }
    let slot_of = super::relabel::assignment(&cost, k, k);
    let mut ordered = assignment.clone();
    for (i, slot) in slot_of.iter().enumerate() {
        // Square costs: every mean has a slot.
        let j = slot.unwrap_or(i);
        ordered.means[j * dim..(j + 1) * dim]
            .copy_from_slice(&assignment.means[i * dim..(i + 1) * dim]);
        ordered.sums[j * dim..(j + 1) * dim]
            .copy_from_slice(&assignment.sums[i * dim..(i + 1) * dim]);
        ordered.counts[j] = assignment.counts[i];
    }
    ordered
}

/// Whether two sets of means in matched order are one optimum found twice: Σ_j ‖a_j − b_j‖²
/// within Lloyd's shift tolerance, the test by which a fit declares itself converged
/// ([`filtering::must_move`]).
fn same_optimum(a: &[f64], b: &[f64], tolerance: f64) -> bool {
    crate::geometry::squared_distance(a, b) <= tolerance
}

/// The nodes of at most this many points summarise the memory for the k-means++ seeding.
pub(crate) const SUMMARY_NODE: usize = 64;

/// The memory summarised for a seeding of k centres: the means of the highest tree nodes of
/// at most [`SUMMARY_NODE`] points (or of single points, when that would leave fewer than
/// 4k of them), with their counts as weights.
fn summary(memory: &PointMemory, n_clusters: usize) -> (Vec<f64>, Vec<f64>) {
    let dim = memory.dim();
    let layout = NodeLayout { dim };
    let index = memory.index();
    let largest = (memory.len() / (4 * n_clusters)).clamp(1, SUMMARY_NODE);
    let mut values = Vec::new();
    let mut weights = Vec::new();
    for tree in &index.trees {
        let mut stack = vec![0u32];
        while let Some(node_index) = stack.pop() {
            let node = tree.nodes[node_index as usize];
            if node.len() <= largest || node.is_leaf() {
                if largest == 1 || node.len() == 1 {
                    for point in tree.points[node.begin as usize * dim..node.end as usize * dim]
                        .chunks_exact(dim)
                    {
                        values.extend_from_slice(point);
                        weights.push(1.0);
                    }
                } else {
                    let stats = tree.node_stats(node_index as usize, layout);
                    values.extend_from_slice(&stats[layout.mean()..layout.mean() + dim]);
                    weights.push(node.len() as f64);
                }
            } else {
                stack.push(node.right);
                stack.push(node_index + 1);
            }
        }
    }
    (values, weights)
}

impl MeansSource for KMeansSource<'_> {
    fn means(&mut self, n_clusters: usize) -> &ProposalMeans {
        let index = n_clusters - 1;
        if self.cache[index].is_none() {
            let means = self.compute(n_clusters);
            self.cache[index] = Some(means);
        }
        self.cache[index]
            .as_ref()
            .expect("invariant: computed just above")
    }

    fn kmeans_runs(&self) -> usize {
        self.kmeans_runs
    }
}

/// The distinct points of the memory, found lazily in order of first appearance.
#[derive(Default)]
struct DistinctScan {
    seen: HashSet<Box<[u64]>>,
    /// Row index of the first occurrence of each distinct point.
    first_rows: Vec<usize>,
    /// Rows scanned so far.
    scanned: usize,
    key: Vec<u64>,
}

impl DistinctScan {
    fn key_of(&mut self, point: &[f64]) {
        self.key.clear();
        // Adding +0.0 turns −0.0 into +0.0: points are compared as numbers.
        self.key.extend(point.iter().map(|v| (v + 0.0).to_bits()));
    }

    /// Whether the memory holds at least `n` distinct points (scans only as far as needed).
    fn at_least(&mut self, rows: &[f64], dim: usize, n: usize) -> bool {
        let n_rows = rows.len() / dim;
        while self.first_rows.len() < n && self.scanned < n_rows {
            let row = self.scanned;
            self.key_of(&rows[row * dim..(row + 1) * dim]);
            if !self.seen.contains(self.key.as_slice()) {
                self.seen.insert(self.key.clone().into_boxed_slice());
                self.first_rows.push(row);
            }
            self.scanned += 1;
        }
        self.first_rows.len() >= n
    }

    /// The means when there are fewer distinct points than k': every distinct point, with
    /// its multiplicity as count (the scan has been completed by `at_least`).
    fn as_means(&mut self, rows: &[f64], dim: usize, n_clusters: usize) -> ProposalMeans {
        let means: Vec<f64> = self
            .first_rows
            .iter()
            .flat_map(|&row| rows[row * dim..(row + 1) * dim].iter().copied())
            .collect();
        let mut counts = vec![0.0; self.first_rows.len()];
        let mut keys: Vec<Box<[u64]>> = Vec::with_capacity(self.first_rows.len());
        for index in 0..self.first_rows.len() {
            let row = self.first_rows[index];
            self.key_of(&rows[row * dim..(row + 1) * dim]);
            keys.push(self.key.clone().into_boxed_slice());
        }
        for row in rows.chunks_exact(dim) {
            self.key_of(row);
            if let Some(index) = keys.iter().position(|k| **k == *self.key) {
                counts[index] += 1.0;
            }
        }
        ProposalMeans {
            n_clusters,
            means,
            counts,
        }
    }

    /// The first k' distinct points as means, with counts by nearest mean (fallback).
    fn first_as_means(&mut self, rows: &[f64], dim: usize, n_clusters: usize) -> ProposalMeans {
        self.at_least(rows, dim, n_clusters);
        let chosen = &self.first_rows[..n_clusters.min(self.first_rows.len())];
        let means: Vec<f64> = chosen
            .iter()
            .flat_map(|&row| rows[row * dim..(row + 1) * dim].iter().copied())
            .collect();
        let mut counts = vec![0.0; chosen.len()];
        if let Ok(centres) = Centres::new(means.clone(), dim) {
            for row in rows.chunks_exact(dim) {
                counts[centres.nearest(row).0] += 1.0;
            }
        }
        ProposalMeans {
            n_clusters,
            means,
            counts,
        }
    }
}

/// Means given from outside, for tests of the sampler (deliberately bad ones, for example).
#[cfg_attr(
    not(feature = "testing"),
    allow(dead_code, reason = "used by the entry points of the testing feature")
)]
pub(crate) struct FixedMeans {
    pub(crate) by_k: Vec<ProposalMeans>,
}

impl MeansSource for FixedMeans {
    fn means(&mut self, n_clusters: usize) -> &ProposalMeans {
        &self.by_k[n_clusters - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::params::Memory as MemoryMode;

    fn memory_of(points: &[[f64; 1]]) -> PointMemory {
        let mut memory = PointMemory::new(1, MemoryMode::All);
        for p in points {
            memory.push(p, 0.0, 0.0);
        }
        memory
    }

    #[test]
    fn few_distinct_points_become_the_means() {
        let memory = memory_of(&[[1.0], [2.0], [1.0], [-0.0], [0.0]]);
        let mut history = MeansHistory::default();
        let mut source = KMeansSource::new(&memory, &mut history, 1, &StreamRng::seed_from(1), 5);
        let means = source.means(4).clone();
        assert_eq!(means.n_with_mean(), 3);
        assert_eq!(means.means, vec![1.0, 2.0, -0.0]);
        assert_eq!(means.counts, vec![2.0, 1.0, 2.0]);
        assert_eq!(source.kmeans_runs(), 0);
        let two = source.means(2).clone();
        assert_eq!(two.n_with_mean(), 2);
        assert_eq!(two.counts.iter().sum::<f64>(), 5.0);
        assert_eq!(source.kmeans_runs(), 1);
        // Cached: asking again runs nothing.
        source.means(2);
        assert_eq!(source.kmeans_runs(), 1);
        assert!(history.means(2, 1).is_some());
    }

    /// Four groups of 50 points on a line, at 0, 10, 20 and 30 (each symmetric about its
    /// centre).
    fn four_groups() -> PointMemory {
        let mut memory = PointMemory::new(1, MemoryMode::All);
        for centre in [0.0, 10.0, 20.0, 30.0] {
            for i in 0..50 {
                memory.push(&[centre + 2.0 * (i as f64 / 49.0 - 0.5)], 0.0, 0.0);
            }
        }
        memory
    }

    /// In a reseeding round the fresh fit finds the groups' own means, in the order of its
    /// seeding, with an inertia 0.7 % lower than the warm start's (which sits 0.05 off each
    /// mean, within Lloyd's shift tolerance of 0.0125, so it does not move): the same
    /// optimum, which must not replace the warm start. (Caught: dropping the test of the
    /// matched means, the rule before 2026-12-04, returns the fresh means.)
    #[test]
    fn the_same_optimum_found_again_keeps_the_warm_start() {
        let memory = four_groups();
        let warm = vec![30.05, 20.05, 10.05, 0.05];
        let mut history = MeansHistory {
            latest: vec![(4, warm.clone())],
            assignments: Vec::new(),
        };
        assert!(reseeds(10, memory.len()));
        let mut source = KMeansSource::new(&memory, &mut history, 10, &StreamRng::seed_from(5), 6);
        let means = source.means(4).clone();
        assert_eq!(source.kmeans_runs(), 2, "a warm start and a fresh fit");
        assert_eq!(means.means, warm);
        assert_eq!(means.counts, vec![50.0; 4]);
    }

    /// Another optimum that wins is put in the order of the warm start, its sums and counts
    /// with its means.
    #[test]
    fn a_fresh_fit_is_put_in_the_order_of_the_warm_start() {
        let fresh = Assignment {
            means: vec![20.0, 0.0, 31.0],
            sums: vec![40.0, 0.0, 93.0],
            counts: vec![2.0, 1.0, 3.0],
            inertia: 1.0,
            first: 0,
            through: 6,
        };
        let ordered = in_order_of(fresh.clone(), &[1.0, 30.0, 19.0], 1);
        assert_eq!(ordered.means, vec![0.0, 31.0, 20.0]);
        assert_eq!(ordered.sums, vec![0.0, 93.0, 40.0]);
        assert_eq!(ordered.counts, vec![1.0, 3.0, 2.0]);
        assert_eq!(
            (ordered.inertia, ordered.first, ordered.through),
            (1.0, 0, 6)
        );
        assert!(same_optimum(&[0.0, 31.0], &[0.05, 31.0], 0.01));
        assert!(!same_optimum(&[0.0, 31.0], &[0.2, 31.0], 0.01));
    }

    #[test]
    fn the_reseeding_period_doubles_with_the_memory() {
        // Every 10 rounds up to 1,999 points, then 20, 40, …: about a hundred seedings per
        // doubling of the memory.
        for n_points in [1, 999, 1000, 1999] {
            assert!(reseeds(10, n_points) && !reseeds(15, n_points) && reseeds(20, n_points));
        }
        assert!(!reseeds(10, 2000) && reseeds(20, 2000) && !reseeds(30, 3999));
        assert!(!reseeds(40, 8000) && reseeds(80, 8000) && reseeds(80, 15_999));
        let count = |from: u64, to: u64| (from..to).filter(|&t| reseeds(t, t as usize)).count();
        assert_eq!(count(1000, 2000), 100);
        assert_eq!(count(2000, 4000), 100);
        assert_eq!(count(64_000, 128_000), 100);
        assert!(reseeds(0, usize::MAX));
    }

    #[test]
    fn means_do_not_depend_on_the_order_of_requests() {
        let points: Vec<[f64; 1]> = (0..40).map(|i| [((i * 37) % 11) as f64]).collect();
        let memory = memory_of(&points);
        let rng = StreamRng::seed_from(3);
        let mut first = MeansHistory::default();
        let mut a = KMeansSource::new(&memory, &mut first, 40, &rng, 6);
        let a3 = a.means(3).clone();
        let a5 = a.means(5).clone();
        let mut second = MeansHistory::default();
        let mut b = KMeansSource::new(&memory, &mut second, 40, &rng, 6);
        let b5 = b.means(5).clone();
        let b3 = b.means(3).clone();
        assert_eq!((a3, a5), (b3, b5));
    }
}
