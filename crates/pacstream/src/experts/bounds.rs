//! Every bound of the family, as a function: the largest cumulative loss the learner can
//! have, given the horizon T (or the rounds so far), the number of experts N, the rate, the
//! loss range B and the best expert's cumulative loss (m* mistakes or L*).
//!
//! Subtract the best expert's loss to get the regret bound. With N = 1 every rule copies the
//! one expert and every bound returns the best loss itself. Logs are natural.
//!
//! ```
//! use pacstream::experts::bounds;
//!
//! // WM with β = ½, 10 experts, best expert 5 mistakes: at most 21.4 mistakes.
//! let bound = bounds::weighted_majority(10, 0.5, 5.0);
//! assert!((bound - (2f64.ln() * 5.0 + 10f64.ln()) / (4.0f64 / 3.0).ln()).abs() < 1e-12);
//! assert_eq!(bounds::hedge_tuned(1000, 1, 1.0, 7.0), 7.0);
//! ```

use super::schedule::epoch_length;

fn ln_n(n_experts: usize) -> f64 {
    (n_experts as f64).ln()
}

/// Weighted Majority: L_T ≤ (ln(1/β)·m* + ln N) / ln(2/(1+β)).
pub fn weighted_majority(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    ((1.0 / beta).ln() * best_mistakes + ln_n(n_experts)) / (2.0 / (1.0 + beta)).ln()
}

/// Randomized Weighted Majority: E L_T ≤ (ln(1/β)·m* + ln N) / (1 − β).
pub fn randomized_weighted_majority(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    ((1.0 / beta).ln() * best_mistakes + ln_n(n_experts)) / (1.0 - beta)
}

/// The seed's simplified form for β ≥ ½: E L_T ≤ (2 − β)·m* + ln N / (1 − β)
/// (from −ln(1 − x) ≤ x + x² for x ≤ ½).
pub fn randomized_weighted_majority_simple(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    (2.0 - beta) * best_mistakes + ln_n(n_experts) / (1.0 - beta)
}

/// RWM with β = 1 − √(ln N / T) for a known horizon T ≥ 4 ln N:
/// E L_T ≤ m* + 2√(T ln N).
pub fn randomized_weighted_majority_tuned(
    horizon: u64,
    n_experts: usize,
    best_mistakes: f64,
) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    best_mistakes + 2.0 * (horizon as f64 * ln_n(n_experts)).sqrt()
}

/// RWM with the doubling trick (β_m = max(½, 1 − √(ln N / 2^m)) restarted at rounds 2^m),
/// for every T ≥ 1: E L_T ≤ m* + (2√2 / (√2 − 1))·√(T ln N).
pub fn randomized_weighted_majority_doubling(
    rounds: u64,
    n_experts: usize,
    best_mistakes: f64,
) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    let sqrt2 = std::f64::consts::SQRT_2;
    best_mistakes + 2.0 * sqrt2 / (sqrt2 - 1.0) * (rounds as f64 * ln_n(n_experts)).sqrt()
}

/// The sharper doubling-trick bound, epoch by epoch:
/// E L_T ≤ m* + Σ_m min(ℓ_m, (c_m − 1)·ℓ_m + ln N / (1 − β_m)), c_m = ln(1/β_m) / (1 − β_m),
/// ℓ_m the number of rounds of epoch m that are ≤ T. (Within an epoch, RWM's bound gives
/// E L ≤ c_m m*_m + ln N/(1 − β_m) with m*_m ≤ ℓ_m; and the per-epoch best losses sum to at
/// most the overall best.)
pub fn randomized_weighted_majority_doubling_sum(
    rounds: u64,
    n_experts: usize,
    best_mistakes: f64,
) -> f64 {
    if n_experts <= 1 {
        return best_mistakes;
    }
    let log_n = ln_n(n_experts);
    let mut total = 0.0;
    let mut start = 1u64;
    while start <= rounds {
        let length = epoch_length(start);
        let rounds_in_epoch = (rounds - start + 1).min(length) as f64;
        let beta = (1.0 - (log_n / length as f64).sqrt()).max(0.5);
        let c = (1.0 / beta).ln() / (1.0 - beta);
        total += rounds_in_epoch.min((c - 1.0) * rounds_in_epoch + log_n / (1.0 - beta));
        start += length;
    }
    best_mistakes + total
}

/// Hedge with a fixed η on losses in [0, B], against an expert of prior weight π:
/// L̂_T ≤ L + ln(1/π)/η + η B² T / 8 (π = 1/N for the uniform prior).
pub fn hedge_fixed(
    rounds: u64,
    eta: f64,
    loss_bound: f64,
    prior_weight: f64,
    best_loss: f64,
) -> f64 {
    if prior_weight >= 1.0 {
        return best_loss;
    }
    best_loss
        + (1.0 / prior_weight).ln() / eta
        + eta * loss_bound * loss_bound * rounds as f64 / 8.0
}

