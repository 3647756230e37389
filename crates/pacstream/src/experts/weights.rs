//! The exponential-weights engine shared by every rule of the family.
//!
//! Expert i carries a prior π_i and a *charged* cumulative loss C_i (what the rule decided to
//! charge it: every loss for Hedge, only the rounds where Weighted Majority erred, the
//! learner's own loss when the expert sleeps...). Its weight is
//!
//! p_i ∝ π_i · exp(−η · C_i),
//!
//! computed in log space: a_i = ln π_i − η C_i, normalised by log-sum-exp (subtract the
//! largest a_i before exponentiating). Only C_i is stored, never a linear weight, so an expert
//! whose weight would underflow to 0 (C_i − C_min ≳ 745/η) still has its exact C_i and
//! recovers as soon as the others catch up: nothing is ever lost to underflow.
//!
//! η = +∞ is Follow-the-Leader: the weight is spread (by the prior) over the experts of
//! smallest C_i. AdaHedge starts there.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};

/// Priors and charged cumulative losses of N experts; see the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpWeights {
    /// ln π_i, normalised so that Σ π_i = 1; `None` for the uniform prior.
    log_prior: Option<Vec<f64>>,
    /// C_i, the loss charged to each expert since the last restart.
    charged: Vec<f64>,
    /// min_i C_i: with the uniform prior and every expert awake, the largest log-weight is
    /// −η·min C, so the weights need one pass instead of two.
    least: f64,
}

