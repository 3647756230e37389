//! Lloyd's algorithm for the proposal means, on the index (the filtering algorithm of
//! Kanungo et al. 2002 and Pelleg & Moore 1999) or point by point, and its incremental
//! form from one round to the next.
//!
//! **A pass** assigns every point in memory to its nearest mean and returns, per mean, the
//! sum and the number of its points and the inertia Σ_s min_j ‖x_s − m_j‖². On the index, a
//! node whose box has a single nearest candidate (the filtering test of [`super::evaluate`])
//! gives all its points at once: n to the count, n μ + Σy to the sum (μ the node's mean,
//! y = x − μ) and Σ‖y − v‖² = Σ‖y‖² − 2v·Σy + n‖v‖² (v = m − μ) to the inertia; only leaves
//! whose box straddles a boundary are assigned point by point. Without the index (small
//! memories, large d) every point is assigned (ties: the lowest index either way).
//!
//! **Lloyd's loop** ([`fit`]): pass at the current means m; the next means m' are the means
//! of the assignment (a mean without points stays put). If Σ_j ‖m'_j − m_j‖² is at most
//! 1e−4 × the mean per-coordinate variance of the memory (scikit-learn's tolerance, as in
//! [`crate::kmeans`]), the loop stops *at m*, whose pass (counts, inertia) it returns;
//! otherwise it moves to m' and passes again, at most [`MAX_PASSES`] times.
//!
//! **From one round to the next** ([`Assignment::extend`]): the pass of m over the memory of
//! the previous round, plus the points stored since, each given to its nearest mean, *is* the
//! pass of m over the new memory (the old points keep their nearest mean, since m has not
//! moved). So a round costs a pass only when the means must move (the shift test fails,
//! typically after a change of the stream) or when a window memory has dropped points; in a
//! steady stream it costs O(k d) per new point.

use serde::{Deserialize, Serialize};

use super::index::{MAX_INDEX_DIM, MomentLayout, N, NodeLayout, SUM_YY, SpatialIndex};
use super::memory::PointMemory;

/// The largest number of Lloyd passes per fit (scikit-learn's default `max_iter`).
pub(crate) const MAX_PASSES: usize = 300;

/// Means with the pass that assigns the memory's live positions `first..through` to them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Assignment {
    /// The means, k × d.
    pub(crate) means: Vec<f64>,
    /// Per mean, the sum of its points (k × d) and their number.
    pub(crate) sums: Vec<f64>,
    pub(crate) counts: Vec<f64>,
    /// Σ_s min_j ‖x_s − m_j‖².
    pub(crate) inertia: f64,
    /// The positions assigned.
    pub(crate) first: u64,
    pub(crate) through: u64,
}

impl Assignment {
    /// The means of the assignment (a mean without points stays where it is).
    fn moved(&self, dim: usize) -> Vec<f64> {
        let mut means = self.means.clone();
        for (j, &count) in self.counts.iter().enumerate() {
            if count > 0.0 {
                for i in 0..dim {
                    means[j * dim + i] = self.sums[j * dim + i] / count;
                }
            }
        }
        means
    }

    /// Whether the assignment is still a pass over a prefix of the memory's live points
    /// (nothing has left since), so that [`Assignment::extend`] can bring it up to date.
    pub(crate) fn extends_to(&self, memory: &PointMemory) -> bool {
        let first = memory.pushed() - memory.len() as u64;
        self.first == first && self.through <= memory.pushed()
    }

    /// Adds the points stored since the pass, each to its nearest mean.
    pub(crate) fn extend(&mut self, memory: &PointMemory) {
        let dim = memory.dim();
        let (rows, _, _) = memory.positions(self.through, memory.pushed());
        for point in rows.chunks_exact(dim) {
            let (j, distance) = nearest(point, &self.means, dim);
            self.counts[j] += 1.0;
            for i in 0..dim {
                self.sums[j * dim + i] += point[i];
            }
            self.inertia += distance;
        }
        self.through = memory.pushed();
    }

    /// Checks a restored assignment's shape and values.
    pub(crate) fn is_consistent(&self, n_clusters: usize, dim: usize) -> bool {
        self.means.len() == n_clusters * dim
            && self.sums.len() == n_clusters * dim
            && self.counts.len() == n_clusters
            && self.first <= self.through
            && self.means.iter().chain(&self.sums).all(|v| v.is_finite())
            && self.counts.iter().all(|c| c.is_finite() && *c >= 0.0)
            && self.inertia.is_finite()
            && self.inertia >= 0.0
    }
}

