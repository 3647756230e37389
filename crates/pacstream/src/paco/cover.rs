//! The robust cover of a round: the memory's tree nodes sorted, per proposal mean, by how
//! far the centres may move before the node can change hands.
//!
//! Within a round every proposal for k' centres is drawn around the same means
//! m_1..m_r (r = min(k', n_d)) with the same scales σ_1..σ_r ([`super::proposal`]), and most
//! of the memory keeps its nearest centre from one proposal to the next. The cover makes that
//! exact and cheap, once per round and k':
//!
//! - **Margins.** For a node whose box lies in the Voronoi cell of m_j (among the means), and
//!   another mean m_i, let H = min over the box of ‖p − m_i‖² − ‖p − m_j‖² (at the vertex of
//!   the filtering test) and D_i, D_j the largest distances from the box to m_i, m_j. If
//!   ‖c_i − m_i‖ ≤ ρσ_i and ‖c_j − m_j‖ ≤ ρσ_j with ρ ≤ H / ((σ_i + σ_j)(D_i + D_j)), every
//!   point p of the box is at least as close to c_j as to c_i, because
//!   ‖p − m_i‖ − ‖p − m_j‖ = (‖p − m_i‖² − ‖p − m_j‖²)/(‖p − m_i‖ + ‖p − m_j‖) ≥ ρ(σ_i + σ_j).
//!   The node's *margin* γ is the least of these bounds over i ≠ j: for any centres with
//!   every ‖c_i − m_i‖ ≤ γσ_i, the node's points all have c_j as nearest centre.
//! - **Units.** Each tree is descended from its root until a node's margin reaches
//!   [`MARGIN_CAP`] or the node is a leaf; those nodes are the *units* (a partition of the
//!   memory). A unit with a margin ≥ 0 belongs to its slot j; the others (boxes that cross a
//!   boundary between the means' cells) belong to no slot.
//! - **Prefix moments.** Per slot, the units are sorted by decreasing margin and their
//!   moments, moved from each node's mean to m_j (O(d²) per unit, see [`shift_moments`]),
//!   are summed into prefix sums, so that the moments of "every unit of slot j with margin
//!   ≥ ρ" are one binary search away.
//!
//! **Evaluating S_t(c) on the cover.** Let δ_j = ‖c_j − m_j‖. Slots with δ_j > MARGIN_CAP·σ_j
//! (and slots with no mean) are *far*; ρ is the largest δ_j/σ_j of the others. For each
//! non-far slot the units of margin ≥ ρ are summed in closed form at c_j from the prefix
//! moments; every other unit (margins below ρ, units of far slots, units of no slot) is
//! summed by the filtering walk with every centre. A far centre c_i might still take
//! points from a slot's aggregated units; it cannot if the ball B(m_j, R_j) that holds them
//! (R_j the largest distance from m_j to those units' boxes) lies on c_j's side of the
//! bisector of c_j and c_i, that is if (‖m_j − c_i‖² − ‖m_j − c_j‖²) / (2‖c_i − c_j‖) ≥ R_j.
//! This *steal test* cuts slot j's prefix to the units whose reach passes (the reach grows
//! along the list); the units cut off join the walk, which sums them with every centre. (A
//! birth whose newborn lands in a cluster that has one mean is the common case: the
//! labelling puts one of the cluster's two centres in another slot, far from its mean. An
//! earlier version tested ‖c_i − c_j‖ ≥ 2(R_j + δ_j), which the bisector test implies, and
//! dropped the whole slot when it failed.)
//!
//! **Far slots.** The units of a far slot j (its centre more than MARGIN_CAP·σ_j from m_j:
//! an empty centre out in the prior's ball, or a centre labelled into the slot of half of a
//! split cluster) are summed in closed form at the centre c_h nearest m_j, as far as the
//! same ball test against every other centre allows; without it a state that holds such a
//! centre sent the slot's hundreds of units to the walk at every proposal (at t = 9,000,
//! d = 5 those evaluations were 7 % of them and 90 % of the nodes visited).
//!
//! **Margins against far centres.** A unit's margin is a distance: its points keep c_j as
//! nearest centre against c_i whenever δ_i + δ_j is within it, whatever the cap says about
//! "far" (which only decides when the descent stops, and caps the stored margins at
//! 2·MARGIN_CAP·max σ rounded up to a power of two). So wherever a ball test above cuts a
//! prefix, the units whose margin is at least δ_i + δ_j pass against that c_i all the same:
//! for each far centre i the prefix kept is the longer of the two tests' (each is a prefix of
//! the same list, by decreasing margin), and the prefixes of all the centres are intersected.
//! For a far slot whose home is its own centre the margins count in the same way. The case
//! this is for is a jump whose t₃ draw puts one centre 8–16 σ_j from its mean but still
//! inside its cluster: the ball of the whole slot (its reach the cluster's outermost unit)
//! crosses a bisector with a neighbouring cluster's centre at the first unit, and the slot's
//! 1,000 units went to the walk, while their margins hold. At t = 60,000, d = 5 such rejected
//! jumps went from 558 nodes and 477 points one by one an evaluation to 51 and 114.
//!
//! In floating point the margins, distances and tests are computed with a few roundings:
//! a node they place by a relative error of order 1e−16 on the wrong side of a boundary has
//! points whose two nearest centres are equally near to that precision, so its loss is the
//! same to that precision too.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::evaluate::closed_form;
use super::index::{
    MomentLayout, N, NodeLayout, SUM_W, SUM_WE, SUM_WEE, SUM_YY, SpatialIndex, add_point_moments,
};
use crate::geometry::squared_distance;

/// The margin at which the descent stops (in units of the proposal scales): proposals
/// whose centres all lie within this many σ_j of their means find every unit summed in
/// closed form unless its margin is lower.
pub(crate) const MARGIN_CAP: f64 = 8.0;

/// A unit: (tree, node), or (tree, [`POINT`] | i) for the i-th point of the tree (in leaf
/// order) on its own.
pub(crate) type Unit = (u32, u32);

/// The relative margin by which the steal test lowers its bound on how far the units of a
/// slot may reach (a few roundings of the squared distances and of the division, of
/// relative size 1e−16 each, cannot then let a unit through that exact arithmetic would
/// stop).
const STEAL_SAFETY: f64 = 1.0 - 1e-9;

/// The flag of a unit that is one point.
pub(crate) const POINT: u32 = 1 << 31;

/// A leaf whose margin is below this fraction of the cap is split into points when at
/// least [`SPLIT_SHARE`] of its points have a margin of their own at that level (a leaf of
/// points from two clusters, say); otherwise it stays whole (points on both sides of a
/// boundary between close means, which every walk must sum anyway, are summed faster by
/// the filtering walk of the leaf).
const SPLIT_LEVEL: f64 = 0.25;
const SPLIT_SHARE: f64 = 0.75;

/// Trees of at least this many points make the *stable* part of a cover, kept from round
/// to round while the means do not move; the cover of the smaller (recent) trees, fewer than
/// 2·`STABLE_MIN` points, is rebuilt every round.
pub(crate) const STABLE_MIN: u64 = 128;

