//! The spatial index of the memory: static k-d trees whose nodes keep the sufficient
//! statistics of S_t, maintained over the stream by the logarithmic method.
//!
//! # What a node knows
//!
//! A node holds a set of stored points x_s with their ℓ̂_s and w_s, its bounding box, and
//! moments of its points **centred on the node's own mean μ** (y_s = x_s − μ,
//! e_s = ‖y_s‖² − ℓ̂_s):
//!
//! n, Σ y, Σ ‖y‖², Σ w, Σ w e, Σ w e², Σ w y, Σ w e y, Σ w y yᵀ (and Σ y yᵀ, for the lower
//! bounds of [`super::evaluate`]).
//!
//! When every point of the node has the same nearest centre z (v = z − μ, q = ‖v‖²), its
//! whole contribution to S_t is exact in O(d²):
//!
//! Σ ℓ_s = Σ‖y‖² − 2 v·Σy + n q,
//! Σ w_s (ℓ_s − ℓ̂_s)² = Σ w (e + q − 2 y·v)²
//!   = Σwe² + 2q Σwe + q² Σw − 4 v·Σwey − 4q v·Σwy + 4 vᵀ(Σ w y yᵀ) v,
//!
//! because ℓ_s − ℓ̂_s = ‖y_s − v‖² − ℓ̂_s = e_s + q − 2 y_s·v.
//!
//! **Why centred.** Expanded about the origin, the same identities need Σ w ‖x‖⁴, Σ w ‖x‖² x,
//! …, whose terms are of order ‖x‖⁴ while the result can be of order (spread)⁴: a node of
//! spread σ at distance r from the origin would lose about 4 log₁₀(r/σ) digits (8 of the 16
//! at r/σ = 100). About the node's mean, every term is of the order of the node's own spread
//! and of its distance to z, and the rounding error of a node's contribution is a few units
//! in the last place of Σ_s [ℓ_s + w_s (|e_s| + q + 2‖y_s‖‖v‖)²], a majorant of the exact
//! terms of the same order as the terms themselves (see the tests, which compare with the
//! direct sum on far-off, tight clusters and show that moments about the origin fail there).
//!
//! # The filtering test
//!
//! Kanungo et al. (2002), Pelleg & Moore (1999): given candidate centres C for a box, let z*
//! be the candidate closest to the box's midpoint; a candidate z is *dominated* if no point
//! of the box is closer to z than to z*, which holds iff the box vertex farthest in the
//! direction u = z − z* is no closer to z than to z*:
//! Σ_i u_i (2 p_i − z*_i − z_i) ≤ 0 with p_i = hi_i if u_i > 0, else lo_i. Dominated
//! candidates are dropped for the node and all its descendants. A node left with one
//! candidate contributes in closed form; a leaf left with several is summed point by point.
//!
//! # The logarithmic method (Bentley & Saxe 1980)
//!
//! The stream's positions are cut into aligned dyadic blocks of [`BLOCK`]·2^j consecutive
//! positions, and each block of the canonical decomposition of the live range of positions
//! has its own static tree, built once from the block's points: in exact memory the
//! decomposition of [0, t) follows the binary digits of t / [`BLOCK`] (a new block merges the
//! smaller ones, so each point is rebuilt O(log t) times); in window memory the left end of
//! the live range [t − W, t) moves too, and the blocks it cuts are replaced by their dyadic
//! sub-blocks (windows remove points by dropping and rebuilding blocks). The fewer than
//! [`BLOCK`] live points at either end that are not in a whole block have a small *tail*
//! tree of their own, rebuilt when they change.
//!
//! Every tree is a function of its block's points alone (the build is deterministic), so
//! the index is a function of the live points and their positions: a snapshot stores the
//! points and the restored memory rebuilds the same trees, bit for bit.

use super::memory::PointMemory;

/// The smallest block of the logarithmic method (positions per block at level 0).
pub(crate) const BLOCK: usize = 32;

/// A node is split when it holds more points than this (in trees of at least
/// 32·`LEAF_SIZE` points; smaller trees have smaller leaves, see [`leaf_size`]).
pub(crate) const LEAF_SIZE: usize = 16;

