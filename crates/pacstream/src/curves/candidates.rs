//! Candidate curves around a window (spec §3).
//!
//! For a window W of consecutive vertices (W = N(x) for some x):
//!
//! 1. **The neighbourhood.** N_t is the set of stored points in U(x) (the cells of the
//!    window's vertices and of the segments between them); x̄ is their mean, D their diameter
//!    (two-pass farthest-point estimate from the oldest of them), and u their first principal
//!    direction. With points merged into atoms (`super::partition`), x̄ and u are still those
//!    of the points (from the atoms' counts, means and scatters); D and the extreme
//!    projections are those of the atoms' means, within a bin's diameter of the points'.
//! 2. **The local vertex set** Q_{δ,t} (at most M points, more only if the fixed points below
//!    already exceed M): the vertices of W; the lattice point nearest to x̄; the lattice
//!    points nearest to the two extreme projections of N_t on x̄ + s·u; then lattice points
//!    drawn uniformly without replacement (seeded) from B(x̄, max(D, δ)) ∩ B(0, √d R) until M.
//!    Drawing from the whole ball, not only near x̄, is what lets the curve grow from one
//!    segment. Q is sorted lexicographically by integer coordinates, which breaks every later
//!    tie.
//! 3. **Candidates.** Keep every vertex outside W and put m ∈ {1, 2, 3} distinct points of Q
//!    in W's place, ordered by their projection on the line from the vertex before W to the
//!    vertex after W (at an end of the curve: on u, oriented away from the kept neighbour;
//!    when W is the whole curve, oriented like the current curve). All m = 1 and m = 2
//!    choices come first and m = 3 choices are sampled; when the window's budget is smaller
//!    than the m ≤ 2 choices, they are sampled too (uniformly, without replacement).
//!    Candidates with fewer than two vertices, equal consecutive vertices, more than p
//!    segments or a length above L are dropped, and so are duplicates (of the current curve
//!    or of another candidate of the round).

use std::collections::{BTreeSet, HashSet};

use super::evaluate::Window;
use super::partition::CurveState;
use super::pca::top_eigenvector;
use crate::geometry::squared_distance;
use crate::rng::StreamRng;

/// Above this many lattice points (or four times the number of points needed) in the
/// bounding box of the sampling ball, points are drawn by rejection instead of enumerated.
const ENUMERATION_LIMIT: f64 = 256.0;

/// The points of U(x) for a window, and what the local vertex set needs of them.
#[derive(Debug)]
pub(crate) struct Neighbourhood {
    pub(crate) mean: Vec<f64>,
    pub(crate) diameter: f64,
    /// First principal direction (None when the points do not spread).
    pub(crate) direction: Option<Vec<f64>>,
    /// The extreme projections of the points on x̄ + s·u.
    pub(crate) extremes: Option<(Vec<f64>, Vec<f64>)>,
}

