//! Every bound of the family, as a function, and the guarantee of a learner's run.
//!
//! The functions give the largest cumulative loss the learner can have, given the number of
//! rounds T (or the horizon), the number of experts N, the rate, the loss range B, the prior
//! weight π_i of an expert and that expert's cumulative loss (m_i mistakes or L_i). Each holds
//! against *every* expert i at once (its right-hand side grows with L_i), so subtracting L_i
//! gives a bound on the regret against expert i. With N = 1 every rule copies the one expert
//! and every bound returns the expert's loss itself. Logs are natural.
//!
//! [`Guarantee`] is what a learner reports about its own run (`regret_bound()` on every rule):
//! the bound of the theorem that covers exactly its settings — which quantity it bounds
//! ([`Bounded`]), against which expert, under which theorem — or, when no theorem covers the
//! settings (EWA on the zero-one loss, AdaHedge or FPL with sleeping experts, losses outside
//! the range the bound assumes), no bound and the reason. Front-ends print what it says and
//! never re-derive a formula.
//!
//! | rule, schedule | regret against expert i ≤ |
//! |---|---|
//! | WM, β | ((ln(1/β) m_i + ln N) / ln(2/(1+β))) − m_i |
//! | RWM, β (fixed, or tuned for a horizon) | ((ln(1/β) m_i + ln N) / (1 − β)) − m_i, in expectation |
//! | RWM, doubling | Σ_m min(ℓ_m, (c_m − 1) ℓ_m + ln N/(1 − β_m)), in expectation |
//! | Hedge/EWA, fixed η (or η tuned for a horizon) | ln(1/π_i)/η + η B² T/8 |
//! | Hedge/EWA, anytime | ln(1/π_i) B √T/√(8 ln N) + B √(ln N/8) (2√T − 1) |
//! | Hedge/EWA, doubling | Σ_m [ln(1/π_i)/η_m + η_m B² ℓ_m/8] over the epochs |
//! | Hedge/EWA, AdaHedge | (1 + ln(1/π_i)/ln N) (S/2 + √(S²/4 + ln N Σ_t s_t²/4)) |
//! | FPL, η | (η' L_i + B ln N)/(1 − e^{−η'}) − L_i, η' = ηB, in expectation |
//! | fixed share, η, α (m switches) | ((m+1) ln N + m ln(1/α) + (T−m−1) ln(1/(1−α)))/η + η B² T/8 |
//! | ML-Poly | √((E_T + V_{T,k}) S_T), every quantity kept by the learner |
//! | ML-Prod, range B | ln N/η_{0,k} + Σ_t η_{t−1,k} r²_{t,k} + ln(1 + D_T/e)/η_{T,k} |
//! | ML-EWA, BOA (opera's rates) | none: no theorem covers these rates |
//! | OGD, η_t = η/√t | √T/η + ½ Σ_t η_t ‖g_t − ḡ_t‖² (against every convex combination) |
//! | FTRL, quadratic / entropic | (1 − 1/N)/(2η) + η Σ_t ‖g_t − ḡ_t‖² / ln N/η + (η/8) Σ_t r_t² |
//! | ridge (VAW), square loss | λ‖u − w₀‖² + Y² ln det(I + Σ_t x_t x_tᵀ/λ) against u |
//!
//! **The prior.** Exponential weights with a prior π pay ln(1/π_i) instead of ln N against
//! expert i; every Hedge/EWA row above is the prior form (π_i = 1/N gives the uniform one).
//! The learning rates stay the uniform tunings (they use ln N); the bounds are derived for
//! exactly those rates:
//!
//! - *anytime*: with weights ∝ π e^{−η_t L_{t−1}} and η_t non-increasing, the mix losses sum to
//!   at most −(1/η_T) ln Σ_i π_i e^{−η_T L_{T,i}} ≤ L_i + ln(1/π_i)/η_T (the function
//!   η ↦ −(1/η) ln Σ π e^{−η L} does not increase with η), and each round's mixture loss
//!   exceeds its mix loss by at most η_t B²/8 (Hoeffding's lemma); Σ_{t≤T} t^{−1/2} ≤ 2√T − 1.
//!   For the uniform prior this is B √(ln N/8)(3√T − 1), below the
//!   B(√(2T ln N) + √(ln N/8)) of the usual statement.
//! - *doubling*: the fixed-rate bound in each epoch (the weights restart from the prior),
//!   summed; for the uniform prior it is below B √(T ln N)/(√2 − 1).
//! - *AdaHedge* (de Rooij, van Erven, Grünwald & Koolen, JMLR 2014): the same mix-loss
//!   argument gives R_i ≤ ln(1/π_i)/η_T + Δ_T ≤ (1 + ln(1/π_i)/ln N) Δ_T, since
//!   η_T = ln N/Δ_{T−1}. With s_t the range of the round's losses (largest minus smallest),
//!   each round's gap is δ_t ≤ min(s_t, η_t s_t²/8) (Hoeffding), so
//!   Δ_T² = Σ_t (2 δ_t Δ_{t−1} + δ_t²) ≤ (ln N/4) Σ_t s_t² + S Δ_T with S = max_t s_t, whence
//!   Δ_T ≤ S/2 + √(S²/4 + ln N Σ_t s_t²/4). The learner keeps S and Σ_t s_t², so this needs
//!   no loss range. For the uniform prior and losses in a known [0, B], the paper's
//!   Theorem 8, 2√(ln N · L_i (BT − L_i)/T) + B(16/3 ln N + 2), is also a bound; the smaller
//!   of the two is reported.
//!
//! **Sleeping experts** (specialists): an asleep expert is charged the learner's loss, which
//! keeps the exponential-weights analysis of the fixed, horizon, anytime and doubling rates
//! intact with T the total number of rounds. AdaHedge's gap is computed over the awake
//! experts only, which the argument above does not cover, and FPL's bound has no sleeping
//! form: with sleeping experts those two report no bound.
//!
//! ```
//! use pacstream::experts::bounds;
//!
//! // WM with β = ½, 10 experts, best expert 5 mistakes: at most 21.4 mistakes.
//! let bound = bounds::weighted_majority(10, 0.5, 5.0);
//! assert!((bound - (2f64.ln() * 5.0 + 10f64.ln()) / (4.0f64 / 3.0).ln()).abs() < 1e-12);
//! assert_eq!(bounds::hedge_tuned(1000, 1, 1.0, 7.0), 7.0);
//! // Against an expert of prior weight 0.001 rather than ½, a fixed rate pays ln 500 more / η.
//! let (light, even) = (
//!     bounds::hedge_fixed(1000, 0.1, 1.0, 0.001, 0.0),
//!     bounds::hedge_fixed(1000, 0.1, 1.0, 0.5, 0.0),
//! );
//! assert!((light - even - 500f64.ln() / 0.1).abs() < 1e-9);
//! ```

