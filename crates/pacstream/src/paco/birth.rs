//! Births decided on the difference: a bound on what a newborn centre can take, which
//! rejects most births without walking the index.
//!
//! # The bound
//!
//! A birth proposes c' = c ∪ {b}: the current centres and one newborn b. Write
//! f_s(ℓ) = ℓ + w_s (ℓ − ℓ̂_s)² for point s's term of S_t (w_s = λ_{s−1}/2 ≥ 0, ℓ̂_s ≥ 0),
//! ℓ_s = min_j ‖x_s − c_j‖² and ℓ'_s = min(ℓ_s, ‖x_s − b‖²). Then
//! S(c) − S(c') = Σ_s D_s with D_s = f_s(ℓ_s) − f_s(ℓ'_s).
//!
//! **The sign argument, for the whole term.** With δ_s = ℓ_s − ℓ'_s ≥ 0,
//! D_s = δ_s [1 + w_s (ℓ_s + ℓ'_s − 2ℓ̂_s)] = δ_s + 2 w_s δ_s (ℓ_s − ℓ̂_s) − w_s δ_s².
//! f_s is not monotone: when ℓ̂_s > (ℓ_s + ℓ'_s)/2 + 1/(2w_s) (a point predicted badly) the
//! variance term grows more than the loss falls, D_s < 0, and the term *grows* — which only
//! helps a lower bound on S(c'). What is true for every point is
//! D_s ≤ δ_s + 2 w_s δ_s (ℓ_s − ℓ̂_s)₊ (drop −w_s δ_s² ≤ 0). Dropping the variance part
//! (D_s ≤ δ_s) would be wrong: when ℓ_s > ℓ̂_s the variance term falls with the loss.
//!
//! **Groups.** Let the points be partitioned into groups G, each given any one centre a of
//! c (here: the centre nearest the group's mean). For s ∈ G, L_s = ‖x_s − a‖² ≥ ℓ_s, so with
//! g_s = L_s − ‖x_s − b‖²: δ_s = (ℓ_s − ‖x_s − b‖²)₊ ≤ (g_s)₊ and (ℓ_s − ℓ̂_s)₊ ≤ |L_s − ℓ̂_s|.
//! By Cauchy–Schwarz with the weights w_s,
//!
//! Σ_G D_s ≤ Σ_G (g_s)₊ + 2 √(Σ_G w_s (g_s)₊²) · √(Σ_G w_s (L_s − ℓ̂_s)²),
//!
//! and the last factor is the variance part of the closed form of [`super::index`] at a. On
//! y = x − μ (μ the group's mean), g = γ₀ + h·y is affine, with h = 2(b − a) and
//! γ₀ = ‖a − μ‖² − ‖b − μ‖²; every point lies within the group's reach ρ of μ, so
//! g ≤ M = γ₀ + ρ‖h‖ on the group. If M ≤ 0 the newborn can take nothing from the group
//! (its ball lies on a's side of the bisector of a and b). Otherwise, from the moments
//! n, Σg = nγ₀ + h·Σy and Σg² = nγ₀² + 2γ₀ h·Σy + hᵀ(Σyyᵀ)h:
//!
//! - Σ(g)₊ ≤ (Σg + √(n Σg²))/2 (since x₊ = (x + |x|)/2 and Σ|g| ≤ √(n Σg²));
//! - Σ(g)₊ ≤ M Σ(g − α)²/(M − α)² for any α ≤ −M (for x ≤ M, x₊ ≤ M (x − α)²/(M − α)²: the
//!   parabola touches x at x = M with slope 2M/(M − α) ≤ 1, and is ≥ 0), at the α that
//!   minimises it, (M Σg − Σg²)/(nM − Σg), or −M — the one-sided bound that makes a group far
//!   on the other side of the bisector cost almost nothing, where the first one does not;
//! - Σw(g)₊² ≤ min(Σwg², M² Σw(g − α)²/(M − α)²) for any α ≤ 0 (for x ≤ M,
//!   x₊ ≤ M|x − α|/(M − α)), from Σw, Σwy and Σwyyᵀ in the same way.
//!
//! So S(c') ≥ S(c) − Σ_G B_G with B_G the bound above: the birth is rejected when
//! S(c) − Σ_G B_G reaches the threshold of the move. It costs O(d²) per group (a few per
//! slot of the round's cover), against a walk of the index that opens the nodes along the
//! bisector of the newborn and the centre of the cluster it lands in (about 120 nodes per
//! birth 4 → 5 at t ≈ 9,000, d = 5: `docs/paco-calibration.md`).
//!
//! # Floating point: the decision is the full sum's
//!
//! The chain accepts iff S(c') < thr, S(c') as the evaluation of [`super::evaluate`] would
//! sum it. This test only ever *rejects*, and does so only when that sum must reach thr:
//!
//! - each B_G is raised by 10⁻⁹ × the magnitude of the terms it is computed from (and M and ρ
//!   by 10⁻⁹ relative), far more than their roundings (a relative O(d · 2⁻⁵³) of those
//!   magnitudes), so B̄_G ≥ the exact B_G of the exact moments;
//! - S(c) is the cached sum of the current state and S(c') the sum the walk would compute;
//!   each differs from its exact value by at most γ = 4(n + k + 4)u (u = 2⁻⁵³) relative for the
//!   summation, plus a few ulps of the closed forms' own magnitudes (see [`super::index`]),
//!   the rounding the early rejection of the walk allows for with the same γ;
//! - so with the relative slack κ = 10⁻⁹ + 2γ, rejecting when
//!   (S(c) − ΣB̄) − κ (S(c) + ΣB̄) ≥ thr rejects only moves whose computed S(c') ≥ thr.
//!
//! The slack costs nothing in practice: the rejected births miss the threshold by a median
//! of 21 % of S at t ≈ 9,000. The tests place thresholds at the bound, at the full sum and
//! one ulp either side, on groups where the bound is exact (coinciding points taken whole by
//! the newborn) and where the variance term falls or grows with the loss.
//!
//! # The refined walk
//!
//! The cover's groups are few and wide: a group of a cluster the newborn lands in has a
//! reach of the cluster's size, so its B_G is loose exactly where the newborn takes points,
//! and a birth inside a cluster that misses the threshold by a few per cent is not decided
//! (at t ≈ 70,000, d = 5, the rejected births 4 → 5 miss it by a median of 7 %, and the cover
//! decides few of them). [`refined_birth_rejected`] bounds the same gain on the nodes of the
//! spatial index instead, opening best-first (the largest bound first) the nodes where the
//! newborn can take points. Each node, with the candidates of its parent filtered to those
//! that may be nearest in its box (the test of the evaluation, [`filter_candidates`]),
//! contributes one of:
//!
//! - **nothing**, when some candidate z is at least as near as b everywhere in the box
//!   (max over the box of ‖p − z‖² − ‖p − b‖² ≤ −10⁻⁹ × the magnitude of its terms): then
//!   ℓ'_s = ℓ_s and D_s = 0 for each of its points, exactly;
//! - **its exact gain**, when a single candidate a remains and b is nearer than a everywhere
//!   in the box: ℓ_s = ‖x_s − a‖² and ℓ'_s = ‖x_s − b‖² for every point, so Σ D_s is the
//!   closed form at a minus the closed form at b; or, for a leaf or a node too small for the
//!   closed form, D_s summed point by point;
//! - **the bound B_G** of the groups above, the node taken as the group (its mean, its reach
//!   from the box), to be refined by opening its two children.
//!
//! So G = Σ exact + Σ open ≥ Σ_s D_s at every step, and the birth is rejected as soon as
//! (S(c) − Ḡ) − κ (S(c) + Ḡ) ≥ thr, with the same κ as above. Ḡ raises G by the roundings
//! of the walk: each exact gain by 10⁻⁹ × the magnitude of the terms it was computed from
//! (a closed form or a point sum rounds by a relative O(d · 2⁻⁵³) of that magnitude), and the
//! running sums by 2(m + 2)ε × the sum of the magnitudes of the m values added to or taken
//! from them (each addition or subtraction rounds by at most u of its result). The walk
//! opens at most [`REFINE_BUDGET`] nodes and then gives up, leaving the move to the full
//! evaluation; its order is a function of the inputs alone (ties by tree and node), so the
//! decisions, and hence the chain, are the same on every machine and thread count.

