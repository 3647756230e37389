//! The lattice Q_δ = δZ^d ∩ B(0, √d R) on which every vertex lies, and the constants of
//! the loss and of the penalty.
//!
//! Coordinates are internal: x − μ_0, with μ_0 the mean of the warm-up points. A lattice
//! point is named by its integer coordinates (its *key*), never by floats, so that curves can
//! be compared and used as map keys exactly.
//!
//! - c_0 = d(2R + δ)² bounds the squared distance between a point of B(0, √d R) and the
//!   nearest point of a curve with vertices in the ball; rewards are r = max(0, c_0 − Δ).
//! - c_1 = d · ln(1 + 2√d R/δ): |Q_δ| ≤ (1 + 2√d R/δ)^d, so a curve of k segments is one of
//!   at most e^{c_1 (k+1)} and Σ_f e^{−c_1 K(f)} stays bounded; the penalty is
//!   h(f) = κ c_1 K(f).

use serde::{Deserialize, Serialize};

/// The largest number of lattice steps δ in the ball's radius √d R. Lattice keys and the
/// keys of the grid over the stored points are integers: with at most 10⁹ steps across the
/// ball and points at most [`MAX_BALL_RADII`] ball radii from μ_0, every key stays below
/// 10¹⁶, exact in both `i64` and `f64`.
pub const MAX_LATTICE_STEPS: f64 = 1e9;

/// The farthest a point may lie from μ_0, in ball radii √d R. A point farther away means
/// that R (given, or fixed by the warm-up) is far too small for the data; it is refused
/// rather than clipped, since its reward is 0 for every curve and its keys would not be
/// representable.
pub const MAX_BALL_RADII: f64 = 1e6;

/// The lattice of one run: origin μ_0 (user coordinates), radius R, spacing δ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lattice {
    origin: Vec<f64>,
    radius: f64,
    spacing: f64,
}

impl Lattice {
    /// A lattice; the caller checks 0 < δ ≤ R, finite values.
    pub(crate) fn new(origin: Vec<f64>, radius: f64, spacing: f64) -> Self {
        Self {
            origin,
            radius,
            spacing,
        }
    }

    /// μ_0, the mean of the warm-up points, in user coordinates.
    pub fn origin(&self) -> &[f64] {
        &self.origin
    }

    /// R: the data are assumed to lie in B(μ_0, √d R).
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// δ, the spacing of the lattice.
    pub fn spacing(&self) -> f64 {
        self.spacing
    }

    /// The dimension d.
    pub fn dim(&self) -> usize {
        self.origin.len()
    }

    /// √d R, the radius of the ball that holds the lattice points.
    pub fn ball_radius(&self) -> f64 {
        (self.dim() as f64).sqrt() * self.radius
    }

    /// c_0 = d(2R + δ)², the bound on the loss of a point in the ball.
    pub fn loss_bound(&self) -> f64 {
        let width = 2.0 * self.radius + self.spacing;
        self.dim() as f64 * width * width
    }

    /// c_1 = d · ln(1 + 2√d R/δ), the penalty per segment before the multiplier κ.
    pub fn complexity(&self) -> f64 {
        self.dim() as f64 * (2.0 * self.ball_radius() / self.spacing).ln_1p()
    }

    /// Internal coordinates of a user point: x − μ_0.
    pub(crate) fn to_internal(&self, point: &[f64], out: &mut [f64]) {
        for ((o, x), m) in out.iter_mut().zip(point).zip(&self.origin) {
            *o = x - m;
        }
    }

    /// User coordinates of an internal point.
    pub(crate) fn to_user(&self, internal: &[f64], out: &mut [f64]) {
        for ((o, y), m) in out.iter_mut().zip(internal).zip(&self.origin) {
            *o = y + m;
        }
    }

    /// Internal coordinates δ·key of a lattice point.
    pub(crate) fn position(&self, key: &[i64], out: &mut [f64]) {
        for (o, k) in out.iter_mut().zip(key) {
            *o = self.spacing * *k as f64;
        }
    }

    /// Whether the lattice point `key` lies in the ball B(0, √d R).
    pub(crate) fn contains(&self, key: &[i64]) -> bool {
        let norm2: f64 = key
            .iter()
            .map(|k| {
                let v = self.spacing * *k as f64;
                v * v
            })
            .sum();
        norm2 <= self.ball_radius() * self.ball_radius()
    }

    /// Whether the internal point `y` lies within [`MAX_BALL_RADII`] ball radii of 0, so that
    /// it can be stored.
    pub(crate) fn within_reach(&self, y: &[f64]) -> bool {
        let norm2: f64 = y.iter().map(|v| v * v).sum();
        norm2.sqrt() <= MAX_BALL_RADII * self.ball_radius()
    }

    /// Whether the internal point `y` lies in the ball B(0, √d R).
    pub(crate) fn ball_contains(&self, y: &[f64]) -> bool {
        let norm2: f64 = y.iter().map(|v| v * v).sum();
        norm2 <= self.ball_radius() * self.ball_radius()
    }

    /// The lattice point nearest to the internal point `y` (each coordinate rounded, halves
    /// away from zero), if it lies in the ball.
    pub(crate) fn nearest(&self, y: &[f64]) -> Option<Vec<i64>> {
        let key: Vec<i64> = y
            .iter()
            .map(|v| (v / self.spacing).round() as i64)
            .collect();
        self.contains(&key).then_some(key)
    }

    /// The lattice point nearest to `y` after moving `y` radially into the ball by enough
    /// that rounding cannot leave it (a point of Q_δ for any y).
    pub(crate) fn snap_inside(&self, y: &[f64]) -> Vec<i64> {
        let dim = self.dim() as f64;
        // Rounding moves a point by at most √d δ/2.
        let limit = (self.ball_radius() - 0.5 * dim.sqrt() * self.spacing).max(0.0);
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        let scale = if norm > limit { limit / norm } else { 1.0 };
        let key: Vec<i64> = y
            .iter()
            .map(|v| (scale * v / self.spacing).round() as i64)
            .collect();
        if self.contains(&key) {
            key
        } else {
            vec![0; y.len()]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_follow_the_spec() {
        let lattice = Lattice::new(vec![1.0, 2.0], 3.0, 0.5);
        assert_eq!(lattice.loss_bound(), 2.0 * 6.5 * 6.5);
        let expected = 2.0 * (1.0 + 2.0 * 2f64.sqrt() * 3.0 / 0.5).ln();
        assert!((lattice.complexity() - expected).abs() < 1e-14);
        let mut y = [0.0; 2];
        lattice.to_internal(&[2.0, 1.0], &mut y);
        assert_eq!(y, [1.0, -1.0]);
        let mut x = [0.0; 2];
        lattice.to_user(&y, &mut x);
        assert_eq!(x, [2.0, 1.0]);
    }

    #[test]
    fn nearest_lattice_points_stay_in_the_ball() {
        let lattice = Lattice::new(vec![0.0, 0.0], 1.0, 0.25);
        assert_eq!(lattice.nearest(&[0.3, -0.38]), Some(vec![1, -2]));
        // √2 is the ball's radius: (1.5, 0) is outside.
        assert_eq!(lattice.nearest(&[1.5, 0.0]), None);
        let key = lattice.snap_inside(&[10.0, 10.0]);
        assert!(lattice.contains(&key));
        // Moved inward along the diagonal, to within √d δ/2 of the ball's edge.
        assert!(key[0] == key[1] && (3..=4).contains(&key[0]), "{key:?}");
        let mut p = [0.0; 2];
        lattice.position(&[4, 4], &mut p);
        assert_eq!(p, [1.0, 1.0]);
    }
}
