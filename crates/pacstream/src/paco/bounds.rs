//! The bound of Li, Guedj & Loustau (2018), adaptive corollary, for any temperature
//! multiplier a, as a function.
//!
//! # What it bounds
//!
//! The **expected cumulative loss of the ideal sampler**: a learner that draws ĉ_t exactly
//! from the quasi-posterior ρ̂_t at every round, Σ_t E ℓ(ĉ_t, x_t), the expectation over its
//! draws. It says nothing of the N-step chain [`super::Paco`] runs, which only approximates
//! those draws. It holds for every sequence with ‖x_t‖ ≤ R (centred data) in exact memory; in
//! window memory S_t forgets and the corollary does not apply.
//!
//! # The bound, for λ_t = a (d + 2)/(2 √t R²)
//!
//! The paper states the corollary for a = 1; its proof gives every a > 0. Theorem 2 of the
//! paper (for a non-increasing sequence λ_t, with λ_0 := λ_1 here) reads
//!
//! Σ_t E ℓ(ĉ_t, x_t) ≤ inf_ρ { E_ρ Σ_t ℓ(c, x_t) + K(ρ, π)/λ_T
//!                            + E E_ρ Σ_t (λ_{t−1}/2) (ℓ(c, x_t) − ℓ(ĉ_t, x_t))² }.
//!
//! Take c* ∈ C(k, R) (k centres of norm ≤ R) and ρ uniform on the product of the balls
//! B(c*_j, ε), ε ≤ R (inside the prior's B(2R)). Then
//! - E_ρ ℓ(c, x) ≤ ℓ(c*, x) + E‖u‖² = ℓ(c*, x) + d ε²/(d + 2), u uniform in B_d(ε);
//! - K(ρ, π) = ln(1/q(k)) + d k ln(2R/ε), and ln(1/q(k)) ≤ ηk + ln p;
//! - every loss of a clustering inside B(2R) is at most C_1 = (2R + max_t ‖x_t‖)², so each
//!   squared difference is at most C_1², and Σ_{t≤T} λ_{t−1} ≤ a (d + 2) √T / R²
//!   (1 + Σ_{s<T} s^{−1/2} ≤ 2√T).
//!
//! With 1/λ_T = 2√T R²/(a (d + 2)) and ε² = R² min(1, 1/(a√T)) (the paper's ε² = R²/√T
//! at a = 1, capped at R so that the balls stay inside the prior's support):
//!
//! Σ_t E ℓ(ĉ_t, x_t) ≤ inf_{k ≤ p} { L*_k + k · [ (d R²/(a(d+2))) √T ln(4R²/ε²)
//!                                                + (2 R² η/(a(d+2))) √T ] }
//!                    + T d ε²/(d+2) + (2 R² ln p/(a(d+2))) √T + (a (d+2) C_1²/(2R²)) √T,
//!
//! with L*_k = inf_{c ∈ C(k, R)} Σ_t ℓ(c, x_t). When a√T ≥ 1, ln(4R²/ε²) = ln(4a√T) and
//! T d ε²/(d+2) = d R² √T/(a(d+2)); at a = 1 this is the paper's corollary term for term.
//! A larger a shrinks the Kullback–Leibler terms (÷ a) and grows the variance term (× a).
//!
//! # Warm-up rows
//!
//! With R `auto`, the first rows are buffered, not predicted, and enter S_t with their loss
//! only. Summing the per-round inequality of the proof over the predicted rounds
//! t = w + 1..T telescopes to −(1/λ_T) ln W_T + (1/λ_w) ln W_w with
//! W_s = ∫ exp(−λ_s S_s) dπ ≤ 1, so the same right-hand side bounds the expected loss over
//! the **predicted rows**, with T and L*_k counting **every row, warm-up rows included** (the
//! comparator pays for them, the learner does not).
//!
//! [`loss_bound`] computes the right-hand side from oracle losses L*_k; the hindsight
//! oracle ([`super::oracle`]) approximates them by k-means with restarts, whose local optima
//! over-estimate L*_k, so the bound computed is at least the true right-hand side and still
//! a bound.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What the bound depends on besides the oracle losses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundSettings {
    /// T, the number of rows (warm-up rows included).
    pub horizon: u64,
    /// d.
    pub dim: usize,
    /// R.
    pub radius: f64,
    /// max_t ‖x_t‖ (in the centred coordinates the learner works in).
    pub max_norm: f64,
    /// p.
    pub max_k: usize,
    /// η.
    pub eta: f64,
    /// a, the temperature multiplier of λ_t.
    pub coeff: f64,
}

