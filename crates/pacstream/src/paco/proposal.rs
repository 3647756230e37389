//! The proposal of the centres: a multivariate Student t with 3 degrees of freedom around
//! each proposal mean, its exact log density, and its scale.
//!
//! # The law
//!
//! c'_j = m_j + σ_j · z_j / √(W_j / 3), z_j ~ N(0, I_d), W_j ~ χ²_3, one W_j per centre shared
//! by its d coordinates. Its density is
//!
//! ρ(c; m, σ) = Γ((3+d)/2) / (Γ(3/2) (3π)^{d/2} σ^d) · (1 + ‖c − m‖²/(3σ²))^{−(3+d)/2},
//!
//! and with σ² = 2τ² this is the paper's (1 + ‖c − m‖²/(6τ²)) form. W_j is drawn as the sum of
//! three squared standard normals, which is χ²_3 exactly; so a centre costs d + 3 normal
//! draws, in the order z_1..z_d, then the three of W.
//!
//! # In the acceptance ratio
//!
//! The sampler never uses ρ alone: each centre of a state enters log α through
//! g(c_j) = log U_{B_d(2R)}(c_j) − log ρ(c_j; m_j, σ_j) (its prior density over its proposal
//! density), which is
//!
//! g = [log Γ(d/2+1) − log Γ((3+d)/2) + log Γ(3/2) + (d/2) log 3] + d log(σ_j/(2R))
//!     + ((3+d)/2) log(1 + ‖c − m‖²/(3σ_j²)).
//!
//! Every term is free of the units of the data (σ_j/(2R) and ‖c − m‖²/σ_j² are ratios), which
//! is what makes the chain exactly scale-equivariant for changes of units by powers of two.
//! A centre proposed from the prior itself (a surplus centre, beyond the distinct points in
//! memory) has g = 0: its prior and proposal densities cancel.

use super::params::ProposalScale;
use super::prior::{ln_gamma_half, log_unit_ball_density};
use crate::rng::StreamRng;

/// log Γ((3+d)/2) − log Γ(3/2) − (d/2) log(3π): the log normalising constant of the Student t
/// density with unit scale.
pub(crate) fn log_student_constant(dim: usize) -> f64 {
    ln_gamma_half(dim + 3) - ln_gamma_half(3) - 0.5 * dim as f64 * (3.0 * std::f64::consts::PI).ln()
}

/// The exact log density of the proposal of one centre: log ρ(c; m, σ).
pub fn student_log_density(centre: &[f64], mean: &[f64], sigma: f64) -> f64 {
    let dim = centre.len() as f64;
    let distance = crate::geometry::squared_distance(centre, mean);
    log_student_constant(centre.len())
        - dim * sigma.ln()
        - 0.5 * (3.0 + dim) * (distance / (3.0 * sigma * sigma)).ln_1p()
}

/// Draws one centre c = m + σ z / √(W/3) into `centre`: d normals for z, then three for W.
pub(crate) fn draw_student(centre: &mut [f64], mean: &[f64], sigma: f64, rng: &mut StreamRng) {
    for value in centre.iter_mut() {
        *value = rng.standard_normal();
    }
    let mut chi_square = 0.0;
    for _ in 0..3 {
        let z = rng.standard_normal();
        chi_square += z * z;
    }
    // W > 0 with probability 1; a zero W (never seen) would put the draw at infinity, so
    // it is read as the smallest positive W instead, far in the tail.
    let factor = sigma / (chi_square.max(f64::MIN_POSITIVE) / 3.0).sqrt();
    for (value, m) in centre.iter_mut().zip(mean) {
        *value = m + factor * *value;
    }
}

