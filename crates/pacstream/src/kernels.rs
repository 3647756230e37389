//! Hand-written numeric kernels, kept because benchmarks showed them to win: a vectorisable
//! `exp`, fixed-order reductions, and dispatch to the best instruction set of the running CPU.
//!
//! **Dispatch.** Library code is compiled for the portable x86-64 baseline (SSE2). A loop that
//! computes one exponential weight per expert is much faster with AVX2 and FMA, which almost
//! every x86-64 CPU since 2013 has. [`dispatch`] runs a [`Kernel`] through `pulp`, which
//! detects the CPU's features once and calls the kernel from a function compiled for them;
//! kernels are `#[inline(always)]`, so their loops are generated for the detected features.
//! (All `unsafe` stays inside `pulp`.)
//!
//! **Same bits on every path.** Rust never contracts `a * b + c` into a fused multiply-add, so
//! wherever a kernel wants one it says so with `f64::mul_add`, which is correctly rounded
//! everywhere (a hardware FMA with AVX2, a libm call without); and every reduction has a fixed
//! order (16 interleaved lanes combined by a fixed tree), which vectorisation does not change.
//! A kernel therefore returns the same bits whatever the CPU, only faster or slower.

/// A computation to run under [`dispatch`]. Implementations mark `run` `#[inline(always)]`.
pub(crate) trait Kernel {
    type Output;
    fn run(self) -> Self::Output;
}

struct Dispatched<K>(K);

impl<K: Kernel> pulp::WithSimd for Dispatched<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
        self.0.run()
    }
}

/// Runs `kernel` compiled for the best instruction set this CPU offers.
#[inline]
pub(crate) fn dispatch<K: Kernel>(kernel: K) -> K::Output {
    pulp::Arch::new().dispatch(Dispatched(kernel))
}

/// A computation written with explicit vectors of the running CPU's width (`S::f64s`:
/// four lanes with AVX2, one on the portable path). Such a kernel gives the same bits on every
/// path when each element goes through the same IEEE operations whatever the width (add,
/// mul, `mul_add_f64s`, compare-and-select; no `min`/`max`, whose ±0 and NaN conventions
/// differ) and when which value lands in which accumulator does not depend on the width.
pub(crate) trait SimdKernel {
    type Output;
    fn run<S: pulp::Simd>(self, simd: S) -> Self::Output;
}

struct SimdDispatched<K>(K);

impl<K: SimdKernel> pulp::WithSimd for SimdDispatched<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> K::Output {
        self.0.run(simd)
    }
}

/// Runs `kernel` with the widest vectors this CPU offers.
#[inline]
pub(crate) fn dispatch_simd<K: SimdKernel>(kernel: K) -> K::Output {
    pulp::Arch::new().dispatch(SimdDispatched(kernel))
}

/// e^x with a relative error below 5e-16 for x in [−708, 709]; 0 below −708 (where e^x is
/// subnormal or 0: an absolute error under 3.3e-308), e^709 above 709 (callers pass x ≤ 0).
///
/// Range reduction x = k ln 2 + r, |r| ≤ ln 2 / 2 (Cody–Waite, two-part ln 2), then the
/// Taylor polynomial of degree 13 (truncation error < 5e-18) by Estrin's scheme, whose short
/// dependency chains let consecutive elements overlap; 2^k is built in the exponent bits.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    // fdlibm's split of ln 2: the high part has 32 trailing zero bits, so k·LN2_HI is exact.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Adding 1.5·2^52 rounds to an integer held in the low mantissa bits.
    const ROUNDER: f64 = 6_755_399_441_055_744.0;
    let argument = x;
    let x = x.clamp(-708.0, 709.0);
    let shifted = x.mul_add(std::f64::consts::LOG2_E, ROUNDER);
    let k = shifted - ROUNDER;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, x));
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let q0 = r.mul_add(1.0, 1.0);
    let q1 = r.mul_add(1.0 / 6.0, 0.5);
    let q2 = r.mul_add(1.0 / 120.0, 1.0 / 24.0);
    let q3 = r.mul_add(1.0 / 5_040.0, 1.0 / 720.0);
    let q4 = r.mul_add(1.0 / 362_880.0, 1.0 / 40_320.0);
    let q5 = r.mul_add(1.0 / 39_916_800.0, 1.0 / 3_628_800.0);
    let q6 = r.mul_add(1.0 / 6_227_020_800.0, 1.0 / 479_001_600.0);
    let s0 = q1.mul_add(r2, q0);
    let s1 = q3.mul_add(r2, q2);
    let s2 = q5.mul_add(r2, q4);
    let u0 = s1.mul_add(r4, s0);
    let u1 = q6.mul_add(r4, s2);
    let polynomial = u1.mul_add(r8, u0);
    // k + 1023 in the exponent field: the low bits of `shifted` hold k (two's complement).
    let scale = f64::from_bits(shifted.to_bits().wrapping_add(1023) << 52);
    // A select, not a branch: the loop stays vectorised.
    if argument < -708.0 {
        0.0
    } else {
        polynomial * scale
    }
}