/// Hedge with η = √(8 ln N / T) / B for a known horizon: L̂_T ≤ L* + B √(T ln N / 2).
pub fn hedge_tuned(horizon: u64, n_experts: usize, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 {
        return best_loss;
    }
    best_loss + loss_bound * (horizon as f64 * ln_n(n_experts) / 2.0).sqrt()
}

/// Hedge with the doubling trick (η_m = √(8 ln N / 2^m) / B, restarted):
/// L̂_T ≤ L* + B √(T ln N) / (√2 − 1).
pub fn hedge_doubling(rounds: u64, n_experts: usize, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 {
        return best_loss;
    }
    best_loss
        + loss_bound * (rounds as f64 * ln_n(n_experts)).sqrt() / (std::f64::consts::SQRT_2 - 1.0)
}

/// Anytime Hedge (η_t = √(8 ln N / t) / B, uniform prior):
/// L̂_T ≤ L* + B (√(2 T ln N) + √(ln N / 8)).
pub fn hedge_anytime(rounds: u64, n_experts: usize, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 {
        return best_loss;
    }
    let log_n = ln_n(n_experts);
    best_loss + loss_bound * ((2.0 * rounds as f64 * log_n).sqrt() + (log_n / 8.0).sqrt())
}

/// AdaHedge (de Rooij, van Erven, Grünwald & Koolen, JMLR 2014, Theorem 8), for losses in
/// [0, B]: L̂_T ≤ L* + 2√(ln N · L*(BT − L*)/T) + B(16/3 ln N + 2). AdaHedge is invariant under
/// rescaling the losses, so the paper's [0, 1] statement carries over with L* → L*/B and the
/// regret multiplied by B.
pub fn adahedge(rounds: u64, n_experts: usize, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 || rounds == 0 {
        return best_loss;
    }
    let log_n = ln_n(n_experts);
    let t = rounds as f64;
    let spread = (best_loss * (loss_bound * t - best_loss)).max(0.0);
    best_loss + 2.0 * (log_n * spread / t).sqrt() + loss_bound * (16.0 / 3.0 * log_n + 2.0)
}

/// Follow the perturbed leader with exponential perturbations at rate η on losses in [0, B]:
/// E L_T ≤ (η' L* + B ln N) / (1 − e^{−η'}), η' = ηB (the rate on losses rescaled to [0, 1]).
pub fn fpl_expected(n_experts: usize, eta: f64, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 {
        return best_loss;
    }
    let scaled_eta = eta * loss_bound;
    (scaled_eta * best_loss + loss_bound * ln_n(n_experts)) / (1.0 - (-scaled_eta).exp())
}

/// FPL's simplified form for 0 < η' = ηB ≤ 1: E L_T ≤ (1 + η') L* + (1 + 1/η') B ln N.
pub fn fpl_expected_simple(n_experts: usize, eta: f64, loss_bound: f64, best_loss: f64) -> f64 {
    if n_experts <= 1 {
        return best_loss;
    }
    let scaled_eta = eta * loss_bound;
    (1.0 + scaled_eta) * best_loss + (1.0 + 1.0 / scaled_eta) * loss_bound * ln_n(n_experts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_expert_bounds_return_the_best_loss() {
        assert_eq!(weighted_majority(1, 0.5, 3.0), 3.0);
        assert_eq!(randomized_weighted_majority(1, 0.5, 3.0), 3.0);
        assert_eq!(randomized_weighted_majority_doubling_sum(100, 1, 3.0), 3.0);
        assert_eq!(hedge_fixed(100, 0.1, 1.0, 1.0, 3.0), 3.0);
        assert_eq!(adahedge(100, 1, 1.0, 3.0), 3.0);
        assert_eq!(fpl_expected(1, 0.5, 1.0, 3.0), 3.0);
    }

    #[test]
    fn simplified_forms_dominate_the_exact_ones() {
        for beta in [0.5, 0.6, 0.9, 0.99] {
            for m in [0.0, 3.0, 100.0] {
                assert!(
                    randomized_weighted_majority_simple(7, beta, m)
                        >= randomized_weighted_majority(7, beta, m) - 1e-12
                );
            }
        }
        for eta in [0.01, 0.5, 1.0] {
            assert!(fpl_expected_simple(7, eta, 1.0, 10.0) >= fpl_expected(7, eta, 1.0, 10.0));
        }
    }

    #[test]
    fn the_doubling_sum_is_sharper_than_the_closed_form() {
        for t in [1, 2, 3, 10, 100, 1000, 12345] {
            let sum = randomized_weighted_majority_doubling_sum(t, 10, 0.0);
            let closed = randomized_weighted_majority_doubling(t, 10, 0.0);
            assert!(sum <= closed + 1e-9, "T {t}: {sum} > {closed}");
            assert!(sum <= t as f64);
        }
    }
}
