//! Squared distances in the expanded form ‖x‖² + ‖c‖² − 2x·c, the products x·c of a block
//! of points and a few centres as one small matrix product, for
//! d > [`super::assign::MAX_GROUPED_DIM`] where a distance is long enough for register
//! blocking to pay: at d = 64 the product takes about a quarter of the instructions of
//! direct differences.
//!
//! **The product kernel.** The centres are stored once per pass transposed and padded to
//! whole quads ([`CentreColumns`]: feature f of centres 4q..4q + 4 is one vector), so that
//! a tile of up to three points × three quads (twelve centres) is nine vector accumulators
//! fed, per feature, by one broadcast of each point's value and one load of each quad: no
//! horizontal sums, no packing of the points, no zeroed output (a general matrix-multiply
//! crate packs both operands into its own buffers and zeroes the output first, which at
//! m ≈ 900, t = 10, d = 64 cost about as much as the arithmetic: 32 of 68 million
//! instructions on digits).
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
//! differences give, bit for bit, whatever the instruction set the product runs on (with
//! or without fused multiply-adds) and whatever the number of threads.

use crate::kernels::{QUAD, Quad};

/// E / (‖x‖ + ‖c‖)² at dimension `dim`: 2γ_{d+3} from the analysis above, doubled (which
/// also covers the rounding of the norms from which ‖x‖ + ‖c‖ is taken).
pub(crate) fn error_scale(dim: usize) -> f64 {
    4.0 * (dim as f64 + 3.0) * f64::EPSILON
}

/// The centres laid out for [`products`]: feature-major (row f holds feature f of every
/// centre), each row padded with zeros to a whole number of quads.
#[derive(Debug, Default)]
pub(crate) struct CentreColumns {
    values: Vec<f64>,
    /// Centres per row, padding included: a multiple of [`QUAD`].
    width: usize,
    dim: usize,
}

impl CentreColumns {
    /// Transposes the row-major `centres` (t × `dim`).
    pub(crate) fn new(centres: &[f64], dim: usize) -> Self {
        let n_centres = centres.len() / dim;
        let width = n_centres.div_ceil(QUAD) * QUAD;
        let mut values = vec![0.0; width * dim];
        for (j, centre) in centres.chunks_exact(dim).enumerate() {
            for (f, &value) in centre.iter().enumerate() {
                values[f * width + j] = value;
            }
        }
        Self { values, width, dim }
    }

    /// Replaces centre `j` (of `dim` values) by `centre`.
    pub(crate) fn set_centre(&mut self, j: usize, centre: &[f64]) {
        for (f, &value) in centre[..self.dim].iter().enumerate() {
            self.values[f * self.width + j] = value;
        }
    }

    /// The row length of [`products`]' output: the number of centres rounded up to a
    /// whole number of quads (the padding's products are 0).
    pub(crate) fn width(&self) -> usize {
        self.width
    }
}

/// Points per tile of the product kernel.
const TILE_ROWS: usize = 3;
/// Quads of centres per tile: 3 × 3 accumulators, 3 broadcasts and 3 loads per feature,
/// within the sixteen vector registers of AVX2.
const TILE_QUADS: usize = 3;

/// The products x_i·c_t of the m `rows` (each of d values) and the centres, written to
/// `out` as m rows of [`CentreColumns::width`] values (the products with the padding are
/// 0). Each product is summed over the features in order, one fused multiply-add per
/// feature on AVX2 (a plain f64 `mul_add` elsewhere); the callers do not depend on those
/// bits (see the module's documentation).
#[inline(always)]
pub(crate) fn products<Q: Quad>(
    quad: Q,
    rows: &[&[f64]],
    columns: &CentreColumns,
    out: &mut Vec<f64>,
) {
    let width = columns.width;
    let n_rows = rows.len();
    out.clear();
    out.resize(n_rows * width, 0.0);
    let n_quads = width / QUAD;
    let mut first_quad = 0;
    while first_quad < n_quads {
        let quads = (n_quads - first_quad).min(TILE_QUADS);
        for (block, out_block) in rows
            .chunks(TILE_ROWS)
            .zip(out.chunks_mut(TILE_ROWS * width))
        {
            let out_block = &mut out_block[first_quad * QUAD..];
            match (block.len(), quads) {
                (3, 3) => tile::<Q, 3, 3>(quad, block, columns, first_quad, out_block),
                (3, 2) => tile::<Q, 3, 2>(quad, block, columns, first_quad, out_block),
                (3, _) => tile::<Q, 3, 1>(quad, block, columns, first_quad, out_block),
                (2, 3) => tile::<Q, 2, 3>(quad, block, columns, first_quad, out_block),
                (2, 2) => tile::<Q, 2, 2>(quad, block, columns, first_quad, out_block),
                (2, _) => tile::<Q, 2, 1>(quad, block, columns, first_quad, out_block),
                (_, 3) => tile::<Q, 1, 3>(quad, block, columns, first_quad, out_block),
                (_, 2) => tile::<Q, 1, 2>(quad, block, columns, first_quad, out_block),
                (_, _) => tile::<Q, 1, 1>(quad, block, columns, first_quad, out_block),
            }
        }
        first_quad += quads;
    }
}