impl BoundSettings {
    fn check(&self) -> Result<()> {
        if self.horizon == 0 || self.dim == 0 || self.max_k == 0 {
            return Err(Error::invalid_parameter(
                "horizon",
                "T, d and p must be >= 1",
            ));
        }
        for (name, value) in [("radius", self.radius), ("coeff", self.coeff)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(Error::invalid_parameter(
                    name,
                    format!("must be finite and > 0, got {value:?}"),
                ));
            }
        }
        for (name, value) in [("max_norm", self.max_norm), ("eta", self.eta)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::invalid_parameter(
                    name,
                    format!("must be finite and >= 0, got {value:?}"),
                ));
            }
        }
        Ok(())
    }

    /// ε², the squared radius of the balls of the comparison distribution:
    /// R² min(1, 1/(a√T)).
    fn epsilon_squared(&self) -> f64 {
        let r2 = self.radius * self.radius;
        r2 * (1.0 / (self.coeff * (self.horizon as f64).sqrt())).min(1.0)
    }

    /// The price of one cluster:
    /// (d R²/(a(d+2))) √T ln(4R²/ε²) + (2R²η/(a(d+2))) √T.
    pub fn per_cluster(&self) -> f64 {
        let d = self.dim as f64;
        let r2 = self.radius * self.radius;
        let root_t = (self.horizon as f64).sqrt();
        let scale = r2 / (self.coeff * (d + 2.0)) * root_t;
        d * scale * (4.0 * r2 / self.epsilon_squared()).ln() + 2.0 * self.eta * scale
    }

    /// The term outside the infimum:
    /// T d ε²/(d+2) + (2R² ln p/(a(d+2))) √T + (a(d+2) C_1²/(2R²)) √T.
    pub fn constant(&self) -> f64 {
        let d = self.dim as f64;
        let r2 = self.radius * self.radius;
        let c1 = (2.0 * self.radius + self.max_norm).powi(2);
        let t = self.horizon as f64;
        let root_t = t.sqrt();
        t * d * self.epsilon_squared() / (d + 2.0)
            + 2.0 * r2 * (self.max_k as f64).ln() / (self.coeff * (d + 2.0)) * root_t
            + self.coeff * (d + 2.0) * c1 * c1 / (2.0 * r2) * root_t
    }

    /// Whether the corollary's assumption R ≥ max_t ‖x_t‖ holds.
    pub fn radius_covers_data(&self) -> bool {
        self.radius >= self.max_norm
    }
}

/// The right-hand side of the corollary, and the k where its infimum is attained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossBound {
    /// The bound on the ideal sampler's expected cumulative loss.
    pub value: f64,
    /// The k that minimises the bound (the k of the infimum; not the best clustering in
    /// hindsight, which is the k of least loss).
    pub bound_k: usize,
    /// L*_k at that k.
    pub oracle_loss: f64,
    /// The term outside the infimum.
    pub constant: f64,
    /// The price of one cluster inside the infimum.
    pub per_cluster: f64,
    /// The settings it was computed for.
    pub settings: BoundSettings,
}

