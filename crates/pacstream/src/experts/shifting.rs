//! The best sequence of experts with at most m switches in hindsight (the comparator of
//! fixed share), by dynamic programming over the rounds as they come.
//!
//! D_t[j][i] is the least cumulative loss over the sequences of experts that end at expert i
//! after at most j switches:
//!
//! D_t[0][i] = D_{t−1}[0][i] + ℓ_{t,i},
//! D_t[j][i] = ℓ_{t,i} + min(D_{t−1}[j][i], min_k D_{t−1}[j−1][k])   (j ≥ 1),
//!
//! so the oracle needs (m + 1)·N numbers and O(m N) time per round, whatever T. The best
//! shifting expert's loss is min_i D_T[m][i]; with m = 0 it is the best expert's.
//!
//! ```
//! use pacstream::experts::ShiftingOracle;
//!
//! let mut oracle = ShiftingOracle::new(2, 1)?;
//! // Expert 0 is right for 10 rounds, then expert 1.
//! for t in 0..20 {
//!     let losses = if t < 10 { [0.0, 1.0] } else { [1.0, 0.0] };
//!     oracle.observe(&losses)?;
//! }
//! assert_eq!(oracle.best_loss(0), 10.0);
//! assert_eq!(oracle.best_loss(1), 0.0);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The largest (m + 1)·N the oracle allocates.
pub const MAX_SHIFTING_CELLS: usize = 50_000_000;

/// The best shifting expert; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShiftingOracle {
    n_experts: usize,
    max_shifts: usize,
    /// D[j][i], row-major (m + 1) × N.
    table: Vec<f64>,
    rounds: u64,
}

impl ShiftingOracle {
    /// An oracle for N experts and up to `max_shifts` switches; (m + 1)·N is checked against
    /// [`MAX_SHIFTING_CELLS`] before anything is allocated.
    pub fn new(n_experts: usize, max_shifts: usize) -> Result<Self> {
        let cells = max_shifts
            .checked_add(1)
            .and_then(|rows| rows.checked_mul(n_experts));
        match cells {
            Some(cells) if n_experts > 0 && cells <= MAX_SHIFTING_CELLS => Ok(Self {
                n_experts,
                max_shifts,
                table: vec![0.0; cells],
                rounds: 0,
            }),
            _ => Err(Error::invalid_parameter(
                "shifts",
                format!(
                    "(shifts + 1) × experts must be in [1, {MAX_SHIFTING_CELLS}], got \
                     ({max_shifts} + 1) × {n_experts}"
                ),
            )),
        }
    }

    /// Adds a round of the experts' losses (finite; N of them). On error nothing changes.
    pub fn observe(&mut self, losses: &[f64]) -> Result<()> {
        if losses.len() != self.n_experts {
            return Err(Error::DimensionMismatch {
                row: None,
                expected: self.n_experts,
                found: losses.len(),
            });
        }
        crate::data::check_finite(losses)?;
        let n = self.n_experts;
        // From the last row down, so that row j − 1 is still the previous round's.
        for j in (1..=self.max_shifts).rev() {
            let (before, row) = self.table.split_at_mut(j * n);
            let previous = &before[(j - 1) * n..];
            let switch_in = previous.iter().copied().fold(f64::INFINITY, f64::min);
            for (d, &loss) in row[..n].iter_mut().zip(losses) {
                *d = loss + d.min(switch_in);
            }
        }
        for (d, &loss) in self.table[..n].iter_mut().zip(losses) {
            *d += loss;
        }
        self.rounds += 1;
        Ok(())
    }

    /// The least cumulative loss of a sequence of experts with at most `shifts` switches
    /// (capped at the oracle's m).
    pub fn best_loss(&self, shifts: usize) -> f64 {
        let j = shifts.min(self.max_shifts);
        let n = self.n_experts;
        self.table[j * n..(j + 1) * n]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }

    /// The largest number of switches tracked.
    pub fn max_shifts(&self) -> usize {
        self.max_shifts
    }

    /// The rounds observed.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dynamic programme against every sequence of experts, enumerated.
    #[test]
    fn matches_brute_force() {
        let (n, t) = (3usize, 6usize);
        let losses: Vec<Vec<f64>> = (0..t)
            .map(|s| (0..n).map(|i| ((s * 7 + i * 3) % 5) as f64).collect())
            .collect();
        let mut oracle = ShiftingOracle::new(n, 3).unwrap();
        for round in &losses {
            oracle.observe(round).unwrap();
        }
        let mut best = [f64::INFINITY; 4];
        for code in 0..n.pow(t as u32) {
            let path: Vec<usize> = (0..t).map(|s| code / n.pow(s as u32) % n).collect();
            let switches = path.windows(2).filter(|w| w[0] != w[1]).count();
            let loss: f64 = path.iter().enumerate().map(|(s, &i)| losses[s][i]).sum();
            for (m, b) in best.iter_mut().enumerate() {
                if switches <= m {
                    *b = b.min(loss);
                }
            }
        }
        for (m, b) in best.iter().enumerate() {
            assert_eq!(oracle.best_loss(m), *b, "m = {m}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_hold() {
        assert!(ShiftingOracle::new(0, 1).is_err());
        assert!(ShiftingOracle::new(1_000_000, 100).is_err());
        assert!(ShiftingOracle::new(2, usize::MAX).is_err());
        let mut oracle = ShiftingOracle::new(2, 1).unwrap();
        assert!(oracle.observe(&[1.0, f64::NAN]).is_err());
        assert_eq!(oracle.rounds(), 0);
    }
}
