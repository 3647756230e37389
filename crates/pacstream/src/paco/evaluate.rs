//! Evaluation of S_t(c) over the memory, with exact early rejection.
//!
//! # The kernel
//!
//! For a candidate clustering c = (c_1..c_k), each point's loss is
//!
//! ℓ(c, x_s) = max(0, ‖x_s‖² + min_j (‖c_j‖² − 2 x_s·c_j)),
//!
//! the expanded form of min_j ‖x_s − c_j‖² (d fused multiply-adds per centre instead of d
//! subtractions and d multiply-adds; the data are centred, so the cancellation it risks is
//! of order ε R²). The clamp at 0 keeps every term of S non-negative in floating point.
//! Its term of S is ℓ + w_s (ℓ − ℓ̂_s)², times the point's `live` flag (0 or 1).
//!
//! The memory stores each chunk of 128 points column by column ([`super::memory`]), so the
//! kernel works on 16 points at a time, in vectors of the CPU's width (four AVX2 registers):
//! for each centre, 16 accumulators start at ‖c_j‖² and take d fused multiply-adds, then a
//! running minimum; ‖x‖² is added to the minimum. The 16 lanes of a chunk's sum are combined
//! by a fixed tree. The kernel runs under [`crate::kernels::dispatch_simd`]; it uses only
//! operations that round the same way at every width, and point g + l of a group always
//! lands in lane l, so the bits are the same on every instruction set (checked by a test
//! against the portable path). (Written with explicit vectors because the compiler, left to
//! itself, vectorised the 16-lane loops two lanes wide and spilled the accumulators.)
//!
//! # Early rejection
//!
//! The sampler decides a move by one rule: accept iff S_t(c') < thr (see [`super::sampler`]).
//! Every term is ≥ 0, so the running sum over chunks only grows, also in floating point
//! (x + y ≥ x for y ≥ 0 under rounding to nearest). The chunks are summed in their fixed
//! order and the sum is compared with thr after each chunk: once it reaches thr the move is
//! rejected — exactly what evaluating all of S_t(c') would decide.
//!
//! # Parallelism
//!
//! The first chunks are evaluated one by one (cheap rejections stop there). Beyond, chunks
//! are evaluated in waves, each wave's chunk sums in parallel (rayon), then added to the
//! running sum one by one in chunk order, with the same comparison after each. The sums,
//! the decision and the count of chunks reported as touched are the same whatever the
//! number of threads; only the work wasted past a rejection inside a wave depends on it.

use rayon::prelude::*;

use super::memory::{CHUNK, ChunkLayout, PointMemory};
use crate::geometry::squared_norm;
use pulp::Simd;

use crate::kernels::{SimdKernel, dispatch_simd};

/// Points processed together by the kernel (four AVX2 registers of accumulators).
const GROUP: usize = 16;

/// Chunks evaluated one by one before any parallel wave.
const SEQUENTIAL_HEAD: usize = 64;
/// Up to this many chunks (65,536 points), everything is sequential. Measured on the
/// project's 2-core machines: a proposal over 10,000 points (d = 5, k = 4) costs about
/// 20 µs, less than handing a wave to another thread and back (the parallel path was 1.5 to
/// 3 times slower than the sequential one at that size), so waves only pay on large memories.
const PARALLEL_MIN_CHUNKS: usize = 512;
/// The first parallel wave, in chunks; later waves double up to [`LAST_WAVE`].
const FIRST_WAVE: usize = 256;
const LAST_WAVE: usize = 1024;
/// Chunks per parallel task (8,192 points).
const TASK_CHUNKS: usize = 64;

/// A candidate clustering, prepared for the kernel: −2c_j and ‖c_j‖².
#[derive(Clone, Debug)]
pub(crate) struct PreparedCentres {
    dim: usize,
    n_centres: usize,
    minus_twice: Vec<f64>,
    norms: Vec<f64>,
}

impl PreparedCentres {
    pub(crate) fn new(dim: usize) -> Self {
        Self {
            dim,
            n_centres: 0,
            minus_twice: Vec::new(),
            norms: Vec::new(),
        }
    }

    /// Prepares `centres` (row-major, k × d), reusing the buffers.
    pub(crate) fn set(&mut self, centres: &[f64]) {
        self.n_centres = centres.len() / self.dim;
        self.minus_twice.clear();
        self.minus_twice.extend(centres.iter().map(|c| -2.0 * c));
        self.norms.clear();
        self.norms
            .extend(centres.chunks_exact(self.dim).map(squared_norm));
    }
}