impl Neighbourhood {
    /// From the atoms of U(x): the mean and the first principal direction of their points
    /// (from the atoms' counts, means and scatters), the diameter and the extreme projections
    /// of their means (exact when every atom is one point).
    pub(crate) fn new(state: &CurveState, window: Window) -> Self {
        let dim = state.dim;
        let mut ids: Vec<u64> = window
            .neighbourhood_cells(state)
            .into_iter()
            .flat_map(|cell| state.members(cell).iter().copied())
            .collect();
        // In stored order, so that sums do not depend on the order of the cells.
        ids.sort_unstable();
        let atoms: Vec<usize> = ids.iter().map(|&id| state.atom_index(id)).collect();
        let mut mean = vec![0.0; dim];
        if atoms.is_empty() {
            // No stored point in U(x): centre on the window's vertices.
            for i in window.first..=window.last {
                for (m, v) in mean.iter_mut().zip(state.vertex(i)) {
                    *m += v;
                }
            }
            let n = (window.last - window.first + 1) as f64;
            mean.iter_mut().for_each(|m| *m /= n);
            return Self {
                mean,
                diameter: 0.0,
                direction: None,
                extremes: None,
            };
        }
        let mut total = 0.0;
        for &a in &atoms {
            let count = state.atom_count(a);
            total += count;
            for (m, x) in mean.iter_mut().zip(state.atom_mean(a)) {
                *m += count * x;
            }
        }
        mean.iter_mut().for_each(|m| *m /= total);
        // The index of the atom whose mean is farthest from `origin` (the first on a tie)
        // and the squared distance to it.
        let farthest_from = |origin: &[f64]| {
            let mut best = (0.0, atoms[0]);
            for &a in &atoms {
                let d = squared_distance(state.atom_mean(a), origin);
                if d > best.0 {
                    best = (d, a);
                }
            }
            best
        };
        let (_, far) = farthest_from(state.atom_mean(atoms[0]));
        let (diameter2, _) = farthest_from(state.atom_mean(far));
        let mut covariance = vec![0.0; dim * dim];
        let mut centred = vec![0.0; dim];
        for &a in &atoms {
            let count = state.atom_count(a);
            for ((c, x), m) in centred.iter_mut().zip(state.atom_mean(a)).zip(&mean) {
                *c = x - m;
            }
            for r in 0..dim {
                for c in r..dim {
                    covariance[r * dim + c] += count * centred[r] * centred[c];
                }
            }
            if state.merges_points() {
                let scatter = state.atom_scatter(a);
                let mut slot = 0;
                for r in 0..dim {
                    for c in r..dim {
                        covariance[r * dim + c] += scatter[slot];
                        slot += 1;
                    }
                }
            }
        }
        for r in 0..dim {
            for c in 0..r {
                covariance[r * dim + c] = covariance[c * dim + r];
            }
        }
        let direction = top_eigenvector(&mut covariance, dim);
        let extremes = direction.as_ref().map(|u| {
            let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
            for &a in &atoms {
                let s: f64 = state
                    .atom_mean(a)
                    .iter()
                    .zip(&mean)
                    .zip(u)
                    .map(|((x, m), u)| (x - m) * u)
                    .sum();
                low = low.min(s);
                high = high.max(s);
            }
            let at = |s: f64| mean.iter().zip(u).map(|(m, u)| m + s * u).collect();
            (at(low), at(high))
        });
        Self {
            mean,
            diameter: diameter2.sqrt(),
            direction,
            extremes,
        }
    }
}

/// Q_{δ,t} for a window: sorted, distinct lattice keys, row-major.
pub(crate) fn local_vertices(
    state: &CurveState,
    window: Window,
    hood: &Neighbourhood,
    size: usize,
    rng: &mut StreamRng,
) -> Vec<i64> {
    let lattice = &state.lattice;
    let dim = state.dim;
    let mut set: BTreeSet<Vec<i64>> = BTreeSet::new();
    for i in window.first..=window.last {
        set.insert(state.key(i).to_vec());
    }
    if let Some(key) = lattice.nearest(&hood.mean) {
        set.insert(key);
    }
    if let Some((low, high)) = &hood.extremes {
        for end in [low, high] {
            if let Some(key) = lattice.nearest(end) {
                set.insert(key);
            }
        }
    }
    if set.len() < size {
        let need = size - set.len();
        let radius = hood.diameter.max(lattice.spacing());
        for key in draw_in_ball(state, &hood.mean, radius, need, &set, rng) {
            set.insert(key);
        }
    }
    let mut keys = Vec::with_capacity(set.len() * dim);
    for key in set {
        keys.extend(key);
    }
    keys
}

