//! The prior π(c) = q(k) · Π_j U_{B_d(2R)}(c_j) and draws from it.
//!
//! - q(k) = e^{−ηk} / Σ_{i=1}^p e^{−ηi} on {1..p};
//! - U_{B_d(2R)} is the uniform density on the ball of radius 2R centred at 0:
//!   log U = log Γ(d/2 + 1) − (d/2) log π − d log(2R) inside, −∞ outside.
//!
//! The term −d log(2R) carries the scale of the data. It never enters an acceptance ratio
//! alone: the sampler pairs it with the −d log σ_j of a proposal density, as d log(σ_j/(2R))
//! (see [`super::proposal`]), so that the chain is scale-equivariant in floating point.

use crate::rng::StreamRng;

/// ln Γ(m/2) for an integer m ≥ 1, exactly as a sum of logarithms: Γ(x + 1) = x Γ(x),
/// Γ(1) = 1, Γ(1/2) = √π. Only half-integer and integer arguments occur here (d/2 + 1,
/// (3 + d)/2, 3/2), and the sum is accurate to a few ulps per term.
pub(crate) fn ln_gamma_half(m: usize) -> f64 {
    debug_assert!(m >= 1);
    let (mut x, mut value) = if m % 2 == 0 {
        (1.0, 0.0)
    } else {
        (0.5, 0.5 * std::f64::consts::PI.ln())
    };
    let target = m as f64 / 2.0;
    while x < target {
        value += x.ln();
        x += 1.0;
    }
    value
}

/// log Γ(d/2 + 1) − (d/2) log π: the log density of the uniform law on the unit ball of R^d
/// is this minus nothing; on the ball of radius 2R it is this − d log(2R).
pub(crate) fn log_unit_ball_density(dim: usize) -> f64 {
    ln_gamma_half(dim + 2) - 0.5 * dim as f64 * std::f64::consts::PI.ln()
}

/// Whether a centre lies in the support B_d(2R) of the prior: ‖c‖² ≤ 4R².
#[inline]
pub(crate) fn in_support(centre: &[f64], radius: f64) -> bool {
    let norm: f64 = crate::geometry::squared_norm(centre);
    norm <= 4.0 * radius * radius
}

/// Draws k ~ q: one uniform u, then the first k whose cumulative probability exceeds u. The
/// probabilities are e^{−η(k−1)} normalised (the common factor e^{−η} cancels), computed in
/// log space so that a large η cannot overflow.
pub(crate) fn draw_n_clusters(eta: f64, max_k: usize, rng: &mut StreamRng) -> usize {
    let u = rng.next_f64();
    // Σ_{i<p} e^{−ηi}, the largest term being 1.
    let total: f64 = (0..max_k).map(|i| (-eta * i as f64).exp()).sum();
    let target = u * total;
    let mut cumulative = 0.0;
    for i in 0..max_k {
        cumulative += (-eta * i as f64).exp();
        if target < cumulative {
            return i + 1;
        }
    }
    max_k
}

/// Writes a draw from the uniform law on the ball of radius `ball_radius` into `centre`:
/// a direction from d standard normals, then a radius ball_radius · U^{1/d} from one
/// uniform (d normals and one uniform, always, in that order).
pub(crate) fn draw_in_ball(centre: &mut [f64], ball_radius: f64, rng: &mut StreamRng) {
    let dim = centre.len();
    for value in centre.iter_mut() {
        *value = rng.standard_normal();
    }
    let u = rng.next_f64();
    let norm = crate::geometry::squared_norm(centre).sqrt();
    // A zero direction has probability 0; the centre of the ball is then as good a draw.
    let factor = if norm > 0.0 {
        ball_radius * u.powf(1.0 / dim as f64) / norm
    } else {
        0.0
    };
    for value in centre.iter_mut() {
        *value *= factor;
    }
}

/// A draw from the prior: k ~ q, then k centres uniform on B_d(2R) (row-major).
pub(crate) fn draw_from_prior(
    eta: f64,
    max_k: usize,
    dim: usize,
    radius: f64,
    rng: &mut StreamRng,
) -> Vec<f64> {
    let k = draw_n_clusters(eta, max_k, rng);
    let mut centres = vec![0.0; k * dim];
    for centre in centres.chunks_exact_mut(dim) {
        draw_in_ball(centre, 2.0 * radius, rng);
    }
    centres
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_of_half_integers() {
        // Γ(1/2) = √π, Γ(1) = 1, Γ(3/2) = √π/2, Γ(5) = 24, Γ(7/2) = 15√π/8.
        let pi: f64 = std::f64::consts::PI;
        let cases = [
            (1, 0.5 * pi.ln()),
            (2, 0.0),
            (3, (pi.sqrt() / 2.0).ln()),
            (10, 24f64.ln()),
            (7, (15.0 * pi.sqrt() / 8.0).ln()),
        ];
        for (m, expected) in cases {
            assert!((ln_gamma_half(m) - expected).abs() < 1e-14, "m = {m}");
        }
        // Stirling is accurate at large arguments: ln Γ(50) = ln 49!.
        let ln_49_factorial: f64 = (1..=49).map(|i| (i as f64).ln()).sum();
        assert!((ln_gamma_half(100) - ln_49_factorial).abs() < 1e-12);
    }

    #[test]
    fn unit_ball_volumes() {
        // Volumes 2, π, 4π/3.
        let pi = std::f64::consts::PI;
        for (dim, volume) in [(1, 2.0), (2, pi), (3, 4.0 * pi / 3.0)] {
            let density: f64 = log_unit_ball_density(dim);
            assert!((density + f64::ln(volume)).abs() < 1e-14);
        }
    }

    #[test]
    fn ball_draws_are_uniform() {
        // For a uniform law on the unit ball of R^d, ‖c‖^d is uniform on [0, 1]; check its
        // deciles with a chi-square statistic (df = 9, critical value 27.9 at 0.001).
        for dim in [1, 2, 5] {
            let mut rng = StreamRng::seed_from(11).child(dim as u64);
            let n = 20_000;
            let mut counts = [0usize; 10];
            let mut centre = vec![0.0; dim];
            for _ in 0..n {
                draw_in_ball(&mut centre, 1.0, &mut rng);
                let r = crate::geometry::squared_norm(&centre).sqrt();
                assert!(r <= 1.0);
                let v = r.powi(dim as i32);
                counts[((v * 10.0) as usize).min(9)] += 1;
            }
            let expected = n as f64 / 10.0;
            let chi2: f64 = counts
                .iter()
                .map(|&c| (c as f64 - expected).powi(2) / expected)
                .sum();
            assert!(chi2 < 27.9, "d = {dim}: chi2 = {chi2}");
        }
    }

    #[test]
    fn n_clusters_follow_q() {
        let (eta, max_k, n) = (0.7, 4, 40_000);
        let mut rng = StreamRng::seed_from(5);
        let mut counts = [0usize; 4];
        for _ in 0..n {
            counts[draw_n_clusters(eta, max_k, &mut rng) - 1] += 1;
        }
        let weights: Vec<f64> = (1..=max_k).map(|k| (-eta * k as f64).exp()).collect();
        let total: f64 = weights.iter().sum();
        let chi2: f64 = counts
            .iter()
            .zip(&weights)
            .map(|(&c, w)| {
                let expected = n as f64 * w / total;
                (c as f64 - expected).powi(2) / expected
            })
            .sum();
        assert!(chi2 < 16.27, "chi2 = {chi2} (df 3, 0.001)");
        // A huge η puts everything on k = 1 without overflow.
        assert_eq!(draw_n_clusters(1e6, 50, &mut rng), 1);
    }
}
