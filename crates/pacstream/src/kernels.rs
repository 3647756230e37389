//! Hand-written numeric kernels, kept because benchmarks showed them to win: a vectorisable
//! `exp`, fixed-order reductions, and dispatch to the best instruction set of the running CPU.
//!
//! **Dispatch.** Library code is compiled for the portable x86-64 baseline (SSE2). A loop that
//! computes one exponential weight per expert is much faster with AVX2 and FMA, which almost
//! every x86-64 CPU since 2013 has, and faster again with AVX-512. [`dispatch`] runs a
//! [`Kernel`] through `pulp`, which detects the CPU's features once and calls the kernel from
//! a function compiled for them; kernels are `#[inline(always)]`, so their loops are
//! generated for the detected features. [`dispatch`], [`dispatch_simd`] and
//! [`dispatch_quad`] go as far as AVX2 and FMA (pulp's V3); only [`dispatch_wide`], for the
//! experts' fused passes, goes to AVX-512 (pulp's V4: F, DQ, CD, BW, VL) where the CPU has
//! it. (All `unsafe` stays inside `pulp`.)
//!
//! **Same bits on every path.** Rust never contracts `a * b + c` into a fused multiply-add, so
//! wherever a kernel wants one it says so with `f64::mul_add`, which is correctly rounded
//! everywhere (a hardware FMA with AVX2 or AVX-512, a libm call without); and every reduction
//! has a fixed order (16 interleaved lanes combined by a fixed tree; four lanes for the
//! experts), which vectorisation does not change. A kernel therefore returns the same bits
//! whatever the CPU, only faster or slower.
//!
//! **Four-lane and eight-lane kernels.** The experts' fused passes are written against
//! [`Wide`]: four f64 lanes ([`Quad`]: one AVX2 vector, or four plain lanes) or eight (one
//! AVX-512 vector, [`Avx512`]), run by [`dispatch_wide`] (eight lanes from [`WIDE_FROM`]
//! values on). Eight lanes hold two consecutive chunks of four; sums are kept on four lanes
//! and take the low chunk, then the high one, which is the four-lane order, so the widest
//! path returns the four-lane bits. Their exponential ([`exp`], [`exp_lanes`]) has a
//! relative error below 1e−13 and the same bits on every width.

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

/// Runs `kernel` compiled for the best instruction set this CPU offers up to AVX2 and FMA
/// (on x86-64 not AVX-512, whose wider auto-vectorised loops these kernels were not
/// measured with: only [`dispatch_wide`] goes there).
#[inline]
pub(crate) fn dispatch<K: Kernel>(kernel: K) -> K::Output {
    up_to_avx2(Dispatched(kernel))
}

/// Runs `kernel` compiled for AVX-512 (pulp's V4) where the CPU has it and the `avx512`
/// feature is on, otherwise as [`dispatch`]. Only for kernels whose loops are lane-wise IEEE
/// operations with sums in an order of their own (the same bits at every width), where a
/// benchmark showed the wider loops to win.
#[inline]
pub(crate) fn dispatch_widest<K: Kernel>(kernel: K) -> K::Output {
    #[cfg(test)]
    match forced_path() {
        Some(Path::Portable) => return kernel.run(),
        #[cfg(target_arch = "x86_64")]
        Some(Path::Avx2) => {
            let simd = pulp::x86::V3::try_new().expect("a forced path is available");
            return pulp::Simd::vectorize(simd, Dispatched(kernel));
        }
        _ => {}
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
    if let Some(simd) = pulp::x86::V4::try_new() {
        return pulp::Simd::vectorize(simd, Dispatched(kernel));
    }
    dispatch(kernel)
}

/// Whether [`dispatch_widest`] runs its kernels with AVX-512 on this CPU.
#[inline]
pub(crate) fn widest_is_avx512() -> bool {
    #[cfg(test)]
    if matches!(forced_path(), Some(Path::Portable | Path::Avx2)) {
        return false;
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
    if pulp::x86::V4::try_new().is_some() {
        return true;
    }
    false
}

/// `pulp::Arch::new().dispatch(op)` with the instruction sets up to AVX2 and FMA: on x86-64
/// pulp's V3 or its scalar path (not its V4, AVX-512, which `Arch` would pick where present).
#[inline(always)]
fn up_to_avx2<Op: pulp::WithSimd>(op: Op) -> Op::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(simd) = pulp::x86::V3::try_new() {
            pulp::Simd::vectorize(simd, op)
        } else {
            pulp::Simd::vectorize(pulp::Scalar::new(), op)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        pulp::Arch::new().dispatch(op)
    }
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

/// Runs `kernel` with the widest vectors this CPU offers up to AVX2 (four f64 lanes on
/// x86-64, AVX-512's eight excepted, as for [`dispatch`]).
#[inline]
pub(crate) fn dispatch_simd<K: SimdKernel>(kernel: K) -> K::Output {
    up_to_avx2(SimdDispatched(kernel))
}

/// e^x with a relative error below 1e−13 for x in [−708, 709] (measured: at most 5.6e−14;
/// see the tests); exactly 0 below −708, where e^x < 3.3e−308 is subnormal or 0 (an absolute
/// error under 3.3e−308), and for −∞; e^709 above 709 (the weights engine never passes more
/// than 700, see `Core::finish`; the clamp only keeps every finite argument's result finite).
/// Never NaN for an argument that is not NaN (the result for NaN is unspecified: callers
/// check their values first). e^0 = 1 exactly.
///
/// Range reduction x = k ln 2 + r, |r| ≤ ln 2 / 2, by one fused multiply-add with ln 2
/// rounded to f64: its rounding (2.3e−17 relative) moves r by at most 1022 × 2.3e−17 =
/// 2.4e−14 at the ends of the range, a relative error of e^r of the same size (a two-part
/// ln 2 would remove it for one more operation; the argument −η(C_i − shift) is itself
/// rounded to about 1e−16 relative, up to 7.9e−14 absolute at |x| = 708). Then
/// e^r ≈ (1 + r) + r² q(r) with q of degree 7 by Estrin's scheme (eleven operations, the
/// longest dependent chain five): q is the minimax fit (Remez exchange, 60 digits, then rounded to f64) of the *relative*
/// error of e^r on [−ln 2/2, ln 2/2], whose maximum with the rounded coefficients is
/// 3.25e−14; rounding in the evaluation adds at most a few units in the last place. 2^k is
/// applied exactly, by adding k to the exponent field of the polynomial's value (an integer
/// add, no multiply: the result is a normal number for every x in [−708, 709]; the
/// eight-lane path scales by 2^k with `vscalefpd` instead, exact too for a normal result,
/// so the same bits: [`Lanes::scale_above`]). A
/// full-precision exponential needs degree 13 (sixteen operations by Estrin's scheme). Every
/// call site evaluates the same operations in the same order (the four- and eight-lane
/// [`exp_lanes`] too), with fused multiply-adds that are correctly rounded on every CPU, so
/// results are reproducible bit for bit.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    // `ceiling < x ? ceiling : x`, the lanes' `min`.
    let clamped = if EXP_CEILING < x { EXP_CEILING } else { x };
    let shifted = clamped.mul_add(std::f64::consts::LOG2_E, EXP_ROUNDER);
    let k = shifted - EXP_ROUNDER;
    let r = (-k).mul_add(std::f64::consts::LN_2, clamped);
    // Estrin's scheme: four independent pairs, then two levels, so that the longest chain
    // of dependent operations is five rather than Horner's nine (the fused pass is bound
    // by that chain's latency, not by the number of operations).
    let r2 = r * r;
    let p01 = EXP_Q[1].mul_add(r, EXP_Q[0]);
    let p23 = EXP_Q[3].mul_add(r, EXP_Q[2]);
    let p45 = EXP_Q[5].mul_add(r, EXP_Q[4]);
    let p67 = EXP_Q[7].mul_add(r, EXP_Q[6]);
    let r4 = r2 * r2;
    let p03 = p23.mul_add(r2, p01);
    let p47 = p67.mul_add(r2, p45);
    let poly = p47.mul_add(r4, p03);
    let polynomial = poly.mul_add(r2, r + 1.0);
    // k in the exponent field: the low bits of `shifted` hold k (two's complement), and the
    // shift drops everything above them.
    let value = f64::from_bits(polynomial.to_bits().wrapping_add(shifted.to_bits() << 52));
    // A select, not a branch: the loop stays vectorised. Below the floor the exponent above
    // has wrapped (or the reduction overflowed): the select discards it.
    if x < EXP_FLOOR { 0.0 } else { value }
}

/// Adding 1.5·2^52 rounds to an integer held in the low mantissa bits.
const EXP_ROUNDER: f64 = 6_755_399_441_055_744.0;
/// Below this, e^x is 0 (the true value is below 3.3e−308).
const EXP_FLOOR: f64 = -708.0;
/// Above this, e^x is e^709 (8.2e307): no finite argument overflows the exponent field.
const EXP_CEILING: f64 = 709.0;
/// q(r) = Q0 + Q1 r + ... + Q7 r^7 ≈ (e^r − 1 − r) / r² on [−ln 2/2, ln 2/2]: the minimax
/// fit of the relative error of 1 + r + r² q(r) against e^r (Remez exchange at 60 digits,
/// coefficients rounded to f64; the script is in the kernel's tests' comments).
const EXP_Q: [f64; 8] = [
    0.499_999_999_996_406_93,
    0.166_666_666_666_340_14,
    0.041_666_666_995_695_89,
    0.008_333_333_363_234_996,
    0.001_388_880_423_675_813_5,
    0.000_198_411_929_082_299_06,
    2.488_446_163_856_036e-5,
    2.763_264_212_637_514_8e-6,
];

/// The lanes of the fused passes of the experts' sums: one AVX2 vector of four f64. Element
/// i goes to lane i mod 4 whatever the CPU, and the lanes are combined by [`sum_quad`], so a
/// pass returns the same bits whether its lanes run as one vector, one after the other, or
/// as the two halves of an AVX-512 vector taken in turn ([`Wide`]).
pub(crate) const QUAD: usize = 4;

/// The sum of N lanes (N a power of two) by a fixed halving tree: lane i + lane i + N/2 for
/// i < N/2, then again on the first half, down to one. The one reduction of the 16-lane
/// kernels (PACBO's S_t, the curves' rewards and losses, [`sum_quad`]'s callers excepted), so
/// that a sum has the same bits whatever the CPU or the number of threads.
#[inline(always)]
pub(crate) fn tree_sum<const N: usize>(mut lanes: [f64; N]) -> f64 {
    debug_assert!(N.is_power_of_two());
    let mut width = N;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            lanes[lane] += lanes[lane + width];
        }
    }
    lanes[0]
}