use serde::{Deserialize, Serialize};

use super::schedule::epoch_length;

fn ln_n(n_experts: usize) -> f64 {
    (n_experts as f64).ln()
}

/// `bound(ln N)`, or `one_expert` when there is a single expert: the learner then copies it,
/// so its loss is that expert's and no regret is possible.
fn beyond_one_expert(n_experts: usize, one_expert: f64, bound: impl FnOnce(f64) -> f64) -> f64 {
    if n_experts <= 1 {
        one_expert
    } else {
        bound(ln_n(n_experts))
    }
}

/// The same for a bound against an expert of prior weight π: with π = 1 the learner follows
/// that expert alone, so its loss is `best_loss` too.
fn beyond_one_expert_or_whole_prior(
    n_experts: usize,
    prior_weight: f64,
    best_loss: f64,
    bound: impl FnOnce(f64) -> f64,
) -> f64 {
    if prior_weight >= 1.0 {
        best_loss
    } else {
        beyond_one_expert(n_experts, best_loss, bound)
    }
}

/// Weighted Majority: L_T ≤ (ln(1/β)·m* + ln N) / ln(2/(1+β)).
pub fn weighted_majority(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
        ((1.0 / beta).ln() * best_mistakes + log_n) / (2.0 / (1.0 + beta)).ln()
    })
}

/// Randomized Weighted Majority: E L_T ≤ (ln(1/β)·m* + ln N) / (1 − β).
pub fn randomized_weighted_majority(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
        ((1.0 / beta).ln() * best_mistakes + log_n) / (1.0 - beta)
    })
}

/// The lecture notes' simplified form for β ≥ ½: E L_T ≤ (2 − β)·m* + ln N / (1 − β)
/// (from −ln(1 − x) ≤ x + x² for x ≤ ½).
pub fn randomized_weighted_majority_simple(n_experts: usize, beta: f64, best_mistakes: f64) -> f64 {
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
        (2.0 - beta) * best_mistakes + log_n / (1.0 - beta)
    })
}