/// The cover of some of the trees (module docs): units, margins, prefix moments.
#[derive(Clone, Debug)]
pub(crate) struct CoverPart {
    /// The trees covered, as indices into the index's trees at build time; units refer to
    /// them by their position in this list.
    ranges: Vec<(u64, u64)>,
    /// Slot j's units are `units[offsets[j]..offsets[j + 1]]`, by decreasing margin.
    offsets: Vec<usize>,
    units: Vec<Unit>,
    margins: Vec<f64>,
    /// Per unit, the moments (about m_j) of its slot's units up to and including it.
    prefix: Vec<f64>,
    /// Per unit, the largest distance from m_j to the points of its slot's units up to and
    /// including it (a bound, from the boxes).
    reach: Vec<f64>,
    /// Per unit, the moments (about m_j) and the reach of its slot's units from it to the
    /// end of the slot's list: what the walk sums when the prefix stops before it.
    suffix: Vec<f64>,
    suffix_reach: Vec<f64>,
    /// Units that belong to no slot, grouped by the two means nearest to them.
    unowned: Vec<Unit>,
    unowned_groups: Vec<UnownedGroup>,
}

/// Unowned units near the same two means: `unowned[begin..end]`, their moments about the
/// first mean m_a and the largest distance from m_a to their points.
#[derive(Clone, Debug)]
struct UnownedGroup {
    begin: usize,
    end: usize,
    slot: usize,
    moments: Vec<f64>,
    reach: f64,
}

impl CoverPart {
    fn empty(r: usize) -> Self {
        Self {
            ranges: Vec::new(),
            offsets: vec![0; r + 1],
            units: Vec::new(),
            margins: Vec::new(),
            prefix: Vec::new(),
            reach: Vec::new(),
            suffix: Vec::new(),
            suffix_reach: Vec::new(),
            unowned: Vec::new(),
            unowned_groups: Vec::new(),
        }
    }

    /// The moments and reach of slot j's units from `prefix` on (prefix < the slot's count).
    #[inline(always)]
    fn suffix(&self, j: usize, prefix: usize, layout: MomentLayout) -> (&[f64], f64) {
        let position = self.offsets[j] + prefix;
        let at = position * layout.stride();
        (
            &self.suffix[at..at + layout.stride()],
            self.suffix_reach[position],
        )
    }

    /// The number of units of slot j with a margin of at least `needed`.
    #[inline(always)]
    fn prefix_len(&self, j: usize, needed: f64) -> usize {
        let margins = &self.margins[self.offsets[j]..self.offsets[j + 1]];
        if margins.last().is_some_and(|&m| m >= needed) {
            return margins.len();
        }
        margins.partition_point(|&m| m >= needed)
    }

    /// The number of units of slot j.
    #[inline(always)]
    fn count(&self, j: usize) -> usize {
        self.offsets[j + 1] - self.offsets[j]
    }

    /// The longest prefix, at most `prefix` units, of slot j's units whose reach is at most
    /// `allowed` (the reach grows along the list).
    #[inline(always)]
    fn prefix_within(&self, j: usize, prefix: usize, allowed: f64) -> usize {
        let start = self.offsets[j];
        self.reach[start..start + prefix].partition_point(|&reach| reach <= allowed)
    }

    /// The moments of slot j's first `prefix` units (prefix ≥ 1).
    #[inline(always)]
    fn moments(&self, j: usize, prefix: usize, layout: MomentLayout) -> &[f64] {
        let at = (self.offsets[j] + prefix - 1) * layout.stride();
        &self.prefix[at..at + layout.stride()]
    }
}

/// The stable part of the cover of one k', kept while its inputs do not change.
#[derive(Clone, Debug)]
struct StablePart {
    means: Vec<f64>,
    cap: f64,
    part: Arc<CoverPart>,
}

/// The stable parts of the covers, per k' (derived state: a function of the index and the
/// proposal means, rebuilt identically after a restore, so it is never serialised).
#[derive(Clone, Debug, Default)]
pub(crate) struct CoverCache {
    parts: Vec<Option<StablePart>>,
}

impl PartialEq for CoverCache {
    /// Always equal: the cache holds nothing that the rest of the state does not determine.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The robust cover of the memory for one set of proposal means (module docs).
#[derive(Clone, Debug)]
pub(crate) struct RobustCover {
    dim: usize,
    /// The slots with a mean: m_j (row-major) and σ_j.
    means: Vec<f64>,
    scales: Vec<f64>,
    /// The stable and the recent part, with the current indices of their trees.
    stable: Arc<CoverPart>,
    stable_trees: Vec<u32>,
    recent: CoverPart,
    recent_trees: Vec<u32>,
}

/// The scratch of [`RobustCover::plan`].
#[derive(Clone, Debug, Default)]
pub(crate) struct PlanScratch {
    deviations: Vec<f64>,
    far: Vec<bool>,
    /// Per slot, the prefix of the stable part then of the recent part.
    pub(crate) prefixes: Vec<(usize, usize)>,
    /// Per slot, the centre whose closed form sums its prefixes: the slot's own centre, or
    /// for a far slot the centre nearest its mean (see [`RobustCover::plan`]).
    pub(crate) homes: Vec<usize>,
    /// The units to walk, in order, each with its lower bound (0 but for the first unit of a
    /// far slot, which carries the bound of all that slot's units: they are walked in a row,
    /// that unit first, so the bound is dropped before any of them is summed).
    pub(crate) walk: Vec<(Unit, f64)>,
}

impl RobustCover {
    /// The cover of `index` for the means (r × d) and scales σ_j (r of them): the stable
    /// part from `cache` when its means, cap and trees are unchanged, the recent part built
    /// afresh.
    pub(crate) fn build(
        index: &SpatialIndex,
        dim: usize,
        means: &[f64],
        scales: &[f64],
        n_clusters: usize,
        cache: &mut CoverCache,
    ) -> Self {
        let r = scales.len();
        // Any two centres within MARGIN_CAP σ of their means deviate by at most this in all:
        // margins beyond it are never needed. Rounded up to a power of two, so that it
        // changes seldom as σ drifts from round to round.
        let largest = scales.iter().copied().fold(0.0, f64::max);
        let cap = (2.0 * MARGIN_CAP * largest).log2().ceil().exp2();
        let (stable_trees, recent_trees): (Vec<u32>, Vec<u32>) = (0..index.trees.len() as u32)
            .partition(|&t| index.trees[t as usize].size >= STABLE_MIN);
        let stable_ranges: Vec<(u64, u64)> = stable_trees
            .iter()
            .map(|&t| (index.trees[t as usize].start, index.trees[t as usize].size))
            .collect();
        if cache.parts.len() < n_clusters {
            cache.parts.resize(n_clusters, None);
        }
        let entry = &mut cache.parts[n_clusters - 1];
        let valid = entry
            .as_ref()
            .is_some_and(|e| e.cap == cap && e.means == means && e.part.ranges == stable_ranges);
        if !valid {
            let part = if stable_trees.is_empty() {
                CoverPart::empty(r)
            } else {
                build_part(index, &stable_trees, dim, means, cap)
            };
            *entry = Some(StablePart {
                means: means.to_vec(),
                cap,
                part: Arc::new(part),
            });
        }
        let stable = entry
            .as_ref()
            .map(|e| Arc::clone(&e.part))
            .expect("invariant: set just above");
        let recent = if recent_trees.is_empty() {
            CoverPart::empty(r)
        } else {
            build_part(index, &recent_trees, dim, means, cap)
        };
        Self {
            dim,
            means: means.to_vec(),
            scales: scales.to_vec(),
            stable,
            stable_trees,
            recent,
            recent_trees,
        }
    }