impl ExpWeights {
    /// N experts with the uniform prior, or with `prior` (positive and finite; normalised
    /// here).
    pub fn new(n_experts: usize, prior: Option<&[f64]>) -> Result<Self> {
        if n_experts == 0 {
            return Err(Error::invalid_parameter("n_experts", "must be >= 1, got 0"));
        }
        let log_prior = match prior {
            None => None,
            Some(prior) => {
                if prior.len() != n_experts {
                    return Err(Error::invalid_parameter(
                        "prior",
                        format!("{} prior weights for {n_experts} experts", prior.len()),
                    ));
                }
                if let Some(bad) = prior.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
                    return Err(Error::invalid_parameter(
                        "prior",
                        format!("prior weights must be finite and > 0, got {bad}"),
                    ));
                }
                let total: f64 = prior.iter().sum();
                if !total.is_finite() {
                    return Err(Error::invalid_parameter(
                        "prior",
                        "the prior weights' sum overflows: scale them down (only their ratios \
                         matter)",
                    ));
                }
                Some(prior.iter().map(|p| (p / total).ln()).collect())
            }
        };
        Ok(Self {
            log_prior,
            charged: vec![0.0; n_experts],
            least: 0.0,
        })
    }

    /// The number of experts.
    #[inline]
    pub fn n_experts(&self) -> usize {
        self.charged.len()
    }

    /// ln π_i.
    #[inline]
    pub fn log_prior(&self, expert: usize) -> f64 {
        match &self.log_prior {
            Some(log_prior) => log_prior[expert],
            None => -(self.charged.len() as f64).ln(),
        }
    }

    /// The charged cumulative losses C_i.
    #[inline]
    pub fn charged(&self) -> &[f64] {
        &self.charged
    }

    /// Adds `losses[i]` to C_i for every expert.
    pub fn charge(&mut self, losses: &[f64]) {
        debug_assert_eq!(losses.len(), self.charged.len());
        self.least = kernels::dispatch(Charge {
            charged: &mut self.charged,
            losses,
        });
    }

    /// Adds `losses[i]` to C_i for every expert and tells whether some loss lies outside
    /// [lower, upper] (one pass).
    pub(crate) fn charge_checked(&mut self, losses: &[f64], lower: f64, upper: f64) -> bool {
        let outside = kernels::dispatch(OutsideRange {
            values: losses,
            lower,
            upper,
        });
        self.charge(losses);
        outside
    }

    /// The smallest charged loss min_i C_i.
    #[inline]
    pub(crate) fn least(&self) -> f64 {
        self.least
    }

    /// The canonical weights of a round where every expert is awake and η is finite:
    /// w_i = π_i · exp(−η (C_i − shift)) (π_i dropped for the uniform prior, where it cancels),
    /// unnormalised, into `weights`; returns Σ_i w_i. `shift` ≤ min C keeps every exponent
    /// ≤ 0. The same kernel writes them in [`ExpWeights::charge_and_weigh`], so weights cached
    /// at the end of a round and weights recomputed after a snapshot are the same bits.
    pub(crate) fn canonical_weights(&self, eta: f64, shift: f64, weights: &mut [f64]) -> f64 {
        kernels::dispatch(Weigh {
            charged: &self.charged,
            log_prior: self.log_prior.as_deref(),
            eta,
            shift,
            weights,
        })
    }

    /// In one pass: C_i += `losses[i]`, counts the losses outside [lower, upper] (if given),
    /// and writes the canonical weights of the next round for `next_eta` and `shift` into
    /// `weights`. Returns (whether a loss was out of range, Σ_i w_i).
    pub(crate) fn charge_and_weigh(
        &mut self,
        losses: &[f64],
        range: Option<(f64, f64)>,
        next_eta: f64,
        shift: f64,
        weights: &mut [f64],
    ) -> (bool, f64) {
        let (least, outside, total) = kernels::dispatch(ChargeAndWeigh {
            charged: &mut self.charged,
            losses,
            log_prior: self.log_prior.as_deref(),
            range: range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY)),
            eta: next_eta,
            shift,
            weights,
        });
        self.least = least;
        (outside, total)
    }

    /// Forgets the charged losses (a new epoch of the doubling trick).
    pub fn restart(&mut self) {
        self.charged.iter_mut().for_each(|c| *c = 0.0);
        self.least = 0.0;
    }

    /// Writes p_i ∝ π_i exp(−η C_i) over the awake experts (all if `awake` is `None`) into
    /// `probabilities`, which sum to 1; asleep experts get 0. At least one expert must be awake
    /// (callers check). `eta` is ≥ 0 or +∞.
    pub fn probabilities(&self, eta: f64, awake: Option<&[bool]>, probabilities: &mut [f64]) {
        debug_assert_eq!(probabilities.len(), self.charged.len());
        let is_awake = |i: usize| awake.is_none_or(|a| a[i]);
        if eta.is_infinite() {
            // Follow the leader: the prior restricted to the awake experts of least C_i.
            let least = (0..self.charged.len())
                .filter(|&i| is_awake(i))
                .map(|i| self.charged[i])
                .fold(f64::INFINITY, f64::min);
            for (i, p) in probabilities.iter_mut().enumerate() {
                *p = if is_awake(i) && self.charged[i] == least {
                    self.log_prior(i).exp()
                } else {
                    0.0
                };
            }
        } else if awake.is_none() && self.log_prior.is_none() {
            // The common case: one pass of exponentials, one of scaling.
            kernels::dispatch(UniformWeights {
                charged: &self.charged,
                eta,
                least: self.least,
                probabilities,
            });
            return;
        } else {
            let largest = (0..self.charged.len())
                .filter(|&i| is_awake(i))
                .map(|i| self.log_prior(i) - eta * self.charged[i])
                .fold(f64::NEG_INFINITY, f64::max);
            for (i, p) in probabilities.iter_mut().enumerate() {
                *p = if is_awake(i) {
                    kernels::exp(self.log_prior(i) - eta * self.charged[i] - largest)
                } else {
                    0.0
                };
            }
        }
        let scale = 1.0 / kernels::sum(probabilities);
        probabilities.iter_mut().for_each(|p| *p *= scale);
    }

    /// The mix loss of a round, −(1/η) ln Σ_i p_i exp(−η ℓ_i), for the weights
    /// p = `probabilities` × `scale` (computed with the same η) and the losses of the round; at η = +∞, min over the experts
    /// with positive weight of ℓ_i. Used by AdaHedge: the mixture loss Σ p_i ℓ_i minus the mix
    /// loss is the round's mixability gap, ≥ 0.
    pub fn mix_loss(eta: f64, probabilities: &[f64], scale: f64, losses: &[f64]) -> f64 {
        let supported = || {
            probabilities
                .iter()
                .zip(losses)
                .filter(|(p, _)| **p > 0.0)
                .map(|(_, l)| *l)
        };
        let least = supported().fold(f64::INFINITY, f64::min);
        if eta.is_infinite() {
            return least;
        }
        // Σ p_i e^{−η ℓ_i} = e^{−η ℓ_min} Σ p_i e^{−η (ℓ_i − ℓ_min)}: no overflow, and the
        // sum is ≥ the weight of the minimiser, so its logarithm is finite.
        let sum = kernels::dispatch(MixSum {
            probabilities,
            losses,
            eta,
            least,
        });
        least - (sum * scale).ln() / eta
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        let n = self.charged.len();
        if n == 0 || self.log_prior.as_ref().is_some_and(|p| p.len() != n) {
            return Err(Error::InvalidSnapshot(
                "exponential weights: prior and losses disagree".into(),
            ));
        }
        if self
            .charged
            .iter()
            .chain(self.log_prior.iter().flatten())
            .any(|v| !v.is_finite())
        {
            return Err(Error::InvalidSnapshot(
                "exponential weights: values must be finite".into(),
            ));
        }
        let least = self.charged.iter().copied().fold(f64::INFINITY, f64::min);
        if least != self.least {
            return Err(Error::InvalidSnapshot(
                "exponential weights: the cached least loss is wrong".into(),
            ));
        }
        Ok(())
    }
}