/// RWM with β = 1 − √(ln N / T) for a known horizon T ≥ 4 ln N:
/// E L_T ≤ m* + 2√(T ln N).
pub fn randomized_weighted_majority_tuned(
    horizon: u64,
    n_experts: usize,
    best_mistakes: f64,
) -> f64 {
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
        best_mistakes + 2.0 * (horizon as f64 * log_n).sqrt()
    })
}

/// RWM with the doubling trick (β_m = max(½, 1 − √(ln N / 2^m)) restarted at rounds 2^m),
/// for every T ≥ 1: E L_T ≤ m* + (2√2 / (√2 − 1))·√(T ln N).
pub fn randomized_weighted_majority_doubling(
    rounds: u64,
    n_experts: usize,
    best_mistakes: f64,
) -> f64 {
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
        let sqrt2 = std::f64::consts::SQRT_2;
        best_mistakes + 2.0 * sqrt2 / (sqrt2 - 1.0) * (rounds as f64 * log_n).sqrt()
    })
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
    beyond_one_expert(n_experts, best_mistakes, |log_n| {
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
    })
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
    beyond_one_expert(n_experts, best_loss, |log_n| {
        best_loss + loss_bound * (horizon as f64 * log_n / 2.0).sqrt()
    })
}

/// A run of exponential weights seen from one expert, what the bounds of the tuned schedules
/// are computed from: T rounds, N experts, losses in [0, B], the expert's prior weight π
/// (1/N for the uniform prior) and its cumulative loss L.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgainstExpert {
    /// T.
    pub rounds: u64,
    /// N.
    pub n_experts: usize,
    /// B.
    pub loss_bound: f64,
    /// π.
    pub prior_weight: f64,
    /// L.
    pub loss: f64,
}

/// Hedge with the doubling trick (η_m = √(8 ln N / 2^m) / B in epoch m, the weights restarted
/// from the prior), against an expert of prior weight π: the fixed-rate bound of each epoch,
/// summed,
/// L̂_T ≤ L + Σ_m [ln(1/π)/η_m + η_m B² ℓ_m / 8],
/// ℓ_m the number of rounds of epoch m that are ≤ T. For the uniform prior (π = 1/N) it is
/// below the closed form B √(T ln N) / (√2 − 1).
pub fn hedge_doubling(run: AgainstExpert) -> f64 {
    let AgainstExpert {
        rounds,
        loss_bound,
        prior_weight,
        ..
    } = run;
    beyond_one_expert_or_whole_prior(run.n_experts, prior_weight, run.loss, |log_n| {
        let log_inverse_prior = (1.0 / prior_weight).ln();
        let mut total = 0.0;
        let mut start = 1u64;
        while start <= rounds {
            let length = epoch_length(start);
            let rounds_in_epoch = (rounds - start + 1).min(length) as f64;
            let eta = (8.0 * log_n / length as f64).sqrt() / loss_bound;
            total +=
                log_inverse_prior / eta + eta * loss_bound * loss_bound * rounds_in_epoch / 8.0;
            start += length;
        }
        run.loss + total
    })
}

/// The closed form of the doubling trick for the uniform prior:
/// L̂_T ≤ L* + B √(T ln N) / (√2 − 1) (at least [`hedge_doubling`]).
pub fn hedge_doubling_closed_form(
    rounds: u64,
    n_experts: usize,
    loss_bound: f64,
    best_loss: f64,
) -> f64 {
    beyond_one_expert(n_experts, best_loss, |log_n| {
        best_loss + loss_bound * (rounds as f64 * log_n).sqrt() / (std::f64::consts::SQRT_2 - 1.0)
    })
}

/// Anytime Hedge (η_t = √(8 ln N / t) / B, no restart), against an expert of prior weight π:
/// L̂_T ≤ L + ln(1/π)/η_T + Σ_{t≤T} η_t B²/8
///      ≤ L + ln(1/π) B √T / √(8 ln N) + B √(ln N / 8) (2√T − 1)
/// (see the module documentation). For the uniform prior this is B √(ln N/8) (3√T − 1),
/// below the usual B (√(2T ln N) + √(ln N / 8)).
pub fn hedge_anytime(run: AgainstExpert) -> f64 {
    if run.n_experts <= 1 || run.prior_weight >= 1.0 || run.rounds == 0 {
        return run.loss;
    }
    let log_n = ln_n(run.n_experts);
    let root_t = (run.rounds as f64).sqrt();
    run.loss
        + (1.0 / run.prior_weight).ln() * run.loss_bound * root_t / (8.0 * log_n).sqrt()
        + run.loss_bound * (log_n / 8.0).sqrt() * (2.0 * root_t - 1.0)
}