use super::cover::{PartitionVisitor, RobustCover};
use super::evaluate::{
    closed_form_magnitude, closed_form_min_points, filter_candidates, variance_part,
};
use super::index::{MAX_INDEX_DIM, MomentLayout, N, NodeLayout, SUM_W, SpatialIndex};
use crate::geometry::{fused_squared_distance, squared_distance};
use crate::kernels::{self, Kernel};

/// The relative margin by which the bounds are raised over their roundings, and the base
/// of the slack of the decision (module docs).
const SAFETY: f64 = 1e-9;

/// Whether the birth of `newborn` from the current state `centres` (k × d), whose S_t is
/// `current_loss`, is certain to be rejected at `threshold`: S(c') ≥ threshold as the full
/// evaluation would compute it (module docs). `cover` is the round's cover of any number of
/// centres (it is used only as a partition of the memory into groups with moments);
/// `n_points` the points in memory.
pub(crate) fn birth_rejected(
    cover: &RobustCover,
    centres: &[f64],
    newborn: &[f64],
    current_loss: f64,
    threshold: f64,
    n_points: usize,
) -> bool {
    birth_decision_bound(cover, centres, newborn, current_loss, n_points) >= threshold
}

/// (S(c) − ΣB̄) − κ (S(c) + ΣB̄): a lower bound on S(c') as the full evaluation would compute
/// it (module docs); −∞ when there is no bound (d beyond the index's, or no centre).
pub(crate) fn birth_decision_bound(
    cover: &RobustCover,
    centres: &[f64],
    newborn: &[f64],
    current_loss: f64,
    n_points: usize,
) -> f64 {
    let dim = newborn.len();
    let k = centres.len() / dim;
    if dim > MAX_INDEX_DIM || k == 0 {
        return f64::NEG_INFINITY;
    }
    let gain = birth_gain_bound(cover, centres, newborn);
    decision_bound(current_loss, gain, n_points, k)
}

/// κ = 10⁻⁹ + 2γ, γ = 4(n + k + 4)u = 2(n + k + 4)ε with ε = 2u (module docs).
fn decision_slack(n_points: usize, n_clusters: usize) -> f64 {
    let summation = 2.0 * (n_points + n_clusters + 4) as f64 * f64::EPSILON;
    SAFETY + 2.0 * summation
}

/// (S(c) − G) − κ (S(c) + G) for a gain bound G (module docs).
fn decision_bound(current_loss: f64, gain: f64, n_points: usize, n_clusters: usize) -> f64 {
    let slack = decision_slack(n_points, n_clusters);
    (current_loss - gain) - slack * (current_loss + gain)
}