    /// The number of slots with a mean.
    pub(crate) fn n_slots(&self) -> usize {
        self.scales.len()
    }

    /// Decides how S_t(c) is summed for `centres` (k × d, k ≥ r, slot j < r paired with
    /// m_j): writes the prefixes (the units of each slot summed in closed form; none for a
    /// slot whose units a far centre may take points from). Returns true (the cover is
    /// always usable; the walk sums what it does not aggregate).
    #[inline(always)]
    pub(crate) fn plan(&self, centres: &[f64], scratch: &mut PlanScratch) -> bool {
        let dim = self.dim;
        let r = self.n_slots();
        let k = centres.len() / dim;
        let PlanScratch {
            deviations,
            far,
            prefixes,
            homes,
            ..
        } = scratch;
        deviations.clear();
        far.clear();
        // The two largest deviations of the centres that are not far.
        let (mut first, mut second) = (0.0f64, 0.0f64);
        for j in 0..k {
            if j >= r {
                deviations.push(f64::INFINITY);
                far.push(true);
                continue;
            }
            let centre = &centres[j * dim..(j + 1) * dim];
            let mean = &self.means[j * dim..(j + 1) * dim];
            let deviation = squared_distance(centre, mean).sqrt();
            deviations.push(deviation);
            let is_far = deviation > MARGIN_CAP * self.scales[j];
            far.push(is_far);
            if !is_far {
                if deviation > first {
                    second = first;
                    first = deviation;
                } else if deviation > second {
                    second = deviation;
                }
            }
        }
        prefixes.clear();
        for j in 0..r {
            if far[j] {
                prefixes.push((0, 0));
                continue;
            }
            // A unit of slot j keeps c_j as nearest centre if its margin is at least
            // δ_j + δ_i for every other centre i that is not far.
            let others = if deviations[j] == first {
                second
            } else {
                first
            };
            let needed = deviations[j] + others;
            prefixes.push((
                self.stable.prefix_len(j, needed),
                self.recent.prefix_len(j, needed),
            ));
        }
        // The steal test of every far centre against every aggregated slot: the units of
        // slot j lie in the ball B(m_j, reach), which lies on c_j's side of the bisector of
        // c_j and c_i when the signed distance from m_j to that bisector,
        // (‖m_j − c_i‖² − ‖m_j − c_j‖²) / (2‖c_i − c_j‖), is at least the reach. The prefix
        // of slot j is cut to the units whose reach passes (the reach grows along the list);
        // the units cut off join the walk, which sums them with every centre.
        for i in (0..k).filter(|&i| far[i]) {
            let far_centre = &centres[i * dim..(i + 1) * dim];
            for j in 0..r {
                let (a, b) = prefixes[j];
                if far[j] || a + b == 0 {
                    continue;
                }
                let centre = &centres[j * dim..(j + 1) * dim];
                let mean = &self.means[j * dim..(j + 1) * dim];
                let separation = squared_distance(far_centre, centre).sqrt();
                let allowed = STEAL_SAFETY
                    * (squared_distance(mean, far_centre) - squared_distance(mean, centre))
                    / (2.0 * separation);
                // A unit's margin also holds against c_i when δ_j + δ_i is within it, however
                // far c_i is by the cap: the units the ball test cuts off for a large reach
                // may still pass one by one.
                prefixes[j] = self.passing(j, (a, b), allowed, deviations[j] + deviations[i]);
            }
        }
        // A far slot's units are summed at the centre nearest its mean, c_h, when the
        // ball B(m_j, reach) lies on c_h's side of the bisector of c_h and every other
        // centre (the same test as above, against every centre): a centre far from its mean
        // (an empty one out in the prior's ball, or one labelled into the slot of half a
        // split cluster) would otherwise send the slot's hundreds of units to the walk.
        homes.clear();
        homes.extend(0..r);
        for j in (0..r).filter(|&j| far[j]) {
            let mean = &self.means[j * dim..(j + 1) * dim];
            let mut home = (0, f64::INFINITY);
            for (i, centre) in centres.chunks_exact(dim).enumerate() {
                let distance = squared_distance(mean, centre);
                if distance < home.1 {
                    home = (i, distance);
                }
            }
            let (h, to_home) = home;
            let home_centre = &centres[h * dim..(h + 1) * dim];
            let mut prefix = (self.stable.count(j), self.recent.count(j));
            for (i, other) in centres.chunks_exact(dim).enumerate() {
                if i == h {
                    continue;
                }
                let separation = squared_distance(other, home_centre).sqrt();
                let bound =
                    STEAL_SAFETY * (squared_distance(mean, other) - to_home) / (2.0 * separation);
                // When the home is the slot's own centre, the units' margins certify it
                // against c_i as for a slot that is not far, if δ_j + δ_i is within them
                // (a centre a few tens of σ_j from its mean inside its own cluster: the
                // ball of the whole slot crosses the bisector long before its units do).
                // The margins say nothing of another home.
                let needed = if h == j {
                    deviations[j] + deviations[i]
                } else {
                    f64::INFINITY
                };
                prefix = self.passing(j, prefix, bound, needed);
                if prefix == (0, 0) {
                    break;
                }
            }
            if prefix != (0, 0) {
                prefixes[j] = prefix;
                homes[j] = h;
            }
        }
        true
    }

    /// The prefixes (stable, recent) of slot j's units, at most `within`, that pass against
    /// one other centre by either test: the ball test (their reach is at most `allowed`;
    /// none when `allowed` is NaN, as for coinciding centres, or ≤ 0) or their margins (at
    /// least `needed`, δ_j + δ_i; none when it is not finite, as for a centre without a
    /// mean). Both are prefixes of the same list, by decreasing margin, so the longer one.
    #[inline(always)]
    fn passing(
        &self,
        j: usize,
        within: (usize, usize),
        allowed: f64,
        needed: f64,
    ) -> (usize, usize) {
        let by_reach = if allowed.is_nan() || allowed <= 0.0 {
            (0, 0)
        } else {
            (
                self.stable.prefix_within(j, within.0, allowed),
                self.recent.prefix_within(j, within.1, allowed),
            )
        };
        if !needed.is_finite() {
            return by_reach;
        }
        (
            by_reach
                .0
                .max(self.stable.prefix_len(j, needed).min(within.0)),
            by_reach
                .1
                .max(self.recent.prefix_len(j, needed).min(within.1)),
        )
    }