/// Hedge with η = √(8 ln N / H) / B tuned for a horizon H, after T rounds (any T, before or
/// beyond H), against an expert of prior weight π: the fixed-rate bound at that η.
pub fn hedge_horizon(run: AgainstExpert, horizon: u64) -> f64 {
    let AgainstExpert {
        loss_bound,
        prior_weight,
        loss,
        ..
    } = run;
    beyond_one_expert_or_whole_prior(run.n_experts, prior_weight, loss, |log_n| {
        let eta = (8.0 * log_n / horizon as f64).sqrt() / loss_bound;
        hedge_fixed(run.rounds, eta, loss_bound, prior_weight, loss)
    })
}

/// What AdaHedge's bound needs from a run: the largest range S = max_t s_t of a round's
/// losses (largest minus smallest) and Σ_t s_t².
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossRanges {
    /// S = max_t s_t.
    pub largest: f64,
    /// Σ_t s_t².
    pub sum_of_squares: f64,
}

impl LossRanges {
    /// Adds a round whose losses span `range`.
    pub fn add(&mut self, range: f64) {
        let range = range.max(0.0);
        self.largest = self.largest.max(range);
        self.sum_of_squares += range * range;
    }

    /// Whether both values are finite and ≥ 0.
    pub(crate) fn is_valid(&self) -> bool {
        self.largest.is_finite()
            && self.largest >= 0.0
            && self.sum_of_squares.is_finite()
            && self.sum_of_squares >= 0.0
    }
}

/// AdaHedge (η_t = ln N / Δ_{t−1}) against an expert of prior weight π, from the ranges of
/// the losses it was given (no loss bound needed; see the module documentation):
/// L̂_T ≤ L + (1 + ln(1/π)/ln N) (S/2 + √(S²/4 + ln N Σ_t s_t² / 4)).
/// For the uniform prior and losses of range at most B, this is at most
/// B (1 + √(1 + T ln N)).
pub fn adahedge_ranges(
    n_experts: usize,
    prior_weight: f64,
    ranges: LossRanges,
    best_loss: f64,
) -> f64 {
    beyond_one_expert_or_whole_prior(n_experts, prior_weight, best_loss, |log_n| {
        let s = ranges.largest;
        let gap = 0.5 * s + (0.25 * s * s + 0.25 * log_n * ranges.sum_of_squares).sqrt();
        best_loss + (1.0 + (1.0 / prior_weight).ln() / log_n) * gap
    })
}

/// AdaHedge (de Rooij, van Erven, Grünwald & Koolen, JMLR 2014, Theorem 8), uniform prior,
/// for losses in [0, B]: L̂_T ≤ L* + 2√(ln N · L*(BT − L*)/T) + B(16/3 ln N + 2). AdaHedge is invariant under
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
    beyond_one_expert(n_experts, best_loss, |log_n| {
        let scaled_eta = eta * loss_bound;
        (scaled_eta * best_loss + loss_bound * log_n) / (1.0 - (-scaled_eta).exp())
    })
}

/// FPL's simplified form for 0 < η' = ηB ≤ 1: E L_T ≤ (1 + η') L* + (1 + 1/η') B ln N.
pub fn fpl_expected_simple(n_experts: usize, eta: f64, loss_bound: f64, best_loss: f64) -> f64 {
    beyond_one_expert(n_experts, best_loss, |log_n| {
        let scaled_eta = eta * loss_bound;
        (1.0 + scaled_eta) * best_loss + (1.0 + 1.0 / scaled_eta) * loss_bound * log_n
    })
}