/// The least S(c), as the full evaluation would compute it, at which the birth of a
/// centre whose gain bound ([`birth_gain_bound`]) is `gain` from a state of `n_clusters`
/// centres is certain to be rejected at `threshold`: the S at which the decision bound
/// (S − G) − κ(S + G) of [`birth_decision_bound`] reaches `threshold`, raised by a relative
/// 10⁻¹² over the roundings of this division (far below κ ≥ 10⁻⁹). For a sum that is not
/// complete, this is the threshold at which its early rejection says so.
pub(crate) fn loss_deciding_rejection(
    gain: f64,
    threshold: f64,
    n_points: usize,
    n_clusters: usize,
) -> f64 {
    let slack = decision_slack(n_points, n_clusters);
    (threshold + gain * (1.0 + slack)) / (1.0 - slack) * (1.0 + 1e-12)
}

/// An upper bound on S(c) − S(c ∪ {newborn}), raised over its roundings (module docs).
pub(crate) fn birth_gain_bound(cover: &RobustCover, centres: &[f64], newborn: &[f64]) -> f64 {
    kernels::dispatch(GainBound {
        cover,
        layout: MomentLayout { dim: newborn.len() },
        centres,
        newborn,
        total: 0.0,
    })
}

/// [`birth_gain_bound`] compiled for the CPU's instructions: its many fused multiply-adds
/// are then one instruction each, where the portable build calls the library's `fma` (a
/// correctly rounded operation either way, so the same bits). It visits the cover's groups
/// itself, summing their bounds in the cover's order.
struct GainBound<'a> {
    cover: &'a RobustCover,
    layout: MomentLayout,
    centres: &'a [f64],
    newborn: &'a [f64],
    total: f64,
}

impl Kernel for GainBound<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(mut self) -> f64 {
        let cover = self.cover;
        cover.for_each_partition_group(&mut self);
        self.total
    }
}

impl PartitionVisitor for GainBound<'_> {
    #[inline(always)]
    fn visit(&mut self, moments: &[f64], mean: &[f64], reach: f64) {
        self.total += group_gain_bound(
            moments,
            self.layout,
            mean,
            reach,
            self.centres,
            self.newborn,
        );
    }
}

/// B̄_G of one group (module docs), from its moments about `mean` and its `reach`.
#[inline(always)]
fn group_gain_bound(
    moments: &[f64],
    layout: MomentLayout,
    mean: &[f64],
    reach: f64,
    centres: &[f64],
    newborn: &[f64],
) -> f64 {
    let dim = layout.dim;
    let n = moments[N];
    if n == 0.0 {
        return 0.0;
    }
    // The group's centre a: the one nearest its mean (any centre gives a valid bound).
    let mut home = (0, f64::INFINITY);
    for (i, centre) in centres.chunks_exact(dim).enumerate() {
        let distance = squared_distance(centre, mean);
        if distance < home.1 {
            home = (i, distance);
        }
    }
    let centre = &centres[home.0 * dim..(home.0 + 1) * dim];
    let mut v = [0.0f64; MAX_INDEX_DIM];
    let v = &mut v[..dim];
    let mut h = [0.0f64; MAX_INDEX_DIM];
    let h = &mut h[..dim];
    let (mut q, mut newborn_q, mut hh) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..dim {
        v[i] = centre[i] - mean[i];
        let beta = newborn[i] - mean[i];
        h[i] = 2.0 * (newborn[i] - centre[i]);
        q = v[i].mul_add(v[i], q);
        newborn_q = beta.mul_add(beta, newborn_q);
        hh = h[i].mul_add(h[i], hh);
    }
    let h_norm = hh.sqrt();
    let reach = reach * (1.0 + SAFETY);
    let gamma = q - newborn_q;
    let top_magnitude = q + newborn_q + reach * h_norm;
    let top = gamma + reach * h_norm + SAFETY * top_magnitude;
    if top <= 0.0 {
        // The group's ball lies on a's side of the bisector of a and the newborn.
        return 0.0;
    }

    // Σg and Σg², and their magnitudes.
    let h_sum_y = dot(h, &moments[layout.sum_y()..layout.sum_y() + dim]);
    let (h_yy_h, root) = quadratic_form(&moments[layout.sum_yy_matrix()..], h);
    let h_yy_h_magnitude = root * root;
    // Σ_s |h·y_s| ≤ Σ_i |h_i| √(n Σ y_i²): the magnitude of h·Σy down to the points.
    let h_sum_y_magnitude = n.sqrt() * root;
    let s1 = n.mul_add(gamma, h_sum_y);
    let s1_magnitude = n * gamma.abs() + h_sum_y_magnitude;
    let s2 = ((n * gamma).mul_add(gamma, 2.0 * gamma * h_sum_y) + h_yy_h).max(0.0);
    let s2_magnitude = n * gamma * gamma + 2.0 * gamma.abs() * h_sum_y_magnitude + h_yy_h_magnitude;
    let positive = {
        let cauchy = 0.5 * (s1 + (n * s2).sqrt());
        let cauchy_magnitude = 0.5 * (s1_magnitude + (n * s2_magnitude).sqrt());
        let (one_sided, one_sided_magnitude) =
            parabola_bound(n, s1, s2, s1_magnitude, s2_magnitude, top, -top, 1.0);
        (cauchy + SAFETY * cauchy_magnitude)
            .min(one_sided + SAFETY * one_sided_magnitude)
            .max(0.0)
    };

    let sum_w = moments[SUM_W];
    if sum_w == 0.0 {
        // Every w_s is 0: the terms are the losses alone.
        return positive;
    }
    // Σw(g)₊² and Σw(L − ℓ̂)².
    let h_wy = dot(h, &moments[layout.sum_wy()..layout.sum_wy() + dim]);
    let (h_wyy_h, root_w) = quadratic_form(&moments[layout.sum_wyy()..], h);
    let h_wyy_h_magnitude = root_w * root_w;
    let h_wy_magnitude = sum_w.sqrt() * root_w;
    let w1 = sum_w.mul_add(gamma, h_wy);
    let w1_magnitude = sum_w * gamma.abs() + h_wy_magnitude;
    let w2 = ((sum_w * gamma).mul_add(gamma, 2.0 * gamma * h_wy) + h_wyy_h).max(0.0);
    let w2_magnitude =
        sum_w * gamma * gamma + 2.0 * gamma.abs() * h_wy_magnitude + h_wyy_h_magnitude;
    let (squares, squares_magnitude) =
        parabola_bound(sum_w, w1, w2, w1_magnitude, w2_magnitude, top, 0.0, top);
    let squares = (w2 + SAFETY * w2_magnitude).min(squares + SAFETY * squares_magnitude);
    let (variance, variance_magnitude) = variance_part(moments, layout, v, q);
    let variance = variance.max(0.0) + SAFETY * variance_magnitude;
    let cross = 2.0 * (squares.max(0.0) * variance).sqrt();
    positive + cross * (1.0 + SAFETY)
}