/// C_i += ℓ_i; returns min C.
struct Charge<'a> {
    charged: &'a mut [f64],
    losses: &'a [f64],
}

impl Kernel for Charge<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        kernels::add_and_min(self.charged, self.losses)
    }
}

/// Whether some value lies outside [lower, upper].
struct OutsideRange<'a> {
    values: &'a [f64],
    lower: f64,
    upper: f64,
}

impl Kernel for OutsideRange<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        // A count rather than `any`, whose early exit would keep the loop scalar.
        let outside: usize = self
            .values
            .iter()
            .map(|&v| usize::from(v < self.lower || v > self.upper))
            .sum();
        outside > 0
    }
}

/// w_i = π_i e^{−η(C_i − shift)}; returns Σ w_i.
struct Weigh<'a> {
    charged: &'a [f64],
    log_prior: Option<&'a [f64]>,
    eta: f64,
    shift: f64,
    weights: &'a mut [f64],
}

impl Kernel for Weigh<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        let minus_eta = -self.eta;
        match self.log_prior {
            None => {
                for (w, c) in self.weights.iter_mut().zip(self.charged) {
                    *w = kernels::exp(minus_eta * (c - self.shift));
                }
            }
            Some(log_prior) => {
                for ((w, c), lp) in self.weights.iter_mut().zip(self.charged).zip(log_prior) {
                    *w = kernels::exp(minus_eta.mul_add(c - self.shift, *lp));
                }
            }
        }
        kernels::sum(self.weights)
    }
}

/// C_i += ℓ_i, the range check, and the next round's weights; returns
/// (min C, any loss out of range, Σ w).
struct ChargeAndWeigh<'a> {
    charged: &'a mut [f64],
    losses: &'a [f64],
    log_prior: Option<&'a [f64]>,
    range: (f64, f64),
    eta: f64,
    shift: f64,
    weights: &'a mut [f64],
}

impl Kernel for ChargeAndWeigh<'_> {
    type Output = (f64, bool, f64);

    #[inline(always)]
    fn run(self) -> (f64, bool, f64) {
        let (lower, upper) = self.range;
        // A count rather than `any`, whose early exit would keep the loop scalar.
        let outside: usize = self
            .losses
            .iter()
            .map(|&l| usize::from(l < lower || l > upper))
            .sum();
        let least = kernels::add_and_min(self.charged, self.losses);
        let total = Weigh {
            charged: self.charged,
            log_prior: self.log_prior,
            eta: self.eta,
            shift: self.shift,
            weights: self.weights,
        }
        .run();
        (least, outside > 0, total)
    }
}