/// The leaf size of a tree of n points: [`LEAF_SIZE`], or n/32 (at least 2) in small trees,
/// whose leaves would otherwise hold points of several clusters (every evaluation would
/// then sum them point by point).
pub(crate) fn leaf_size(n: usize) -> usize {
    (n / 32).clamp(2, LEAF_SIZE)
}

/// The largest dimension the index serves (beyond it S_t is summed point by point; see
/// [`super::evaluate`]).
pub(crate) const MAX_INDEX_DIM: usize = 24;

/// The offsets of the centred moments of a set of points (a node, or an aggregate of
/// nodes), relative to the start of the moments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MomentLayout {
    pub(crate) dim: usize,
}

/// n, Σ‖y‖², Σw, Σwe, Σwe²: the first five moments.
pub(crate) const N: usize = 0;
pub(crate) const SUM_YY: usize = 1;
pub(crate) const SUM_W: usize = 2;
pub(crate) const SUM_WE: usize = 3;
pub(crate) const SUM_WEE: usize = 4;

impl MomentLayout {
    #[inline(always)]
    pub(crate) fn sum_y(&self) -> usize {
        5
    }
    #[inline(always)]
    pub(crate) fn sum_wy(&self) -> usize {
        5 + self.dim
    }
    #[inline(always)]
    pub(crate) fn sum_wey(&self) -> usize {
        5 + 2 * self.dim
    }
    /// Σ w y yᵀ, upper triangle row by row (i ≤ j).
    #[inline(always)]
    pub(crate) fn sum_wyy(&self) -> usize {
        5 + 3 * self.dim
    }
    /// Σ y yᵀ (unweighted, for the lower bounds of the walk), upper triangle row by row.
    #[inline(always)]
    pub(crate) fn sum_yy_matrix(&self) -> usize {
        5 + 3 * self.dim + self.dim * (self.dim + 1) / 2
    }
    #[inline(always)]
    pub(crate) fn stride(&self) -> usize {
        5 + 3 * self.dim + self.dim * (self.dim + 1)
    }
}

/// The offsets of a node's values in [`KdTree::stats`]: its box, its mean, then its
/// moments about that mean ([`MomentLayout`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeLayout {
    pub(crate) dim: usize,
}

impl NodeLayout {
    #[inline(always)]
    pub(crate) fn lo(&self) -> usize {
        0
    }
    #[inline(always)]
    pub(crate) fn hi(&self) -> usize {
        self.dim
    }
    #[inline(always)]
    pub(crate) fn mean(&self) -> usize {
        2 * self.dim
    }
    #[inline(always)]
    pub(crate) fn moments(&self) -> usize {
        3 * self.dim
    }
    #[inline(always)]
    pub(crate) fn stride(&self) -> usize {
        3 * self.dim + MomentLayout { dim: self.dim }.stride()
    }
}

/// One node of a tree: its points are `begin..end` of the tree's (permuted) points; an
/// internal node's left child follows it, its right child is at `right` (0 for a leaf).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) begin: u32,
    pub(crate) end: u32,
    pub(crate) right: u32,
}

impl Node {
    #[inline(always)]
    pub(crate) fn is_leaf(&self) -> bool {
        self.right == 0
    }
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        (self.end - self.begin) as usize
    }
}

/// A static k-d tree over one block of positions.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KdTree {
    /// The first position of the block and its length.
    pub(crate) start: u64,
    pub(crate) size: u64,
    /// The block's points in leaf order (row-major), with their ℓ̂_s and w_s.
    pub(crate) points: Vec<f64>,
    pub(crate) predicted: Vec<f64>,
    pub(crate) variance: Vec<f64>,
    /// Nodes in depth-first order (a node, its left subtree, its right subtree).
    pub(crate) nodes: Vec<Node>,
    /// Per node, [`NodeLayout::stride`] values.
    pub(crate) stats: Vec<f64>,
}