const LANES: usize = 16;

/// Σ values, over 16 interleaved lanes combined in a fixed order.
#[inline(always)]
pub(crate) fn sum(values: &[f64]) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for lane in 0..LANES {
            lanes[lane] += chunk[lane];
        }
    }
    let mut tail = 0.0;
    for value in chunks.remainder() {
        tail += value;
    }
    combine(lanes) + tail
}

/// Σ a_i b_i, over 16 interleaved lanes combined in a fixed order.
#[inline(always)]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [0.0f64; LANES];
    let mut a_chunks = a.chunks_exact(LANES);
    let mut b_chunks = b.chunks_exact(LANES);
    for (x, y) in (&mut a_chunks).zip(&mut b_chunks) {
        for lane in 0..LANES {
            lanes[lane] = x[lane].mul_add(y[lane], lanes[lane]);
        }
    }
    let mut tail = 0.0;
    for (x, y) in a_chunks.remainder().iter().zip(b_chunks.remainder()) {
        tail = x.mul_add(*y, tail);
    }
    combine(lanes) + tail
}

/// Whether every value is finite: Σ 0·v_i is 0 when they all are and NaN otherwise, a
/// reduction without early exit, so it vectorises.
#[inline(always)]
pub(crate) fn all_finite(values: &[f64]) -> bool {
    let mut lanes = [0.0f64; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for lane in 0..LANES {
            lanes[lane] += 0.0 * chunk[lane];
        }
    }
    let mut tail = 0.0;
    for value in chunks.remainder() {
        tail += 0.0 * value;
    }
    (combine(lanes) + tail) == 0.0
}

struct AllFinite<'a>(&'a [f64]);

impl Kernel for AllFinite<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        all_finite(self.0)
    }
}

/// [`all_finite`], dispatched to the CPU's best instructions for long slices (an advice
/// vector of a thousand experts) and inline for short ones (a point in a few dimensions).
#[inline]
pub(crate) fn all_finite_any_length(values: &[f64]) -> bool {
    if values.len() >= 64 {
        dispatch(AllFinite(values))
    } else {
        all_finite(values)
    }
}

/// acc_i += values_i for every i; returns min_i acc_i (one pass).
#[inline(always)]
pub(crate) fn add_and_min(acc: &mut [f64], values: &[f64]) -> f64 {
    debug_assert_eq!(acc.len(), values.len());
    let mut least = [f64::INFINITY; LANES];
    let mut acc_chunks = acc.chunks_exact_mut(LANES);
    let mut value_chunks = values.chunks_exact(LANES);
    for (a, v) in (&mut acc_chunks).zip(&mut value_chunks) {
        for lane in 0..LANES {
            a[lane] += v[lane];
            least[lane] = if a[lane] < least[lane] {
                a[lane]
            } else {
                least[lane]
            };
        }
    }
    let mut result = least.iter().copied().fold(f64::INFINITY, f64::min);
    for (a, v) in acc_chunks
        .into_remainder()
        .iter_mut()
        .zip(value_chunks.remainder())
    {
        *a += v;
        result = result.min(*a);
    }
    result
}