/// Fixed share with rate η and share α (Cesa-Bianchi & Lugosi 2006, *Prediction, Learning,
/// and Games*, Theorem 5.2, for charges in a range of width B): the **regret** over T
/// rounds against any sequence of experts with m switches is at most
///
/// ((m + 1) ln N + m ln(1/α) + (T − m − 1) ln(1/(1 − α))) / η + η B² T / 8.
///
/// Infinite when α = 0 and m > 0 (fixed share without a share cannot switch); 0 when N = 1
/// (the learner copies the one expert). With m ≥ T the sequence may switch every round and
/// the bound takes m = T − 1.
///
/// ```
/// use pacstream::experts::bounds;
/// let (n, eta, b) = (4, 0.5, 1.0);
/// // α = 0, m = 0: the fixed-rate exponential-weights bound ln N/η + η B² T/8.
/// let plain = bounds::fixed_share(100, n, eta, 0.0, b, 0);
/// assert!((plain - (4f64.ln() / eta + eta * 100.0 / 8.0)).abs() < 1e-12);
/// assert!(bounds::fixed_share(100, n, eta, 0.0, b, 1).is_infinite());
/// assert_eq!(bounds::fixed_share(100, 1, eta, 0.1, b, 3), 0.0);
/// ```
pub fn fixed_share(
    rounds: u64,
    n_experts: usize,
    eta: f64,
    alpha: f64,
    loss_bound: f64,
    shifts: u64,
) -> f64 {
    if n_experts <= 1 || rounds == 0 {
        return 0.0;
    }
    let shifts = shifts.min(rounds - 1);
    if alpha == 0.0 && shifts > 0 {
        return f64::INFINITY;
    }
    let (t, m) = (rounds as f64, shifts as f64);
    let switching = if shifts > 0 {
        m * (1.0 / alpha).ln()
    } else {
        0.0
    };
    let staying = (t - m - 1.0) * -(-alpha).ln_1p();
    ((m + 1.0) * ln_n(n_experts) + switching + staying) / eta
        + eta * loss_bound * loss_bound * t / 8.0
}

/// ML-Poly (Gaillard, Stoltz & van Erven 2014, §4): the **regret** against expert k is at
/// most √((E_T + V_{T,k}) · S_T), with E_T + V_{T,k} = 1/η_{T,k} the inverse of k's final
/// rate and S_T = Σ_t Σ_i η_{t−1,i} r²_{t,i} the growth of the polynomial potential, both
/// kept by the learner ([`MlPoly`](super::MlPoly) explains the argument).
///
/// ```
/// use pacstream::experts::bounds;
/// assert_eq!(bounds::ml_poly(4.0, 9.0), 6.0);
/// ```
pub fn ml_poly(inverse_rate: f64, potential_growth: f64) -> f64 {
    (inverse_rate * potential_growth).sqrt()
}

/// ML-Prod with non-increasing rates (Gaillard, Stoltz & van Erven 2014, the theorem on
/// ML-Prod with learning rates chosen on line, rates at most ½ on losses in [0, 1]; here
/// η r ≥ −½ in every round): the **regret** against expert k is at most
///
/// ln N / η_{0,k} + Σ_t η_{t−1,k} r²_{t,k} + ln(1 + D_T / e) / η_{T,k},
///
/// with D_T = Σ_t Σ_i (η_{t−1,i}/η_{t,i} − 1), every quantity kept by the learner
/// ([`MlProd`](super::MlProd) explains the argument).
///
/// ```
/// use pacstream::experts::bounds;
/// // Rates that never moved: ln N/η + η Σ r², the fixed-rate Prod bound.
/// let value = bounds::ml_prod(2f64.ln(), 0.25, 0.25 * 8.0, 0.25, 0.0);
/// assert!((value - (4.0 * 2f64.ln() + 2.0)).abs() < 1e-12);
/// ```
pub fn ml_prod(
    ln_n: f64,
    first_rate: f64,
    second_order: f64,
    last_rate: f64,
    rate_drift: f64,
) -> f64 {
    ln_n / first_rate + second_order + (rate_drift / std::f64::consts::E).ln_1p() / last_rate
}

/// The adaptive BOA with a known range B (Wintenberger 2017, the multiple-learning-rates
/// version; rates non-increasing, η r ≥ −½ in every round): the **regret** against expert k
/// is at most
///
/// Σ_t η_{t−1,k} r²_{t,k} + (ln N + ln(1 + D_T / e)) / η_{T,k},
///
/// with D_T = (1/N) Σ_t Σ_i (η_{t−1,i}/η_{t,i} − 1), every quantity kept by the learner
/// ([`Boa`](super::Boa) explains the argument). 0 when N = 1.
///
/// ```
/// use pacstream::experts::bounds;
/// // Rates that never moved: η Σ r² + ln N/η, the fixed-rate BOA bound.
/// let value = bounds::boa(2, 0.25 * 8.0, 0.25, 0.0);
/// assert!((value - (2.0 + 4.0 * 2f64.ln())).abs() < 1e-12);
/// ```
pub fn boa(n_experts: usize, second_order: f64, final_rate: f64, rate_drift: f64) -> f64 {
    beyond_one_expert(n_experts, 0.0, |log_n| {
        second_order + (log_n + (rate_drift / std::f64::consts::E).ln_1p()) / final_rate
    })
}