impl KdTree {
    /// Builds the tree of a block from its points (row-major, in position order).
    pub(crate) fn build(
        dim: usize,
        start: u64,
        rows: &[f64],
        predicted: &[f64],
        variance: &[f64],
    ) -> Self {
        let n = predicted.len();
        debug_assert!(n >= 1 && rows.len() == n * dim && u32::try_from(n).is_ok());
        let mut order: Vec<u32> = (0..n as u32).collect();
        let leaf = leaf_size(n);
        let mut nodes = Vec::with_capacity(2 * n / leaf + 1);
        split(&mut order, 0, dim, rows, leaf, &mut nodes);
        let mut points = Vec::with_capacity(n * dim);
        let mut leaf_predicted = Vec::with_capacity(n);
        let mut leaf_variance = Vec::with_capacity(n);
        for &i in &order {
            let i = i as usize;
            points.extend_from_slice(&rows[i * dim..(i + 1) * dim]);
            leaf_predicted.push(predicted[i]);
            leaf_variance.push(variance[i]);
        }
        let stats = crate::kernels::dispatch(NodeStatistics {
            dim,
            nodes: &nodes,
            points: &points,
            predicted: &leaf_predicted,
            variance: &leaf_variance,
        });
        Self {
            start,
            size: n as u64,
            points,
            predicted: leaf_predicted,
            variance: leaf_variance,
            nodes,
            stats,
        }
    }

    /// The values of node `index`.
    #[inline(always)]
    pub(crate) fn node_stats(&self, index: usize, layout: NodeLayout) -> &[f64] {
        let stride = layout.stride();
        &self.stats[index * stride..(index + 1) * stride]
    }
}

/// Builds the nodes of `order` (indices into `rows`), depth first: splits at the median
/// of the widest coordinate of the points' bounding box (ties between points broken by
/// their index, so the partition is a fixed function of the points).
fn split(
    order: &mut [u32],
    offset: usize,
    dim: usize,
    rows: &[f64],
    leaf: usize,
    nodes: &mut Vec<Node>,
) {
    let index = nodes.len();
    let len = order.len();
    nodes.push(Node {
        begin: offset as u32,
        end: (offset + len) as u32,
        right: 0,
    });
    if len <= leaf {
        return;
    }
    let mut widest = (0, 0.0);
    for i in 0..dim {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &p in order.iter() {
            let v = rows[p as usize * dim + i];
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi - lo > widest.1 {
            widest = (i, hi - lo);
        }
    }
    if widest.1 <= 0.0 {
        // Every point is the same: one leaf, however many.
        return;
    }
    let coordinate = widest.0;
    let middle = len / 2;
    order.select_nth_unstable_by(middle, |&a, &b| {
        rows[a as usize * dim + coordinate]
            .total_cmp(&rows[b as usize * dim + coordinate])
            .then(a.cmp(&b))
    });
    // The halves are sets fixed by the order above; sorting each makes the layout of the
    // leaves a function of those sets alone (not of the selection algorithm's moves).
    let (left, right) = order.split_at_mut(middle);
    left.sort_unstable();
    right.sort_unstable();
    split(left, offset, dim, rows, leaf, nodes);
    nodes[index].right = nodes.len() as u32;
    split(right, offset + middle, dim, rows, leaf, nodes);
}

/// The statistics of every node, compiled for the running CPU.
struct NodeStatistics<'a> {
    dim: usize,
    nodes: &'a [Node],
    points: &'a [f64],
    predicted: &'a [f64],
    variance: &'a [f64],
}

impl crate::kernels::Kernel for NodeStatistics<'_> {
    type Output = Vec<f64>;

    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let dim = self.dim;
        let layout = NodeLayout { dim };
        let mut stats = vec![0.0; self.nodes.len() * layout.stride()];
        for (node, values) in self
            .nodes
            .iter()
            .zip(stats.chunks_exact_mut(layout.stride()))
        {
            let range = node.begin as usize..node.end as usize;
            node_statistics(
                dim,
                &self.points[range.start * dim..range.end * dim],
                &self.predicted[range.clone()],
                &self.variance[range],
                values,
            );
        }
        stats
    }
}