/// The outcome of an evaluation against a threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Evaluation {
    /// S_t(c) when complete; otherwise the running sum that reached the threshold.
    pub(crate) value: f64,
    /// Whether every chunk was summed without the running sum reaching the threshold.
    pub(crate) complete: bool,
    /// The chunks summed.
    pub(crate) chunks: usize,
}

impl PointMemory {
    /// S_t(c) for prepared centres, stopping as soon as the running sum reaches `threshold`
    /// (pass +∞ for the full sum).
    pub(crate) fn evaluate(&self, centres: &PreparedCentres, threshold: f64) -> Evaluation {
        debug_assert_eq!(centres.dim, self.dim());
        let n_chunks = self.n_chunks();
        let stride = self.chunk_stride();
        let layout = ChunkLayout { dim: self.dim() };
        if 0.0 >= threshold {
            return Evaluation {
                value: 0.0,
                complete: false,
                chunks: 0,
            };
        }
        let head = if n_chunks <= PARALLEL_MIN_CHUNKS {
            n_chunks
        } else {
            SEQUENTIAL_HEAD
        };
        let chunks = self.chunks();
        let scan = dispatch_simd(ScanChunks {
            chunks: &chunks[..head * stride],
            stride,
            layout: &layout,
            centres,
            threshold,
            partial: 0.0,
        });
        if scan.stopped {
            return Evaluation {
                value: scan.partial,
                complete: false,
                chunks: scan.done,
            };
        }
        let mut partial = scan.partial;
        let mut next = head;
        let mut wave = FIRST_WAVE;
        let mut sums = Vec::new();
        while next < n_chunks {
            let end = (next + wave).min(n_chunks);
            sums.clear();
            sums.resize(end - next, 0.0);
            chunks[next * stride..end * stride]
                .par_chunks(TASK_CHUNKS * stride)
                .zip(sums.par_chunks_mut(TASK_CHUNKS))
                .for_each(|(part, out)| {
                    dispatch_simd(SumChunks {
                        chunks: part,
                        stride,
                        layout: &layout,
                        centres,
                        out,
                    });
                });
            for (offset, sum) in sums.iter().enumerate() {
                partial += sum;
                if partial >= threshold {
                    return Evaluation {
                        value: partial,
                        complete: false,
                        chunks: next + offset + 1,
                    };
                }
            }
            next = end;
            wave = (wave * 2).min(LAST_WAVE);
        }
        Evaluation {
            value: partial,
            complete: true,
            chunks: n_chunks,
        }
    }

    /// S_t(c) in full.
    pub(crate) fn cumulative_loss(&self, centres: &PreparedCentres) -> f64 {
        self.evaluate(centres, f64::INFINITY).value
    }
}

struct ScanOutcome {
    partial: f64,
    done: usize,
    stopped: bool,
}

/// Sums chunks in order onto `partial`, stopping once it reaches `threshold`.
struct ScanChunks<'a> {
    chunks: &'a [f64],
    stride: usize,
    layout: &'a ChunkLayout,
    centres: &'a PreparedCentres,
    threshold: f64,
    partial: f64,
}

impl SimdKernel for ScanChunks<'_> {
    type Output = ScanOutcome;

    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> ScanOutcome {
        let mut partial = self.partial;
        for (index, chunk) in self.chunks.chunks_exact(self.stride).enumerate() {
            partial += chunk_sum(simd, chunk, self.layout, self.centres);
            if partial >= self.threshold {
                return ScanOutcome {
                    partial,
                    done: index + 1,
                    stopped: true,
                };
            }
        }
        ScanOutcome {
            partial,
            done: self.chunks.len() / self.stride,
            stopped: false,
        }
    }
}

/// Writes the sum of each chunk.
struct SumChunks<'a> {
    chunks: &'a [f64],
    stride: usize,
    layout: &'a ChunkLayout,
    centres: &'a PreparedCentres,
    out: &'a mut [f64],
}

impl SimdKernel for SumChunks<'_> {
    type Output = ();

    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        for (chunk, out) in self.chunks.chunks_exact(self.stride).zip(self.out) {
            *out = chunk_sum(simd, chunk, self.layout, self.centres);
        }
    }
}

/// The 16 values of a group as vectors of the CPU's width (16 / lanes of them).
#[inline(always)]
fn group<S: Simd>(values: &[f64], start: usize) -> &[S::f64s] {
    S::as_simd_f64s(&values[start..start + GROUP]).0
}