/// scale · Σ(g − α)²/(M − α)² (Σ over a group of total weight `n`, with Σg = `s1`,
/// Σg² = `s2`) at the α ≤ `alpha_max` that minimises it, (M s1 − s2)/(nM − s1) when that is
/// below `alpha_max`, and its magnitude: a bound on Σ(g)₊ (scale M, α ≤ −M) or on Σ(g)₊²
/// (scale M², α ≤ 0), for g ≤ M (module docs).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn parabola_bound(
    n: f64,
    s1: f64,
    s2: f64,
    s1_magnitude: f64,
    s2_magnitude: f64,
    top: f64,
    alpha_max: f64,
    scale_over_top: f64,
) -> (f64, f64) {
    let denominator = n.mul_add(top, -s1);
    let best = (s1 * top - s2) / denominator;
    let alpha = if denominator > 0.0 && best < alpha_max {
        best
    } else {
        alpha_max
    };
    let gap = top - alpha;
    let scale = top * scale_over_top / (gap * gap);
    let spread = (n * alpha).mul_add(alpha, s2 - 2.0 * alpha * s1);
    let spread_magnitude = n * alpha * alpha + s2_magnitude + 2.0 * (alpha * s1_magnitude).abs();
    (scale * spread.max(0.0), scale * spread_magnitude)
}

#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |acc, (x, y)| x.mul_add(*y, acc))
}

/// hᵀ M h for a symmetric positive semi-definite M stored as its upper triangle row by row,
/// and Σ_i √M_ii |h_i| (whose square bounds the magnitude of its terms, |M_ij| ≤ √(M_ii M_jj)).
#[inline(always)]
fn quadratic_form(upper: &[f64], h: &[f64]) -> (f64, f64) {
    let dim = h.len();
    let mut value = 0.0;
    let mut root = 0.0;
    let mut m = 0;
    for i in 0..dim {
        let diagonal = upper[m] * h[i];
        root += upper[m].abs().sqrt() * h[i].abs();
        m += 1;
        let mut off = 0.0;
        for hj in &h[i + 1..] {
            off = upper[m].mul_add(*hj, off);
            m += 1;
        }
        value = h[i].mul_add(2.0f64.mul_add(off, diagonal), value);
    }
    (value, root)
}

/// The nodes the refined walk ([`refined_birth_rejected`]) opens before it gives up (the
/// move is then summed in full, as before).
pub(crate) const REFINE_BUDGET: usize = 384;

/// A node of the refined walk waiting to be opened: its bound on the gain, and its
/// candidates among the current centres (`arena[begin..begin + len]`).
#[derive(Clone, Copy, Debug)]
struct Pending {
    bound: f64,
    tree: u32,
    node: u32,
    begin: u32,
    len: u32,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    /// The largest bound first; ties in tree and node order, so that the walk is a
    /// function of its inputs alone.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bound
            .total_cmp(&other.bound)
            .then(other.tree.cmp(&self.tree))
            .then(other.node.cmp(&self.node))
    }
}

/// Scratch buffers of the refined walk, reused from one birth to the next.
#[derive(Clone, Debug, Default)]
pub(crate) struct RefineScratch {
    heap: std::collections::BinaryHeap<Pending>,
    arena: Vec<u32>,
    survivors: Vec<u32>,
    candidates: Vec<u32>,
}

/// Whether the birth of `newborn` from `centres` (k × d), whose S_t is `current_loss`, is
/// certain to be rejected at `threshold`, by a bound on the gain refined on the index
/// itself: the test of [`birth_rejected`] with the cover's groups replaced by tree nodes,
/// opened where the newborn can take points, for the births whose bound over the cover's
/// groups is too loose (module docs, "The refined walk").
#[allow(clippy::too_many_arguments)]
pub(crate) fn refined_birth_rejected(
    index: &SpatialIndex,
    centres: &[f64],
    newborn: &[f64],
    current_loss: f64,
    threshold: f64,
    n_points: usize,
    scratch: &mut RefineScratch,
) -> bool {
    let dim = newborn.len();
    let k = centres.len() / dim;
    if dim > MAX_INDEX_DIM || k == 0 || !current_loss.is_finite() || !threshold.is_finite() {
        return false;
    }
    kernels::dispatch(RefinedWalk {
        index,
        layout: NodeLayout { dim },
        centres,
        newborn,
        current_loss,
        threshold,
        n_points,
        scratch,
    })
}