/// Online gradient descent over the simplex with steps η_t = η/√t (Zinkevich 2003,
/// Theorem 1; Hazan 2016, *Introduction to Online Convex Optimization*, Theorem 3.1 before
/// its last step): the **regret** against every convex combination of the experts (each
/// expert included) is at most D²/(2η_T) + ½ Σ_t η_t ‖g_t − ḡ_t‖², with D² = 2 the squared
/// diameter of the simplex, that is √T/η + ½ `step_sum` (the sum kept by
/// [`OnlineGradientDescent`](super::OnlineGradientDescent)). 0 when N = 1.
///
/// ```
/// use pacstream::experts::bounds;
/// assert_eq!(bounds::online_gradient_descent(100, 3, 0.5, 4.0), 10.0 / 0.5 + 2.0);
/// assert_eq!(bounds::online_gradient_descent(100, 1, 0.5, 4.0), 0.0);
/// ```
pub fn online_gradient_descent(rounds: u64, n_experts: usize, eta: f64, step_sum: f64) -> f64 {
    beyond_one_expert(n_experts, 0.0, |_| {
        (rounds as f64).sqrt() / eta + 0.5 * step_sum
    })
}

/// Follow the regularised leader over the simplex with R(p) = ½‖p‖² and a fixed η
/// (Shalev-Shwartz 2012, *Online Learning and Online Convex Optimization*, Theorem 2.11 with
/// Lemma 2.10): the **regret** against every convex combination is at most
/// (1 − 1/N)/(2η) + η Σ_t ‖g_t − ḡ_t‖²₂ (`square_sum`). 0 when N = 1.
///
/// ```
/// use pacstream::experts::bounds;
/// assert_eq!(bounds::ftrl_quadratic(2, 0.25, 8.0), 1.0 + 2.0);
/// ```
pub fn ftrl_quadratic(n_experts: usize, eta: f64, square_sum: f64) -> f64 {
    beyond_one_expert(n_experts, 0.0, |_| {
        (1.0 - 1.0 / n_experts as f64) / (2.0 * eta) + eta * square_sum
    })
}

/// Follow the regularised leader over the simplex with the entropy and a fixed η, that is
/// exponential weights on the linearised losses (Cesa-Bianchi & Lugosi 2006, Theorem 2.2,
/// each round's range r_t in place of 1): the **regret** against every convex combination
/// is at most ln N/η + (η/8) Σ_t r_t² (`range_sum` = Σ_t r_t²). 0 when N = 1.
///
/// ```
/// use pacstream::experts::bounds;
/// let b = bounds::ftrl_entropic(4, 0.5, 16.0);
/// assert!((b - (4f64.ln() / 0.5 + 1.0)).abs() < 1e-12);
/// ```
pub fn ftrl_entropic(n_experts: usize, eta: f64, range_sum: f64) -> f64 {
    beyond_one_expert(n_experts, 0.0, |log_n| log_n / eta + eta * range_sum / 8.0)
}

/// The Vovk–Azoury–Warmuth forecaster (online ridge regression; Cesa-Bianchi & Lugosi 2006,
/// Theorem 11.8): for the square loss its **regret** against the linear combination u is
/// at most λ‖u − w₀‖² + Y² ln det(I + Σ_t x_t x_tᵀ/λ); `penalty` = λ‖u − w₀‖²,
/// `largest_residual` = Y², `log_det` = the log-determinant, all kept by
/// [`OnlineRidge`](super::OnlineRidge).
///
/// ```
/// use pacstream::experts::bounds;
/// assert_eq!(bounds::ridge(0.5, 4.0, 2.0), 8.5);
/// ```
pub fn ridge(penalty: f64, largest_residual: f64, log_det: f64) -> f64 {
    penalty + largest_residual * log_det
}

/// What a reported bound bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bounded {
    /// The regret of the learner's loss on every sequence: Weighted Majority's mistakes,
    /// Hedge's mixture loss (with sampling, the expected loss of the sampled expert), EWA's
    /// ℓ(ŷ_t, y_t).
    Regret,
    /// The expected regret of a randomised learner (RWM's expected mistakes, FPL's expected
    /// loss): the realised loss of one run may exceed it.
    ExpectedRegret,
}

impl Bounded {
    /// A name for reports: `regret` or `expected regret`.
    pub fn name(&self) -> &'static str {
        match self {
            Bounded::Regret => "regret",
            Bounded::ExpectedRegret => "expected regret",
        }
    }
}