/// The box, mean and centred moments of a node's points (see the module docs).
#[inline(always)]
fn node_statistics(
    dim: usize,
    points: &[f64],
    predicted: &[f64],
    variance: &[f64],
    values: &mut [f64],
) {
    let layout = NodeLayout { dim };
    let n = predicted.len();
    values.fill(0.0);
    for i in 0..dim {
        values[layout.lo() + i] = f64::INFINITY;
        values[layout.hi() + i] = f64::NEG_INFINITY;
    }
    for point in points.chunks_exact(dim) {
        for (i, &x) in point.iter().enumerate() {
            values[layout.lo() + i] = values[layout.lo() + i].min(x);
            values[layout.hi() + i] = values[layout.hi() + i].max(x);
            values[layout.mean() + i] += x;
        }
    }
    for i in 0..dim {
        values[layout.mean() + i] /= n as f64;
    }
    let (head, moments) = values.split_at_mut(layout.moments());
    let mean = &head[layout.mean()..layout.mean() + dim];
    let mut y = [0.0f64; MAX_INDEX_DIM];
    let y = &mut y[..dim];
    for ((point, &hat), &w) in points.chunks_exact(dim).zip(predicted).zip(variance) {
        for i in 0..dim {
            y[i] = point[i] - mean[i];
        }
        add_point_moments(dim, y, hat, w, moments);
    }
}

/// Adds the moments of one point (y: its offset from the centre of the moments, its ℓ̂ and
/// w) into `moments` ([`MomentLayout`]).
#[inline(always)]
pub(crate) fn add_point_moments(dim: usize, y: &[f64], hat: f64, w: f64, moments: &mut [f64]) {
    let layout = MomentLayout { dim };
    let mut yy = 0.0;
    for &v in y.iter() {
        yy = v.mul_add(v, yy);
    }
    moments[N] += 1.0;
    moments[SUM_YY] += yy;
    let mut m = layout.sum_yy_matrix();
    for i in 0..dim {
        moments[layout.sum_y() + i] += y[i];
        for j in i..dim {
            moments[m] = y[i].mul_add(y[j], moments[m]);
            m += 1;
        }
    }
    if w != 0.0 {
        let e = yy - hat;
        let we = w * e;
        moments[SUM_W] += w;
        moments[SUM_WE] += we;
        moments[SUM_WEE] = we.mul_add(e, moments[SUM_WEE]);
        let mut m = layout.sum_wyy();
        for i in 0..dim {
            moments[layout.sum_wy() + i] = w.mul_add(y[i], moments[layout.sum_wy() + i]);
            moments[layout.sum_wey() + i] = we.mul_add(y[i], moments[layout.sum_wey() + i]);
            let wy = w * y[i];
            for j in i..dim {
                moments[m] = wy.mul_add(y[j], moments[m]);
                m += 1;
            }
        }
    }
}

/// The trees of the canonical decomposition of the live positions, by increasing
/// position: the whole blocks, and the one or two *tail* trees of the live positions not in
/// a whole block (fewer than [`BLOCK`] at either end), rebuilt whenever those change.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SpatialIndex {
    pub(crate) trees: Vec<KdTree>,
}

/// The aligned dyadic blocks (start, size) of the canonical decomposition of
/// [first, end), both multiples of [`BLOCK`]: from the left, the largest aligned block
/// that fits.
pub(crate) fn decomposition(first: u64, end: u64) -> Vec<(u64, u64)> {
    let block = BLOCK as u64;
    debug_assert!(first % block == 0 && end % block == 0);
    let mut blocks = Vec::new();
    let mut position = first;
    while position < end {
        let mut size = block;
        while position % (2 * size) == 0 && position + 2 * size <= end {
            size *= 2;
        }
        blocks.push((position, size));
        position += size;
    }
    blocks
}

/// The ranges (start, size) of the trees of the live positions [first, end): the tails
/// and the canonical decomposition of the whole blocks between them.
pub(crate) fn tree_ranges(first: u64, end: u64) -> Vec<(u64, u64)> {
    let block = BLOCK as u64;
    let whole_first = first.div_ceil(block) * block;
    let whole_end = (end / block) * block;
    if whole_first >= whole_end {
        return if first < end {
            vec![(first, end - first)]
        } else {
            Vec::new()
        };
    }
    let mut ranges = Vec::new();
    if first < whole_first {
        ranges.push((first, whole_first - first));
    }
    ranges.extend(decomposition(whole_first, whole_end));
    if whole_end < end {
        ranges.push((whole_end, end - whole_end));
    }
    ranges
}

