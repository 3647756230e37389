//! Relabelling: the permutation of the current centres that pairs each with its own
//! proposal mean.
//!
//! The proposal density of a state is a product over slots j of ρ(c_j; m_j, σ_j), so it
//! depends on which centre sits in which slot. At the start of a round the sampler permutes
//! the current centres to minimise Σ_j cost(c_j, slot j), with cost = ‖c_j − m_j‖² for a
//! slot with a mean and 0 for a surplus slot (one proposed from the prior, whose density does
//! not depend on where the centre is). The permutation only chooses where the round's chain
//! starts: every iteration after it is an exact Metropolis–Hastings step for the round's
//! target, which is symmetric in the labels. Without it the chain is still valid, but a state
//! whose centres are paired with the wrong means looks improbable under the reverse proposal
//! and the chain sticks.
//!
//! Up to [`HUNGARIAN_MAX_K`] centres the assignment is optimal (the Hungarian algorithm, in
//! its O(k³) shortest-augmenting-path form); beyond, the pairs are taken greedily in order of
//! increasing cost (O(k² log k)), which is optimal when the centres are near their means.
//! Ties go to the lowest indices either way, so the result is a fixed function of the input.

/// The largest k relabelled by the Hungarian algorithm.
pub(crate) const HUNGARIAN_MAX_K: usize = 24;

/// The slot of each of k centres among r ≤ k slots with a mean, minimising the total cost
/// (`cost` is k × r, row-major): `Some(j)` for the centre given slot j, `None` for the
/// k − r centres left to the surplus slots.
pub(crate) fn assignment(cost: &[f64], k: usize, r: usize) -> Vec<Option<usize>> {
    debug_assert_eq!(cost.len(), k * r);
    debug_assert!(r <= k);
    let mut slot_of = vec![None; k];
    if column_minima(cost, k, r, &mut slot_of) {
        return slot_of;
    }
    if k <= HUNGARIAN_MAX_K {
        // Square it with zero-cost columns for the surplus slots: the optimum's part on the
        // slots with a mean is unchanged.
        let slots = if r == k {
            hungarian(cost, k)
        } else {
            let mut square = vec![0.0; k * k];
            for i in 0..k {
                square[i * k..i * k + r].copy_from_slice(&cost[i * r..(i + 1) * r]);
            }
            hungarian(&square, k)
        };
        slots[..k].iter().map(|&j| (j < r).then_some(j)).collect()
    } else {
        greedy(cost, k, r)
    }
}

/// The assignment when every slot's strictly nearest centre is a different centre: each
/// slot takes it and the centres left over go to the surplus slots (written into
/// `slot_of`, and `true`); `false`, with `slot_of` unspecified, otherwise.
///
/// The total cost of any assignment is Σ_j cost(centre of slot j, j), a surplus slot costing
/// 0, and each term is at least the least cost of its column; when those least costs are
/// strict and fall on distinct centres, taking them is the one assignment that reaches the
/// bound, so it is the unique optimum that the Hungarian algorithm (and, by the same
/// argument pair by pair, the greedy pairing) finds. A jump to k + 1 matched to the k means
/// of k, or a state matched to the slots of k − 1, is settled by this O(k r) check in the
/// common case, without solving the assignment.
fn column_minima(cost: &[f64], k: usize, r: usize, slot_of: &mut [Option<usize>]) -> bool {
    slot_of.fill(None);
    for j in 0..r {
        let mut best = (0, f64::INFINITY);
        let mut strict = false;
        for i in 0..k {
            let value = cost[i * r + j];
            if value.is_nan() {
                return false;
            }
            if value < best.1 {
                best = (i, value);
                strict = true;
            } else if value == best.1 {
                strict = false;
            }
        }
        // A NaN cost compares with nothing: its column is left to the full algorithm.
        if !strict || slot_of[best.0].is_some() {
            return false;
        }
        slot_of[best.0] = Some(j);
    }
    true
}

/// Whether the identity is the assignment of [`assignment`]: centre j in slot j for j < r
/// (the k − r others are then in the surplus slots).
pub(crate) fn is_identity(cost: &[f64], k: usize, r: usize) -> bool {
    // When every centre is nearest its own mean, the identity is optimal: a check in
    // O(k r) that settles the common case without solving the assignment.
    if r == k {
        let row_minima = (0..k).all(|i| {
            let own = cost[i * r + i];
            (0..r).all(|j| own < cost[i * r + j] || j == i)
        });
        if row_minima {
            return true;
        }
    }
    assignment(cost, k, r).iter().enumerate().all(|(i, slot)| {
        if i < r {
            *slot == Some(i)
        } else {
            slot.is_none()
        }
    })
}