/// The sum of one chunk's terms (see the module docs): point g + l of each group of 16
/// adds into accumulator lane l, whatever the width of the vectors, and the 16 lanes are
/// combined by a fixed tree, so the result is the same on every instruction set.
#[inline(always)]
fn chunk_sum<S: Simd>(
    simd: S,
    chunk: &[f64],
    layout: &ChunkLayout,
    centres: &PreparedCentres,
) -> f64 {
    let dim = layout.dim;
    let vectors = GROUP / S::F64_LANES;
    let zero = simd.splat_f64s(0.0);
    let mut lanes = [zero; GROUP];
    for start in (0..CHUNK).step_by(GROUP) {
        let norms = group::<S>(chunk, layout.norm() + start);
        let mut best = [simd.splat_f64s(f64::INFINITY); GROUP];
        for (weights, &centre_norm) in centres.minus_twice.chunks_exact(dim).zip(&centres.norms) {
            // ‖c_j‖² − 2 x·c_j; ‖x‖² is added once, after the minimum over j.
            let mut acc = [simd.splat_f64s(centre_norm); GROUP];
            for (i, &weight) in weights.iter().enumerate() {
                let x = group::<S>(chunk, layout.coordinate(i) + start);
                let weight = simd.splat_f64s(weight);
                for v in 0..vectors {
                    acc[v] = simd.mul_add_f64s(x[v], weight, acc[v]);
                }
            }
            // `min` may return either zero of ±0 (its conventions differ between
            // instruction sets), and only there: the clamp below maps both to +0, so the bits
            // of the result do not depend on which.
            for v in 0..vectors {
                best[v] = simd.min_f64s(acc[v], best[v]);
            }
        }
        let predicted = group::<S>(chunk, layout.predicted() + start);
        let variance = group::<S>(chunk, layout.variance() + start);
        let live = group::<S>(chunk, layout.live() + start);
        for v in 0..vectors {
            let distance = simd.add_f64s(best[v], norms[v]);
            let loss = simd.select_f64s(simd.greater_than_f64s(distance, zero), distance, zero);
            let diff = simd.sub_f64s(loss, predicted[v]);
            let term = simd.mul_add_f64s(simd.mul_f64s(variance[v], diff), diff, loss);
            // live = 0 adds exactly nothing (the term is finite).
            lanes[v] = simd.mul_add_f64s(term, live[v], lanes[v]);
        }
    }
    let mut values = [0.0f64; GROUP];
    for (out, lane) in S::as_mut_simd_f64s(&mut values).0.iter_mut().zip(&lanes) {
        *out = *lane;
    }
    combine(values)
}

