//! Squared Euclidean distances.
//!
//! The sums run over four independent accumulators combined in a fixed order: the compiler
//! vectorises them, and the result is still a fixed function of the inputs (the same bits on
//! every run and every thread count).

/// ‖a − b‖².
///
/// ```
/// use pacstream::geometry::squared_distance;
/// assert_eq!(squared_distance(&[1.0, 2.0], &[4.0, 6.0]), 25.0);
/// ```
#[inline(always)]
pub fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [0.0f64; 4];
    let mut a_chunks = a.chunks_exact(4);
    let mut b_chunks = b.chunks_exact(4);
    for (x, y) in (&mut a_chunks).zip(&mut b_chunks) {
        for lane in 0..4 {
            let diff = x[lane] - y[lane];
            lanes[lane] += diff * diff;
        }
    }
    let mut tail = 0.0;
    for (x, y) in a_chunks.remainder().iter().zip(b_chunks.remainder()) {
        let diff = x - y;
        tail += diff * diff;
    }
    crate::kernels::sum_quad(lanes) + tail
}

/// ‖a − b‖² summed coordinate by coordinate with fused multiply-adds, in order: the
/// sequential form PACBO's exact evaluation and its kd-tree passes share, so that they agree
/// to the bit.
#[inline(always)]
pub(crate) fn fused_squared_distance(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut distance = 0.0;
    for (x, y) in a.iter().zip(b) {
        let gap = x - y;
        distance = gap.mul_add(gap, distance);
    }
    distance
}

/// ‖a‖².
#[inline]
pub fn squared_norm(a: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let mut chunks = a.chunks_exact(4);
    for x in &mut chunks {
        for lane in 0..4 {
            lanes[lane] += x[lane] * x[lane];
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|x| x * x).sum();
    crate::kernels::sum_quad(lanes) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_definition() {
        let a: Vec<f64> = (0..11).map(|i| i as f64 * 0.5).collect();
        let b: Vec<f64> = (0..11).map(|i| (i * i) as f64 - 3.0).collect();
        let direct: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        assert!((squared_distance(&a, &b) - direct).abs() <= 1e-12 * direct);
        let norm: f64 = a.iter().map(|x| x * x).sum();
        assert!((squared_norm(&a) - norm).abs() <= 1e-12 * norm);
        assert_eq!(squared_distance(&[], &[]), 0.0);
    }
}
