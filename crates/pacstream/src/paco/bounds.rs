//! The regret bound of the seed's adaptive corollary, as a function.
//!
//! For exact draws from the quasi-posteriors ρ̂_t (not for the N-step chain, which carries no
//! guarantee of its own), with η ≥ 0, R ≥ max_t ‖x_t‖ (centred data), λ_t as in
//! [`super::temperature`] with a = 1, and C_1 = (2R + max_t ‖x_t‖)²:
//!
//! Σ_t E ℓ(ĉ_t, x_t) ≤ inf_{k ≤ p} { L*_k + (d k R²/(d+2)) √T log(4√T) + k (2R²η/(d+2)) √T }
//!                      + ( 2R² log p/(d+2) + dR²/(d+2) + (d+2) C_1²/(2R²) ) √T,
//!
//! where L*_k = inf_{c ∈ C(k,R)} Σ_t ℓ(c, x_t) and C(k, R) = {c ∈ R^{dk} : ‖c_j‖ ≤ R ∀j}.
//! [`regret_bound`] computes the right-hand side from the oracle losses L*_k; the oracle
//! ([`super::oracle`]) approximates them by k-means with restarts, whose local optima make
//! the computed right-hand side an over-estimate of the true one.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What the bound depends on besides the oracle losses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundSettings {
    /// T, the number of rounds.
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
}

impl BoundSettings {
    fn check(&self) -> Result<()> {
        if self.horizon == 0 || self.dim == 0 || self.max_k == 0 {
            return Err(Error::invalid_parameter(
                "horizon",
                "T, d and p must be >= 1",
            ));
        }
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(Error::invalid_parameter(
                "radius",
                format!("must be finite and > 0, got {:?}", self.radius),
            ));
        }
        if !(self.max_norm.is_finite() && self.max_norm >= 0.0) {
            return Err(Error::invalid_parameter(
                "max_norm",
                format!("must be finite and >= 0, got {:?}", self.max_norm),
            ));
        }
        if !(self.eta.is_finite() && self.eta >= 0.0) {
            return Err(Error::invalid_parameter(
                "eta",
                format!("must be finite and >= 0, got {:?}", self.eta),
            ));
        }
        Ok(())
    }

    /// The price of one cluster: (d R²/(d+2)) √T log(4√T) + (2R²η/(d+2)) √T.
    pub fn per_cluster(&self) -> f64 {
        let d = self.dim as f64;
        let r2 = self.radius * self.radius;
        let root_t = (self.horizon as f64).sqrt();
        d * r2 / (d + 2.0) * root_t * (4.0 * root_t).ln() + 2.0 * r2 * self.eta / (d + 2.0) * root_t
    }

    /// The term outside the infimum:
    /// (2R² log p/(d+2) + dR²/(d+2) + (d+2) C_1²/(2R²)) √T.
    pub fn constant(&self) -> f64 {
        let d = self.dim as f64;
        let r2 = self.radius * self.radius;
        let c1 = (2.0 * self.radius + self.max_norm).powi(2);
        let root_t = (self.horizon as f64).sqrt();
        (2.0 * r2 * (self.max_k as f64).ln() / (d + 2.0)
            + d * r2 / (d + 2.0)
            + (d + 2.0) * c1 * c1 / (2.0 * r2))
            * root_t
    }

    /// Whether the corollary's assumption R ≥ max_t ‖x_t‖ holds.
    pub fn radius_covers_data(&self) -> bool {
        self.radius >= self.max_norm
    }
}

/// The right-hand side of the corollary and where its infimum is attained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegretBound {
    /// The bound on Σ_t E ℓ(ĉ_t, x_t).
    pub value: f64,
    /// The k attaining the infimum.
    pub best_k: usize,
    /// L*_k at that k.
    pub best_oracle_loss: f64,
    /// The term outside the infimum.
    pub constant: f64,
    /// The price of one cluster inside the infimum.
    pub per_cluster: f64,
}

/// The bound from the oracle losses L*_1, L*_2, ... (index k − 1; at least one, at most p;
/// the infimum runs over the k given, so leaving out a k whose term cannot win is harmless).
///
/// ```
/// use pacstream::paco::bounds::{BoundSettings, regret_bound};
///
/// let settings = BoundSettings { horizon: 100, dim: 1, radius: 1.0, max_norm: 1.0, max_k: 2, eta: 0.0 };
/// let bound = regret_bound(&settings, &[50.0, 0.0])?;
/// // per cluster: (1/3)·10·ln 40; constant: (2 ln 2/3 + 1/3 + 3·81/2)·10.
/// let per = 10.0 * 40f64.ln() / 3.0;
/// let constant = (2.0 * 2f64.ln() / 3.0 + 1.0 / 3.0 + 121.5) * 10.0;
/// assert!((bound.value - (constant + (50.0 + per).min(2.0 * per))).abs() < 1e-9);
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn regret_bound(settings: &BoundSettings, oracle_losses: &[f64]) -> Result<RegretBound> {
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
    let (best_k, best) = oracle_losses
        .iter()
        .enumerate()
        .map(|(i, loss)| (i + 1, loss + (i + 1) as f64 * per_cluster))
        .fold((0, f64::INFINITY), |best, (k, value)| {
            if value < best.1 { (k, value) } else { best }
        });
    Ok(RegretBound {
        value: constant + best,
        best_k,
        best_oracle_loss: oracle_losses[best_k - 1],
        constant,
        per_cluster,
    })
}