impl SpatialIndex {
    /// Brings the index up to date with the memory's live positions: keeps the trees whose
    /// ranges are still wanted, builds the new ones, drops the others.
    pub(crate) fn sync(&mut self, memory: &PointMemory) {
        if memory.dim() > MAX_INDEX_DIM {
            // Never used (S_t is summed point by point there).
            return;
        }
        let end = memory.pushed();
        let first = end - memory.len() as u64;
        let wanted = tree_ranges(first, end);
        let unchanged = self.trees.len() == wanted.len()
            && self
                .trees
                .iter()
                .zip(&wanted)
                .all(|(tree, &(start, size))| tree.start == start && tree.size == size);
        if unchanged {
            return;
        }
        let mut old = std::mem::take(&mut self.trees).into_iter().peekable();
        for (start, size) in wanted {
            while old.peek().is_some_and(|tree| tree.start < start) {
                old.next();
            }
            if let Some(tree) = old.next_if(|tree| tree.start == start && tree.size == size) {
                self.trees.push(tree);
                continue;
            }
            let (rows, predicted, variance) = memory.positions(start, start + size);
            self.trees.push(KdTree::build(
                memory.dim(),
                start,
                rows,
                predicted,
                variance,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decompositions_are_canonical() {
        let b = BLOCK as u64;
        assert_eq!(
            decomposition(0, 7 * b),
            vec![(0, 4 * b), (4 * b, 2 * b), (6 * b, b)]
        );
        assert_eq!(
            decomposition(3 * b, 9 * b),
            vec![(3 * b, b), (4 * b, 4 * b), (8 * b, b)]
        );
        assert!(decomposition(5 * b, 5 * b).is_empty());
        // Every decomposition tiles its range with aligned blocks.
        for first in 0..40 {
            for end in first..80 {
                let blocks = decomposition(first * b, end * b);
                let mut position = first * b;
                for (start, size) in blocks {
                    assert_eq!(start, position);
                    assert!(size.is_power_of_two() && start % size == 0);
                    position += size;
                }
                assert_eq!(position, end * b);
            }
        }
    }

    #[test]
    fn tree_ranges_cover_the_live_positions() {
        let b = BLOCK as u64;
        assert_eq!(
            tree_ranges(0, 7 * b + 3),
            vec![(0, 4 * b), (4 * b, 2 * b), (6 * b, b), (7 * b, 3)]
        );
        assert_eq!(tree_ranges(5, 9), vec![(5, 4)]);
        assert!(tree_ranges(9, 9).is_empty());
        assert_eq!(
            tree_ranges(b - 2, 2 * b + 1),
            vec![(b - 2, 2), (b, b), (2 * b, 1)]
        );
    }

    #[test]
    fn a_tree_partitions_its_points_into_boxes() {
        let dim = 3;
        let mut rng = crate::rng::StreamRng::seed_from(2);
        let n = 1000;
        let rows: Vec<f64> = (0..n * dim).map(|_| rng.standard_normal()).collect();
        let predicted: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
        let variance = vec![0.1; n];
        let tree = KdTree::build(dim, 0, &rows, &predicted, &variance);
        let layout = NodeLayout { dim };
        let root = tree.node_stats(0, layout);
        assert_eq!(root[layout.moments() + N], n as f64);
        for (index, node) in tree.nodes.iter().enumerate() {
            let values = tree.node_stats(index, layout);
            for point in
                tree.points[node.begin as usize * dim..node.end as usize * dim].chunks_exact(dim)
            {
                for i in 0..dim {
                    assert!(values[layout.lo() + i] <= point[i]);
                    assert!(point[i] <= values[layout.hi() + i]);
                }
            }
            if node.is_leaf() {
                assert!(node.len() <= LEAF_SIZE);
            } else {
                let left = tree.nodes[index + 1];
                let right = tree.nodes[node.right as usize];
                assert_eq!(
                    (left.begin, left.end, right.end),
                    (node.begin, right.begin, node.end)
                );
            }
        }
        // The build is a fixed function of the points.
        let again = KdTree::build(dim, 0, &rows, &predicted, &variance);
        assert_eq!(again, tree);
    }
}
