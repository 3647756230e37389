//! The learner's internal coordinates: x ↦ (x − μ_0) / s, and the radius R that bounds them.
//!
//! - μ_0 is the mean of the warm-up points when centring is on (the default with R `auto`),
//!   0 otherwise;
//! - s is the vector of column standard deviations of the warm-up points (the unbiased
//!   estimate, n − 1 in the denominator) when `scale` is on, 1 otherwise; a column with no
//!   spread keeps s = 1;
//! - R is given, or 1.5 × the largest ‖x − μ_0‖ (in internal coordinates) among the warm-up
//!   points (1 if they all coincide with μ_0).
//!
//! Every output (centres, the model) is mapped back to the user's coordinates c ↦ s·c + μ_0.
//! Losses are computed in the internal coordinates, which are the user's when `scale` is off.

use serde::{Deserialize, Serialize};

use super::params::{MIN_RADIUS, PacoConfig, Radius};
use crate::data::MAX_COORDINATE;
use crate::error::{Error, Result};
use crate::geometry::squared_norm;

/// The map between the user's and the learner's coordinates, and the radius R.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    origin: Vec<f64>,
    scales: Option<Vec<f64>>,
    radius: f64,
}

impl Frame {
    /// The frame with no centring and no scaling (μ_0 = 0, s = 1) and a given radius.
    pub(crate) fn plain(dim: usize, radius: f64) -> Self {
        Self {
            origin: vec![0.0; dim],
            scales: None,
            radius,
        }
    }

    /// The frame fixed by the warm-up points (row-major, at least one).
    pub(crate) fn from_points(points: &[f64], dim: usize, config: &PacoConfig) -> Result<Self> {
        let n = points.len() / dim;
        debug_assert!(n >= 1);
        let mut origin = vec![0.0; dim];
        if config.center {
            for point in points.chunks_exact(dim) {
                for (o, x) in origin.iter_mut().zip(point) {
                    *o += x;
                }
            }
            for o in &mut origin {
                *o /= n as f64;
            }
        }
        let scales = config.scale.then(|| {
            let mut sums = vec![0.0; dim];
            let mut means = vec![0.0; dim];
            for point in points.chunks_exact(dim) {
                for (m, x) in means.iter_mut().zip(point) {
                    *m += x;
                }
            }
            for m in &mut means {
                *m /= n as f64;
            }
            for point in points.chunks_exact(dim) {
                for ((s, x), m) in sums.iter_mut().zip(point).zip(&means) {
                    *s += (x - m) * (x - m);
                }
            }
            sums.iter()
                .map(|s| {
                    let sd = (s / (n.max(2) - 1) as f64).sqrt();
                    if sd > 0.0 && sd.is_finite() { sd } else { 1.0 }
                })
                .collect::<Vec<f64>>()
        });
        let mut frame = Self {
            origin,
            scales,
            radius: 1.0,
        };
        frame.radius = match config.radius {
            Radius::Given(radius) => radius,
            Radius::Auto => {
                let mut internal = vec![0.0; dim];
                let mut largest: f64 = 0.0;
                for point in points.chunks_exact(dim) {
                    frame.to_internal(point, &mut internal);
                    largest = largest.max(squared_norm(&internal));
                }
                if largest > 0.0 {
                    1.5 * largest.sqrt()
                } else {
                    1.0
                }
            }
        };
        if !(frame.radius.is_finite() && frame.radius >= MIN_RADIUS && frame.ball_fits()) {
            return Err(Error::InconsistentInput(format!(
                "the radius R = {:e} does not fit the data's scale: R must be at least \
                 {MIN_RADIUS:e}, and the ball of radius 2R around the centre must lie within \
                 ±{MAX_COORDINATE:e} (give another radius, or rescale the data)",
                frame.radius
            )));
        }
        Ok(frame)
    }

    /// Whether every point of the ball of radius 2R, mapped to the user's coordinates, has
    /// coordinates within ±MAX_COORDINATE (so every centre is a valid [`crate::kmeans::Centres`]).
    fn ball_fits(&self) -> bool {
        let reach = 2.0 * self.radius;
        self.origin.iter().enumerate().all(|(i, m)| {
            let scale = self.scales.as_ref().map_or(1.0, |s| s[i]);
            // A relative margin for the rounding of s·c + μ_0.
            (reach * scale + m.abs()) * (1.0 + 1e-9) <= MAX_COORDINATE
        })
    }

    /// x ↦ (x − μ_0) / s.
    #[inline]
    pub(crate) fn to_internal(&self, point: &[f64], out: &mut [f64]) {
        match &self.scales {
            None => {
                for ((o, x), m) in out.iter_mut().zip(point).zip(&self.origin) {
                    *o = x - m;
                }
            }
            Some(scales) => {
                for (((o, x), m), s) in out.iter_mut().zip(point).zip(&self.origin).zip(scales) {
                    *o = (x - m) / s;
                }
            }
        }
    }

    /// c ↦ s·c + μ_0, for every row of `centres`.
    pub(crate) fn to_user(&self, centres: &[f64]) -> Vec<f64> {
        let dim = self.origin.len();
        let mut out = Vec::with_capacity(centres.len());
        for centre in centres.chunks_exact(dim) {
            match &self.scales {
                None => out.extend(centre.iter().zip(&self.origin).map(|(c, m)| c + m)),
                Some(scales) => out.extend(
                    centre
                        .iter()
                        .zip(&self.origin)
                        .zip(scales)
                        .map(|((c, m), s)| c * s + m),
                ),
            }
        }
        out
    }

    /// μ_0.
    pub fn origin(&self) -> &[f64] {
        &self.origin
    }

    /// The column scales s, when the columns are standardised.
    pub fn scales(&self) -> Option<&[f64]> {
        self.scales.as_deref()
    }

    /// R, in internal coordinates.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.origin.len()
    }

    pub(crate) fn validate(&self, dim: usize) -> Result<()> {
        let scales_ok = self
            .scales
            .as_ref()
            .is_none_or(|s| s.len() == dim && s.iter().all(|v| v.is_finite() && *v > 0.0));
        if self.origin.len() != dim
            || !scales_ok
            || self.origin.iter().any(|v| !v.is_finite())
            || !(self.radius.is_finite() && self.radius >= MIN_RADIUS && self.ball_fits())
        {
            return Err(Error::InvalidSnapshot(
                "PACBO: the coordinate frame is inconsistent".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::params::PacoParams;

    #[test]
    fn warm_up_fixes_centre_scale_and_radius() {
        let points = [0.0, 10.0, 2.0, 14.0, 4.0, 18.0];
        let config = PacoParams::new().scale(true).check().unwrap();
        let frame = Frame::from_points(&points, 2, &config).unwrap();
        assert_eq!(frame.origin(), &[2.0, 14.0]);
        assert_eq!(frame.scales().unwrap(), &[2.0, 4.0]);
        // Internal points (−1, −1), (0, 0), (1, 1): R = 1.5 √2.
        assert!((frame.radius() - 1.5 * 2f64.sqrt()).abs() < 1e-15);
        let mut internal = [0.0; 2];
        frame.to_internal(&[4.0, 18.0], &mut internal);
        assert_eq!(internal, [1.0, 1.0]);
        assert_eq!(frame.to_user(&internal), vec![4.0, 18.0]);
        // All points at μ_0: R falls back to 1.
        let same = Frame::from_points(&[3.0, 3.0, 3.0, 3.0], 2, &config).unwrap();
        assert_eq!(same.radius(), 1.0);
    }
}