/// The smallest value and the lowest index holding it (`(+∞, 0)` for an empty slice): a
/// vectorised minimum, then a search for its first position sixteen values at a time.
#[inline(always)]
pub(crate) fn min_and_position(values: &[f64]) -> (f64, usize) {
    let least = min(values);
    (least, first_position(values, least))
}

/// min_i values_i (+∞ for an empty slice), over 16 lanes.
#[inline(always)]
pub(crate) fn min(values: &[f64]) -> f64 {
    let mut lanes = [f64::INFINITY; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for lane in 0..LANES {
            lanes[lane] = if chunk[lane] < lanes[lane] {
                chunk[lane]
            } else {
                lanes[lane]
            };
        }
    }
    let mut result = f64::INFINITY;
    for value in lanes.iter().chain(chunks.remainder()) {
        result = if *value < result { *value } else { result };
    }
    result
}

/// The first index holding `target` (0 if none).
#[inline(always)]
pub(crate) fn first_position(values: &[f64], target: f64) -> usize {
    let mut chunks = values.chunks_exact(LANES);
    let mut offset = 0;
    for chunk in &mut chunks {
        // A branch-free test of the whole chunk, then the exact lane only once.
        let hits: usize = chunk.iter().map(|&v| usize::from(v == target)).sum();
        if hits > 0 {
            return offset + chunk.iter().position(|&v| v == target).unwrap_or(0);
        }
        offset += LANES;
    }
    offset
        + chunks
            .remainder()
            .iter()
            .position(|&v| v == target)
            .unwrap_or(0)
}

#[inline(always)]
fn combine(lanes: [f64; LANES]) -> f64 {
    let mut width = LANES;
    let mut lanes = lanes;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            lanes[lane] += lanes[lane + width];
        }
    }
    lanes[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate_across_the_range() {
        let mut worst = 0.0f64;
        let mut x = -708.0;
        while x <= 709.0 {
            let relative = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(relative);
            x += 0.001_37;
        }
        assert!(worst < 5e-16, "worst relative error {worst:e}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1e6), 0.0);
        assert!(exp(-708.0) > 0.0);
    }

    struct SumOfExps<'a>(&'a [f64]);

    impl Kernel for SumOfExps<'_> {
        type Output = f64;
        #[inline(always)]
        fn run(self) -> f64 {
            let values: Vec<f64> = self.0.iter().map(|&x| exp(x)).collect();
            sum(&values)
        }
    }

    #[test]
    fn all_finite_sees_every_kind_of_non_finite() {
        let mut values = vec![1.0; 100];
        assert!(all_finite(&values));
        assert!(all_finite(&[]));
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for position in [0, 17, 99] {
                values[position] = bad;
                assert!(!all_finite(&values));
                values[position] = 1.0;
            }
        }
        assert!(all_finite(&[f64::MAX, -f64::MAX, f64::MIN_POSITIVE]));
    }

    #[test]
    fn min_and_position_finds_the_first_minimum() {
        let mut values: Vec<f64> = (0..100).map(|i| ((i * 37) % 23) as f64).collect();
        let expected = values.iter().copied().fold(f64::INFINITY, f64::min);
        let first = values.iter().position(|&v| v == expected).unwrap();
        assert_eq!(min_and_position(&values), (expected, first));
        values[97] = -1.0;
        values[98] = -1.0;
        assert_eq!(min_and_position(&values), (-1.0, 97));
        assert_eq!(min_and_position(&[3.0, 2.0, 2.0]), (2.0, 1));
        assert_eq!(min_and_position(&[]).1, 0);
    }

    /// The dispatched kernel returns exactly what the portable code returns.
    #[test]
    fn dispatch_gives_the_same_bits() {
        let values: Vec<f64> = (0..1003).map(|i| -(i as f64) * 0.0371).collect();
        let portable = SumOfExps(&values).run();
        let dispatched = dispatch(SumOfExps(&values));
        assert_eq!(portable.to_bits(), dispatched.to_bits());
        let a: Vec<f64> = (0..77).map(|i| i as f64 * 0.5).collect();
        let direct: f64 = a.iter().map(|x| x * x).sum();
        assert!((dot(&a, &a) - direct).abs() <= 1e-12 * direct);
    }
}