/// One tile: the products of the `R` points of `rows` with the `C` quads of centres from
/// `first_quad`, written to the first `C` quads of each of the `R` output rows of `out`
/// (rows of [`CentreColumns::width`] values).
#[inline(always)]
fn tile<Q: Quad, const R: usize, const C: usize>(
    quad: Q,
    rows: &[&[f64]],
    columns: &CentreColumns,
    first_quad: usize,
    out: &mut [f64],
) {
    let (dim, width) = (columns.dim, columns.width);
    // The points are read where they are (no gathered copy): each feature of each is one
    // broadcast, whatever its address.
    let points: [&[f64]; R] = std::array::from_fn(|r| &rows[r][..dim]);
    let mut sums = [[quad.splat(0.0); C]; R];
    for (f, row) in columns.values.chunks_exact(width).enumerate() {
        let centres = &row[first_quad * QUAD..][..C * QUAD];
        let centres: [Q::V; C] = std::array::from_fn(|q| {
            quad.load(
                centres[q * QUAD..(q + 1) * QUAD]
                    .try_into()
                    .expect("invariant: a whole quad"),
            )
        });
        for (point, sums) in points.iter().zip(&mut sums) {
            let x = quad.splat(point[f]);
            for (sum, &centre) in sums.iter_mut().zip(&centres) {
                *sum = quad.mul_add(x, centre, *sum);
            }
        }
    }
    for (r, sums) in sums.iter().enumerate() {
        let out = &mut out[r * width..][..C * QUAD];
        for (q, &sum) in sums.iter().enumerate() {
            quad.store(
                (&mut out[q * QUAD..(q + 1) * QUAD])
                    .try_into()
                    .expect("invariant: a whole quad"),
                sum,
            );
        }
    }
}

/// A bound E on |a − s| for one pair, from the squared norms of the point and the centre.
#[inline(always)]
pub(crate) fn error_bound(point_norm: f64, centre_norm: f64, scale: f64) -> f64 {
    let reach = point_norm.sqrt() + centre_norm.sqrt();
    scale * reach * reach
}

/// [`products`] of row-major `rows` and `centres` under [`crate::kernels::dispatch_quad`]
/// (so on the path a test forces), as rows of the returned width.
#[cfg(test)]
pub(crate) fn products_of(rows: &[f64], centres: &[f64], dim: usize) -> (Vec<f64>, usize) {
    struct Run<'a>(&'a [f64], &'a CentreColumns);
    impl crate::kernels::QuadKernel for Run<'_> {
        type Output = Vec<f64>;
        fn run<Q: Quad>(self, quad: Q) -> Vec<f64> {
            let mut out = Vec::new();
            let rows: Vec<&[f64]> = self.0.chunks_exact(self.1.dim).collect();
            products(quad, &rows, self.1, &mut out);
            out
        }
    }
    let columns = CentreColumns::new(centres, dim);
    let out = crate::kernels::dispatch_quad(Run(rows, &columns));
    (out, columns.width())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{squared_distance, squared_norm};
    use crate::kernels::{Path, on_path};
    use crate::rng::StreamRng;

    /// The bound holds on points far from the origin against their spread (where the
    /// expansion cancels most) and on points near each other, with margin to spare, but
    /// not by a factor that would make it useless: the largest error seen is within a
    /// factor 1e4 of the bound. On every path, with centre counts that fill whole tiles,
    /// part of one and part of a quad, and row counts that leave every remainder.
    #[test]
    fn the_error_bound_holds_and_is_not_vacuous() {
        let mut rng = StreamRng::seed_from(3);
        let mut worst: f64 = 0.0;
        for path in Path::available() {
            for (dim, n_centres, n_rows) in [(17, 7, 200), (64, 10, 199), (300, 13, 37), (20, 1, 2)]
            {
                let scale = error_scale(dim);
                for offset in [0.0, 1e3, 1e6] {
                    let rows: Vec<f64> = (0..n_rows * dim)
                        .map(|_| offset + rng.standard_normal())
                        .collect();
                    let centres: Vec<f64> = (0..n_centres * dim)
                        .map(|_| offset + 1e-3 * rng.standard_normal())
                        .collect();
                    let (products, width) = on_path(path, || products_of(&rows, &centres, dim));
                    assert_eq!(products.len(), n_rows * width);
                    for (x, products) in rows.chunks_exact(dim).zip(products.chunks_exact(width)) {
                        assert!(products[n_centres..].iter().all(|&p| p == 0.0));
                        for (c, &product) in centres.chunks_exact(dim).zip(products) {
                            let (xx, cc) = (squared_norm(x), squared_norm(c));
                            let expanded = xx + cc - 2.0 * product;
                            let bound = error_bound(xx, cc, scale);
                            let error = (expanded - squared_distance(x, c)).abs();
                            assert!(
                                error <= bound,
                                "{path:?}, d {dim}, offset {offset}: {error} > {bound}"
                            );
                            worst = worst.max(error / bound);
                        }
                    }
                }
            }
        }
        assert!(worst > 1e-4, "largest error / bound: {worst}");
    }
}