/// Draws one centre from the *defensive mixture* (1 − w)·t₃(m, σ) + w·U_{B_d(ρ)} into
/// `centre`: one uniform picks the component, then d normals (the direction of either
/// component, or z of the t₃), three normals (W of the t₃) and one uniform (the radius in the
/// ball) are always drawn, in that order, so that the number of draws does not depend on
/// the component.
pub(crate) fn draw_defensive(
    centre: &mut [f64],
    mean: &[f64],
    sigma: f64,
    ball_radius: f64,
    weight: f64,
    rng: &mut StreamRng,
) {
    let component = rng.next_f64();
    for value in centre.iter_mut() {
        *value = rng.standard_normal();
    }
    let mut chi_square = 0.0;
    for _ in 0..3 {
        let z = rng.standard_normal();
        chi_square += z * z;
    }
    let radius_draw = rng.next_f64();
    if component < weight {
        let norm = crate::geometry::squared_norm(centre).sqrt();
        let dim = centre.len();
        let factor = if norm > 0.0 {
            ball_radius * radius_draw.powf(1.0 / dim as f64) / norm
        } else {
            0.0
        };
        for value in centre.iter_mut() {
            *value *= factor;
        }
    } else {
        let factor = sigma / (chi_square.max(f64::MIN_POSITIVE) / 3.0).sqrt();
        for (value, m) in centre.iter_mut().zip(mean) {
            *value = m + factor * *value;
        }
    }
}

/// log U(c) − log q(c) for the defensive mixture q = (1 − w)·t₃ + w·U, from
/// g_t = log U(c) − log t₃(c) (a centre inside the ball): −log(w + (1 − w) e^{−g_t}),
/// at most ln(1/w) however far c is from the mean (with w = 0, g_t itself).
#[inline]
pub(crate) fn defensive_term(g_t: f64, weight: f64) -> f64 {
    if weight <= 0.0 {
        return g_t;
    }
    let a = weight.ln();
    let b = (1.0 - weight).ln() - g_t;
    let (high, low) = if a > b { (a, b) } else { (b, a) };
    -(high + (low - high).exp().ln_1p())
}

/// A draw from the proposal of one centre, for tests of the law against its CDF and
/// density: the same draws as the sampler's.
#[doc(hidden)]
pub fn student_draw(mean: &[f64], sigma: f64, rng: &mut StreamRng) -> Vec<f64> {
    let mut centre = vec![0.0; mean.len()];
    draw_student(&mut centre, mean, sigma, rng);
    centre
}

/// The constants of one proposal slot j (a centre with its own mean and scale), computed
/// once per round: enough to evaluate g(c_j) with one distance and one log.
#[derive(Clone, Debug)]
pub(crate) struct SlotDensity {
    /// σ_j.
    pub(crate) sigma: f64,
    /// 1 / (3σ_j²).
    pub(crate) inverse_three_variance: f64,
    /// (C_U − C_t) + d log(σ_j/(2R)): the part of g that does not depend on c.
    pub(crate) constant: f64,
}

/// The per-dimension constants of g shared by every slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DensityConstants {
    dim: usize,
    /// log Γ(d/2+1) − (d/2) log π − [log Γ((3+d)/2) − log Γ(3/2) − (d/2) log(3π)].
    prior_over_student: f64,
    /// (3 + d)/2.
    exponent: f64,
}

impl DensityConstants {
    pub(crate) fn new(dim: usize) -> Self {
        Self {
            dim,
            prior_over_student: log_unit_ball_density(dim) - log_student_constant(dim),
            exponent: 0.5 * (3.0 + dim as f64),
        }
    }

    /// The constants of a slot of scale σ in a ball of radius 2R.
    pub(crate) fn slot(&self, sigma: f64, radius: f64) -> SlotDensity {
        SlotDensity {
            sigma,
            inverse_three_variance: 1.0 / (3.0 * (sigma * sigma)),
            constant: self.prior_over_student + self.dim as f64 * (sigma / (2.0 * radius)).ln(),
        }
    }