/// p_i = e^{−η(C_i − min C)} / Σ_j e^{−η(C_j − min C)}.
struct UniformWeights<'a> {
    charged: &'a [f64],
    eta: f64,
    least: f64,
    probabilities: &'a mut [f64],
}

impl Kernel for UniformWeights<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let minus_eta = -self.eta;
        for (p, c) in self.probabilities.iter_mut().zip(self.charged) {
            *p = kernels::exp(minus_eta * (c - self.least));
        }
        let scale = 1.0 / kernels::sum(self.probabilities);
        for p in self.probabilities.iter_mut() {
            *p *= scale;
        }
    }
}

/// Σ_i p_i e^{−η(ℓ_i − ℓ_min)}.
struct MixSum<'a> {
    probabilities: &'a [f64],
    losses: &'a [f64],
    eta: f64,
    least: f64,
}

impl Kernel for MixSum<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        let mut total = 0.0;
        for (p, l) in self.probabilities.iter().zip(self.losses) {
            // Experts without weight contribute nothing (their loss may be anything).
            if *p > 0.0 {
                total += p * kernels::exp(-self.eta * (l - self.least));
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Losses that drive linear weights to exactly 0 do not lose the expert: once the others
    /// catch up, its weight comes back.
    #[test]
    fn weights_recover_from_what_would_underflow() {
        let mut weights = ExpWeights::new(2, None).unwrap();
        let mut p = [0.0; 2];
        weights.charge(&[0.0, 2000.0]);
        weights.probabilities(1.0, None, &mut p);
        assert_eq!(p, [1.0, 0.0]); // e^{-2000} underflows in linear space
        assert!((-2000.0f64).exp() == 0.0);
        weights.charge(&[2001.0, 0.0]); // now expert 1 leads by 1
        weights.probabilities(1.0, None, &mut p);
        let expected = 1.0 / (1.0 + (-1.0f64).exp());
        assert!((p[1] - expected).abs() < 1e-15, "{p:?}");
    }

    #[test]
    fn prior_and_awake_mask() {
        let weights = ExpWeights::new(3, Some(&[1.0, 2.0, 1.0])).unwrap();
        let mut p = [0.0; 3];
        weights.probabilities(0.5, None, &mut p);
        assert!((p[1] - 0.5).abs() < 1e-15);
        weights.probabilities(0.5, Some(&[true, false, true]), &mut p);
        assert_eq!(p, [0.5, 0.0, 0.5]);
        assert!(ExpWeights::new(2, Some(&[1.0, 0.0])).is_err());
    }

    #[test]
    fn infinite_rate_follows_the_leader() {
        let mut weights = ExpWeights::new(3, None).unwrap();
        weights.charge(&[1.0, 0.5, 0.5]);
        let mut p = [0.0; 3];
        weights.probabilities(f64::INFINITY, None, &mut p);
        assert_eq!(p, [0.0, 0.5, 0.5]);
    }

    #[test]
    fn mix_loss_is_between_min_and_mixture() {
        let p = [0.2, 0.5, 0.3];
        let losses = [1.0, 0.0, 3.0];
        let mixture: f64 = p.iter().zip(&losses).map(|(p, l)| p * l).sum();
        for eta in [1e-6, 0.1, 1.0, 10.0, 1e6] {
            let mix = ExpWeights::mix_loss(eta, &p, 1.0, &losses);
            assert!(mix >= 0.0 - 1e-12 && mix <= mixture + 1e-12, "{eta}: {mix}");
        }
        // η → 0: the mix loss tends to the mixture loss; η → ∞: to the least loss.
        assert!((ExpWeights::mix_loss(1e-9, &p, 1.0, &losses) - mixture).abs() < 1e-6);
        assert_eq!(ExpWeights::mix_loss(f64::INFINITY, &p, 1.0, &losses), 0.0);
    }
}