/// Up to `need` distinct lattice points of B(centre, radius) ∩ B(0, √d R) not in `taken`,
/// drawn uniformly without replacement.
fn draw_in_ball(
    state: &CurveState,
    centre: &[f64],
    radius: f64,
    need: usize,
    taken: &BTreeSet<Vec<i64>>,
    rng: &mut StreamRng,
) -> Vec<Vec<i64>> {
    let lattice = &state.lattice;
    let spacing = lattice.spacing();
    let bound = (lattice.ball_radius() / spacing).floor() as i64;
    let low: Vec<i64> = centre
        .iter()
        .map(|c| (((c - radius) / spacing).ceil() as i64).max(-bound))
        .collect();
    let high: Vec<i64> = centre
        .iter()
        .map(|c| (((c + radius) / spacing).floor() as i64).min(bound))
        .collect();
    if low.iter().zip(&high).any(|(l, h)| l > h) {
        return Vec::new();
    }
    let box_size: f64 = low
        .iter()
        .zip(&high)
        .map(|(l, h)| (h - l + 1) as f64)
        .product();
    let mut position = vec![0.0; centre.len()];
    let mut eligible = |key: &[i64]| {
        if taken.contains(key) || !lattice.contains(key) {
            return false;
        }
        lattice.position(key, &mut position);
        squared_distance(&position, centre) <= radius * radius
    };
    if box_size <= ENUMERATION_LIMIT.max(4.0 * need as f64) {
        let mut all = Vec::new();
        let mut key = low.clone();
        'odometer: loop {
            if eligible(&key) {
                all.push(key.clone());
            }
            let mut axis = key.len();
            loop {
                if axis == 0 {
                    break 'odometer;
                }
                axis -= 1;
                if key[axis] < high[axis] {
                    key[axis] += 1;
                    break;
                }
                key[axis] = low[axis];
            }
        }
        // A partial Fisher–Yates shuffle: the first `need` are a uniform sample.
        let take = need.min(all.len());
        for i in 0..take {
            let j = i + rng.index_below(all.len() - i);
            all.swap(i, j);
        }
        all.truncate(take);
        all
    } else {
        let mut drawn: Vec<Vec<i64>> = Vec::with_capacity(need);
        let mut seen: HashSet<Vec<i64>> = HashSet::new();
        // Rejection from the box; the attempts are capped, so a ball holding few free
        // lattice points ends the search rather than the round.
        for _ in 0..64 * need {
            if drawn.len() == need {
                break;
            }
            let key: Vec<i64> = low
                .iter()
                .zip(&high)
                .map(|(l, h)| l + rng.index_below((h - l + 1) as usize) as i64)
                .collect();
            if !seen.contains(&key) && eligible(&key) {
                seen.insert(key.clone());
                drawn.push(key);
            }
        }
        drawn
    }
}

/// A candidate curve: the window it changes and the vertices it puts there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    /// Index of the window (in the round's list of windows).
    pub(crate) window: usize,
    /// The new vertices, as indices into the window's local vertex set, in curve order
    /// (the first `n_new` entries).
    order: [u32; 3],
    n_new: u8,
    pub(crate) n_segments: usize,
    /// The fingerprint of the whole candidate curve ([`fingerprint`]).
    pub(crate) fingerprint: u64,
}

impl Candidate {
    /// The new vertices, as indices into the window's local vertex set, in curve order.
    pub(crate) fn order(&self) -> impl Iterator<Item = usize> + '_ {
        self.order[..usize::from(self.n_new)]
            .iter()
            .map(|&q| q as usize)
    }

    /// The new vertices' keys, row-major, from the window's local vertex set.
    pub(crate) fn new_keys(&self, local: &[i64], dim: usize) -> Vec<i64> {
        self.order()
            .flat_map(|q| local[q * dim..(q + 1) * dim].iter().copied())
            .collect()
    }
}

/// A 64-bit fingerprint of a sequence of lattice keys (FxHash-style mixing, then a
/// SplitMix64 finaliser): candidate curves are told apart, and the `paper` estimator's
/// corrections found, by fingerprint. Two different curves share one with probability about
/// 2⁻⁶⁴ per pair; the only consequence would be one candidate left out of a round.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fingerprint(u64);

