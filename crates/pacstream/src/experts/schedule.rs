//! Learning-rate schedules: fixed, tuned for a known horizon, anytime, the doubling trick,
//! and AdaHedge.
//!
//! With losses in [0, B] and N experts, exponential weights with a fixed η have regret
//! ≤ ln N / η + η B² T / 8 against every expert; the schedules choose η without or with
//! knowledge of T:
//!
//! | schedule | η_t | regret bound, uniform prior ([`super::bounds`] has the prior forms) |
//! |---|---|---|
//! | `Fixed(η)` | η | ln N/η + η B² T/8 |
//! | `Horizon(T)` | √(8 ln N / T) / B | B √(T ln N / 2) at t = T |
//! | `Anytime` | √(8 ln N / t) / B | B √(ln N / 8) (3√T − 1) |
//! | `Doubling` | √(8 ln N / 2^m) / B in epoch m = rounds 2^m … 2^{m+1} − 1, weights restarted | B √(T ln N) / (√2 − 1) |
//! | `AdaHedge` | ln N / Δ_{t−1}, Δ the cumulative mixability gap | 2√(ln N · L*(BT − L*)/T) + B(16/3 ln N + 2), or B(1 + √(1 + T ln N)) |
//!
//! Weighted Majority and Randomized Weighted Majority are parametrised by β = e^{−η}: `Fixed`
//! holds η = ln(1/β) ([`LearningRate::beta`]); `Horizon(T)` is β = 1 − √(ln N / T) and
//! `Doubling` is β_m = 1 − √(ln N / 2^m), both floored at ½ (the analysis of the lecture notes
//! assumes β ≥ ½; an epoch where the floor binds is short enough that its regret, at most its
//! length, stays within the bound).

use serde::{Deserialize, Serialize};

use super::bounds::LossRanges;
use crate::error::{Error, Result};

/// How the learning rate η_t is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LearningRate {
    /// A fixed η > 0.
    Fixed(f64),
    /// Tuned for a known number of rounds T.
    Horizon(u64),
    /// η_t = √(8 ln N / t) / B: no horizon needed, no restart.
    Anytime,
    /// The doubling trick: restart at rounds 2^m with the rate tuned for 2^m rounds.
    Doubling,
    /// AdaHedge (de Rooij, van Erven, Grünwald, Koolen 2014): η_t = ln N / Δ_{t−1}; needs no
    /// horizon and no loss range.
    AdaHedge,
    /// One rate per expert, tuned on line by the rule itself (ML-Poly); the exponential
    /// weights rules refuse it.
    PerExpert,
    /// No learning rate: ridge regression's penalty λ takes its part; the exponential
    /// weights rules refuse it.
    Penalty,
}

impl LearningRate {
    /// The fixed rate of Weighted Majority's β ∈ (0, 1): η = ln(1/β).
    pub fn beta(beta: f64) -> Result<Self> {
        if !(beta > 0.0 && beta < 1.0) {
            return Err(Error::invalid_parameter(
                "beta",
                format!("must be in (0, 1), got {beta}"),
            ));
        }
        Ok(LearningRate::Fixed(-beta.ln()))
    }

    /// The command-line name of the schedule.
    pub fn name(&self) -> &'static str {
        match self {
            LearningRate::Fixed(_) => "fixed",
            LearningRate::Horizon(_) => "horizon",
            LearningRate::Anytime => "anytime",
            LearningRate::Doubling => "doubling",
            LearningRate::AdaHedge => "adahedge",
            LearningRate::PerExpert => "per-expert",
            LearningRate::Penalty => "penalty λ",
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        match *self {
            LearningRate::Fixed(eta) if !(eta.is_finite() && eta > 0.0) => Err(
                Error::invalid_parameter("eta", format!("must be finite and > 0, got {eta}")),
            ),
            LearningRate::Horizon(0) => {
                Err(Error::invalid_parameter("horizon", "must be >= 1, got 0"))
            }
            LearningRate::PerExpert => Err(Error::invalid_parameter(
                "eta",
                "one rate per expert is ML-Poly's own tuning, not a schedule of this rule",
            )),
            LearningRate::Penalty => Err(Error::invalid_parameter(
                "eta",
                "ridge regression's penalty is not a schedule of this rule",
            )),
            _ => Ok(()),
        }
    }
}

/// Which family of formulas turns a schedule into a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Tuning {
    /// Exponential weights on losses in [0, B]: η = √(8 ln N / T) / B.
    Hedge,
    /// Weighted majority's β = max(½, 1 − √(ln N / T)), η = ln(1/β).
    Beta,
    /// Follow the perturbed leader on losses in [0, B]: η = √(ln N / T) / B, capped at 1/B
    /// (the range where E L_T ≤ (1 + η) L* + (1 + 1/η) ln N).
    Perturbed,
}