/// (l₀ + l₁) + (l₂ + l₃): the fixed order in which four lane sums are combined (the experts'
/// fused passes and the distances; not [`tree_sum`]'s order, which pairs l₀ with l₂, and
/// which would change the bits their snapshots hold).
#[inline(always)]
pub(crate) fn sum_quad(lanes: [f64; QUAD]) -> f64 {
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// Vector lanes of f64 and the IEEE operations the experts' fused passes use, lane by lane:
/// four lanes ([`Quad`]: [`Portable`], and one AVX2 vector) or eight (one AVX-512 vector,
/// [`Wide`]). Every operation is one correctly rounded IEEE operation or an exact one
/// (compare, select, integer add and shift on the bits), with the same semantics in every
/// implementation (`min(a, b)` is `a < b ? a : b`, which is what `vminpd` computes), so an
/// element goes through the same operations whatever the width; the tests check it.
pub(crate) trait Lanes: Copy {
    type V: Copy;
    type M: Copy;
    fn splat(self, value: f64) -> Self::V;
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// a·b + c, rounded once.
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// c − a·b, rounded once (= (−a)·b + c).
    fn neg_mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `mask ? +0 : a`, lane by lane.
    fn zero_where(self, mask: Self::M, a: Self::V) -> Self::V;
    fn abs(self, a: Self::V) -> Self::V;
    fn lt(self, a: Self::V, b: Self::V) -> Self::M;
    fn ge(self, a: Self::V, b: Self::V) -> Self::M;
    fn ne(self, a: Self::V, b: Self::V) -> Self::M;
    /// `mask ? a : b`, lane by lane.
    fn select(self, mask: Self::M, a: Self::V, b: Self::V) -> Self::V;
    /// `a < b ? a : b`.
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a > b ? a : b`.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// f64::from_bits(a.to_bits() + (k.to_bits() << 52)) (wrapping): a · 2^k, exactly when
    /// the result is normal, for k held in the low mantissa bits of `k`.
    fn add_exponent(self, a: Self::V, k: Self::V) -> Self::V;
    /// `x < floor ? +0 : a · 2^k`, the last step of the exponential, for an integer k held
    /// both in the low mantissa bits of `shifted` and as the value `k`, and a result that is
    /// a normal number wherever x ≥ floor (so that a · 2^k is exact): [`Lanes::add_exponent`]
    /// on `shifted` and a select; with AVX-512, one compare and one masked `vscalefpd` by `k`
    /// (a · 2^⌊k⌋, exact for a normal result), the same bits in two operations rather than
    /// four.
    #[inline(always)]
    fn scale_above(
        self,
        x: Self::V,
        floor: Self::V,
        a: Self::V,
        shifted: Self::V,
        _k: Self::V,
    ) -> Self::V {
        self.zero_where(self.lt(x, floor), self.add_exponent(a, shifted))
    }
    /// Whether [`ExpConstants`] are kept in memory (`black_box`), read as operands of the
    /// arithmetic: with sixteen vector registers, rather than re-broadcast on every use; with
    /// AVX-512's thirty-two they stay in registers.
    const CONSTANTS_IN_MEMORY: bool = true;
}

/// Four f64 lanes ([`Lanes`]): [`Portable`] (plain f64 arithmetic, any CPU) and, on x86-64
/// CPUs with AVX2 and FMA, one AVX2 vector. A kernel written against this trait returns the
/// same bits on either.
pub(crate) trait Quad: Lanes {
    fn load(self, values: &[f64; QUAD]) -> Self::V;
    fn store(self, values: &mut [f64; QUAD], v: Self::V);
    fn to_array(self, v: Self::V) -> [f64; QUAD];
}

/// The vectors a fused pass of the experts sweeps with: four lanes ([`Portable`], [`Avx2`],
/// which are their own [`Wide::Quad`]) or eight (one AVX-512 vector, whose quad is its AVX2
/// half). Eight lanes hold two consecutive chunks of four, and every accumulation goes as
/// it would over those two chunks one after the other: sums stay four lanes wide and take
/// the low chunk, then the high one ([`Wide::add_into`], [`Wide::mul_add_into`]), so that
/// element i goes to lane i mod 4 in the same order whatever the width; minima and maxima
/// may run eight wide (the least value does not depend on the order) and are folded to four
/// lanes at the end ([`Wide::fold_min`], [`Wide::fold_first_least`]). A pass written
/// against this trait returns the bits of the four-lane pass; the tests check it.
pub(crate) trait Wide: Lanes {
    /// The number of lanes: four or eight.
    const WIDTH: usize;
    /// The four lanes of the sums and of the last chunks.
    type Quad: Quad + Wide<Quad = Self::Quad>;
    fn quad(self) -> Self::Quad;
    /// `values` holds exactly [`Wide::WIDTH`] values.
    fn load_wide(self, values: &[f64]) -> Self::V;
    fn store_wide(self, values: &mut [f64], v: Self::V);
    /// The first four lanes.
    fn narrow(self, v: Self::V) -> QuadV<Self>;
    /// `acc + v` chunk of four by chunk of four, the low chunk first.
    fn add_into(self, acc: QuadV<Self>, v: Self::V) -> QuadV<Self>;
    /// `acc + a·b` (one rounding each) chunk of four by chunk of four, the low chunk first.
    fn mul_add_into(self, a: Self::V, b: Self::V, acc: QuadV<Self>) -> QuadV<Self>;
    /// Lane l of the result: the least of lanes l, l + 4, ... by `a < b ? a : b`. For
    /// accumulators whose result is only compared (its sign when it is zero may be either
    /// zero's: callers report a zero as +0).
    fn fold_min(self, v: Self::V) -> QuadV<Self>;
    /// As [`Wide::fold_min`] with `a > b ? a : b`.
    fn fold_max(self, v: Self::V) -> QuadV<Self>;
    /// The four-lane minimum a pass of `min(x, acc)` (`x < acc ? x : acc`, from +∞) over
    /// `written` (a multiple of [`Wide::WIDTH`] values, element i in lane i mod 4) leaves,
    /// from the eight-lane one `v` over the same values: the first least value of each lane
    /// in the order of the elements, bit for bit. Equal values have equal bits but for the
    /// zeros, so only a lane whose two halves hold zeros of both signs looks at `written`
    /// again, for the first of them.
    fn fold_first_least(self, v: Self::V, written: &[f64]) -> QuadV<Self>;
    /// [`first_position`], compiled for these lanes.
    #[inline(always)]
    fn first_position(self, values: &[f64], target: f64) -> usize {
        first_position(values, target)
    }
}

/// The vector of a [`Wide`]'s four lanes.
pub(crate) type QuadV<W> = <<W as Wide>::Quad as Lanes>::V;

/// The four-lane state of `x < acc ? x : acc` passes over `written` (element i in lane
/// i mod 4), from the state of the same passes over eight lanes (element i in lane i mod 8):
/// lane l of four holds the first least of its elements, which is the least of lanes l and
/// l + 4 of eight, or, when both hold the same value, the earlier of them: the same bits
/// unless they are zeros of opposite signs, where the lane's elements are searched again.
#[cfg(any(all(target_arch = "x86_64", feature = "avx512"), test))]
#[inline(always)]
fn first_least_of_halves(lanes: [f64; 8], written: &[f64]) -> [f64; QUAD] {
    std::array::from_fn(|l| {
        let (low, high) = (lanes[l], lanes[l + QUAD]);
        if high < low {
            high
        } else if low < high || low.to_bits() == high.to_bits() {
            low
        } else {
            // ±0 (a NaN never enters the lanes: `x < acc` is false for it).
            written[l..]
                .iter()
                .step_by(QUAD)
                .fold(f64::INFINITY, |acc, &x| if x < acc { x } else { acc })
        }
    })
}

/// [`Wide`] for a four-lane [`Quad`]: its own quad, sums and folds as they are.
macro_rules! four_lanes_are_wide {
    ($quad:ty) => {
        impl Wide for $quad {
            const WIDTH: usize = QUAD;
            type Quad = Self;
            #[inline(always)]
            fn quad(self) -> Self {
                self
            }
            #[inline(always)]
            fn load_wide(self, values: &[f64]) -> Self::V {
                self.load(values.try_into().expect("invariant: a whole chunk"))
            }
            #[inline(always)]
            fn store_wide(self, values: &mut [f64], v: Self::V) {
                self.store(values.try_into().expect("invariant: a whole chunk"), v)
            }
            #[inline(always)]
            fn narrow(self, v: Self::V) -> QuadV<Self> {
                v
            }
            #[inline(always)]
            fn add_into(self, acc: QuadV<Self>, v: Self::V) -> QuadV<Self> {
                self.add(acc, v)
            }
            #[inline(always)]
            fn mul_add_into(self, a: Self::V, b: Self::V, acc: QuadV<Self>) -> QuadV<Self> {
                self.mul_add(a, b, acc)
            }
            #[inline(always)]
            fn fold_min(self, v: Self::V) -> QuadV<Self> {
                v
            }
            #[inline(always)]
            fn fold_max(self, v: Self::V) -> QuadV<Self> {
                v
            }
            #[inline(always)]
            fn fold_first_least(self, v: Self::V, _written: &[f64]) -> QuadV<Self> {
                v
            }
        }
    };
}

/// [`Quad`] in plain f64 arithmetic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Lanes for Portable {
    type V = [f64; QUAD];
    type M = [bool; QUAD];

    #[inline(always)]
    fn splat(self, value: f64) -> Self::V {
        [value; QUAD]
    }
    #[inline(always)]
    fn add(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    fn sub(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    fn mul(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i].mul_add(b[i], c[i]))
    }
    #[inline(always)]
    fn neg_mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        std::array::from_fn(|i| (-a[i]).mul_add(b[i], c[i]))
    }
    #[inline(always)]
    fn zero_where(self, mask: Self::M, a: Self::V) -> Self::V {
        std::array::from_fn(|i| if mask[i] { 0.0 } else { a[i] })
    }
    #[inline(always)]
    fn abs(self, a: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i].abs())
    }
    #[inline(always)]
    fn lt(self, a: Self::V, b: Self::V) -> Self::M {
        std::array::from_fn(|i| a[i] < b[i])
    }
    #[inline(always)]
    fn ge(self, a: Self::V, b: Self::V) -> Self::M {
        std::array::from_fn(|i| a[i] >= b[i])
    }
    #[inline(always)]
    fn ne(self, a: Self::V, b: Self::V) -> Self::M {
        std::array::from_fn(|i| a[i] != b[i])
    }
    #[inline(always)]
    fn select(self, mask: Self::M, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if mask[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn min(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if a[i] < b[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn max(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if a[i] > b[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn add_exponent(self, a: Self::V, k: Self::V) -> Self::V {
        std::array::from_fn(|i| f64::from_bits(a[i].to_bits().wrapping_add(k[i].to_bits() << 52)))
    }
}

impl Quad for Portable {
    #[inline(always)]
    fn load(self, values: &[f64; QUAD]) -> Self::V {
        *values
    }
    #[inline(always)]
    fn store(self, values: &mut [f64; QUAD], v: Self::V) {
        *values = v;
    }
    #[inline(always)]
    fn to_array(self, v: Self::V) -> [f64; QUAD] {
        v
    }
}

four_lanes_are_wide!(Portable);

/// [`Quad`] as one AVX2 vector (the token proves the CPU has AVX2 and FMA).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(pulp::x86::V3);

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Avx2, Lanes, QUAD, Quad, QuadV, Wide};
    use pulp::bytemuck::cast;
    use pulp::{Simd, f64x4};
    use std::arch::x86_64::{__m256d, _CMP_GE_OQ, _CMP_LT_OQ, _CMP_NEQ_UQ};

    impl Lanes for Avx2 {
        type V = f64x4;
        /// A lane of all ones or all zeros, as `vcmppd` leaves it.
        type M = __m256d;

        #[inline(always)]
        fn splat(self, value: f64) -> f64x4 {
            self.0.splat_f64s(value)
        }
        #[inline(always)]
        fn add(self, a: f64x4, b: f64x4) -> f64x4 {
            self.0.add_f64s(a, b)
        }
        #[inline(always)]
        fn sub(self, a: f64x4, b: f64x4) -> f64x4 {
            self.0.sub_f64s(a, b)
        }
        #[inline(always)]
        fn mul(self, a: f64x4, b: f64x4) -> f64x4 {
            self.0.mul_f64s(a, b)
        }
        #[inline(always)]
        fn mul_add(self, a: f64x4, b: f64x4, c: f64x4) -> f64x4 {
            // vfmadd: one rounding, like f64::mul_add.
            self.0.mul_add_f64s(a, b, c)
        }
        #[inline(always)]
        fn neg_mul_add(self, a: f64x4, b: f64x4, c: f64x4) -> f64x4 {
            // vfnmadd: −(a·b) + c with one rounding.
            let (a, b, c): (__m256d, __m256d, __m256d) = (cast(a), cast(b), cast(c));
            cast(self.0.fma._mm256_fnmadd_pd(a, b, c))
        }
        #[inline(always)]
        fn zero_where(self, mask: __m256d, a: f64x4) -> f64x4 {
            cast(self.0.avx._mm256_andnot_pd(mask, cast(a)))
        }
        #[inline(always)]
        fn abs(self, a: f64x4) -> f64x4 {
            self.0.abs_f64s(a)
        }
        #[inline(always)]
        fn lt(self, a: f64x4, b: f64x4) -> __m256d {
            self.0.avx._mm256_cmp_pd::<_CMP_LT_OQ>(cast(a), cast(b))
        }
        #[inline(always)]
        fn ge(self, a: f64x4, b: f64x4) -> __m256d {
            self.0.avx._mm256_cmp_pd::<_CMP_GE_OQ>(cast(a), cast(b))
        }
        #[inline(always)]
        fn ne(self, a: f64x4, b: f64x4) -> __m256d {
            // Unordered: true when either is NaN, as `!=` is.
            self.0.avx._mm256_cmp_pd::<_CMP_NEQ_UQ>(cast(a), cast(b))
        }
        #[inline(always)]
        fn select(self, mask: __m256d, a: f64x4, b: f64x4) -> f64x4 {
            cast(self.0.avx._mm256_blendv_pd(cast(b), cast(a), mask))
        }
        #[inline(always)]
        fn min(self, a: f64x4, b: f64x4) -> f64x4 {
            // vminpd returns its first operand when it is the smaller, the second otherwise.
            let (a, b): (__m256d, __m256d) = (cast(a), cast(b));
            cast(self.0.avx._mm256_min_pd(a, b))
        }
        #[inline(always)]
        fn max(self, a: f64x4, b: f64x4) -> f64x4 {
            let (a, b): (__m256d, __m256d) = (cast(a), cast(b));
            cast(self.0.avx._mm256_max_pd(a, b))
        }
        #[inline(always)]
        fn add_exponent(self, a: f64x4, k: f64x4) -> f64x4 {
            let exponent = self.0.shl_const_u64x4::<52>(self.0.transmute_u64s_f64s(k));
            let bits = self.0.add_u64s(self.0.transmute_u64s_f64s(a), exponent);
            self.0.transmute_f64s_u64s(bits)
        }
    }

    impl Quad for Avx2 {
        #[inline(always)]
        fn load(self, values: &[f64; QUAD]) -> f64x4 {
            cast(*values)
        }
        #[inline(always)]
        fn store(self, values: &mut [f64; QUAD], v: f64x4) {
            *values = cast(v);
        }
        #[inline(always)]
        fn to_array(self, v: f64x4) -> [f64; QUAD] {
            cast(v)
        }
    }

    four_lanes_are_wide!(Avx2);
}

/// [`Wide`] as one AVX-512 vector of eight lanes, with its AVX2 half for the sums and the
/// last chunks (the token proves the CPU has AVX-512 F, DQ, CD, BW and VL, AVX2 and FMA).
/// With the `avx512` feature only, which needs Rust 1.89 (the crate's MSRV, 1.85, is
/// without it).
#[cfg(all(target_arch = "x86_64", feature = "avx512"))]
#[allow(clippy::incompatible_msrv)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512(pulp::x86::V4);

#[cfg(all(target_arch = "x86_64", feature = "avx512"))]
#[allow(clippy::incompatible_msrv)]
mod avx512 {
    use super::{Avx2, Avx512, LANES, Lanes, QUAD, QuadV, Wide, first_least_of_halves};
    use pulp::bytemuck::cast;
    use std::arch::x86_64::{
        __m256d, __m512d, __mmask8, _CMP_EQ_OQ, _CMP_GE_OQ, _CMP_LT_OQ, _CMP_NEQ_UQ, _CMP_NLT_UQ,
    };

    impl Avx512 {
        /// The low and the high four lanes.
        #[inline(always)]
        fn halves(self, v: __m512d) -> (QuadV<Self>, QuadV<Self>) {
            let f = self.0.avx512f;
            let low: __m256d = f._mm512_castpd512_pd256(v);
            let high: __m256d = f._mm512_extractf64x4_pd::<1>(v);
            (cast(low), cast(high))
        }
    }

    impl Lanes for Avx512 {
        type V = __m512d;
        /// One bit per lane, as `vcmppd` into a mask register leaves it.
        type M = __mmask8;

        #[inline(always)]
        fn splat(self, value: f64) -> __m512d {
            self.0.avx512f._mm512_set1_pd(value)
        }
        #[inline(always)]
        fn add(self, a: __m512d, b: __m512d) -> __m512d {
            self.0.avx512f._mm512_add_pd(a, b)
        }
        #[inline(always)]
        fn sub(self, a: __m512d, b: __m512d) -> __m512d {
            self.0.avx512f._mm512_sub_pd(a, b)
        }
        #[inline(always)]
        fn mul(self, a: __m512d, b: __m512d) -> __m512d {
            self.0.avx512f._mm512_mul_pd(a, b)
        }
        #[inline(always)]
        fn mul_add(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            self.0.avx512f._mm512_fmadd_pd(a, b, c)
        }
        #[inline(always)]
        fn neg_mul_add(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            self.0.avx512f._mm512_fnmadd_pd(a, b, c)
        }
        #[inline(always)]
        fn zero_where(self, mask: __mmask8, a: __m512d) -> __m512d {
            // The lanes outside the mask kept, the others set to all-zero bits (+0).
            self.0.avx512f._mm512_maskz_mov_pd(!mask, a)
        }
        #[inline(always)]
        fn abs(self, a: __m512d) -> __m512d {
            self.0.avx512f._mm512_abs_pd(a)
        }
        #[inline(always)]
        fn lt(self, a: __m512d, b: __m512d) -> __mmask8 {
            self.0.avx512f._mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b)
        }
        #[inline(always)]
        fn ge(self, a: __m512d, b: __m512d) -> __mmask8 {
            self.0.avx512f._mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, b)
        }
        #[inline(always)]
        fn ne(self, a: __m512d, b: __m512d) -> __mmask8 {
            // Unordered: true when either is NaN, as `!=` is.
            self.0.avx512f._mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(a, b)
        }
        #[inline(always)]
        fn select(self, mask: __mmask8, a: __m512d, b: __m512d) -> __m512d {
            // vblendmpd takes its second operand where the mask is set.
            self.0.avx512f._mm512_mask_blend_pd(mask, b, a)
        }
        #[inline(always)]
        fn min(self, a: __m512d, b: __m512d) -> __m512d {
            // vminpd returns its first operand when it is the smaller, the second otherwise.
            self.0.avx512f._mm512_min_pd(a, b)
        }
        #[inline(always)]
        fn max(self, a: __m512d, b: __m512d) -> __m512d {
            self.0.avx512f._mm512_max_pd(a, b)
        }
        #[inline(always)]
        fn add_exponent(self, a: __m512d, k: __m512d) -> __m512d {
            let f = self.0.avx512f;
            let exponent = f._mm512_slli_epi64::<52>(f._mm512_castpd_si512(k));
            f._mm512_castsi512_pd(f._mm512_add_epi64(f._mm512_castpd_si512(a), exponent))
        }
        #[inline(always)]
        fn scale_above(
            self,
            x: __m512d,
            floor: __m512d,
            a: __m512d,
            _shifted: __m512d,
            k: __m512d,
        ) -> __m512d {
            // `!(x < floor)` (true for NaN, as the select's `x < floor` is false), then one
            // masked scale: the other lanes get all-zero bits (+0). a · 2^k is exact where
            // the result is normal, as the exponent field's integer add is: the same bits.
            // (LLVM turns the masked integer add of before into an add and a masked move.)
            let f = self.0.avx512f;
            let above = f._mm512_cmp_pd_mask::<_CMP_NLT_UQ>(x, floor);
            f._mm512_maskz_scalef_pd(above, a, k)
        }
        const CONSTANTS_IN_MEMORY: bool = false;
    }

    impl Wide for Avx512 {
        const WIDTH: usize = 2 * QUAD;
        type Quad = Avx2;

        #[inline(always)]
        fn quad(self) -> Avx2 {
            Avx2(*self.0)
        }
        #[inline(always)]
        fn load_wide(self, values: &[f64]) -> __m512d {
            let values: &[f64; 2 * QUAD] = values.try_into().expect("invariant: a whole chunk");
            cast(*values)
        }
        #[inline(always)]
        fn store_wide(self, values: &mut [f64], v: __m512d) {
            let values: &mut [f64; 2 * QUAD] = values.try_into().expect("invariant: a whole chunk");
            *values = cast(v);
        }
        #[inline(always)]
        fn narrow(self, v: __m512d) -> QuadV<Self> {
            self.halves(v).0
        }
        #[inline(always)]
        fn add_into(self, acc: QuadV<Self>, v: __m512d) -> QuadV<Self> {
            let (q, (low, high)) = (self.quad(), self.halves(v));
            q.add(q.add(acc, low), high)
        }
        #[inline(always)]
        fn mul_add_into(self, a: __m512d, b: __m512d, acc: QuadV<Self>) -> QuadV<Self> {
            let (q, (a_low, a_high), (b_low, b_high)) =
                (self.quad(), self.halves(a), self.halves(b));
            q.mul_add(a_high, b_high, q.mul_add(a_low, b_low, acc))
        }
        #[inline(always)]
        fn fold_min(self, v: __m512d) -> QuadV<Self> {
            let (q, (low, high)) = (self.quad(), self.halves(v));
            q.min(high, low)
        }
        #[inline(always)]
        fn fold_max(self, v: __m512d) -> QuadV<Self> {
            let (q, (low, high)) = (self.quad(), self.halves(v));
            q.max(high, low)
        }
        #[inline(always)]
        fn fold_first_least(self, v: __m512d, written: &[f64]) -> QuadV<Self> {
            let lanes: [f64; 2 * QUAD] = cast(v);
            cast(first_least_of_halves(lanes, written))
        }
        #[inline(always)]
        fn first_position(self, values: &[f64], target: f64) -> usize {
            // `first_position`'s chunks of sixteen, each tested by two compares into masks
            // (the compiler's own code for its test is scalar with AVX-512).
            let f = self.0.avx512f;
            let splat = f._mm512_set1_pd(target);
            let equal =
                |half: &[f64]| f._mm512_cmp_pd_mask::<_CMP_EQ_OQ>(self.load_wide(half), splat);
            let mut chunks = values.chunks_exact(LANES);
            let mut offset = 0;
            for chunk in &mut chunks {
                let (low, high) = chunk.split_at(2 * QUAD);
                if equal(low) | equal(high) != 0 {
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
    }
}

/// A computation written against [`Quad`], to run under [`dispatch_quad`].
pub(crate) trait QuadKernel {
    type Output;
    fn run<Q: Quad>(self, quad: Q) -> Self::Output;
}

#[cfg(target_arch = "x86_64")]
struct WithAvx2<K>(K, Avx2);

#[cfg(target_arch = "x86_64")]
impl<K: QuadKernel> pulp::WithSimd for WithAvx2<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
        self.0.run(self.1)
    }
}

/// Runs `kernel` on one AVX2 vector per four lanes where the CPU has AVX2 and FMA (compiled
/// for them), and in plain f64 arithmetic elsewhere; the result is the same bits.
#[inline]
pub(crate) fn dispatch_quad<K: QuadKernel>(kernel: K) -> K::Output {
    #[cfg(test)]
    if forced_path() == Some(Path::Portable) {
        return kernel.run(Portable);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return pulp::Simd::vectorize(simd, WithAvx2(kernel, Avx2(simd)));
    }
    kernel.run(Portable)
}

/// A computation written against [`Wide`], to run under [`dispatch_wide`].
pub(crate) trait WideKernel {
    type Output;
    fn run<W: Wide>(self, wide: W) -> Self::Output;
}

#[cfg(target_arch = "x86_64")]
struct WideWithAvx2<K>(K, Avx2);

#[cfg(target_arch = "x86_64")]
impl<K: WideKernel> pulp::WithSimd for WideWithAvx2<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
        self.0.run(self.1)
    }
}

#[cfg(all(target_arch = "x86_64", feature = "avx512"))]
struct WideWithAvx512<K>(K, Avx512);

#[cfg(all(target_arch = "x86_64", feature = "avx512"))]
impl<K: WideKernel> pulp::WithSimd for WideWithAvx512<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
        self.0.run(self.1)
    }
}

/// The least number of values for which [`dispatch_wide`] takes eight lanes: below it the
/// set-up of the wider path (its constants, the folds of its lanes) costs more than its
/// chunks save (measured: N = 10 slower by about 10 %, N = 16 already faster).
#[cfg_attr(not(all(target_arch = "x86_64", feature = "avx512")), allow(dead_code))]
pub(crate) const WIDE_FROM: usize = 16;

/// Runs `kernel` over `len` values on one AVX-512 vector per eight lanes where the CPU has
/// AVX-512 and `len` ≥ [`WIDE_FROM`] (compiled for it), else as [`dispatch_quad`] does (one
/// AVX2 vector per four lanes, or plain f64 arithmetic); the result is the same bits.
#[inline]
pub(crate) fn dispatch_wide<K: WideKernel>(kernel: K, len: usize) -> K::Output {
    #[cfg(test)]
    match forced_path() {
        Some(Path::Portable) => return kernel.run(Portable),
        #[cfg(target_arch = "x86_64")]
        Some(Path::Avx2) => {
            let simd = pulp::x86::V3::try_new().expect("a forced path is available");
            return pulp::Simd::vectorize(simd, WideWithAvx2(kernel, Avx2(simd)));
        }
        #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
        Some(Path::Avx512) => {
            // Whatever the length, so that tests reach the eight-lane kernels at every N.
            let simd = pulp::x86::V4::try_new().expect("a forced path is available");
            return pulp::Simd::vectorize(simd, WideWithAvx512(kernel, Avx512(simd)));
        }
        _ => {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[cfg(feature = "avx512")]
        if len >= WIDE_FROM {
            if let Some(simd) = pulp::x86::V4::try_new() {
                return pulp::Simd::vectorize(simd, WideWithAvx512(kernel, Avx512(simd)));
            }
        }
        if let Some(simd) = pulp::x86::V3::try_new() {
            return pulp::Simd::vectorize(simd, WideWithAvx2(kernel, Avx2(simd)));
        }
    }
    let _ = len;
    kernel.run(Portable)
}

/// The paths a kernel can run on, for tests that compare them.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// Plain f64 arithmetic.
    Portable,
    /// One AVX2 vector per four lanes.
    Avx2,
    /// One AVX-512 vector per eight lanes ([`dispatch_wide`]; [`dispatch_quad`] stays on AVX2).
    Avx512,
}

#[cfg(test)]
impl Path {
    /// Every path this CPU offers.
    pub(crate) fn available() -> Vec<Path> {
        let mut paths = vec![Path::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if pulp::x86::V3::try_new().is_some() {
                paths.push(Path::Avx2);
            }
            #[cfg(feature = "avx512")]
            if pulp::x86::V4::try_new().is_some() {
                paths.push(Path::Avx512);
            }
        }
        paths
    }
}

#[cfg(test)]
thread_local! {
    static FORCED_PATH: std::cell::Cell<Option<Path>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
fn forced_path() -> Option<Path> {
    FORCED_PATH.with(std::cell::Cell::get)
}

/// Runs `f` with [`dispatch_wide`], [`dispatch_quad`] and [`dispatch_widest`] held to `path`
/// on this thread (which must be available: [`Path::available`]), for tests of whole
/// learners on every path.
#[cfg(test)]
pub(crate) fn on_path<T>(path: Path, f: impl FnOnce() -> T) -> T {
    assert!(
        Path::available().contains(&path),
        "{path:?} is not available"
    );
    let before = FORCED_PATH.with(|forced| forced.replace(Some(path)));
    let result = f();
    FORCED_PATH.with(|forced| forced.set(before));
    result
}

/// Runs `make()` on every path this CPU offers (portable, AVX2 and AVX-512 where present,
/// in that order) and returns the results, for tests that check they agree bit for bit.
#[cfg(test)]
pub(crate) fn run_on_every_path<K: WideKernel>(make: impl Fn() -> K) -> Vec<K::Output> {
    let mut results = vec![make().run(Portable)];
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(simd) = pulp::x86::V3::try_new() {
            results.push(pulp::Simd::vectorize(
                simd,
                WideWithAvx2(make(), Avx2(simd)),
            ));
        }
        #[cfg(feature = "avx512")]
        if let Some(simd) = pulp::x86::V4::try_new() {
            results.push(pulp::Simd::vectorize(
                simd,
                WideWithAvx512(make(), Avx512(simd)),
            ));
        }
    }
    results
}

/// The constants of [`exp_lanes`], splat to the lanes once per pass. They are passed through
/// `black_box` so that they stay values in memory (a stack slot, or a register): each
/// multiply-add then reads its coefficient as a memory operand, where the compiler would
/// otherwise re-broadcast every constant from its 8-byte constant-pool entry on every
/// iteration (one extra instruction each, eleven per four experts).
#[derive(Clone, Copy)]
pub(crate) struct ExpConstants<V> {
    log2_e: V,
    rounder: V,
    ln2: V,
    q: [V; 8],
    one: V,
    floor: V,
    ceiling: V,
}

impl<V: Copy> ExpConstants<V> {
    #[inline(always)]
    pub(crate) fn new<L: Lanes<V = V>>(lanes: L) -> Self {
        let constants = Self {
            log2_e: lanes.splat(std::f64::consts::LOG2_E),
            rounder: lanes.splat(EXP_ROUNDER),
            ln2: lanes.splat(std::f64::consts::LN_2),
            q: EXP_Q.map(|c| lanes.splat(c)),
            one: lanes.splat(1.0),
            floor: lanes.splat(EXP_FLOOR),
            ceiling: lanes.splat(EXP_CEILING),
        };
        if L::CONSTANTS_IN_MEMORY {
            std::hint::black_box(constants)
        } else {
            constants
        }
    }

    /// The same constants on the four lanes of `wide`'s quad (the first four of each: a
    /// narrower read of the same memory, no new splat).
    #[inline(always)]
    pub(crate) fn narrow<W: Wide<V = V>>(&self, wide: W) -> ExpConstants<QuadV<W>> {
        let narrow = |v: V| wide.narrow(v);
        ExpConstants {
            log2_e: narrow(self.log2_e),
            rounder: narrow(self.rounder),
            ln2: narrow(self.ln2),
            q: self.q.map(narrow),
            one: narrow(self.one),
            floor: narrow(self.floor),
            ceiling: narrow(self.ceiling),
        }
    }
}

/// [`exp`] on four or eight lanes: the same operations in the same order, so the same bits.
#[inline(always)]
pub(crate) fn exp_lanes<L: Lanes>(lanes: L, c: &ExpConstants<L::V>, x: L::V) -> L::V {
    exp_lanes_of(lanes, c, lanes.min(c.ceiling, x), x)
}

/// [`exp_lanes`] without the clamp at the ceiling (709): the same bits for every argument up
/// to the ceiling, one operation fewer; above it the result is meaningless, and not the
/// same bits on every path ([`Lanes::scale_above`]). For passes whose
/// caller discards every value they write when some argument exceeds 700 (the weights
/// engine's fused round re-weighs then).
#[inline(always)]
pub(crate) fn exp_lanes_below_ceiling<L: Lanes>(lanes: L, c: &ExpConstants<L::V>, x: L::V) -> L::V {
    exp_lanes_of(lanes, c, x, x)
}

/// The exponential of `clamped` (= min(709, x), or x when known to be below), 0 where x is
/// below the floor.
#[inline(always)]
fn exp_lanes_of<L: Lanes>(q: L, c: &ExpConstants<L::V>, clamped: L::V, x: L::V) -> L::V {
    let shifted = q.mul_add(clamped, c.log2_e, c.rounder);
    let k = q.sub(shifted, c.rounder);
    let r = q.neg_mul_add(k, c.ln2, clamped);
    let r2 = q.mul(r, r);
    let p01 = q.mul_add(c.q[1], r, c.q[0]);
    let p23 = q.mul_add(c.q[3], r, c.q[2]);
    let p45 = q.mul_add(c.q[5], r, c.q[4]);
    let p67 = q.mul_add(c.q[7], r, c.q[6]);
    let r4 = q.mul(r2, r2);
    let p03 = q.mul_add(p23, r2, p01);
    let p47 = q.mul_add(p67, r2, p45);
    let poly = q.mul_add(p47, r4, p03);
    let polynomial = q.mul_add(poly, r2, q.add(r, c.one));
    q.scale_above(x, c.floor, polynomial, shifted, k)
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
    tree_sum(lanes) + tail
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
    (tree_sum(lanes) + tail) == 0.0
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The reduction's order is fixed (the bits of PACBO's and the curves' sums, and so of
    /// their snapshots, depend on it): lane i with lane i + N/2, then again on the first half.
    #[test]
    fn tree_sum_adds_in_its_fixed_order() {
        // (1e16 + −1e16) + (1 + 1) = 2; one lane after the other would round 1e16 + 1 away.
        assert_eq!(tree_sum([1e16, 1.0, -1e16, 1.0]), 2.0);
        let mut rng = crate::rng::StreamRng::seed_from(5);
        for _ in 0..100 {
            let lanes: [f64; 16] = std::array::from_fn(|_| (rng.next_f64() - 0.5) * 1e3);
            let s: [f64; 8] = std::array::from_fn(|i| lanes[i] + lanes[i + 8]);
            let expected = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
            assert_eq!(tree_sum(lanes).to_bits(), expected.to_bits());
        }
    }

    /// The stated bound, relative error ≤ 1e−13, over every argument the weights engine can
    /// pass (x ≤ 0 down to the floor, and the positive side up to 709 that a re-shift
    /// discards): a dense sweep (step 1e−3: 1.4 million points, each reduction interval
    /// visited ~500 times), points just inside every reduction boundary k ln 2 ± ln 2 / 2
    /// (where |r| is largest and the polynomial is worst), and the floor.
    #[test]
    fn exp_is_within_its_stated_bound() {
        const BOUND: f64 = 1e-13;
        let relative = |x: f64| ((exp(x) - x.exp()) / x.exp()).abs();
        let mut worst = (0.0f64, 0.0);
        let mut check = |x: f64| {
            let error = relative(x);
            if error > worst.0 {
                worst = (error, x);
            }
        };
        let mut x = -708.0;
        while x <= 709.0 {
            check(x);
            x += 0.001;
        }
        let ln2 = std::f64::consts::LN_2;
        for k in -1021..=1022 {
            for side in [-1.0, 1.0] {
                let edge = f64::from(k) * ln2 + side * 0.5 * ln2;
                for nudge in [-1e-12, 0.0, 1e-12] {
                    let x = edge + nudge;
                    if (-708.0..=709.0).contains(&x) {
                        check(x);
                    }
                }
            }
        }
        assert!(
            worst.0 <= BOUND,
            "relative error {:e} at x = {}",
            worst.0,
            worst.1
        );
        // The fit's own maximum is 3.25e−14: a wrong coefficient shows far above it.
        assert!(worst.0 > 1e-15, "suspiciously exact: {:e}", worst.0);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert!(exp(-708.0) > 0.0);
        for below in [
            -708.000_000_1,
            -708.4,
            -745.2,
            -1e6,
            -1e300,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(exp(below).to_bits(), 0.0f64.to_bits(), "{below}");
        }
        // Above the ceiling every finite argument gives e^709, and +∞ does too: never NaN,
        // never ∞ (the exponent field cannot wrap).
        let ceiling = exp(709.0);
        assert!(ceiling.is_finite() && (ceiling - 709f64.exp()).abs() <= BOUND * ceiling);
        for above in [
            709.000_000_1,
            709.8,
            710.0,
            1e3,
            1e6,
            1e300,
            f64::MAX,
            f64::INFINITY,
        ] {
            assert_eq!(exp(above).to_bits(), ceiling.to_bits(), "{above}");
        }
        // No NaN from any other argument: every exponent, both signs, and the subnormals.
        for bits in (0..4096u64).map(|e| e << 52 | 0x0008_0000_0000_0001) {
            let x = f64::from_bits(bits);
            if !x.is_nan() {
                assert!(!exp(x).is_nan(), "{x}");
            }
        }
    }

    /// Inputs that reach every branch of the exponential: the floor and below, huge
    /// negative arguments (reduction overflow), zeros of both signs, tiny and large values.
    fn exp_arguments() -> Vec<f64> {
        let mut values = vec![
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            -708.0,
            -708.000_000_1,
            -709.5,
            -745.2,
            -1e6,
            -1e300,
            f64::NEG_INFINITY,
            709.0,
            709.5,
            1e300,
            f64::INFINITY,
            0.5 * std::f64::consts::LN_2,
            -0.5 * std::f64::consts::LN_2,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            values.push(-720.0 + 1430.0 * unit);
        }
        values
    }

    /// [`exp_lanes`] over every value, or [`exp_lanes_below_ceiling`] (`.1`).
    struct ExpAll<'a>(&'a [f64], bool);

    impl WideKernel for ExpAll<'_> {
        type Output = Vec<u64>;
        #[inline(always)]
        fn run<W: Wide>(self, w: W) -> Vec<u64> {
            let constants = ExpConstants::new(w);
            let mut out = vec![0.0; self.0.len()];
            for (x, y) in self
                .0
                .chunks_exact(W::WIDTH)
                .zip(out.chunks_exact_mut(W::WIDTH))
            {
                let x = w.load_wide(x);
                let e = if self.1 {
                    exp_lanes_below_ceiling(w, &constants, x)
                } else {
                    exp_lanes(w, &constants, x)
                };
                w.store_wide(y, e);
            }
            out.iter().map(|y| y.to_bits()).collect()
        }
    }

    /// The exponential on four lanes and on eight gives the bits of the scalar one, on every
    /// path this CPU offers (portable, AVX2, AVX-512, whose 2^k is a `vscalefpd` rather than
    /// an integer add); so does the unclamped one (the fused pass's) up to the ceiling, and
    /// down through the floor, where e^x would be subnormal (from −708 to −745) and must be
    /// 0: a sweep of that stretch besides the random arguments.
    #[test]
    fn exp_has_the_same_bits_on_every_path() {
        let mut values = exp_arguments();
        let mut x = -760.0;
        while x < -700.0 {
            values.push(x);
            x += 0.0137;
        }
        values.truncate(values.len() / 8 * 8);
        let scalar: Vec<u64> = values.iter().map(|&x| exp(x).to_bits()).collect();
        let paths = run_on_every_path(|| ExpAll(&values, false));
        assert_eq!(paths.len(), Path::available().len());
        for path in paths {
            assert_eq!(path, scalar);
        }
        assert_eq!(dispatch_wide(ExpAll(&values, false), values.len()), scalar);
        let below: Vec<f64> = values.iter().copied().filter(|&x| x <= 709.0).collect();
        let below = &below[..below.len() / 8 * 8];
        let scalar: Vec<u64> = below.iter().map(|&x| exp(x).to_bits()).collect();
        for path in run_on_every_path(|| ExpAll(below, true)) {
            assert_eq!(path, scalar);
        }
    }

    /// The eight-lane minimum folded to four lanes is the four-lane pass's state bit for bit,
    /// zeros of both signs included (the first zero of a lane in the order of its values).
    #[test]
    fn eight_lane_minima_fold_to_the_four_lane_state() {
        let four_lane = |written: &[f64]| -> [u64; QUAD] {
            let mut lanes = [f64::INFINITY; QUAD];
            for (i, &x) in written.iter().enumerate() {
                let lane = &mut lanes[i % QUAD];
                *lane = if x < *lane { x } else { *lane };
            }
            lanes.map(f64::to_bits)
        };
        let eight_lane = |written: &[f64]| -> [f64; 8] {
            let mut lanes = [f64::INFINITY; 8];
            for (i, &x) in written.iter().enumerate() {
                let lane = &mut lanes[i % 8];
                *lane = if x < *lane { x } else { *lane };
            }
            lanes
        };
        let mut rng = crate::rng::StreamRng::seed_from(9);
        let pool = [0.0, -0.0, 1.0, -1.0, f64::NAN, f64::INFINITY, 0.5];
        for length in [8, 16, 24, 40, 64] {
            for _ in 0..2000 {
                let written: Vec<f64> = (0..length)
                    .map(|_| pool[(rng.next_f64() * pool.len() as f64) as usize % pool.len()])
                    .collect();
                let folded = first_least_of_halves(eight_lane(&written), &written);
                assert_eq!(folded.map(f64::to_bits), four_lane(&written), "{written:?}");
            }
        }
        // Zeros of both signs in one lane, the first in the low half and in the high half.
        let mut written = vec![1.0; 16];
        (written[0], written[4]) = (-0.0, 0.0);
        assert_eq!(
            first_least_of_halves(eight_lane(&written), &written)[0].to_bits(),
            (-0.0f64).to_bits()
        );
        (written[0], written[4]) = (0.0, -0.0);
        assert_eq!(
            first_least_of_halves(eight_lane(&written), &written)[0].to_bits(),
            0
        );
        (written[0], written[4], written[8]) = (1.0, -0.0, 0.0);
        assert_eq!(
            first_least_of_halves(eight_lane(&written), &written)[0].to_bits(),
            (-0.0f64).to_bits()
        );
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
    }
}