/// The nearest of the means to a point (ties: the lowest index) and its squared distance.
#[inline]
fn nearest(point: &[f64], means: &[f64], dim: usize) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (j, mean) in means.chunks_exact(dim).enumerate() {
        let distance = crate::geometry::squared_distance(point, mean);
        if distance < best.1 {
            best = (j, distance);
        }
    }
    best
}

/// One pass at `means` over the whole memory.
pub(crate) fn pass(memory: &PointMemory, means: Vec<f64>) -> Assignment {
    let dim = memory.dim();
    let k = means.len() / dim;
    let first = memory.pushed() - memory.len() as u64;
    if memory.uses_index() {
        let mut pass = Pass::new(k, dim);
        crate::kernels::dispatch(IndexPass {
            pass: &mut pass,
            index: memory.index(),
            centres: &means,
        });
        Assignment {
            means,
            sums: pass.sums,
            counts: pass.counts,
            inertia: pass.inertia,
            first,
            through: memory.pushed(),
        }
    } else {
        let mut assignment = Assignment {
            sums: vec![0.0; k * dim],
            counts: vec![0.0; k],
            means,
            inertia: 0.0,
            first,
            through: first,
        };
        assignment.extend(memory);
        assignment
    }
}

/// The shift tolerance: 1e−4 × the mean per-coordinate variance of the memory.
pub(crate) fn tolerance(memory: &PointMemory) -> f64 {
    let dim = memory.dim();
    if memory.uses_index() {
        return 1e-4 * mean_variance(memory.index(), dim);
    }
    let rows = memory.rows();
    let n = memory.len() as f64;
    let mut mean = vec![0.0; dim];
    for point in rows.chunks_exact(dim) {
        for (m, x) in mean.iter_mut().zip(point) {
            *m += x;
        }
    }
    for m in &mut mean {
        *m /= n;
    }
    let spread: f64 = rows
        .chunks_exact(dim)
        .map(|p| crate::geometry::squared_distance(p, &mean))
        .sum();
    1e-4 * spread / (n * dim as f64)
}

/// Whether the means of `assignment` would move by more than `tolerance` (squared).
pub(crate) fn must_move(assignment: &Assignment, dim: usize, tolerance: f64) -> Option<Vec<f64>> {
    let moved = assignment.moved(dim);
    let shift: f64 = moved
        .iter()
        .zip(&assignment.means)
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    (shift > tolerance).then_some(moved)
}

/// Lloyd's loop from `start` (module docs).
pub(crate) fn fit(memory: &PointMemory, start: Vec<f64>, tolerance: f64) -> Assignment {
    let dim = memory.dim();
    let mut assignment = pass(memory, start);
    for _ in 1..MAX_PASSES {
        match must_move(&assignment, dim, tolerance) {
            Some(moved) => assignment = pass(memory, moved),
            None => break,
        }
    }
    assignment
}

/// The mean per-coordinate variance of the points of the index.
pub(crate) fn mean_variance(index: &SpatialIndex, dim: usize) -> f64 {
    let layout = NodeLayout { dim };
    let moments = MomentLayout { dim };
    let mut n = 0.0;
    let mut sum = [0.0f64; MAX_INDEX_DIM];
    for tree in &index.trees {
        let stats = tree.node_stats(0, layout);
        let count = stats[layout.moments() + N];
        n += count;
        for i in 0..dim {
            sum[i] +=
                count * stats[layout.mean() + i] + stats[layout.moments() + moments.sum_y() + i];
        }
    }
    if n == 0.0 {
        return 0.0;
    }
    let mut mean = [0.0f64; MAX_INDEX_DIM];
    for i in 0..dim {
        mean[i] = sum[i] / n;
    }
    // Σ‖x − x̄‖² over the trees: each root's Σ‖y‖² moved from its mean to x̄.
    let mut spread = 0.0;
    for tree in &index.trees {
        let stats = tree.node_stats(0, layout);
        let m = &stats[layout.moments()..];
        let mut a = 0.0;
        let mut cross = 0.0;
        for i in 0..dim {
            let delta = stats[layout.mean() + i] - mean[i];
            a += delta * delta;
            cross += delta * m[moments.sum_y() + i];
        }
        spread += m[SUM_YY] + 2.0 * cross + m[N] * a;
    }
    spread / (n * dim as f64)
}