/// A bound on the regret against one expert, from the theorem that covers the learner's
/// settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegretBound {
    /// The bound.
    pub value: f64,
    /// The expert the regret is measured against (on its awake rounds).
    pub expert: usize,
    /// What is bounded.
    pub bounded: Bounded,
    /// The theorem and its form.
    pub theorem: &'static str,
}

/// What a learner can guarantee about its run: a bound, or no bound and why.
///
/// ```
/// use pacstream::experts::{EwaParams, HedgeParams, LearningRate, Loss, LossRound, AdviceRound};
/// use pacstream::experts::bounds::{Bounded, Guarantee};
/// use pacstream::OnlineLearner;
///
/// // Hedge with a prior: the bound is against the best expert, at its own prior weight.
/// let mut hedge = HedgeParams::new(2)
///     .learning_rate(LearningRate::Horizon(1000))
///     .loss_bound(1.0)
///     .prior(vec![0.001, 0.999])
///     .check()?
///     .build();
/// for _ in 0..1000 {
///     hedge.learn_one(LossRound::new(&[0.0, 1.0]))?;
/// }
/// let Guarantee::Bound(bound) = hedge.regret_bound() else { panic!("a bound") };
/// assert_eq!((bound.expert, bound.bounded), (0, Bounded::Regret));
/// assert!(hedge.ledger().regret() <= bound.value);
///
/// // EWA on the zero-one loss: the mixture of real-valued advice can miss every round while
/// // an expert never does; no theorem bounds that.
/// let mut ewa = EwaParams::new(2).loss(Loss::ZeroOne).check()?.build();
/// ewa.learn_one(AdviceRound::new(&[0.0, 1.0], 1.0))?;
/// assert!(matches!(ewa.regret_bound(), Guarantee::NoBound { .. }));
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Guarantee {
    /// The bound of the theorem for exactly these settings.
    Bound(RegretBound),
    /// No theorem covers these settings, or the run broke an assumption of the theorem.
    NoBound {
        /// What the learner's regret is (there is no bound on it).
        bounded: Bounded,
        /// Why.
        reason: &'static str,
    },
}

impl Guarantee {
    /// The bound's value, if there is one.
    pub fn value(&self) -> Option<f64> {
        match self {
            Guarantee::Bound(bound) => Some(bound.value),
            Guarantee::NoBound { .. } => None,
        }
    }

    /// What the learner's regret is: of its loss, or expected.
    pub fn bounded(&self) -> Bounded {
        match self {
            Guarantee::Bound(bound) => bound.bounded,
            Guarantee::NoBound { bounded, .. } => *bounded,
        }
    }

    pub(crate) fn none(bounded: Bounded, reason: &'static str) -> Self {
        Guarantee::NoBound { bounded, reason }
    }
}

/// The reason when a loss fell outside the range a bound assumes.
pub(crate) const OUT_OF_RANGE: &str =
    "in some rounds a loss fell outside the range [0, B] the bound assumes (check the loss bound)";