impl Fingerprint {
    pub(crate) fn new() -> Self {
        Self(0x243f_6a88_85a3_08d3)
    }

    #[inline]
    pub(crate) fn add(&mut self, keys: &[i64]) {
        for &k in keys {
            self.0 = (self.0.rotate_left(5) ^ k as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    pub(crate) fn finish(self) -> u64 {
        let mut z = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The fingerprint of a curve given by its keys.
pub(crate) fn fingerprint(keys: &[i64]) -> u64 {
    let mut hash = Fingerprint::new();
    hash.add(keys);
    hash.finish()
}

/// The constraints on candidates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_segments: usize,
    pub(crate) max_length: f64,
}

/// Appends to `out` at most `budget` new candidates of `window` built from `local` (the
/// window's Q, sorted keys); `seen` holds the fingerprints of the curves already offered
/// this round.
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one candidate search"
)]
pub(crate) fn window_candidates(
    state: &CurveState,
    window_index: usize,
    window: Window,
    hood: &Neighbourhood,
    local: &[i64],
    budget: usize,
    limits: Limits,
    rng: &mut StreamRng,
    seen: &mut HashSet<u64>,
    out: &mut Vec<Candidate>,
) {
    let dim = state.dim;
    let n = local.len() / dim;
    if n == 0 || budget == 0 {
        return;
    }
    let direction = ordering_direction(state, window, hood);
    let projection: Vec<f64> = local
        .chunks_exact(dim)
        .map(|key| key.iter().zip(&direction).map(|(k, g)| *k as f64 * g).sum())
        .collect();
    let k = state.n_segments();
    let kept_vertices = (k + 1) - (window.last - window.first + 1);
    // The segments that touch the window: S_{first−1} (if any) to S_last (if any).
    let removed_segments = window.first.saturating_sub(1)..window.last.min(k - 1) + 1;
    let removed_length: f64 = removed_segments
        .map(|i| squared_distance(state.vertex(i), state.vertex(i + 1)).sqrt())
        .sum();
    let current_length = state.length();
    let left = (window.first > 0).then(|| state.key(window.first - 1));
    let right = (window.last < k).then(|| state.key(window.last + 1));
    let spacing = state.lattice.spacing();
    let span = |a: &[i64], b: &[i64]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                let d = (x - y) as f64 * spacing;
                d * d
            })
            .sum::<f64>()
            .sqrt()
    };
    let mut emit = |subset: &[usize]| {
        let m = subset.len();
        if kept_vertices + m < 2 || kept_vertices + m - 1 > limits.max_segments {
            return;
        }
        let mut order = [0u32; 3];
        for (slot, &q) in order.iter_mut().zip(subset) {
            *slot = q as u32;
        }
        // Stable: equal projections keep Q's lexicographic order.
        order[..m].sort_by(|&a, &b| projection[a as usize].total_cmp(&projection[b as usize]));
        let key = |slot: usize| {
            let q = order[slot] as usize;
            &local[q * dim..(q + 1) * dim]
        };
        // The new stretch with its kept neighbours: no two consecutive vertices equal.
        let mut stretch: [&[i64]; 5] = [&[]; 5];
        let mut len = 0;
        for row in left.into_iter().chain((0..m).map(key)).chain(right) {
            stretch[len] = row;
            len += 1;
        }
        let stretch = &stretch[..len];
        if stretch.windows(2).any(|pair| pair[0] == pair[1]) {
            return;
        }
        if limits.max_length.is_finite() {
            let added: f64 = stretch.windows(2).map(|pair| span(pair[0], pair[1])).sum();
            if current_length - removed_length + added > limits.max_length {
                return;
            }
        }
        let mut hash = Fingerprint::new();
        hash.add(&state.keys[..window.first * dim]);
        for slot in 0..m {
            hash.add(key(slot));
        }
        hash.add(&state.keys[(window.last + 1) * dim..]);
        let fingerprint = hash.finish();
        if !seen.insert(fingerprint) {
            return;
        }
        out.push(Candidate {
            window: window_index,
            order,
            n_new: m as u8,
            n_segments: kept_vertices + m - 1,
            fingerprint,
        });
    };
    let singles = n;
    let pairs = n * (n - 1) / 2;
    if budget >= singles + pairs {
        for a in 0..n {
            emit(&[a]);
        }
        for a in 0..n {
            for b in a + 1..n {
                emit(&[a, b]);
            }
        }
        let triples = n * (n - 1) * n.saturating_sub(2) / 6;
        let take = (budget - singles - pairs).min(triples);
        if take == triples {
            for a in 0..n {
                for b in a + 1..n {
                    for c in b + 1..n {
                        emit(&[a, b, c]);
                    }
                }
            }
        } else {
            let mut drawn: HashSet<[usize; 3]> = HashSet::new();
            for _ in 0..16 * take {
                if drawn.len() == take {
                    break;
                }
                let mut triple = [rng.index_below(n), rng.index_below(n), rng.index_below(n)];
                triple.sort_unstable();
                if triple[0] == triple[1] || triple[1] == triple[2] {
                    continue;
                }
                if drawn.insert(triple) {
                    emit(&triple);
                }
            }
        }
    } else {
        // Too small a budget for every m ≤ 2 choice: a uniform sample of them, in order.
        let mut indices: Vec<usize> = (0..singles + pairs).collect();
        for i in 0..budget {
            let j = i + rng.index_below(indices.len() - i);
            indices.swap(i, j);
        }
        indices.truncate(budget);
        indices.sort_unstable();
        for index in indices {
            if index < singles {
                emit(&[index]);
            } else {
                let (a, b) = pair_of(index - singles, n);
                emit(&[a, b]);
            }
        }
    }
}