/// The Hungarian algorithm with potentials (Kuhn–Munkres, shortest augmenting paths).
fn hungarian(cost: &[f64], k: usize) -> [usize; HUNGARIAN_MAX_K] {
    debug_assert!(k <= HUNGARIAN_MAX_K);
    // 1-based arrays with a dummy column 0, as in the classic formulation (on the stack:
    // k is small, and this runs at most once per iteration of the chain).
    const SIZE: usize = HUNGARIAN_MAX_K + 1;
    let mut u = [0.0; SIZE];
    let mut v = [0.0; SIZE];
    let mut row_of_column = [0usize; SIZE];
    let mut way = [0usize; SIZE];
    let mut min_to = [f64::INFINITY; SIZE];
    let mut used = [false; SIZE];
    for row in 1..=k {
        row_of_column[0] = row;
        let mut column = 0usize;
        min_to[..=k].fill(f64::INFINITY);
        used[..=k].fill(false);
        loop {
            used[column] = true;
            let current_row = row_of_column[column];
            let mut delta = f64::INFINITY;
            let mut next = 0usize;
            for j in 1..=k {
                if !used[j] {
                    let reduced = cost[(current_row - 1) * k + (j - 1)] - u[current_row] - v[j];
                    if reduced < min_to[j] {
                        min_to[j] = reduced;
                        way[j] = column;
                    }
                    if min_to[j] < delta {
                        delta = min_to[j];
                        next = j;
                    }
                }
            }
            // Costs are finite, so an unused column always exists while the row is free.
            if next == 0 {
                break;
            }
            for j in 0..=k {
                if used[j] {
                    u[row_of_column[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_to[j] -= delta;
                }
            }
            column = next;
            if row_of_column[column] == 0 {
                break;
            }
        }
        // Augment along the path.
        loop {
            let previous = way[column];
            row_of_column[column] = row_of_column[previous];
            column = previous;
            if column == 0 {
                break;
            }
        }
    }
    let mut slot_of = [0usize; HUNGARIAN_MAX_K];
    for column in 1..=k {
        if row_of_column[column] > 0 {
            slot_of[row_of_column[column] - 1] = column - 1;
        }
    }
    slot_of
}

/// Pairs centres with the r slots in order of increasing cost (ties: lowest centre, then
/// lowest slot); the centres left over go to the surplus slots.
fn greedy(cost: &[f64], k: usize, r: usize) -> Vec<Option<usize>> {
    let mut pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (0..r).map(move |j| (i, j))).collect();
    pairs.sort_by(|a, b| {
        cost[a.0 * r + a.1]
            .total_cmp(&cost[b.0 * r + b.1])
            .then(a.cmp(b))
    });
    let mut slot_of = vec![None; k];
    let mut taken = vec![false; r];
    for (i, j) in pairs {
        if slot_of[i].is_none() && !taken[j] {
            slot_of[i] = Some(j);
            taken[j] = true;
        }
    }
    slot_of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(cost: &[f64], k: usize, slot_of: &[usize]) -> f64 {
        (0..k).map(|i| cost[i * k + slot_of[i]]).sum()
    }

    fn is_permutation(slot_of: &[usize]) -> bool {
        let mut seen = vec![false; slot_of.len()];
        slot_of
            .iter()
            .all(|&j| j < seen.len() && !std::mem::replace(&mut seen[j], true))
    }

    /// Against brute force over every permutation of up to 6 items.
    #[test]
    fn hungarian_is_optimal() {
        let mut rng = crate::rng::StreamRng::seed_from(3);
        for k in 1..=6 {
            for _ in 0..50 {
                let cost: Vec<f64> = (0..k * k)
                    .map(|_| (rng.next_f64() * 10.0).floor())
                    .collect();
                let found = hungarian(&cost, k)[..k].to_vec();
                assert!(is_permutation(&found));
                let mut best = f64::INFINITY;
                let mut permutation: Vec<usize> = (0..k).collect();
                permutations(&mut permutation, 0, &mut |p| {
                    best = best.min(total(&cost, k, p));
                });
                assert_eq!(total(&cost, k, &found), best, "k = {k}");
            }
        }
    }

    fn permutations(items: &mut Vec<usize>, start: usize, visit: &mut impl FnMut(&[usize])) {
        if start == items.len() {
            visit(items);
            return;
        }
        for i in start..items.len() {
            items.swap(start, i);
            permutations(items, start + 1, visit);
            items.swap(start, i);
        }
    }

    #[test]
    fn greedy_pairs_near_centres_with_their_means() {
        let k = 30;
        // Centre i sits next to mean (i * 7) % 30: the greedy pairing finds it.
        let cost: Vec<f64> = (0..k)
            .flat_map(|i| {
                (0..k).map(move |j| {
                    let target = (i * 7) % k;
                    if j == target {
                        0.01
                    } else {
                        100.0 + (i + j) as f64
                    }
                })
            })
            .collect();
        let found = assignment(&cost, k, k);
        for (i, &j) in found.iter().enumerate() {
            assert_eq!(j, Some((i * 7) % k));
        }
        // Surplus slots: with 20 slots, the 10 centres farthest from every mean are left.
        let r = 20;
        let rectangular: Vec<f64> = (0..k)
            .flat_map(|i| (0..r).map(move |j| if (i * 7) % k == j { 0.01 } else { 100.0 }))
            .collect();
        let found = assignment(&rectangular, k, r);
        for (i, slot) in found.iter().enumerate() {
            let target = (i * 7) % k;
            assert_eq!(*slot, (target < r).then_some(target));
        }
    }

    /// The full algorithm's slot of each centre, without the shortcut of the column minima.
    fn solved(cost: &[f64], k: usize, r: usize) -> Vec<Option<usize>> {
        let mut square = vec![0.0; k * k];
        for i in 0..k {
            square[i * k..i * k + r].copy_from_slice(&cost[i * r..(i + 1) * r]);
        }
        hungarian(&square, k)[..k]
            .iter()
            .map(|&j| (j < r).then_some(j))
            .collect()
    }

    /// The shortcut of the column minima gives the full algorithm's assignment, on costs
    /// where it applies (centres drawn near distinct slots, then shuffled) and where it does
    /// not (ties, two slots nearest the same centre), and it is taken in the first case.
    #[test]
    fn the_column_minima_give_the_optimal_assignment() {
        let mut rng = crate::rng::StreamRng::seed_from(21);
        let mut taken = 0;
        let mut trials = 0;
        for k in 1..=7 {
            for r in 1..=k {
                for trial in 0..40 {
                    // Slot j's mean at 10 j on a line; centre i near the mean of slot
                    // (i * 3 + trial) % k, or far (a surplus centre) when that is ≥ r.
                    let cost: Vec<f64> = (0..k)
                        .flat_map(|i| {
                            let near = (i * 3 + trial) % k;
                            let position = 10.0 * near as f64 + rng.next_f64() - 0.5;
                            let position = if trial % 4 == 3 {
                                // Coarse positions: ties and shared nearest centres.
                                (position / 10.0).round() * 10.0
                            } else {
                                position
                            };
                            (0..r)
                                .map(move |j| (position - 10.0 * j as f64).powi(2))
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    let mut slot_of = vec![None; k];
                    let shortcut = column_minima(&cost, k, r, &mut slot_of);
                    let expected = solved(&cost, k, r);
                    if shortcut {
                        taken += 1;
                        assert_eq!(slot_of, expected, "k = {k}, r = {r}, trial {trial}");
                    }
                    assert_eq!(assignment(&cost, k, r), expected);
                    trials += 1;
                }
            }
        }
        assert!(
            taken * 2 > trials,
            "the shortcut was taken {taken} times in {trials}"
        );
        // Two slots whose nearest centre is the same one: no shortcut.
        let shared = [1.0, 2.0, 5.0, 6.0];
        let mut slot_of = vec![None; 2];
        assert!(!column_minima(&shared, 2, 2, &mut slot_of));
        assert_eq!(assignment(&shared, 2, 2), solved(&shared, 2, 2));
    }

    #[test]
    fn identity_check_agrees_with_the_assignment() {
        let mut rng = crate::rng::StreamRng::seed_from(8);
        for k in 1..=6 {
            for r in 1..=k {
                for _ in 0..30 {
                    let cost: Vec<f64> = (0..k * r).map(|_| rng.next_f64()).collect();
                    let slots = assignment(&cost, k, r);
                    let identity = (0..k).all(|i| slots[i] == (i < r).then_some(i));
                    assert_eq!(is_identity(&cost, k, r), identity);
                }
            }
        }
    }
}