/// [`refined_birth_rejected`] compiled for the CPU's instructions.
struct RefinedWalk<'a> {
    index: &'a SpatialIndex,
    layout: NodeLayout,
    centres: &'a [f64],
    newborn: &'a [f64],
    current_loss: f64,
    threshold: f64,
    n_points: usize,
    scratch: &'a mut RefineScratch,
}

/// What one node of the refined walk adds to the bound on the gain.
enum NodeGain {
    /// The newborn takes none of its points.
    Nothing,
    /// Its whole gain, as computed, and the magnitude of the terms it was computed from.
    Exact(f64, f64),
    /// A bound on its gain (already raised over its roundings), to refine by opening it;
    /// its candidates are in `survivors`.
    Open(f64),
}

impl Kernel for RefinedWalk<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        let RefinedWalk {
            index,
            layout,
            centres,
            newborn,
            current_loss,
            threshold,
            n_points,
            scratch,
        } = self;
        let dim = layout.dim;
        let k = centres.len() / dim;
        let RefineScratch {
            heap,
            arena,
            survivors,
            candidates,
        } = scratch;
        heap.clear();
        arena.clear();
        let mut tally = Tally::default();
        candidates.clear();
        candidates.extend(0..k as u32);
        for tree in 0..index.trees.len() as u32 {
            let gain = node_gain(
                index, tree, 0, layout, centres, newborn, candidates, survivors,
            );
            tally.add(gain, tree, 0, heap, arena, survivors);
        }
        for opened in 0..=REFINE_BUDGET {
            if decision_bound(current_loss, tally.gain_bound(), n_points, k) >= threshold {
                return true;
            }
            if opened == REFINE_BUDGET {
                break;
            }
            let Some(top) = heap.pop() else {
                break;
            };
            tally.take(top.bound);
            let right = index.trees[top.tree as usize].nodes[top.node as usize].right;
            candidates.clear();
            candidates
                .extend_from_slice(&arena[top.begin as usize..(top.begin + top.len) as usize]);
            for child in [top.node + 1, right] {
                let gain = node_gain(
                    index, top.tree, child, layout, centres, newborn, candidates, survivors,
                );
                tally.add(gain, top.tree, child, heap, arena, survivors);
            }
        }
        false
    }
}

/// The running bound of the refined walk: G = exact + open, with the magnitude of every
/// value added to or taken from them and the number of roundings, for the allowance of
/// [`Tally::gain_bound`].
#[derive(Default)]
struct Tally {
    exact: f64,
    open: f64,
    magnitude: f64,
    roundings: u32,
}

impl Tally {
    /// Adds a node's [`NodeGain`]; a node to open is queued with its candidates.
    #[inline(always)]
    fn add(
        &mut self,
        gain: NodeGain,
        tree: u32,
        node: u32,
        heap: &mut std::collections::BinaryHeap<Pending>,
        arena: &mut Vec<u32>,
        survivors: &[u32],
    ) {
        match gain {
            NodeGain::Nothing => {}
            NodeGain::Exact(value, value_magnitude) => {
                self.exact += value + SAFETY * value_magnitude;
                self.magnitude += value.abs() + 2.0 * value_magnitude;
                self.roundings += 2;
            }
            NodeGain::Open(bound) => {
                let begin = arena.len() as u32;
                arena.extend_from_slice(survivors);
                heap.push(Pending {
                    bound,
                    tree,
                    node,
                    begin,
                    len: survivors.len() as u32,
                });
                self.open += bound;
                self.magnitude += bound;
                self.roundings += 1;
            }
        }
    }

    /// Takes an opened node's bound out of the running bound.
    #[inline(always)]
    fn take(&mut self, bound: f64) {
        self.open -= bound;
        self.magnitude += bound;
        self.roundings += 1;
    }

    /// G raised by the roundings of its running sums: each addition or subtraction rounds
    /// by at most u of its result, so the sums are within γ_m Σ|terms| ≤ 2mε · magnitude
    /// of their exact values (m roundings, ε = 2u; two more for G's own sum).
    #[inline(always)]
    fn gain_bound(&self) -> f64 {
        let roundings = f64::from(self.roundings + 2);
        self.exact + self.open + 2.0 * roundings * f64::EPSILON * self.magnitude
    }
}

/// max over the box [lo, hi] of ‖p − z‖² − ‖p − b‖² = Σ u_i (2p_i − z_i − b_i), u = b − z,
/// at the vertex farthest in the direction u, and the magnitude of its terms: b is nearer
/// than z nowhere in the box when it is ≤ −10⁻⁹ × that magnitude (the margin covers the
/// roundings of the sum, a relative O(d 2⁻⁵³) of its magnitude).
#[inline(always)]
fn excess(lo: &[f64], hi: &[f64], z: &[f64], b: &[f64]) -> (f64, f64) {
    let mut value = 0.0;
    let mut magnitude = 0.0;
    for i in 0..lo.len() {
        let u = b[i] - z[i];
        let p = if u > 0.0 { hi[i] } else { lo[i] };
        let term = 2.0 * p - z[i] - b[i];
        value = u.mul_add(term, value);
        magnitude += (u * (2.0 * p.abs() + z[i].abs() + b[i].abs())).abs();
    }
    (value, magnitude)
}

