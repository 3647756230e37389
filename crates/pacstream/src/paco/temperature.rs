//! The inverse temperature λ_t of the quasi-posterior (the adaptive calibration of Li, Guedj &
//! Loustau 2018):
//!
//! λ_t = a · (d + 2) / (2 √n_t R²),
//!
//! with a the user's multiplier (`coeff`; the paper's corollary is stated for a = 1, and
//! [`super::bounds`] gives it for every a) and n_t = t in exact memory, min(t, W) in window
//! memory. λ_0 := λ_1: the paper's λ_0 = 1 is not invariant to the units of the data, λ_1
//! is, and a non-increasing sequence keeps the corollary.
//!
//! Every factor is exact under a change of units by a power of two (R² scales by 4^j, the
//! square root of a count does not change), so λ_t scales by exactly 4^{−j}.

/// λ for n points in memory (n ≥ 1; n = 0 is read as 1, which is the λ_0 := λ_1 rule).
#[inline]
pub(crate) fn lambda(coeff: f64, dim: usize, n_points: u64, radius: f64) -> f64 {
    let n = n_points.max(1) as f64;
    coeff * (dim as f64 + 2.0) / (2.0 * n.sqrt() * (radius * radius))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_and_scales_exactly() {
        let value = lambda(1.0, 5, 100, 2.0);
        assert!((value - 7.0 / (2.0 * 10.0 * 4.0)).abs() < 1e-16);
        assert_eq!(lambda(1.0, 5, 0, 2.0), lambda(1.0, 5, 1, 2.0));
        for n in [1, 7, 1000] {
            let base = lambda(3.3, 4, n, 1.7);
            assert_eq!(lambda(3.3, 4, n, 1.7 * 8.0), base / 64.0);
        }
    }
}
