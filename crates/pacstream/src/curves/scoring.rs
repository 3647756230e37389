//! Follow the perturbed leader over the available candidates (spec §4).
//!
//! At the end of round t every available candidate f gets the score
//!
//! J_t(f) = R̂_t(f) − h(f)/η_t + z_f/η_t,   z_f ~ Exp(1) afresh,
//!
//! and the next curve is the argmax (the first on a tie, the current curve coming first).
//! Multiplied by η_t, J_t(f) = a_f + z_f with a_f = η_t R̂_t(f) − h(f): the scores of
//! [`crate::experts::win_probabilities`], from which the `paper` estimator takes the
//! probability that the chosen curve won. Only differences matter, so R̂_t(f) is replaced by
//! its difference from the current curve's, which the incremental evaluation computes.
//!
//! Learning rate (after the paper's adaptive Algorithm 2; a tunable choice, not a theory
//! value): η_t = e_mult · min(√(c_1 p) / (c_0 √((e − 1) t)), 1/c_0). It uses c_1 without κ,
//! so κ = 0 (no penalty) is legal.
//!
//! The multiplier applies *after* the cap (the spec's sentence allows both readings): with
//! e_mult = 1, η_t ≤ 1/c_0 as FPL's analysis for rewards in [0, c_0] asks; e_mult > 1 moves
//! η past it. That matters for the local search: the perturbation of every candidate,
//! the current curve included, is redrawn each round with scale 1/η_t ≥ c_0, the worst-case
//! loss of *one* point, while candidates of one window differ by far less than c_0 until
//! thousands of points have been seen; below the cap the curve then takes a random walk
//! among its neighbours. `docs/slpc-calibration.md` measures it and sets the default.
//!
//! The multiplier moves the penalty too: the ranking depends on η_t R̂_t(f) − h(f) + z_f
//! only, so e_mult η_t^theory R̂_t(f) − κ c_1 K(f) + z_f ranks as η_t^theory R̂_t(f) −
//! (κ/e_mult) c_1 K(f) + z_f/e_mult. With the default e_mult = 1000, κ = 1 is the theory
//! rate's κ = 0.001, with perturbations 1000 times smaller.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

/// η_t for round t ≥ 1: e_mult · min(√(c_1 p) / (c_0 √((e − 1) t)), 1/c_0).
///
/// ```
/// # use pacstream::curves::learning_rate;
/// // Capped at 1/c_0 early on, then multiplied.
/// assert_eq!(learning_rate(1, 10.0, 2.0, 50, 1.0), 0.1);
/// assert_eq!(learning_rate(1, 10.0, 2.0, 50, 3.0), 0.30000000000000004);
/// let eta = learning_rate(10_000, 10.0, 2.0, 50, 1.0);
/// let expected = (2.0f64 * 50.0).sqrt() / (10.0 * ((std::f64::consts::E - 1.0) * 1e4).sqrt());
/// assert!((eta - expected).abs() < 1e-15);
/// ```
pub fn learning_rate(
    round: u64,
    loss_bound: f64,
    complexity: f64,
    max_segments: usize,
    eta_scale: f64,
) -> f64 {
    let t = round.max(1) as f64;
    let eta = (complexity * max_segments as f64).sqrt()
        / (loss_bound * ((std::f64::consts::E - 1.0) * t).sqrt());
    eta_scale * eta.min(1.0 / loss_bound)
}

/// The `paper` estimator's corrections: for each exploitation round s whose chosen curve
/// had P_s > β_s, the entry r(f̂_s, x_s)/P_s − α for that curve (by the fingerprint of its
/// integer keys, `super::candidates::fingerprint`). The
/// estimate R̂_t(f) adds the total of f's entries; the α of every exploitation round is
/// common to all curves and cancels. Entries leave with their round in window memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Corrections {
    /// (round, curve fingerprint, value).
    entries: VecDeque<(u64, u64, f64)>,
    /// Σ of each curve's entries, in round order (derived).
    totals: HashMap<u64, f64>,
}

impl Corrections {
    pub(crate) fn push(&mut self, round: u64, curve: u64, value: f64) {
        *self.totals.entry(curve).or_insert(0.0) += value;
        self.entries.push_back((round, curve, value));
    }

    /// The total correction of a curve.
    pub(crate) fn total(&self, curve: u64) -> f64 {
        self.totals.get(&curve).copied().unwrap_or(0.0)
    }

    /// Drops the entries of rounds before `round`.
    pub(crate) fn forget_before(&mut self, round: u64) {
        let mut changed: Vec<u64> = Vec::new();
        while self.entries.front().is_some_and(|e| e.0 < round) {
            if let Some((_, curve, _)) = self.entries.pop_front() {
                changed.push(curve);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        for curve in changed {
            // Re-summed in round order: the total a restored learner computes.
            let mut total = None;
            for (_, other, value) in &self.entries {
                if *other == curve {
                    *total.get_or_insert(0.0) += value;
                }
            }
            match total {
                Some(total) => {
                    self.totals.insert(curve, total);
                }
                None => {
                    self.totals.remove(&curve);
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn oldest_round(&self) -> Option<u64> {
        self.entries.front().map(|e| e.0)
    }

    pub(crate) fn values_are_finite(&self) -> bool {
        self.entries.iter().all(|e| e.2.is_finite())
    }
}

impl Serialize for Corrections {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.entries.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Corrections {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = VecDeque::<(u64, u64, f64)>::deserialize(deserializer)?;
        let mut corrections = Corrections::default();
        for (round, curve, value) in entries {
            corrections.push(round, curve, value);
        }
        Ok(corrections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_follow_the_entries() {
        let mut c = Corrections::default();
        c.push(3, 12, 0.5);
        c.push(5, 34, 1.0);
        c.push(7, 12, 0.25);
        assert_eq!(c.total(12), 0.75);
        c.forget_before(4);
        assert_eq!((c.total(12), c.total(34), c.len()), (0.25, 1.0, 2));
        c.forget_before(8);
        assert_eq!((c.total(12), c.len()), (0.0, 0));
        let text = serde_json::to_string(&c).unwrap();
        let back: Corrections = serde_json::from_str(&text).unwrap();
        assert_eq!(back, c);
    }
}