/// A node's contribution to the refined walk ([`NodeGain`]); `candidates` are the current
/// centres that may be nearest in its parent, `survivors` receives those that may be
/// nearest in it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn node_gain(
    index: &SpatialIndex,
    tree: u32,
    node: u32,
    layout: NodeLayout,
    centres: &[f64],
    newborn: &[f64],
    candidates: &[u32],
    survivors: &mut Vec<u32>,
) -> NodeGain {
    let dim = layout.dim;
    let tree = &index.trees[tree as usize];
    let stats = tree.node_stats(node as usize, layout);
    let shape = tree.nodes[node as usize];
    filter_candidates(stats, layout, centres, candidates, survivors);
    let lo = &stats[layout.lo()..layout.lo() + dim];
    let hi = &stats[layout.hi()..layout.hi() + dim];
    let mut takes_all = true;
    for &j in survivors.iter() {
        let z = &centres[j as usize * dim..(j as usize + 1) * dim];
        let (value, value_magnitude) = excess(lo, hi, z, newborn);
        if value + SAFETY * value_magnitude <= 0.0 {
            // z is at least as near as the newborn everywhere in the box.
            return NodeGain::Nothing;
        }
        let (back, back_magnitude) = excess(lo, hi, newborn, z);
        if back + SAFETY * back_magnitude > 0.0 {
            takes_all = false;
        }
    }
    let moments = &stats[layout.moments()..];
    let mean = &stats[layout.mean()..layout.mean() + dim];
    let moment_layout = MomentLayout { dim };
    let n = shape.len();
    if takes_all && survivors.len() == 1 {
        // The newborn is the nearest centre of every point, which had a as its nearest:
        // the gain is the difference of the two closed forms.
        let a = survivors[0] as usize;
        let (before, before_magnitude) = closed_form_magnitude(
            moments,
            moment_layout,
            mean,
            &centres[a * dim..(a + 1) * dim],
        );
        let (after, after_magnitude) = closed_form_magnitude(moments, moment_layout, mean, newborn);
        return NodeGain::Exact(before - after, before_magnitude + after_magnitude);
    }
    if shape.is_leaf() || n < closed_form_min_points(dim) {
        // Point by point: D_s = f_s(ℓ_s) − f_s(min(ℓ_s, ‖x_s − b‖²)).
        let range = shape.begin as usize..shape.end as usize;
        let (mut gain, mut total) = (0.0f64, 0.0f64);
        for ((point, &predicted), &weight) in tree.points[range.start * dim..range.end * dim]
            .chunks_exact(dim)
            .zip(&tree.predicted[range.clone()])
            .zip(&tree.variance[range])
        {
            let mut loss = f64::INFINITY;
            for &j in survivors.iter() {
                let centre = &centres[j as usize * dim..(j as usize + 1) * dim];
                loss = loss.min(fused_squared_distance(point, centre));
            }
            let after = loss.min(fused_squared_distance(point, newborn));
            let (d0, d1) = (loss - predicted, after - predicted);
            let (f0, f1) = (
                (weight * d0).mul_add(d0, loss),
                (weight * d1).mul_add(d1, after),
            );
            gain += f0 - f1;
            total += f0 + f1;
        }
        return NodeGain::Exact(gain, total);
    }
    let mut reach = 0.0;
    for i in 0..dim {
        let gap = (mean[i] - lo[i]).max(hi[i] - mean[i]);
        reach = gap.mul_add(gap, reach);
    }
    NodeGain::Open(group_gain_bound(
        moments,
        moment_layout,
        mean,
        reach.sqrt(),
        centres,
        newborn,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every S at or above [`loss_deciding_rejection`] gives a decision bound at or above
    /// the threshold, as computed, over thresholds and gains of many magnitudes.
    #[test]
    fn the_loss_that_decides_a_rejection_decides_it() {
        let mut rng = StreamRng::seed_from(4);
        for _ in 0..20_000 {
            let threshold = 10f64.powf(12.0 * rng.next_f64() - 2.0);
            let gain = threshold * 10f64.powf(6.0 * rng.next_f64() - 5.0);
            let n_points = 1 + rng.index_below(1_000_000);
            let k = 1 + rng.index_below(50);
            let needed = loss_deciding_rejection(gain, threshold, n_points, k);
            for loss in [needed, needed.next_up(), needed * (1.0 + 1e-6)] {
                assert!(
                    decision_bound(loss, gain, n_points, k) >= threshold,
                    "S {loss}, G {gain}, thr {threshold}, n {n_points}, k {k}"
                );
            }
        }
    }
    use crate::paco::evaluate::PreparedCentres;
    use crate::paco::evaluate::index_tests::{cover_for, reference};
    use crate::paco::memory::PointMemory;
    use crate::paco::params::{Memory as MemoryMode, Summation};
    use crate::rng::StreamRng;

    /// Clusters of spread 1 around `means`, with ℓ̂_s and w_s from `terms(rng)`.
    fn clustered(
        means: &[Vec<f64>],
        per_cluster: usize,
        seed: u64,
        mut terms: impl FnMut(&mut StreamRng) -> (f64, f64),
    ) -> PointMemory {
        let dim = means[0].len();
        let mut rng = StreamRng::seed_from(seed);
        let mut memory = PointMemory::with_summation(dim, MemoryMode::All, Summation::Index);
        for _ in 0..per_cluster * means.len() {
            let mean = &means[rng.index_below(means.len())];
            let point: Vec<f64> = mean.iter().map(|m| m + rng.standard_normal()).collect();
            let (predicted, weight) = terms(&mut rng);
            memory.push(&point, predicted, weight);
        }
        memory
    }

    fn full_sum(memory: &PointMemory, centres: &[f64], cover: Option<&RobustCover>) -> f64 {
        let mut prepared = PreparedCentres::new(memory.dim());
        prepared.set(centres);
        let evaluation = memory.evaluate(&mut prepared, f64::INFINITY, cover);
        assert!(evaluation.complete);
        evaluation.value
    }

    /// Checks, for one birth, that the bound holds against the compensated direct sums and
    /// that the test never rejects a move the full sum (on the cover of k + 1 and from the
    /// roots) would accept, at thresholds placed at the test's bound, at the full sums and
    /// one ulp either side. Returns the bound on the gain and the gain S(c) − S(c').
    fn check_birth(
        memory: &PointMemory,
        cover: &RobustCover,
        cover_after: &RobustCover,
        centres: &[f64],
        newborn: &[f64],
        what: &str,
    ) -> (f64, f64) {
        let n = memory.len();
        let current = full_sum(memory, centres, Some(cover));
        let mut after: Vec<f64> = centres.to_vec();
        after.extend_from_slice(newborn);
        let exact_gain = reference(memory, centres) - reference(memory, &after);
        let gain = birth_gain_bound(cover, centres, newborn);
        assert!(
            gain >= exact_gain,
            "{what}: bound {gain:e} below the gain {exact_gain:e}"
        );
        let sums = [
            full_sum(memory, &after, Some(cover_after)),
            full_sum(memory, &after, None),
        ];
        let bound = birth_decision_bound(cover, centres, newborn, current, n);
        let mut thresholds = vec![bound, bound.next_up(), bound.next_down()];
        for s in sums {
            thresholds.extend([s, s.next_up(), s.next_down(), 0.999 * s]);
        }
        for s in sums {
            thresholds.extend([0.98 * s, s * (1.0 - 1e-9)]);
        }
        let mut scratch = RefineScratch::default();
        for threshold in thresholds {
            let refined = refined_birth_rejected(
                memory.index(),
                centres,
                newborn,
                current,
                threshold,
                n,
                &mut scratch,
            );
            for (rejected, test) in [
                (
                    birth_rejected(cover, centres, newborn, current, threshold, n),
                    "the cover's",
                ),
                (refined, "the refined"),
            ] {
                if rejected {
                    for s in sums {
                        assert!(
                            s >= threshold,
                            "{what}: {test} test rejected at {threshold:e}, the full sum {s:e} accepts"
                        );
                    }
                }
            }
        }
        // The test is decided at its own bound and not one ulp above.
        assert!(
            birth_rejected(cover, centres, newborn, current, bound, n),
            "{what}"
        );
        assert!(
            !birth_rejected(cover, centres, newborn, current, bound.next_up(), n),
            "{what}"
        );
        (gain, exact_gain)
    }

    const MEANS: [[f64; 3]; 4] = [
        [0.0, 0.0, 0.0],
        [12.0, 0.0, 3.0],
        [-4.0, 11.0, 0.0],
        [3.0, -9.0, 8.0],
    ];

    fn means() -> Vec<Vec<f64>> {
        MEANS.iter().map(|m| m.to_vec()).collect()
    }

    /// Newborns inside a cluster (where it splits one), between clusters and far out, from
    /// a state with a centre near each mean: the bound holds, the decisions are the full
    /// sum's, and the bound is within a few times the gain inside a cluster and 0 far out.
    #[test]
    fn births_are_decided_as_the_full_sum_decides() {
        let memory = clustered(&means(), 1000, 3, |rng| {
            (3.0 * rng.next_f64(), 0.02 * rng.next_f64())
        });
        assert!(memory.uses_index());
        let flat: Vec<f64> = means().concat();
        let cover = cover_for(&memory, &flat, 0.05);
        let mut five = flat.clone();
        five.extend_from_slice(&[0.5, 0.5, 0.0]);
        let cover_after = cover_for(&memory, &five, 0.05);
        let mut rng = StreamRng::seed_from(41);
        let mut ratios = [vec![], vec![], vec![]];
        for trial in 0..60 {
            let centres: Vec<f64> = flat
                .iter()
                .map(|m| m + 0.05 * rng.standard_normal())
                .collect();
            let host = &MEANS[trial % 4];
            let newborn: Vec<f64> = match trial % 3 {
                // In a cluster, about one spread from its mean.
                0 => host.iter().map(|m| m + rng.standard_normal()).collect(),
                // Between two clusters.
                1 => host
                    .iter()
                    .zip(&MEANS[(trial + 1) % 4])
                    .map(|(a, b)| 0.5 * (a + b) + rng.standard_normal())
                    .collect(),
                // Far from every point.
                _ => vec![-30.0 + rng.next_f64(), 25.0, -20.0],
            };
            let (bound, gain) = check_birth(
                &memory,
                &cover,
                &cover_after,
                &centres,
                &newborn,
                &format!("trial {trial}"),
            );
            ratios[trial % 3].push((bound, gain));
        }
        // Effective where it matters: within a few times the gain for a newborn inside a
        // cluster (measured 1.4–4×), nothing at all for one far from every point.
        for &(bound, gain) in &ratios[0] {
            assert!(
                bound <= 5.0 * gain,
                "in a cluster: bound {bound}, gain {gain}"
            );
        }
        assert!(ratios[2].iter().all(|&(bound, _)| bound == 0.0));
    }

    /// The variance term falls with the loss (ℓ̂ = 0, large w: the term ℓ + wℓ² falls faster
    /// than ℓ, so a bound on the loss alone is not one on S) or grows (ℓ̂ far above ℓ: the
    /// term grows when the newborn takes a point): the bound holds and the decisions are the
    /// full sum's either way.
    #[test]
    fn the_variance_term_may_fall_or_grow() {
        for (case, terms) in [
            (
                0,
                (|_: &mut StreamRng| (0.0, 0.5)) as fn(&mut StreamRng) -> (f64, f64),
            ),
            (1, |rng: &mut StreamRng| {
                (400.0 + 100.0 * rng.next_f64(), 0.5)
            }),
            (2, |rng: &mut StreamRng| {
                (
                    if rng.next_f64() < 0.5 { 0.0 } else { 300.0 },
                    rng.next_f64(),
                )
            }),
        ] {
            let memory = clustered(&means(), 600, 7 + case, terms);
            let flat: Vec<f64> = means().concat();
            let cover = cover_for(&memory, &flat, 0.05);
            let mut rng = StreamRng::seed_from(5 + case);
            for trial in 0..30 {
                let centres: Vec<f64> = flat
                    .iter()
                    .map(|m| m + 0.05 * rng.standard_normal())
                    .collect();
                let host = &MEANS[trial % 4];
                let newborn: Vec<f64> = host
                    .iter()
                    .map(|m| m + 1.5 * rng.standard_normal())
                    .collect();
                check_birth(
                    &memory,
                    &cover,
                    &cover,
                    &centres,
                    &newborn,
                    &format!("case {case}, trial {trial}"),
                );
            }
        }
    }

    /// Newborns that split a cluster of 4,000 points in d = 5, at thresholds 1 % below
    /// S(c'): the bound over the cover's groups decides none of them (its Cauchy–Schwarz
    /// slack grows with the cluster), the refined walk decides every one (its slack grows
    /// with the nodes along the split), and neither rejects at S(c') one ulp up.
    #[test]
    fn the_refined_walk_decides_births_the_cover_cannot() {
        let means: Vec<Vec<f64>> = [
            [0.0, 0.0, 0.0, 0.0, 0.0],
            [14.0, 0.0, 3.0, 0.0, 1.0],
            [-4.0, 13.0, 0.0, 2.0, 0.0],
            [3.0, -11.0, 9.0, 0.0, -2.0],
        ]
        .iter()
        .map(|m| m.to_vec())
        .collect();
        let memory = clustered(&means, 4000, 17, |rng| {
            (5.0 * rng.next_f64(), 0.002 * rng.next_f64())
        });
        let flat: Vec<f64> = means.concat();
        let cover = cover_for(&memory, &flat, 0.05);
        let n = memory.len();
        let current = full_sum(&memory, &flat, Some(&cover));
        let mut rng = StreamRng::seed_from(23);
        let mut scratch = RefineScratch::default();
        let (mut by_cover, mut by_walk) = (0, 0);
        let trials = 24;
        for trial in 0..trials {
            let host = &means[trial % 4];
            let newborn: Vec<f64> = host
                .iter()
                .map(|m| m + 0.8 * rng.standard_normal())
                .collect();
            let mut after = flat.clone();
            after.extend_from_slice(&newborn);
            let value = full_sum(&memory, &after, None);
            let threshold = 0.99 * value;
            by_cover += usize::from(birth_rejected(
                &cover, &flat, &newborn, current, threshold, n,
            ));
            by_walk += usize::from(refined_birth_rejected(
                memory.index(),
                &flat,
                &newborn,
                current,
                threshold,
                n,
                &mut scratch,
            ));
            for above in [value.next_up(), value * (1.0 + 1e-9)] {
                assert!(
                    !refined_birth_rejected(
                        memory.index(),
                        &flat,
                        &newborn,
                        current,
                        above,
                        n,
                        &mut scratch,
                    ),
                    "trial {trial}: rejected above S(c')"
                );
            }
        }
        assert_eq!(
            by_cover, 0,
            "the cover's bound decided {by_cover} of {trials}"
        );
        assert_eq!(
            by_walk, trials,
            "the refined walk decided {by_walk} of {trials}"
        );
    }

    /// Groups of coinciding points (no variance term) that the newborn takes whole: the
    /// bound is the exact gain but for its slack, and the thresholds at the bound, at S(c')
    /// and one ulp either side are decided as the full sum decides.
    #[test]
    fn a_bound_within_one_ulp_of_the_threshold() {
        let mut rng = StreamRng::seed_from(13);
        for trial in 0..40 {
            let mut memory = PointMemory::with_summation(2, MemoryMode::All, Summation::Index);
            let sites = [
                [0.0, 0.0],
                [10.0, 0.0],
                [0.0, 10.0],
                [4.0 + rng.next_f64(), 3.0 + rng.next_f64()],
            ];
            for s in 0..800 {
                memory.push(&sites[s % 4], 0.0, 0.0);
            }
            let centres = [0.0, 0.0, 10.0, 0.0, 0.0, 10.0];
            let cover = cover_for(&memory, &centres, 0.05);
            let newborn = sites[3];
            let current = full_sum(&memory, &centres, Some(&cover));
            let mut after = centres.to_vec();
            after.extend_from_slice(&newborn);
            let value = full_sum(&memory, &after, Some(&cover));
            let bound = birth_decision_bound(&cover, &centres, &newborn, current, memory.len());
            // Tight: within the slack of the exact S(c').
            assert!(
                value >= bound && value - bound <= 1e-8 * current,
                "trial {trial}: {value} {bound}"
            );
            for threshold in [
                value,
                value.next_up(),
                value.next_down(),
                bound,
                bound.next_up(),
                bound.next_down(),
            ] {
                let rejected =
                    birth_rejected(&cover, &centres, &newborn, current, threshold, memory.len())
                        || refined_birth_rejected(
                            memory.index(),
                            &centres,
                            &newborn,
                            current,
                            threshold,
                            memory.len(),
                            &mut RefineScratch::default(),
                        );
                assert!(
                    !rejected || value >= threshold,
                    "trial {trial}: {threshold:e}"
                );
            }
        }
    }
}