    /// Whether the last [`RobustCover::plan`] found a slot with a mean whose centre is far
    /// (more than [`MARGIN_CAP`]·σ_j from it).
    #[inline(always)]
    pub(crate) fn has_far_slot(&self, scratch: &PlanScratch) -> bool {
        scratch.far.iter().take(self.n_slots()).any(|&far| far)
    }

    /// The points the last [`RobustCover::plan`] sums in closed form (its slots' prefixes).
    #[inline(always)]
    pub(crate) fn aggregated_points(&self, scratch: &PlanScratch) -> f64 {
        let layout = MomentLayout { dim: self.dim };
        let mut total = 0.0;
        for (j, &(stable, recent)) in scratch.prefixes.iter().enumerate() {
            for (part, prefix) in [(&*self.stable, stable), (&self.recent, recent)] {
                if prefix > 0 {
                    total += part.moments(j, prefix, layout)[N];
                }
            }
        }
        total
    }

    /// Whether `decides` holds of the sum of the lower bounds of the groups of units that
    /// [`RobustCover::walk_list`] would list (after [`RobustCover::plan`] for the same
    /// centres). The bounds are added in the list's order and `decides` is asked after each:
    /// for a `decides` that is monotone in the sum (a rejection test, (s + B)·(1 − γ) ≥ thr),
    /// the answer is the one for the whole sum, because adding a bound ≥ 0 never lowers a
    /// floating-point sum; the groups after the first that decides are not bounded at all
    /// (most proposals that a bound rejects are rejected by a wide margin, and the bounds of
    /// every group were most of the cost of such an evaluation).
    #[inline(always)]
    pub(crate) fn walk_bound_decides(
        &self,
        centres: &[f64],
        scratch: &PlanScratch,
        mut decides: impl FnMut(f64) -> bool,
    ) -> bool {
        let mut total = 0.0;
        self.for_each_group(centres, scratch, |_, _, bound| {
            total += bound;
            if decides(total) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_break()
    }

    /// Writes the units to walk (after [`RobustCover::plan`] for the same centres), in their
    /// fixed order: the unowned units group by group, then slot by slot the units not in the
    /// prefixes (all of them for a far slot), stable part first; the first unit of each group
    /// carries the group's lower bound (see `group_bound`).
    #[inline(always)]
    pub(crate) fn walk_list(&self, centres: &[f64], scratch: &mut PlanScratch) {
        let mut walk = std::mem::take(&mut scratch.walk);
        walk.clear();
        let _ = self.for_each_group(centres, scratch, |units, trees, bound| {
            push_group(&mut walk, units, trees, bound);
            ControlFlow::Continue(())
        });
        scratch.walk = walk;
    }

    #[inline(always)]
    fn for_each_group(
        &self,
        centres: &[f64],
        scratch: &PlanScratch,
        mut visit: impl FnMut(&[Unit], &[u32], f64) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let dim = self.dim;
        let layout = MomentLayout { dim };
        for (part, trees) in [
            (&*self.stable, &self.stable_trees),
            (&self.recent, &self.recent_trees),
        ] {
            for group in &part.unowned_groups {
                let mean = &self.means[group.slot * dim..(group.slot + 1) * dim];
                let bound = group_bound(&group.moments, layout, mean, group.reach, centres);
                visit(&part.unowned[group.begin..group.end], trees, bound)?;
            }
        }
        for (j, &(a, b)) in scratch.prefixes.iter().enumerate() {
            let mean = &self.means[j * dim..(j + 1) * dim];
            for (part, trees, prefix) in [
                (&*self.stable, &self.stable_trees, a),
                (&self.recent, &self.recent_trees, b),
            ] {
                let units = &part.units[part.offsets[j] + prefix..part.offsets[j + 1]];
                if !units.is_empty() {
                    let (moments, reach) = part.suffix(j, prefix, layout);
                    let bound = group_bound(moments, layout, mean, reach, centres);
                    visit(units, trees, bound)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Visits groups of units that partition the memory: per part (stable, then recent),
    /// all the units of each slot, then each group of unowned units. Each is given as its
    /// moments about `mean`, that mean, and the largest distance from it to the group's
    /// points (a bound, from the boxes). Used by the birth test of [`super::birth`], which
    /// needs every point in exactly one group, whatever the centres.
    ///
    /// A visitor rather than a closure: its `visit` is inlined where the caller dispatched to
    /// the CPU's instructions (a closure is compiled apart, without them).
    #[inline(always)]
    pub(crate) fn for_each_partition_group(&self, visit: &mut impl PartitionVisitor) {
        let dim = self.dim;
        let layout = MomentLayout { dim };
        for part in [&*self.stable, &self.recent] {
            for j in 0..self.n_slots() {
                let count = part.count(j);
                if count > 0 {
                    let mean = &self.means[j * dim..(j + 1) * dim];
                    let reach = part.reach[part.offsets[j] + count - 1];
                    visit.visit(part.moments(j, count, layout), mean, reach);
                }
            }
            for group in &part.unowned_groups {
                let mean = &self.means[group.slot * dim..(group.slot + 1) * dim];
                visit.visit(&group.moments, mean, group.reach);
            }
        }
    }

    /// The closed-form sum of slot j's prefixes (stable, recent) at `centre`, each clamped
    /// at 0 (every term of S is ≥ 0), and their number of points.
    #[inline(always)]
    pub(crate) fn slot_sums(
        &self,
        j: usize,
        prefixes: (usize, usize),
        centre: &[f64],
    ) -> [(f64, usize); 2] {
        let layout = MomentLayout { dim: self.dim };
        let mean = &self.means[j * self.dim..(j + 1) * self.dim];
        let mut out = [(0.0, 0); 2];
        for (slot, (part, prefix)) in out
            .iter_mut()
            .zip([(&*self.stable, prefixes.0), (&self.recent, prefixes.1)])
        {
            if prefix > 0 {
                let moments = part.moments(j, prefix, layout);
                *slot = (
                    closed_form(moments, layout, mean, centre).max(0.0),
                    moments[N] as usize,
                );
            }
        }
        out
    }
}

/// Appends a group of units to the walk, the first carrying the group's bound.
#[inline(always)]
fn push_group(walk: &mut Vec<(Unit, f64)>, units: &[Unit], trees: &[u32], bound: f64) {
    let start = walk.len();
    walk.extend(units.iter().map(|&(t, n)| ((trees[t as usize], n), 0.0)));
    if walk.len() > start {
        walk[start].1 = bound;
    }
}

/// A lower bound of the sum of the terms of a group of points, from their moments about
/// `mean`, the largest distance `reach` from `mean` to them, and the centres.
///
/// Every point is within `reach` of the mean, so centre i is at distance at least
/// lo_i = (‖c_i − mean‖ − reach)₊ and at most hi_i = ‖c_i − mean‖ + reach from each point;
/// only centres with lo_i ≤ min_j hi_j can be a point's nearest. With one such centre a,
/// the terms are at least Σ‖x − a‖² (the closed form's loss part); with two, a and b,
/// min(‖x − a‖², ‖x − b‖²) = (‖x − a‖² + ‖x − b‖²)/2 − ‖b − a‖ |s(x)|, s(x) the signed
/// distance from x to the bisector of a and b, and Σ|s| ≤ √(n Σ s²) (Cauchy–Schwarz), Σ s²
/// a quadratic form of the moments; with more, the larger of n · min_i lo_i² and the sum of
/// the squared distances from the points to the affine hull of the candidates (each
/// candidate lies in it, so a point's nearest one is at least that far), Σ‖x − c_1‖² minus
/// Σ_l Σ (u_l·(x − c_1))² over an orthonormal basis u_l of the hull's directions, from the
/// moments in O(m d²) for m candidates (zero once m − 1 ≥ d; skipped when the candidates
/// are so nearly dependent that the basis loses its orthogonality). The variance terms are
/// dropped (they are ≥ 0).
///
/// In floating point the bound is lowered by 1e−9 × the magnitude of its terms, far more
/// than the roundings of either it or the pieces it bounds (a relative O(d 2^−53) each), so
/// that it stays below the sum the walk computes.
#[inline(always)]
fn group_bound(
    moments: &[f64],
    layout: MomentLayout,
    mean: &[f64],
    reach: f64,
    centres: &[f64],
) -> f64 {
    let dim = layout.dim;
    let n = moments[N];
    if n == 0.0 {
        return 0.0;
    }
    let mut nearest_far = f64::INFINITY;
    let mut lowest = f64::INFINITY;
    let mut candidates = [usize::MAX; HULL_MAX];
    let mut count = 0;
    let mut distances = [0.0f64; 64];
    let k = centres.len() / dim;
    if k > 64 {
        return 0.0;
    }
    for (i, centre) in centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(centre, mean).sqrt();
        distances[i] = distance;
        nearest_far = nearest_far.min(distance + reach);
    }
    for (i, &distance) in distances[..k].iter().enumerate() {
        let lo = (distance - reach).max(0.0);
        if lo <= nearest_far {
            if count < HULL_MAX {
                candidates[count] = i;
            }
            count += 1;
            lowest = lowest.min(lo);
        }
    }
    let loss = |c: usize| {
        let centre = &centres[c * dim..(c + 1) * dim];
        let mut q = 0.0;
        let mut v_sum_y = 0.0;
        for i in 0..dim {
            let v = centre[i] - mean[i];
            q = v.mul_add(v, q);
            v_sum_y = v.mul_add(moments[layout.sum_y() + i], v_sum_y);
        }
        (n.mul_add(q, moments[SUM_YY]) - 2.0 * v_sum_y).max(0.0)
    };
    let bound = match count {
        1 => {
            let value = loss(candidates[0]);
            value - 1e-9 * value
        }
        2 => {
            let (a, b) = (candidates[0], candidates[1]);
            let loss_a = loss(a);
            let loss_b = loss(b);
            let ca = &centres[a * dim..(a + 1) * dim];
            let cb = &centres[b * dim..(b + 1) * dim];
            let mut gap = [0.0f64; super::index::MAX_INDEX_DIM];
            let gap = &mut gap[..dim];
            let mut length = 0.0;
            for i in 0..dim {
                gap[i] = cb[i] - ca[i];
                length = gap[i].mul_add(gap[i], length);
            }
            let length = length.sqrt();
            if length == 0.0 {
                loss_a - 1e-9 * loss_a
            } else {
                // s(x) = (x − mid)·u = s0 + y·u, y = x − mean.
                let mut s0 = 0.0;
                let mut sy = 0.0;
                for i in 0..dim {
                    let u = gap[i] / length;
                    s0 = (mean[i] - 0.5 * (ca[i] + cb[i])).mul_add(u, s0);
                    sy = u.mul_add(moments[layout.sum_y() + i], sy);
                }
                let mut quadratic = 0.0;
                let mut m = layout.sum_yy_matrix();
                for i in 0..dim {
                    let ui = gap[i] / length;
                    for j in i..dim {
                        let uj = gap[j] / length;
                        let factor = if j == i { 1.0 } else { 2.0 };
                        quadratic = (factor * moments[m] * ui).mul_add(uj, quadratic);
                        m += 1;
                    }
                }
                let squares = (n * s0).mul_add(s0, 2.0 * s0 * sy) + quadratic;
                let cross = length * (n * squares.max(0.0)).sqrt();
                0.5 * (loss_a + loss_b) - cross - 1e-9 * (loss_a + loss_b + cross)
            }
        }
        _ => {
            let spread = n * lowest * lowest * (1.0 - 1e-9);
            if count <= HULL_MAX && count <= dim {
                spread.max(hull_bound(
                    moments,
                    layout,
                    mean,
                    centres,
                    &candidates[..count],
                ))
            } else {
                spread
            }
        }
    };
    bound.max(0.0)
}

/// The most candidates for which [`group_bound`] uses the affine hull.
const HULL_MAX: usize = 8;

/// Σ dist²(x, aff{c_i : i ∈ candidates}) over a group of points, from their moments about
/// `mean` (see [`group_bound`]), lowered by 1e−9 × the magnitude of its terms; 0 when the
/// candidates are nearly dependent.
#[inline(always)]
fn hull_bound(
    moments: &[f64],
    layout: MomentLayout,
    mean: &[f64],
    centres: &[f64],
    candidates: &[usize],
) -> f64 {
    let dim = layout.dim;
    let n = moments[N];
    let first = &centres[candidates[0] * dim..(candidates[0] + 1) * dim];
    // v = c_1 − mean: Σ‖x − c_1‖² = Σ‖y − v‖² = Σ‖y‖² − 2 v·Σy + n‖v‖².
    let mut v = [0.0f64; super::index::MAX_INDEX_DIM];
    let v = &mut v[..dim];
    let mut vv = 0.0;
    let mut v_sum_y = 0.0;
    for i in 0..dim {
        v[i] = first[i] - mean[i];
        vv = v[i].mul_add(v[i], vv);
        v_sum_y = v[i].mul_add(moments[layout.sum_y() + i], v_sum_y);
    }
    let mut value = n.mul_add(vv, moments[SUM_YY]) - 2.0 * v_sum_y;
    let mut magnitude = n.mul_add(vv, moments[SUM_YY]) + 2.0 * v_sum_y.abs();
    let mut basis = [[0.0f64; super::index::MAX_INDEX_DIM]; HULL_MAX];
    for (l, &c) in candidates[1..].iter().enumerate() {
        let centre = &centres[c * dim..(c + 1) * dim];
        let u = &mut basis[l];
        let mut original = 0.0;
        for i in 0..dim {
            u[i] = centre[i] - first[i];
            original = u[i].mul_add(u[i], original);
        }
        // Gram–Schmidt, twice (re-orthogonalisation keeps the basis orthonormal to a few
        // ulps unless a residual is tiny, when the bound is skipped).
        for _ in 0..2 {
            for previous in 0..l {
                let (done, rest) = basis.split_at_mut(l);
                let p = &done[previous][..dim];
                let u = &mut rest[0][..dim];
                let dot: f64 = p.iter().zip(u.iter()).map(|(a, b)| a * b).sum();
                for i in 0..dim {
                    u[i] = (-dot).mul_add(p[i], u[i]);
                }
            }
        }
        let u = &mut basis[l][..dim];
        let residual: f64 = u.iter().map(|x| x * x).sum();
        // A NaN residual (never expected) also gives up.
        if residual.is_nan() || residual <= 1e-6 * original || original == 0.0 {
            return 0.0;
        }
        let norm = residual.sqrt();
        for x in u.iter_mut() {
            *x /= norm;
        }
        // Σ (u·(y − v))² = uᵀ(Σyyᵀ)u − 2 (u·v)(u·Σy) + n (u·v)².
        let mut uv = 0.0;
        let mut u_sum_y = 0.0;
        for i in 0..dim {
            uv = u[i].mul_add(v[i], uv);
            u_sum_y = u[i].mul_add(moments[layout.sum_y() + i], u_sum_y);
        }
        let mut quadratic = 0.0;
        let mut m = layout.sum_yy_matrix();
        for i in 0..dim {
            for j in i..dim {
                let factor = if j == i { 1.0 } else { 2.0 };
                quadratic = (factor * moments[m] * u[i]).mul_add(u[j], quadratic);
                m += 1;
            }
        }
        let cross = 2.0 * uv * u_sum_y;
        let square = n * uv * uv;
        value -= quadratic - cross + square;
        magnitude += quadratic.abs() + cross.abs() + square;
    }
    (value - 1e-9 * magnitude).max(0.0)
}

/// Builds the cover of the trees `trees` (indices into the index).
fn build_part(
    index: &SpatialIndex,
    trees: &[u32],
    dim: usize,
    means: &[f64],
    cap: f64,
) -> CoverPart {
    crate::kernels::dispatch(Build {
        index,
        trees,
        dim,
        means,
        cap,
    })
}

struct Build<'a> {
    index: &'a SpatialIndex,
    trees: &'a [u32],
    dim: usize,
    means: &'a [f64],
    cap: f64,
}

impl crate::kernels::Kernel for Build<'_> {
    type Output = CoverPart;

    #[inline(always)]
    fn run(self) -> CoverPart {
        let Build {
            index,
            trees,
            dim,
            means,
            cap,
        } = self;
        let r = means.len() / dim;
        let layout = NodeLayout { dim };
        // (slot, margin, unit) in the order found; units name trees by position in `trees`.
        let mut found: Vec<(usize, f64, Unit)> = Vec::new();
        // (nearest mean, second nearest, unit).
        let mut unowned: Vec<(usize, usize, Unit)> = Vec::new();
        let mut stack: Vec<(u32, u32, Vec<u32>)> = Vec::new();
        let all: Vec<u32> = (0..r as u32).collect();
        for position in (0..trees.len()).rev() {
            stack.push((position as u32, 0, all.clone()));
        }
        let mut keep = Vec::new();
        let mut points: Vec<(usize, f64)> = Vec::new();
        while let Some((position, node_index, candidates)) = stack.pop() {
            let tree = &index.trees[trees[position as usize] as usize];
            let node = tree.nodes[node_index as usize];
            let stats = tree.node_stats(node_index as usize, layout);
            let (owner, margin) = margin(stats, layout, means, cap, &candidates, &mut keep);
            if node.is_leaf() && margin < SPLIT_LEVEL * cap {
                points.clear();
                for i in node.begin..node.end {
                    let point = &tree.points[i as usize * dim..(i as usize + 1) * dim];
                    points.push(point_margin(point, means, &candidates));
                }
                let robust = points
                    .iter()
                    .filter(|(_, m)| *m >= SPLIT_LEVEL * cap)
                    .count();
                if robust as f64 >= SPLIT_SHARE * node.len() as f64 {
                    for (offset, &(point_owner, point_margin)) in points.iter().enumerate() {
                        let i = node.begin + offset as u32;
                        let unit = (position, POINT | i);
                        if point_margin >= 0.0 {
                            found.push((point_owner, point_margin.min(cap), unit));
                        } else {
                            let point = &tree.points[i as usize * dim..(i as usize + 1) * dim];
                            let (a, b) = two_nearest(point, means, &candidates);
                            unowned.push((a, b, unit));
                        }
                    }
                    continue;
                }
            }
            if margin >= cap || node.is_leaf() {
                if margin >= 0.0 {
                    found.push((owner, margin.min(cap), (position, node_index)));
                } else {
                    let middle: Vec<f64> = (0..dim)
                        .map(|i| 0.5 * (stats[layout.lo() + i] + stats[layout.hi() + i]))
                        .collect();
                    let (a, b) = two_nearest(&middle, means, &candidates);
                    unowned.push((a, b, (position, node_index)));
                }
                continue;
            }
            stack.push((position, node.right, keep.clone()));
            stack.push((position, node_index + 1, keep.clone()));
        }
        // Per slot, by decreasing margin (ties: the order found).
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let moment_layout = MomentLayout { dim };
        let stride = moment_layout.stride();
        let mut offsets = vec![0; r + 1];
        for &(slot, _, _) in &found {
            offsets[slot + 1] += 1;
        }
        for j in 0..r {
            offsets[j + 1] += offsets[j];
        }
        let mut units = Vec::with_capacity(found.len());
        let mut margins = Vec::with_capacity(found.len());
        let mut prefix = vec![0.0; found.len() * stride];
        let mut reach = Vec::with_capacity(found.len());
        let mut running = vec![0.0; stride];
        let mut previous_slot = usize::MAX;
        let mut farthest: f64 = 0.0;
        for (position, &(slot, unit_margin, unit)) in found.iter().enumerate() {
            if slot != previous_slot {
                running.fill(0.0);
                farthest = 0.0;
                previous_slot = slot;
            }
            let tree = &index.trees[trees[unit.0 as usize] as usize];
            let mean = &means[slot * dim..(slot + 1) * dim];
            farthest = farthest.max(add_unit(tree, unit, layout, mean, &mut running));
            prefix[position * stride..(position + 1) * stride].copy_from_slice(&running);
            reach.push(farthest);
            units.push(unit);
            margins.push(unit_margin);
        }
        // The suffixes, slot by slot from the end of each list.
        let mut suffix = vec![0.0; found.len() * stride];
        let mut suffix_reach = vec![0.0; found.len()];
        for j in 0..r {
            running.fill(0.0);
            let mut farthest: f64 = 0.0;
            for position in (offsets[j]..offsets[j + 1]).rev() {
                let unit = units[position];
                let tree = &index.trees[trees[unit.0 as usize] as usize];
                let mean = &means[j * dim..(j + 1) * dim];
                farthest = farthest.max(add_unit(tree, unit, layout, mean, &mut running));
                suffix[position * stride..(position + 1) * stride].copy_from_slice(&running);
                suffix_reach[position] = farthest;
            }
        }
        // The unowned units, grouped by their two nearest means.
        unowned.sort_by_key(|&(a, b, _)| (a, b));
        let mut unowned_units = Vec::with_capacity(unowned.len());
        let mut unowned_groups: Vec<UnownedGroup> = Vec::new();
        for &(a, b, unit) in &unowned {
            let key = (a, b);
            let new_group = unowned_groups.last().is_none_or(|g| {
                let (first_a, first_b, _) = unowned[g.begin];
                (first_a, first_b) != key
            });
            if new_group {
                unowned_groups.push(UnownedGroup {
                    begin: unowned_units.len(),
                    end: unowned_units.len(),
                    slot: a,
                    moments: vec![0.0; stride],
                    reach: 0.0,
                });
            }
            let group = unowned_groups.last_mut().expect("invariant: pushed above");
            let tree = &index.trees[trees[unit.0 as usize] as usize];
            let mean = &means[a * dim..(a + 1) * dim];
            group.reach = group
                .reach
                .max(add_unit(tree, unit, layout, mean, &mut group.moments));
            group.end += 1;
            unowned_units.push(unit);
        }
        CoverPart {
            ranges: trees
                .iter()
                .map(|&t| (index.trees[t as usize].start, index.trees[t as usize].size))
                .collect(),
            offsets,
            units,
            margins,
            prefix,
            reach,
            suffix,
            suffix_reach,
            unowned: unowned_units,
            unowned_groups,
        }
    }
}

/// The owner of a box among `candidates` (the mean nearest its midpoint) and its margin
/// (module docs; +∞ with one candidate, negative when another mean is nearer some point of
/// the box). Writes into `keep` the owner and the candidates whose own bound is below
/// [`MARGIN_CAP`] (the others cannot matter inside the box for any ρ ≤ MARGIN_CAP).
#[inline(always)]
fn margin(
    stats: &[f64],
    layout: NodeLayout,
    means: &[f64],
    cap: f64,
    candidates: &[u32],
    keep: &mut Vec<u32>,
) -> (usize, f64) {
    let dim = layout.dim;
    let lo = &stats[layout.lo()..layout.lo() + dim];
    let hi = &stats[layout.hi()..layout.hi() + dim];
    let mut owner = (candidates[0] as usize, f64::INFINITY);
    for &j in candidates {
        let mean = &means[j as usize * dim..(j as usize + 1) * dim];
        let mut distance = 0.0;
        for i in 0..dim {
            let gap = 0.5 * (lo[i] + hi[i]) - mean[i];
            distance = gap.mul_add(gap, distance);
        }
        if distance < owner.1 {
            owner = (j as usize, distance);
        }
    }
    let owner = owner.0;
    let star = &means[owner * dim..(owner + 1) * dim];
    let star_reach = farthest_distance(stats, layout, star);
    keep.clear();
    let mut least = f64::INFINITY;
    for &i in candidates {
        if i as usize == owner {
            keep.push(i);
            continue;
        }
        let other = &means[i as usize * dim..(i as usize + 1) * dim];
        // min over the box of ‖p − m_i‖² − ‖p − m_j‖² = −max Σ u (2p − m_j − m_i), u = m_i − m_j.
        let mut excess = 0.0;
        for d in 0..dim {
            let u = other[d] - star[d];
            let p = if u > 0.0 { hi[d] } else { lo[d] };
            excess = u.mul_add(2.0 * p - star[d] - other[d], excess);
        }
        let bound = if excess < 0.0 {
            -excess / (farthest_distance(stats, layout, other) + star_reach)
        } else {
            -1.0
        };
        least = least.min(bound);
        if bound < cap {
            keep.push(i);
        }
    }
    (owner, least)
}

/// Adds a unit's moments, about `mean`, into `out`; returns the largest distance from `mean`
/// to the unit's points (a bound from the box for a node).
#[inline(always)]
fn add_unit(
    tree: &super::index::KdTree,
    unit: Unit,
    layout: NodeLayout,
    mean: &[f64],
    out: &mut [f64],
) -> f64 {
    let dim = layout.dim;
    if unit.1 & POINT != 0 {
        let i = (unit.1 & !POINT) as usize;
        let point = &tree.points[i * dim..(i + 1) * dim];
        let mut y = [0.0f64; super::index::MAX_INDEX_DIM];
        let y = &mut y[..dim];
        for d in 0..dim {
            y[d] = point[d] - mean[d];
        }
        add_point_moments(dim, y, tree.predicted[i], tree.variance[i], out);
        crate::geometry::squared_norm(y).sqrt()
    } else {
        let stats = tree.node_stats(unit.1 as usize, layout);
        shift_moments(dim, stats, layout, mean, out);
        farthest_distance(stats, layout, mean)
    }
}

/// The two `candidates` means nearest to a point (the same one twice if there is one).
#[inline(always)]
fn two_nearest(point: &[f64], means: &[f64], candidates: &[u32]) -> (usize, usize) {
    let dim = point.len();
    let mut first = (candidates[0] as usize, f64::INFINITY);
    let mut second = first;
    for &j in candidates {
        let distance = squared_distance(point, &means[j as usize * dim..(j as usize + 1) * dim]);
        if distance < first.1 {
            second = first;
            first = (j as usize, distance);
        } else if distance < second.1 {
            second = (j as usize, distance);
        }
    }
    (first.0, second.0)
}

/// The nearest of the `candidates` means to a point and its margin
/// min_i ‖p − m_i‖ − ‖p − m_j‖ (+∞ with one candidate): by the triangle inequality, the
/// point keeps c_j as nearest centre whenever ‖c_i − m_i‖ + ‖c_j − m_j‖ ≤ the margin.
#[inline(always)]
fn point_margin(point: &[f64], means: &[f64], candidates: &[u32]) -> (usize, f64) {
    let dim = point.len();
    let (mut first, mut second) = ((candidates[0] as usize, f64::INFINITY), f64::INFINITY);
    for &j in candidates {
        let mean = &means[j as usize * dim..(j as usize + 1) * dim];
        let distance = crate::geometry::fused_squared_distance(point, mean);
        if distance < first.1 {
            second = first.1;
            first = (j as usize, distance);
        } else if distance < second {
            second = distance;
        }
    }
    (first.0, second.sqrt() - first.1.sqrt())
}

/// The largest distance from `point` to the box.
#[inline(always)]
fn farthest_distance(stats: &[f64], layout: NodeLayout, point: &[f64]) -> f64 {
    let dim = layout.dim;
    let mut total = 0.0;
    for i in 0..dim {
        let gap = (point[i] - stats[layout.lo() + i]).max(stats[layout.hi() + i] - point[i]);
        total = gap.mul_add(gap, total);
    }
    total.sqrt()
}

/// Adds a node's moments, moved from its mean μ to `centre` m, into `out`
/// ([`MomentLayout`]). With Δ = μ − m, y' = y + Δ, a = ‖Δ‖², e' = e + 2Δ·y + a:
///
/// Σy' = Σy + nΔ; Σ‖y'‖² = Σ‖y‖² + 2Δ·Σy + na; Σwe' = Σwe + 2Δ·Σwy + aΣw;
/// Σwe'² = Σwe² + 2(2Δ·Σwey + aΣwe) + 4ΔᵀMΔ + 4aΔ·Σwy + a²Σw;
/// Σwy' = Σwy + ΣwΔ; Σwe'y' = Σwey + (Σwe')Δ + 2MΔ + aΣwy;
/// M' = M + (Σwy)Δᵀ + Δ(Σwy)ᵀ + ΣwΔΔᵀ, with M = Σ w y yᵀ.
///
/// Δ is the distance between a node's mean and the mean of the cell it lies in, of the
/// order of the cluster's spread, so the moved moments keep the accuracy of the node's.
#[inline(always)]
pub(crate) fn shift_moments(
    dim: usize,
    stats: &[f64],
    layout: NodeLayout,
    centre: &[f64],
    out: &mut [f64],
) {
    let moments = &stats[layout.moments()..];
    let ml = MomentLayout { dim };
    let mean = &stats[layout.mean()..layout.mean() + dim];
    let mut delta = [0.0f64; super::index::MAX_INDEX_DIM];
    let delta = &mut delta[..dim];
    let mut a = 0.0;
    let mut delta_sum_y = 0.0;
    let mut delta_wy = 0.0;
    let mut delta_wey = 0.0;
    for i in 0..dim {
        delta[i] = mean[i] - centre[i];
        a = delta[i].mul_add(delta[i], a);
        delta_sum_y = delta[i].mul_add(moments[ml.sum_y() + i], delta_sum_y);
        delta_wy = delta[i].mul_add(moments[ml.sum_wy() + i], delta_wy);
        delta_wey = delta[i].mul_add(moments[ml.sum_wey() + i], delta_wey);
    }
    let n = moments[N];
    let w = moments[SUM_W];
    let we = moments[SUM_WE];
    out[N] += n;
    out[SUM_YY] += moments[SUM_YY] + 2.0 * delta_sum_y + n * a;
    // Σ y'y'ᵀ = Σ y yᵀ + (Σy)Δᵀ + Δ(Σy)ᵀ + n ΔΔᵀ.
    let mut m = ml.sum_yy_matrix();
    for i in 0..dim {
        let sum_y = moments[ml.sum_y() + i];
        out[ml.sum_y() + i] += sum_y + n * delta[i];
        for j in i..dim {
            let sum_y_j = moments[ml.sum_y() + j];
            out[m] += moments[m] + sum_y * delta[j] + delta[i] * sum_y_j + n * delta[i] * delta[j];
            m += 1;
        }
    }
    if w == 0.0 {
        return;
    }
    // M Δ, from the upper triangle.
    let mut m_delta = [0.0f64; super::index::MAX_INDEX_DIM];
    let m_delta = &mut m_delta[..dim];
    let mut m = ml.sum_wyy();
    for i in 0..dim {
        for j in i..dim {
            let value = moments[m];
            m_delta[i] = value.mul_add(delta[j], m_delta[i]);
            if j != i {
                m_delta[j] = value.mul_add(delta[i], m_delta[j]);
            }
            m += 1;
        }
    }
    let mut quadratic = 0.0;
    for i in 0..dim {
        quadratic = delta[i].mul_add(m_delta[i], quadratic);
    }
    let we_shifted = we + 2.0 * delta_wy + a * w;
    out[SUM_W] += w;
    out[SUM_WE] += we_shifted;
    out[SUM_WEE] += moments[SUM_WEE]
        + 2.0 * (2.0 * delta_wey + a * we)
        + 4.0 * quadratic
        + 4.0 * a * delta_wy
        + a * a * w;
    let mut m = ml.sum_wyy();
    for i in 0..dim {
        let wy = moments[ml.sum_wy() + i];
        out[ml.sum_wy() + i] += wy + w * delta[i];
        out[ml.sum_wey() + i] +=
            moments[ml.sum_wey() + i] + we_shifted * delta[i] + 2.0 * m_delta[i] + a * wy;
        for j in i..dim {
            let wy_j = moments[ml.sum_wy() + j];
            out[m] += moments[m] + wy * delta[j] + delta[i] * wy_j + w * delta[i] * delta[j];
            m += 1;
        }
    }
}

/// What [`RobustCover::for_each_partition_group`] hands each group to: its moments about
/// `mean`, that mean, and the largest distance from it to the group's points.
pub(crate) trait PartitionVisitor {
    fn visit(&mut self, moments: &[f64], mean: &[f64], reach: f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::evaluate::PreparedCentres;
    use crate::paco::memory::PointMemory;
    use crate::paco::params::{Memory, Summation};
    use crate::rng::StreamRng;

    /// A cover built from the cache equals a cover built afresh, whatever the cache held
    /// before (other means, another cap, other trees): the cache only saves time.
    #[test]
    fn cached_covers_equal_fresh_ones() {
        let mut rng = StreamRng::seed_from(4);
        let mut memory = PointMemory::with_summation(2, Memory::All, Summation::Index);
        let groups = [[0.0, 0.0], [9.0, 1.0], [1.0, 8.0]];
        let mut push = |memory: &mut PointMemory, n: usize| {
            for _ in 0..n {
                let g = groups[rng.index_below(3)];
                memory.push(
                    &[g[0] + rng.standard_normal(), g[1] + rng.standard_normal()],
                    rng.next_f64(),
                    0.01,
                );
            }
        };
        push(&mut memory, 700);
        let first = [0.1, 0.0, 9.2, 1.1, 0.8, 7.9];
        let second = [0.0, 0.3, 8.8, 0.9, 1.2, 8.1];
        let mut cache = CoverCache::default();
        let centres = [0.4, -0.2, 9.5, 1.3, 0.6, 8.4];
        let value = |memory: &PointMemory, cover: &RobustCover| {
            let mut prepared = PreparedCentres::new(2);
            prepared.set(&centres);
            memory
                .evaluate(&mut prepared, f64::INFINITY, Some(cover))
                .value
                .to_bits()
        };
        let scales = [0.2; 3];
        RobustCover::build(memory.index(), 2, &first, &scales, 3, &mut cache);
        for (means, scales) in [(&second, scales), (&first, [0.9; 3]), (&first, scales)] {
            let cached = RobustCover::build(memory.index(), 2, means, &scales, 3, &mut cache);
            let fresh = RobustCover::build(
                memory.index(),
                2,
                means,
                &scales,
                3,
                &mut CoverCache::default(),
            );
            assert_eq!(value(&memory, &cached), value(&memory, &fresh));
        }
        // New points: the trees change, so must the stable part.
        push(&mut memory, 300);
        let cached = RobustCover::build(memory.index(), 2, &first, &scales, 3, &mut cache);
        let fresh = RobustCover::build(
            memory.index(),
            2,
            &first,
            &scales,
            3,
            &mut CoverCache::default(),
        );
        assert_eq!(value(&memory, &cached), value(&memory, &fresh));
    }
}
