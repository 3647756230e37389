//! Initialisation (spec §5): the warm-up points fix μ_0, R and the lattice, and the first
//! curve is the segment along their first principal component between the two extreme
//! projections, its ends snapped to Q_δ.

use super::lattice::{Lattice, MAX_BALL_RADII, MAX_LATTICE_STEPS};
use super::params::{PrincipalCurveConfig, Radius};
use super::pca::{first_component, mean_of};
use crate::error::{Error, Result};

/// Above this many warm-up points, the two most distant snapped points are found by the
/// two-pass farthest-point estimate instead of comparing every pair.
const EXACT_PAIR_LIMIT: usize = 2000;

/// The lattice and the first curve (its two vertex keys, row-major) from the warm-up points
/// (user coordinates, row-major); `Ok(None)` when they cannot make a segment yet (every
/// point equal, or every point snapped to one lattice point), so that more are collected.
pub(crate) fn initial_curve(
    warmup: &[f64],
    dim: usize,
    config: &PrincipalCurveConfig,
) -> Result<Option<(Lattice, Vec<i64>)>> {
    let mut origin = vec![0.0; dim];
    mean_of(warmup, dim, &mut origin);
    let centred: Vec<f64> = warmup
        .chunks_exact(dim)
        .flat_map(|row| row.iter().zip(&origin).map(|(x, m)| x - m))
        .collect();
    let root_d = (dim as f64).sqrt();
    let radius = match config.radius {
        Radius::Given(radius) => radius,
        Radius::Auto => {
            let largest = centred
                .chunks_exact(dim)
                .map(|y| y.iter().map(|v| v * v).sum::<f64>())
                .fold(0.0, f64::max)
                .sqrt();
            1.5 * largest / root_d
        }
    };
    if !(radius > 0.0 && radius.is_finite()) {
        return Ok(None);
    }
    let spacing = config.delta.unwrap_or(2.0 * root_d * radius / 100.0);
    if spacing > radius {
        return Err(Error::invalid_parameter(
            "delta",
            format!(
                "must not exceed the radius R = {radius:?} fixed by the warm-up, got {spacing:?}"
            ),
        ));
    }
    if root_d * radius / spacing > MAX_LATTICE_STEPS {
        return Err(Error::invalid_parameter(
            "delta",
            format!(
                "must be at least √d R / {MAX_LATTICE_STEPS:e} = {:?} (R = {radius:?}), got \
                 {spacing:?}: a finer lattice is not representable",
                root_d * radius / MAX_LATTICE_STEPS
            ),
        ));
    }
    let lattice = Lattice::new(origin, radius, spacing);
    if let Some(far) = centred.chunks_exact(dim).find(|y| !lattice.within_reach(y)) {
        let distance = far.iter().map(|v| v * v).sum::<f64>().sqrt();
        return Err(Error::invalid_parameter(
            "radius",
            format!(
                "R = {radius:?} is far too small for the data: a warm-up point lies {distance:?} \
                 from the warm-up mean, more than {MAX_BALL_RADII:e} times √d R"
            ),
        ));
    }
    let zero = vec![0.0; dim];
    let Some(direction) = first_component(&centred, dim, &zero) else {
        return Ok(None);
    };
    let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
    for y in centred.chunks_exact(dim) {
        let s: f64 = y.iter().zip(&direction).map(|(a, b)| a * b).sum();
        low = low.min(s);
        high = high.max(s);
    }
    let snap = |s: f64| {
        let y: Vec<f64> = direction.iter().map(|u| s * u).collect();
        lattice
            .nearest(&y)
            .unwrap_or_else(|| lattice.snap_inside(&y))
    };
    let (start, end) = (snap(low), snap(high));
    if start != end {
        let mut keys = start;
        keys.extend(end);
        return Ok(Some((lattice, keys)));
    }
    // Both ends on one lattice point: the two most distant snapped data points.
    let snapped: Vec<Vec<i64>> = centred
        .chunks_exact(dim)
        .map(|y| lattice.nearest(y).unwrap_or_else(|| lattice.snap_inside(y)))
        .collect();
    let distance = |a: &[i64], b: &[i64]| -> i128 {
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                let d = (x - y) as i128;
                d * d
            })
            .sum()
    };
    let mut best: Option<(i128, usize, usize)> = None;
    if snapped.len() <= EXACT_PAIR_LIMIT {
        for i in 0..snapped.len() {
            for j in i + 1..snapped.len() {
                let d = distance(&snapped[i], &snapped[j]);
                if d > 0 && best.is_none_or(|(b, _, _)| d > b) {
                    best = Some((d, i, j));
                }
            }
        }
    } else {
        let farthest = |from: usize| {
            (0..snapped.len())
                .map(|j| (distance(&snapped[from], &snapped[j]), j))
                .fold((0, from), |a, b| if b.0 > a.0 { b } else { a })
        };
        let (_, a) = farthest(0);
        let (d, b) = farthest(a);
        if d > 0 {
            best = Some((d, a.min(b), a.max(b)));
        }
    }
    Ok(best.map(|(_, i, j)| {
        let mut keys = snapped[i].clone();
        keys.extend_from_slice(&snapped[j]);
        (lattice, keys)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curves::PrincipalCurveParams;

    #[test]
    fn the_first_segment_follows_the_first_component() {
        // Points along y = x/2 around (10, 5).
        let warmup: Vec<f64> = (0..21)
            .flat_map(|i| {
                let s = i as f64 - 10.0;
                [
                    10.0 + s,
                    5.0 + 0.5 * s + if i % 2 == 0 { 0.01 } else { -0.01 },
                ]
            })
            .collect();
        let config = PrincipalCurveParams::new().check().unwrap();
        let (lattice, keys) = initial_curve(&warmup, 2, &config).unwrap().unwrap();
        assert!((lattice.origin()[0] - 10.0).abs() < 1e-12);
        let mut start = [0.0; 2];
        let mut end = [0.0; 2];
        lattice.position(&keys[..2], &mut start);
        lattice.position(&keys[2..], &mut end);
        // The extremes ±(10, 5), each within half a lattice step per coordinate.
        let half = 0.5 * lattice.spacing() + 1e-12;
        assert!(
            (start[0] + 10.0).abs() <= half && (start[1] + 5.0).abs() <= half,
            "{start:?}"
        );
        assert!(
            (end[0] - 10.0).abs() <= half && (end[1] - 5.0).abs() <= half,
            "{end:?}"
        );
        // R = 1.5 · max ‖x − μ‖ / √2.
        let largest = warmup
            .chunks_exact(2)
            .map(|p| (p[0] - lattice.origin()[0]).hypot(p[1] - lattice.origin()[1]))
            .fold(0.0, f64::max);
        assert!((lattice.radius() - 1.5 * largest / 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(
            lattice.spacing(),
            2.0 * 2f64.sqrt() * lattice.radius() / 100.0
        );
    }

    #[test]
    fn equal_points_wait_for_more() {
        let warmup = vec![1.0; 40];
        let config = PrincipalCurveParams::new().check().unwrap();
        assert!(initial_curve(&warmup, 2, &config).unwrap().is_none());
    }

    #[test]
    fn a_spacing_above_the_radius_is_an_error() {
        let warmup: Vec<f64> = (0..20).map(|i| i as f64).collect();
        let config = PrincipalCurveParams::new().delta(100.0).check().unwrap();
        let error = initial_curve(&warmup, 1, &config).unwrap_err();
        assert!(error.to_string().contains("delta"), "{error}");
    }
}