/// The pair (a, b), a < b, of rank `rank` in lexicographic order over 0..n.
fn pair_of(mut rank: usize, n: usize) -> (usize, usize) {
    for a in 0..n {
        let row = n - 1 - a;
        if rank < row {
            return (a, a + 1 + rank);
        }
        rank -= row;
    }
    unreachable!("pair rank out of range")
}

/// The direction along which new vertices are ordered (see the module documentation).
fn ordering_direction(state: &CurveState, window: Window, hood: &Neighbourhood) -> Vec<f64> {
    let dim = state.dim;
    let k = state.n_segments();
    let left = (window.first > 0).then(|| state.vertex(window.first - 1));
    let right = (window.last < k).then(|| state.vertex(window.last + 1));
    let difference =
        |a: &[f64], b: &[f64]| -> Vec<f64> { b.iter().zip(a).map(|(b, a)| b - a).collect() };
    let oriented = |toward: Vec<f64>| -> Option<Vec<f64>> {
        let u = hood.direction.as_ref()?;
        let dot: f64 = u.iter().zip(&toward).map(|(u, t)| u * t).sum();
        Some(if dot < 0.0 {
            u.iter().map(|v| -v).collect()
        } else {
            u.clone()
        })
    };
    let along_window = difference(state.vertex(window.first), state.vertex(window.last));
    let chosen = match (left, right) {
        (Some(l), Some(r)) => Some(difference(l, r)),
        (None, Some(r)) => oriented(difference(&hood.mean, r)),
        (Some(l), None) => oriented(difference(l, &hood.mean)),
        (None, None) => oriented(along_window.clone()),
    };
    let nonzero = |v: &Vec<f64>| v.iter().any(|x| *x != 0.0);
    match chosen {
        Some(g) if nonzero(&g) => g,
        _ if nonzero(&along_window) => along_window,
        _ => {
            let mut axis = vec![0.0; dim];
            axis[0] = 1.0;
            axis
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_ranked_lexicographically() {
        let n = 5;
        let mut rank = 0;
        for a in 0..n {
            for b in a + 1..n {
                assert_eq!(pair_of(rank, n), (a, b));
                rank += 1;
            }
        }
    }
}
