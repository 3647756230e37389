//! Squared distances in the expanded form ‖x‖² + ‖c‖² − 2x·c, the products x·c of a block
//! of points and a few centres as one small matrix product (`matrixmultiply`, through
//! ndarray), for d > [`super::assign::MAX_GROUPED_DIM`] where a distance is long enough
//! for the product's register blocking to pay: at d = 64 it takes about a quarter of the
//! instructions of direct differences.
//!
//! **They never decide anything alone.** The expanded form cancels, so it is not the value
//! [`squared_distance`](crate::geometry::squared_distance) returns (call it s). Each of
//! ‖x‖², ‖c‖² and x·c is a sum of d products, whose error is at most γ_d = dε/(1 − dε)
//! times the sum of the magnitudes of its terms, for any summation order and with or
//! without fused multiply-adds (Higham, *Accuracy and Stability of Numerical Algorithms*,
//! §3.1), and the two final additions add at most 2ε of the result; so the expanded value a
//! satisfies |a − ‖x − c‖²| ≤ γ_{d+3}(‖x‖ + ‖c‖)². The direct s errs by at most
//! γ_{d+2}‖x − c‖² ≤ γ_{d+2}(‖x‖ + ‖c‖)². Hence
//!
//! |a − s| ≤ E = 2γ_{d+3}(‖x‖ + ‖c‖)²,
//!
//! and the callers use twice that ([`error_scale`]). Where a comparison of s with another
//! value is decided with a margin larger than E (a − E > D² ⇒ s > D²), the expanded value
//! decides it; otherwise s itself is computed. Every result is therefore the one the direct
//! differences give, bit for bit, whatever the instruction set `matrixmultiply` picks (with
//! or without fused multiply-adds) and whatever the number of threads.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};

/// E / (‖x‖ + ‖c‖)² at dimension `dim`: 2γ_{d+3} from the analysis above, doubled (which
/// also covers the rounding of the norms from which ‖x‖ + ‖c‖ is taken).
pub(crate) fn error_scale(dim: usize) -> f64 {
    4.0 * (dim as f64 + 3.0) * f64::EPSILON
}

/// The products x_i·c_t of the m row-major `rows` (m × d) and the t row-major `centres`
/// (t × d), as an m × t matrix.
pub(crate) fn products(rows: &[f64], centres: &[f64], dim: usize) -> Array2<f64> {
    let rows = ArrayView2::from_shape((rows.len() / dim, dim), rows)
        .expect("invariant: whole rows of d values");
    let centres = ArrayView2::from_shape((centres.len() / dim, dim), centres)
        .expect("invariant: whole rows of d values");
    let mut products = Array2::<f64>::zeros((rows.nrows(), centres.nrows()));
    general_mat_mul(1.0, &rows, &centres.t(), 0.0, &mut products);
    products
}

/// A bound E on |a − s| for one pair, from the squared norms of the point and the centre.
#[inline(always)]
pub(crate) fn error_bound(point_norm: f64, centre_norm: f64, scale: f64) -> f64 {
    let reach = point_norm.sqrt() + centre_norm.sqrt();
    scale * reach * reach
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{squared_distance, squared_norm};
    use crate::rng::StreamRng;

    /// The bound holds on points far from the origin against their spread (where the
    /// expansion cancels most) and on points near each other, with margin to spare, but
    /// not by a factor that would make it useless: the largest error seen is within a
    /// factor 1e4 of the bound.
    #[test]
    fn the_error_bound_holds_and_is_not_vacuous() {
        let mut rng = StreamRng::seed_from(3);
        let mut worst: f64 = 0.0;
        for dim in [17, 64, 300] {
            let scale = error_scale(dim);
            for offset in [0.0, 1e3, 1e6] {
                let rows: Vec<f64> = (0..200 * dim)
                    .map(|_| offset + rng.standard_normal())
                    .collect();
                let centres: Vec<f64> = (0..7 * dim)
                    .map(|_| offset + 1e-3 * rng.standard_normal())
                    .collect();
                let products = products(&rows, &centres, dim);
                for (i, x) in rows.chunks_exact(dim).enumerate() {
                    for (t, c) in centres.chunks_exact(dim).enumerate() {
                        let (xx, cc) = (squared_norm(x), squared_norm(c));
                        let expanded = xx + cc - 2.0 * products[[i, t]];
                        let bound = error_bound(xx, cc, scale);
                        let error = (expanded - squared_distance(x, c)).abs();
                        assert!(
                            error <= bound,
                            "d {dim}, offset {offset}: {error} > {bound}"
                        );
                        worst = worst.max(error / bound);
                    }
                }
            }
        }
        assert!(worst > 1e-4, "largest error / bound: {worst}");
    }
}