/// The bound from the oracle losses L*_1, L*_2, ... (index k − 1; at least one, at most p;
/// the infimum runs over the k given, so leaving out a k whose term cannot win is harmless).
///
/// ```
/// use pacstream::paco::bounds::{BoundSettings, loss_bound};
///
/// let settings = BoundSettings {
///     horizon: 100, dim: 1, radius: 1.0, max_norm: 1.0, max_k: 2, eta: 0.0, coeff: 1.0,
/// };
/// let bound = loss_bound(&settings, &[50.0, 0.0])?;
/// // a = 1: the paper's corollary. Per cluster: (1/3)·10·ln 40; constant:
/// // (2 ln 2/3 + 1/3 + 3·81/2)·10.
/// let per = 10.0 * 40f64.ln() / 3.0;
/// let constant = (2.0 * 2f64.ln() / 3.0 + 1.0 / 3.0 + 121.5) * 10.0;
/// assert!((bound.value - (constant + (50.0 + per).min(2.0 * per))).abs() < 1e-9);
/// assert_eq!(bound.bound_k, 2);
///
/// // a = 4 divides the Kullback–Leibler terms by 4 (and ε shrinks), multiplies the
/// // variance term by 4.
/// let four = loss_bound(&BoundSettings { coeff: 4.0, ..settings }, &[50.0, 0.0])?;
/// let per = 10.0 * 160f64.ln() / 12.0;
/// let constant = 10.0 / 12.0 + 2.0 * 2f64.ln() * 10.0 / 12.0 + 4.0 * 121.5 * 10.0;
/// assert!((four.value - (constant + 2.0 * per)).abs() < 1e-9);
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn loss_bound(settings: &BoundSettings, oracle_losses: &[f64]) -> Result<LossBound> {
    settings.check()?;
    if oracle_losses.is_empty() || oracle_losses.len() > settings.max_k {
        return Err(Error::InconsistentInput(format!(
            "{} oracle losses for p = {}",
            oracle_losses.len(),
            settings.max_k
        )));
    }
    if let Some(bad) = oracle_losses
        .iter()
        .find(|l| !(l.is_finite() && **l >= 0.0))
    {
        return Err(Error::InconsistentInput(format!(
            "oracle losses must be finite and >= 0, got {bad}"
        )));
    }
    let per_cluster = settings.per_cluster();
    let constant = settings.constant();
    let (bound_k, best) = oracle_losses
        .iter()
        .enumerate()
        .map(|(i, loss)| (i + 1, loss + (i + 1) as f64 * per_cluster))
        .fold((0, f64::INFINITY), |best, (k, value)| {
            if value < best.1 { (k, value) } else { best }
        });
    Ok(LossBound {
        value: constant + best,
        bound_k,
        oracle_loss: oracle_losses[bound_k - 1],
        constant,
        per_cluster,
        settings: *settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At a = 1 and a√T ≥ 1 the general form is the paper's corollary, written out.
    #[test]
    fn a_equal_to_one_is_the_papers_corollary() {
        for (t, d, r, max_norm, p, eta) in [
            (100u64, 1usize, 1.0, 0.5, 3usize, 0.0),
            (10_000, 5, 7.5, 7.0, 50, 4.0),
            (1, 2, 0.1, 0.1, 1, 1.0),
        ] {
            let settings = BoundSettings {
                horizon: t,
                dim: d,
                radius: r,
                max_norm,
                max_k: p,
                eta,
                coeff: 1.0,
            };
            let (t, d) = (t as f64, d as f64);
            let r2 = r * r;
            let c1 = (2.0 * r + max_norm).powi(2);
            let per = d * r2 / (d + 2.0) * t.sqrt() * (4.0 * t.sqrt()).ln()
                + 2.0 * r2 * eta / (d + 2.0) * t.sqrt();
            let constant = (2.0 * r2 * (p as f64).ln() / (d + 2.0)
                + d * r2 / (d + 2.0)
                + (d + 2.0) * c1 * c1 / (2.0 * r2))
                * t.sqrt();
            assert!((settings.per_cluster() - per).abs() <= 1e-12 * per.abs().max(1.0));
            assert!((settings.constant() - constant).abs() <= 1e-12 * constant);
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        let settings = BoundSettings {
            horizon: 10,
            dim: 1,
            radius: 1.0,
            max_norm: 1.0,
            max_k: 2,
            eta: 0.0,
            coeff: 1.0,
        };
        assert!(
            loss_bound(
                &BoundSettings {
                    coeff: 0.0,
                    ..settings
                },
                &[1.0]
            )
            .is_err()
        );
        assert!(loss_bound(&settings, &[]).is_err());
        assert!(loss_bound(&settings, &[1.0, 2.0, 3.0]).is_err());
        assert!(loss_bound(&settings, &[f64::NAN]).is_err());
    }
}