/// The bound of an exponential-weights rule (Hedge, or EWA through Jensen or the gradient
/// trick) against `expert`, from the state of its round machinery.
pub(crate) fn exponential_weights(
    core: &super::core::Core,
    expert: usize,
    loss_range: f64,
    known_range: bool,
) -> Guarantee {
    use super::schedule::LearningRate;
    let n = core.n_experts();
    if core.out_of_range_rounds > 0 {
        return Guarantee::none(Bounded::Regret, OUT_OF_RANGE);
    }
    let sleeping = core.ledger.has_sleeping_rounds();
    let rounds = core.n_rounds;
    let prior = core.weights.log_prior(expert).exp();
    let loss = core.ledger.expert_losses()[expert];
    let run = AgainstExpert {
        rounds,
        n_experts: n,
        loss_bound: loss_range,
        prior_weight: prior,
        loss,
    };
    let (bound, theorem) = match core.schedule.rate {
        LearningRate::PerExpert | LearningRate::Penalty => {
            return Guarantee::none(Bounded::Regret, "no single-rate schedule");
        }
        LearningRate::Fixed(eta) => (
            hedge_fixed(rounds, eta, loss_range, prior, loss),
            "exponential weights, fixed rate: ln(1/π_i)/η + ηB²T/8",
        ),
        LearningRate::Horizon(horizon) => (
            hedge_horizon(run, horizon),
            "exponential weights, rate tuned for the horizon H: ln(1/π_i)/η + ηB²T/8, η = √(8 ln N/H)/B",
        ),
        LearningRate::Anytime => (
            hedge_anytime(run),
            "exponential weights, anytime rate: ln(1/π_i)B√T/√(8 ln N) + B√(ln N/8)(2√T − 1)",
        ),
        LearningRate::Doubling => (
            hedge_doubling(run),
            "exponential weights, doubling trick: Σ over epochs of ln(1/π_i)/η_m + η_m B² ℓ_m/8",
        ),
        LearningRate::AdaHedge => {
            if sleeping && n > 1 {
                return Guarantee::none(
                    Bounded::Regret,
                    "AdaHedge's bound does not cover sleeping experts (its gap is over the awake experts)",
                );
            }
            let ranges = adahedge_ranges(n, prior, core.schedule.ranges, loss);
            let uniform = (prior * n as f64 - 1.0).abs() < 1e-12;
            if uniform && known_range {
                (
                    ranges.min(adahedge(rounds, n, loss_range, loss)),
                    "AdaHedge (de Rooij et al. 2014): the smaller of Theorem 8 and (1 + ln(1/π_i)/ln N)(S/2 + √(S²/4 + ln N Σ s_t²/4))",
                )
            } else {
                (
                    ranges,
                    "AdaHedge (de Rooij et al. 2014): (1 + ln(1/π_i)/ln N)(S/2 + √(S²/4 + ln N Σ s_t²/4))",
                )
            }
        }
    };
    Guarantee::Bound(RegretBound {
        value: (bound - loss).max(0.0),
        expert,
        bounded: Bounded::Regret,
        theorem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T rounds, N experts, losses in [0, B], an expert of prior weight π and loss L.
    fn run(
        rounds: u64,
        n_experts: usize,
        loss_bound: f64,
        prior_weight: f64,
        loss: f64,
    ) -> AgainstExpert {
        AgainstExpert {
            rounds,
            n_experts,
            loss_bound,
            prior_weight,
            loss,
        }
    }

    #[test]
    fn one_expert_bounds_return_the_best_loss() {
        assert_eq!(weighted_majority(1, 0.5, 3.0), 3.0);
        assert_eq!(randomized_weighted_majority(1, 0.5, 3.0), 3.0);
        assert_eq!(randomized_weighted_majority_doubling_sum(100, 1, 3.0), 3.0);
        assert_eq!(hedge_fixed(100, 0.1, 1.0, 1.0, 3.0), 3.0);
        assert_eq!(adahedge(100, 1, 1.0, 3.0), 3.0);
        assert_eq!(hedge_anytime(run(100, 1, 1.0, 1.0, 3.0)), 3.0);
        assert_eq!(hedge_doubling(run(100, 1, 1.0, 1.0, 3.0)), 3.0);
        let ranges = LossRanges {
            largest: 1.0,
            sum_of_squares: 100.0,
        };
        assert_eq!(adahedge_ranges(1, 1.0, ranges, 3.0), 3.0);
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

    /// The prior forms, at π = 1/N, are at most the uniform closed forms of the spec.
    #[test]
    fn prior_forms_at_the_uniform_prior_are_within_the_closed_forms() {
        for n in [2usize, 10, 1000] {
            let uniform = 1.0 / n as f64;
            for t in [1u64, 2, 3, 10, 100, 1000, 12345] {
                let log_n = (n as f64).ln();
                let spec_anytime = 2.0 * ((2.0 * t as f64 * log_n).sqrt() + (log_n / 8.0).sqrt());
                let uniform_run = run(t, n, 2.0, uniform, 0.0);
                assert!(hedge_anytime(uniform_run) <= spec_anytime);
                let doubling = hedge_doubling(uniform_run);
                assert!(doubling <= hedge_doubling_closed_form(t, n, 2.0, 0.0) + 1e-9);
                let ranges = LossRanges {
                    largest: 2.0,
                    sum_of_squares: 4.0 * t as f64,
                };
                let worst = 2.0 * (1.0 + (1.0 + t as f64 * log_n).sqrt());
                assert!(adahedge_ranges(n, uniform, ranges, 0.0) <= worst + 1e-9);
                let tuned = hedge_tuned(t, n, 2.0, 0.0);
                assert!((hedge_horizon(uniform_run, t) - tuned).abs() < 1e-9 * tuned);
            }
        }
        // A light prior weight costs ln(1/π) instead of ln N.
        let heavy = hedge_anytime(run(100, 2, 1.0, 0.5, 0.0));
        let light = hedge_anytime(run(100, 2, 1.0, 0.001, 0.0));
        let extra = (500f64).ln() * 10.0 / (8.0 * 2f64.ln()).sqrt();
        assert!((light - heavy - extra).abs() < 1e-9);
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