    /// g(c) = log U(c) − log ρ(c; m, σ) for a centre inside the ball.
    #[inline]
    pub(crate) fn log_prior_over_proposal(
        &self,
        slot: &SlotDensity,
        centre: &[f64],
        mean: &[f64],
    ) -> f64 {
        let distance = crate::geometry::squared_distance(centre, mean);
        slot.constant + self.exponent * (distance * slot.inverse_three_variance).ln_1p()
    }
}

/// The proposal scale σ_j of a slot whose mean has `count` points of memory assigned.
///
/// - Laplace: b / √(2 λ_t max(n_j, 1));
/// - Paper: √2 · b · R / √(p n_t).
pub fn proposal_sigma(
    rule: ProposalScale,
    multiplier: f64,
    lambda: f64,
    count: f64,
    radius: f64,
    max_k: usize,
    n_points: u64,
) -> f64 {
    match rule {
        ProposalScale::Laplace => multiplier / (2.0 * lambda * count.max(1.0)).sqrt(),
        ProposalScale::Paper => {
            let tau = multiplier * radius / (max_k as f64 * n_points.max(1) as f64).sqrt();
            std::f64::consts::SQRT_2 * tau
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defensive_term_is_the_mixture_density() {
        let (g_t, w) = (-7.5f64, 0.05);
        let expected = -(w + (1.0 - w) * (-g_t).exp()).ln();
        assert!((defensive_term(g_t, w) - expected).abs() < 1e-12);
        // Far in the tail: bounded by ln(1/w).
        assert!((defensive_term(400.0, w) - (1.0 / w).ln()).abs() < 1e-12);
        assert_eq!(defensive_term(3.0, 0.0), 3.0);
    }

    /// The log density integrates to 1 (d = 1 and d = 2, on a wide grid; the tails beyond
    /// are accounted for in closed form for d = 1 and bounded for d = 2).
    #[test]
    fn density_is_normalised() {
        let sigma = 0.7;
        // d = 1: ∫ over [−L, L] plus the two tails of a t_3 (scale σ).
        let limit = 200.0;
        let steps = 400_000;
        let h = 2.0 * limit / steps as f64;
        let mass: f64 = (0..steps)
            .map(|i| {
                let x = -limit + (i as f64 + 0.5) * h;
                student_log_density(&[x], &[0.0], sigma).exp() * h
            })
            .sum();
        let t = limit / sigma;
        let cdf = 0.5
            + (t / (3f64.sqrt() * (1.0 + t * t / 3.0)) + (t / 3f64.sqrt()).atan())
                / std::f64::consts::PI;
        let tails = 2.0 * (1.0 - cdf);
        assert!(
            (mass + tails - 1.0).abs() < 1e-6,
            "mass {mass} tails {tails}"
        );
        // d = 2 in polar form: ∫ 2π r ρ(r) dr over [0, L].
        let steps = 200_000;
        let limit = 400.0;
        let h = limit / steps as f64;
        let mass: f64 = (0..steps)
            .map(|i| {
                let r = (i as f64 + 0.5) * h;
                2.0 * std::f64::consts::PI
                    * r
                    * student_log_density(&[r, 0.0], &[0.0, 0.0], sigma).exp()
                    * h
            })
            .sum();
        // The radial tail beyond L decays like r^{-4}: its mass is below 1e-5 here.
        assert!((mass - 1.0).abs() < 2e-5, "mass {mass}");
    }

    #[test]
    fn g_is_prior_minus_proposal() {
        let dim = 3;
        let radius = 4.0;
        let constants = DensityConstants::new(dim);
        let slot = constants.slot(0.9, radius);
        let centre = [0.3, -1.0, 2.0];
        let mean = [0.0, 0.5, 1.0];
        let log_prior = log_unit_ball_density(dim) - dim as f64 * (2.0 * radius).ln();
        let expected = log_prior - student_log_density(&centre, &mean, 0.9);
        let found = constants.log_prior_over_proposal(&slot, &centre, &mean);
        assert!((found - expected).abs() < 1e-13, "{found} {expected}");
    }
}