struct IndexPass<'a> {
    pass: &'a mut Pass,
    index: &'a SpatialIndex,
    centres: &'a [f64],
}

impl crate::kernels::Kernel for IndexPass<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        self.pass.run(self.index, self.centres);
    }
}

/// The sums of one pass.
struct Pass {
    dim: usize,
    counts: Vec<f64>,
    sums: Vec<f64>,
    inertia: f64,
    stack: Vec<(u32, u32, u32, u32)>,
    arena: Vec<u32>,
    candidates: Vec<u32>,
    survivors: Vec<u32>,
}

impl Pass {
    fn new(k: usize, dim: usize) -> Self {
        Self {
            dim,
            counts: vec![0.0; k],
            sums: vec![0.0; k * dim],
            inertia: 0.0,
            stack: Vec::new(),
            arena: Vec::new(),
            candidates: Vec::new(),
            survivors: Vec::new(),
        }
    }

    /// Assigns every point to its nearest centre (depth first over the trees in order).
    #[inline(always)]
    fn run(&mut self, index: &SpatialIndex, centres: &[f64]) {
        let dim = self.dim;
        let k = centres.len() / dim;
        let layout = NodeLayout { dim };
        let moments = MomentLayout { dim };
        self.counts.fill(0.0);
        self.sums.fill(0.0);
        self.inertia = 0.0;
        self.arena.clear();
        self.arena.extend(0..k as u32);
        self.stack.clear();
        for tree in (0..index.trees.len() as u32).rev() {
            self.stack.push((tree, 0, 0, k as u32));
        }
        while let Some((tree_index, node_index, begin, len)) = self.stack.pop() {
            self.candidates.clear();
            self.candidates
                .extend_from_slice(&self.arena[begin as usize..(begin + len) as usize]);
            let keep = self.stack.last().map_or(k, |f| (f.2 + f.3) as usize);
            self.arena.truncate(keep);
            let tree = &index.trees[tree_index as usize];
            let node = tree.nodes[node_index as usize];
            let stats = tree.node_stats(node_index as usize, layout);
            super::evaluate::filter_candidates(
                stats,
                layout,
                centres,
                &self.candidates,
                &mut self.survivors,
            );
            if self.survivors.len() == 1 {
                let z = self.survivors[0] as usize;
                let m = &stats[layout.moments()..];
                let mean = &stats[layout.mean()..layout.mean() + dim];
                let n = m[N];
                self.counts[z] += n;
                let mut q = 0.0;
                let mut v_sum_y = 0.0;
                for i in 0..dim {
                    let sum_y = m[moments.sum_y() + i];
                    self.sums[z * dim + i] += n.mul_add(mean[i], sum_y);
                    let v = centres[z * dim + i] - mean[i];
                    q = v.mul_add(v, q);
                    v_sum_y = v.mul_add(sum_y, v_sum_y);
                }
                self.inertia += (n.mul_add(q, m[SUM_YY]) - 2.0 * v_sum_y).max(0.0);
            } else if node.is_leaf() {
                for point in tree.points[node.begin as usize * dim..node.end as usize * dim]
                    .chunks_exact(dim)
                {
                    let mut best = (0usize, f64::INFINITY);
                    for &j in &self.survivors {
                        let centre = &centres[j as usize * dim..(j as usize + 1) * dim];
                        let distance = crate::geometry::fused_squared_distance(point, centre);
                        if distance < best.1 {
                            best = (j as usize, distance);
                        }
                    }
                    self.counts[best.0] += 1.0;
                    for i in 0..dim {
                        self.sums[best.0 * dim + i] += point[i];
                    }
                    self.inertia += best.1;
                }
            } else {
                let list_begin = self.arena.len() as u32;
                let list_len = self.survivors.len() as u32;
                self.arena.extend_from_slice(&self.survivors);
                self.stack
                    .push((tree_index, node.right, list_begin, list_len));
                self.stack
                    .push((tree_index, node_index + 1, list_begin, list_len));
            }
        }
    }
}