/// The 16 lanes added by a fixed tree.
#[inline(always)]
fn combine(mut lanes: [f64; GROUP]) -> f64 {
    let mut width = GROUP;
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
    use crate::paco::params::Memory as MemoryMode;
    use crate::rng::StreamRng;

    fn memory(n: usize, dim: usize, mode: MemoryMode, seed: u64) -> PointMemory {
        let mut rng = StreamRng::seed_from(seed);
        let mut memory = PointMemory::new(dim, mode);
        for s in 0..n {
            let point: Vec<f64> = (0..dim).map(|_| 3.0 * rng.standard_normal()).collect();
            let weight = if s < 5 { 0.0 } else { 0.01 * rng.next_f64() };
            memory.push(&point, 2.0 * rng.next_f64(), weight);
        }
        memory
    }

    fn direct(memory: &PointMemory, centres: &[f64]) -> f64 {
        let dim = memory.dim();
        memory
            .rows()
            .chunks_exact(dim)
            .zip(memory.predicted_losses())
            .zip(memory.variance_weights())
            .map(|((x, &predicted), &w)| {
                let loss = centres
                    .chunks_exact(dim)
                    .map(|c| crate::geometry::squared_distance(x, c))
                    .fold(f64::INFINITY, f64::min);
                loss + w * (loss - predicted).powi(2)
            })
            .sum()
    }

    #[test]
    fn matches_the_definition() {
        for (n, dim, mode) in [
            (1, 1, MemoryMode::Exact),
            (300, 3, MemoryMode::Exact),
            (5000, 2, MemoryMode::Exact),
            (5000, 7, MemoryMode::Window(1000)),
            (4000, 20, MemoryMode::Window(3500)),
        ] {
            let memory = memory(n, dim, mode, n as u64);
            let mut rng = StreamRng::seed_from(1000);
            let centres: Vec<f64> = (0..4 * dim).map(|_| 3.0 * rng.standard_normal()).collect();
            let mut prepared = PreparedCentres::new(dim);
            prepared.set(&centres);
            let fast = memory.cumulative_loss(&prepared);
            let slow = direct(&memory, &centres);
            assert!((fast - slow).abs() <= 1e-11 * slow, "{fast} {slow}");
        }
    }

    #[test]
    fn early_rejection_stops_where_the_running_sum_crosses() {
        let memory = memory(6000, 3, MemoryMode::Exact, 4);
        let mut prepared = PreparedCentres::new(3);
        prepared.set(&[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let full = memory.evaluate(&prepared, f64::INFINITY);
        assert!(full.complete);
        for fraction in [0.0, 0.01, 0.3, 0.7, 0.999, 1.0, 1.5] {
            let threshold = fraction * full.value;
            let early = memory.evaluate(&prepared, threshold);
            // The same decision as the full sum, always.
            assert_eq!(early.complete, full.value < threshold, "{fraction}");
            if !early.complete {
                assert!(early.value >= threshold);
                if fraction > 0.0 && fraction < 0.99 {
                    assert!(early.chunks < memory.n_chunks());
                }
            }
        }
    }

    /// The portable one-lane path and the dispatched path give the same bits.
    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        for (n, dim) in [(1000, 1), (700, 5), (300, 19)] {
            let memory = memory(n, dim, MemoryMode::Exact, 77);
            let mut rng = StreamRng::seed_from(5);
            let centres: Vec<f64> = (0..3 * dim).map(|_| 3.0 * rng.standard_normal()).collect();
            let mut prepared = PreparedCentres::new(dim);
            prepared.set(&centres);
            let layout = ChunkLayout { dim };
            let stride = memory.chunk_stride();
            for chunk in memory.chunks().chunks_exact(stride) {
                let portable = chunk_sum(pulp::Scalar::new(), chunk, &layout, &prepared);
                let dispatched = dispatch_simd(ScanChunks {
                    chunks: chunk,
                    stride,
                    layout: &layout,
                    centres: &prepared,
                    threshold: f64::INFINITY,
                    partial: 0.0,
                })
                .partial;
                assert_eq!(portable.to_bits(), dispatched.to_bits());
            }
        }
    }

    #[test]
    fn thread_count_does_not_change_the_bits() {
        // Beyond PARALLEL_MIN_CHUNKS chunks, so that the waves run.
        let memory = memory(70_000, 5, MemoryMode::Exact, 9);
        assert!(memory.n_chunks() > PARALLEL_MIN_CHUNKS);
        let mut prepared = PreparedCentres::new(5);
        prepared.set(&[1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 2.0, 0.0, 1.0, 0.5]);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| memory.cumulative_loss(&prepared))
        };
        assert_eq!(run(1).to_bits(), run(3).to_bits());
    }

    /// On the parallel path (waves of chunks), early rejection decides as the full sum does,
    /// stops at the same chunk and reports the same partial sum whatever the thread count.
    #[test]
    fn early_rejection_in_waves_is_exact_and_thread_independent() {
        let memory = memory(70_000, 3, MemoryMode::Exact, 11);
        assert!(memory.n_chunks() > PARALLEL_MIN_CHUNKS);
        let mut prepared = PreparedCentres::new(3);
        prepared.set(&[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let full = memory.evaluate(&prepared, f64::INFINITY);
        assert!(full.complete);
        let in_pool = |threads: usize, threshold: f64| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| memory.evaluate(&prepared, threshold))
        };
        // Fractions that stop in the sequential head, in the first wave and in later waves.
        for fraction in [0.01, 0.2, 0.5, 0.9, 0.999, 1.0, 1.5] {
            let threshold = fraction * full.value;
            let single = in_pool(1, threshold);
            let multi = in_pool(3, threshold);
            assert_eq!(single.complete, full.value < threshold, "{fraction}");
            assert_eq!(single.complete, multi.complete, "{fraction}");
            assert_eq!(single.chunks, multi.chunks, "{fraction}");
            assert_eq!(single.value.to_bits(), multi.value.to_bits(), "{fraction}");
            if !single.complete {
                assert!(single.value >= threshold);
                if fraction < 0.99 {
                    assert!(single.chunks < memory.n_chunks(), "{fraction}");
                }
            } else {
                assert_eq!(single.value.to_bits(), full.value.to_bits());
            }
        }
    }
}