/// The running state of a schedule: the current epoch and AdaHedge's cumulative gap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Schedule {
    pub(crate) rate: LearningRate,
    pub(crate) tuning: Tuning,
    /// The loss range B (1 when the losses are zero-one).
    pub(crate) loss_range: f64,
    pub(crate) log_n: f64,
    /// AdaHedge's cumulative mixability gap Δ.
    pub(crate) gap: f64,
    /// The ranges of the losses AdaHedge was given (its bound needs no loss range).
    #[serde(default)]
    pub(crate) ranges: LossRanges,
}

impl Schedule {
    pub(crate) fn new(
        rate: LearningRate,
        tuning: Tuning,
        loss_range: f64,
        n_experts: usize,
    ) -> Self {
        Self {
            rate,
            tuning,
            loss_range,
            log_n: (n_experts as f64).ln(),
            gap: 0.0,
            ranges: LossRanges::default(),
        }
    }

    /// The rate tuned for `horizon` rounds.
    fn tuned(&self, horizon: f64) -> f64 {
        match self.tuning {
            Tuning::Hedge => (8.0 * self.log_n / horizon).sqrt() / self.loss_range,
            Tuning::Beta => {
                let beta = (1.0 - (self.log_n / horizon).sqrt()).max(0.5);
                -beta.ln()
            }
            Tuning::Perturbed => (self.log_n / horizon).sqrt().min(1.0) / self.loss_range,
        }
    }

    /// η for round `round` (1-based). +∞ means follow the leader; 0 (one expert) means the
    /// uniform mixture, which is the one expert.
    pub(crate) fn eta(&self, round: u64) -> f64 {
        match self.rate {
            LearningRate::Fixed(eta) => eta,
            LearningRate::Horizon(horizon) => self.tuned(horizon as f64),
            LearningRate::Anytime => self.tuned(round as f64),
            LearningRate::Doubling => self.tuned(epoch_length(round) as f64),
            LearningRate::AdaHedge => {
                if self.gap > 0.0 && self.log_n > 0.0 {
                    self.log_n / self.gap
                } else {
                    f64::INFINITY
                }
            }
            LearningRate::PerExpert | LearningRate::Penalty => {
                unreachable!("invariant: checked schedules are never per-expert or a penalty")
            }
        }
    }

    /// Whether the weights restart before round `round` (the doubling trick's epochs begin at
    /// rounds 2, 4, 8, ...; round 1 starts fresh anyway).
    pub(crate) fn restarts_at(&self, round: u64) -> bool {
        matches!(self.rate, LearningRate::Doubling) && round > 1 && round.is_power_of_two()
    }

    /// Adds a round's mixability gap and the range of its losses (AdaHedge).
    pub(crate) fn add_round(&mut self, gap: f64, range: f64) {
        // The gap is ≥ 0 in exact arithmetic; rounding must not make Δ decrease.
        self.gap += gap.max(0.0);
        self.ranges.add(range);
    }
}

/// The length 2^m of the doubling epoch that contains `round`.
pub(crate) fn epoch_length(round: u64) -> u64 {
    1u64 << (63 - round.max(1).leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_powers_of_two() {
        assert_eq!(
            (1..=9).map(epoch_length).collect::<Vec<_>>(),
            [1, 2, 2, 4, 4, 4, 4, 8, 8]
        );
        let schedule = Schedule::new(LearningRate::Doubling, Tuning::Hedge, 1.0, 4);
        let restarts: Vec<u64> = (1..=20).filter(|&t| schedule.restarts_at(t)).collect();
        assert_eq!(restarts, [2, 4, 8, 16]);
    }

    #[test]
    fn tuned_rates() {
        let n = 10usize;
        let hedge = Schedule::new(LearningRate::Horizon(100), Tuning::Hedge, 2.0, n);
        assert!((hedge.eta(5) - (8.0 * 10f64.ln() / 100.0).sqrt() / 2.0).abs() < 1e-15);
        let beta = Schedule::new(LearningRate::Horizon(100), Tuning::Beta, 1.0, n);
        assert!((beta.eta(1) + (1.0 - (10f64.ln() / 100.0).sqrt()).ln()).abs() < 1e-15);
        // The floor at ½ for short epochs.
        let doubling = Schedule::new(LearningRate::Doubling, Tuning::Beta, 1.0, n);
        assert_eq!(doubling.eta(1), 2f64.ln());
        let ada = Schedule::new(LearningRate::AdaHedge, Tuning::Hedge, 1.0, n);
        assert!(ada.eta(1).is_infinite());
        assert!(LearningRate::beta(1.0).is_err());
        assert!(LearningRate::Fixed(-1.0).check().is_err());
    }
}
