//! Deterministic data parallelism for the batch k-means kernels.
//!
//! Every pass over the n points is cut into chunks of [`CHUNK`] consecutive points. Chunks
//! run in parallel (rayon), each writes its own partial result (a sum, per-cluster sums, a
//! count), and the partials are combined sequentially in chunk order. The chunk boundaries
//! and the order of combination depend only on n, never on the number of threads or on how
//! rayon schedules the work, so every floating-point sum — and hence every centre, label
//! and inertia — is the same bit for bit on 1 thread or 64.

use std::ops::Range;

use rayon::prelude::*;

use crate::data::Weights;
use crate::geometry::squared_distance;

/// Points per chunk. Large enough that the per-chunk work (≥ 1024 distance evaluations)
/// dwarfs rayon's scheduling cost, small enough that a few thousand points already give
/// both cores something to do.
pub(crate) const CHUNK: usize = 1024;

/// Chunks run in parallel before their partials are folded. Bounds the memory held by
/// partials (at most `GROUP` of them at a time, each k·d values for cluster sums) whatever
/// n is; the fold order is still plain chunk order.
const GROUP: usize = 64;

/// The training points of a fit in the coordinates the kernels work in (row-major, `dim`
/// values per point), with their weights.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WeightedPoints<'a> {
    pub(crate) values: &'a [f64],
    pub(crate) dim: usize,
    pub(crate) weights: Weights<'a>,
}

impl<'a> WeightedPoints<'a> {
    pub(crate) fn n_points(&self) -> usize {
        self.values.len() / self.dim
    }

    #[inline(always)]
    pub(crate) fn row(&self, index: usize) -> &'a [f64] {
        &self.values[index * self.dim..(index + 1) * self.dim]
    }

    #[inline(always)]
    pub(crate) fn weight(&self, index: usize) -> f64 {
        self.weights.get(index)
    }

    /// The index ranges of the chunks, in order.
    pub(crate) fn chunk_ranges(&self) -> impl IndexedParallelIterator<Item = Range<usize>> {
        let n = self.n_points();
        (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(move |c| c * CHUNK..((c + 1) * CHUNK).min(n))
    }

    /// Total weight Σ w(x).
    pub(crate) fn total_weight(&self) -> f64 {
        match self.weights {
            Weights::Unit => self.n_points() as f64,
            Weights::Given(weights) => ordered_sum(weights.par_chunks(CHUNK).map(sequential_sum)),
        }
    }

    /// The weighted mean Σ w(x)·x / Σ w(x).
    pub(crate) fn weighted_mean(&self) -> Vec<f64> {
        let dim = self.dim;
        let partials: Vec<Vec<f64>> = self
            .chunk_ranges()
            .map(|range| {
                let mut sum = vec![0.0; dim];
                for i in range {
                    let w = self.weight(i);
                    for (s, x) in sum.iter_mut().zip(self.row(i)) {
                        *s += w * x;
                    }
                }
                sum
            })
            .collect();
        let mut mean = vec![0.0; dim];
        for partial in &partials {
            for (m, s) in mean.iter_mut().zip(partial) {
                *m += s;
            }
        }
        let total = self.total_weight();
        mean.iter_mut().for_each(|m| *m /= total);
        mean
    }

    /// Σ w(x)·‖x − centre‖² (the weighted inertia of a single centre).
    pub(crate) fn weighted_spread(&self, centre: &[f64]) -> f64 {
        ordered_sum(self.chunk_ranges().map(|range| {
            range
                .map(|i| self.weight(i) * squared_distance(self.row(i), centre))
                .sum::<f64>()
        }))
    }

    /// The inertia Σ w(x)·‖x − c_{label(x)}‖², from direct differences.
    pub(crate) fn inertia(&self, centres: &[f64], labels: &[usize]) -> f64 {
        let dim = self.dim;
        ordered_sum(self.chunk_ranges().map(|range| {
            range
                .map(|i| {
                    let centre = &centres[labels[i] * dim..(labels[i] + 1) * dim];
                    self.weight(i) * squared_distance(self.row(i), centre)
                })
                .sum::<f64>()
        }))
    }
}

/// Sums per-chunk values in chunk order.
pub(crate) fn ordered_sum(partials: impl IndexedParallelIterator<Item = f64>) -> f64 {
    let partials: Vec<f64> = partials.collect();
    sequential_sum(&partials)
}

fn sequential_sum(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |acc, v| acc + v)
}

/// Runs `work(first_index, chunk_items, partial)` on every chunk of `items` in parallel and
/// then `fold(partial)` on the partials in chunk order.
///
/// `work` must overwrite its partial completely (the buffers in `scratch` are reused from
/// chunk to chunk); `make` creates a fresh buffer when `scratch` is too short.
pub(crate) fn fold_chunks<T, P>(
    items: &mut [T],
    scratch: &mut Vec<P>,
    make: impl Fn() -> P,
    work: impl Fn(usize, &mut [T], &mut P) + Sync,
    mut fold: impl FnMut(&P),
) where
    T: Send,
    P: Send,
{
    let group_len = CHUNK * GROUP;
    for (group_index, group) in items.chunks_mut(group_len).enumerate() {
        let n_chunks = group.len().div_ceil(CHUNK);
        while scratch.len() < n_chunks {
            scratch.push(make());
        }
        group
            .par_chunks_mut(CHUNK)
            .zip(scratch[..n_chunks].par_iter_mut())
            .enumerate()
            .for_each(|(chunk_index, (chunk, partial))| {
                work(
                    group_index * group_len + chunk_index * CHUNK,
                    chunk,
                    partial,
                );
            });
        for partial in &scratch[..n_chunks] {
            fold(partial);
        }
    }
}

/// [`fold_chunks`] for passes that only read per-point state: `work(range, partial)` gets
/// the index range of its chunk.
pub(crate) fn fold_ranges<P: Send>(
    n_points: usize,
    scratch: &mut Vec<P>,
    make: impl Fn() -> P,
    work: impl Fn(Range<usize>, &mut P) + Sync,
    fold: impl FnMut(&P),
) {
    // The unit values only carry the chunk boundaries.
    let mut indices = vec![(); n_points];
    fold_chunks(
        &mut indices,
        scratch,
        make,
        |first, chunk, partial| work(first..first + chunk.len(), partial),
        fold,
    );
}

/// Per-cluster weighted sums Σ w(x)·x and masses Σ w(x) of the points assigned to each
/// cluster, plus the number and weight of the points whose label changed: the partial result of one chunk
/// of an assignment pass, and (folded in chunk order) of the whole pass.
#[derive(Clone, Debug)]
pub(crate) struct ClusterSums {
    dim: usize,
    pub(crate) sums: Vec<f64>,
    pub(crate) masses: Vec<f64>,
    pub(crate) n_changed: usize,
    /// The weight of the points whose label changed.
    pub(crate) changed_mass: f64,
}

impl ClusterSums {
    pub(crate) fn new(n_clusters: usize, dim: usize) -> Self {
        Self {
            dim,
            sums: vec![0.0; n_clusters * dim],
            masses: vec![0.0; n_clusters],
            n_changed: 0,
            changed_mass: 0.0,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.sums.fill(0.0);
        self.masses.fill(0.0);
        self.n_changed = 0;
        self.changed_mass = 0.0;
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, label: usize, point: &[f64], weight: f64) {
        self.masses[label] += weight;
        let sum = &mut self.sums[label * self.dim..(label + 1) * self.dim];
        for (s, x) in sum.iter_mut().zip(point) {
            *s += weight * x;
        }
    }

    /// [`Self::add`] for a compile-time dimension D = d ≥ 1 (the same operations, unrolled).
    #[inline(always)]
    pub(crate) fn add_row<const D: usize>(&mut self, label: usize, point: &[f64], weight: f64) {
        self.masses[label] += weight;
        // Fixed-size views: the loop unrolls into D loads, multiplies and adds, with one
        // bounds check instead of a loop and its aliasing checks per point.
        let start = label * D;
        let sum: &mut [f64; D] = (&mut self.sums[start..start + D])
            .try_into()
            .expect("invariant: a cluster's sum holds D values");
        let point: &[f64; D] = point[..D]
            .try_into()
            .expect("invariant: a row holds D values");
        for f in 0..D {
            sum[f] += weight * point[f];
        }
    }

    pub(crate) fn merge(&mut self, other: &Self) {
        for (a, b) in self.sums.iter_mut().zip(&other.sums) {
            *a += b;
        }
        for (a, b) in self.masses.iter_mut().zip(&other.masses) {
            *a += b;
        }
        self.n_changed += other.n_changed;
        self.changed_mass += other.changed_mass;
    }

    /// The weighted means of the clusters; a cluster without mass keeps its centre from
    /// `previous`.
    pub(crate) fn means(&self, previous: &[f64]) -> Vec<f64> {
        let mut centres = previous.to_vec();
        for (j, &mass) in self.masses.iter().enumerate() {
            if mass > 0.0 {
                let range = j * self.dim..(j + 1) * self.dim;
                for (c, s) in centres[range.clone()].iter_mut().zip(&self.sums[range]) {
                    *c = s / mass;
                }
            }
        }
        centres
    }
}

/// The cluster sums of the points under the labelling `label`, computed chunk by chunk in the same order
/// as the fused sums of the assignment kernels (so the two agree bit for bit).
pub(crate) fn cluster_sums(
    points: &WeightedPoints<'_>,
    label: impl Fn(usize) -> usize + Sync,
    n_clusters: usize,
) -> ClusterSums {
    let dim = points.dim;
    let mut total = ClusterSums::new(n_clusters, dim);
    fold_ranges(
        points.n_points(),
        &mut Vec::new(),
        || ClusterSums::new(n_clusters, dim),
        |range, partial| {
            partial.clear();
            self::with_const_dim!(dim, add_range(points, range.clone(), &label, partial));
        },
        |partial| total.merge(partial),
    );
    total
}

/// Adds the points of `range` to the sums of their clusters: [`ClusterSums::add`], unrolled
/// at a compile-time dimension D ≥ 1 (D = 0: the dimension read at run time).
#[inline(always)]
fn add_range<const D: usize>(
    points: &WeightedPoints<'_>,
    range: Range<usize>,
    label: &impl Fn(usize) -> usize,
    partial: &mut ClusterSums,
) {
    for i in range {
        if D == 0 {
            partial.add(label(i), points.row(i), points.weight(i));
        } else {
            partial.add_row::<D>(label(i), points.row(i), points.weight(i));
        }
    }
}

/// Calls `$kernel::<D>($args)` with the dimension as a constant for d ≤ 16 (and D = 0,
/// meaning "read the dimension at run time", otherwise). With a constant D the row slices
/// have a length known at compile time, so the distance loops unroll completely instead of
/// paying a loop set-up per distance, which dominates at small d; the arithmetic, and so
/// every result, is the same as in the run-time version.
///
macro_rules! with_const_dim {
    ($dim:expr, $kernel:ident ( $($arg:expr),* $(,)? )) => {
        match $dim {
            1 => $kernel::<1>($($arg),*),
            2 => $kernel::<2>($($arg),*),
            3 => $kernel::<3>($($arg),*),
            4 => $kernel::<4>($($arg),*),
            5 => $kernel::<5>($($arg),*),
            6 => $kernel::<6>($($arg),*),
            7 => $kernel::<7>($($arg),*),
            8 => $kernel::<8>($($arg),*),
            9 => $kernel::<9>($($arg),*),
            10 => $kernel::<10>($($arg),*),
            11 => $kernel::<11>($($arg),*),
            12 => $kernel::<12>($($arg),*),
            13 => $kernel::<13>($($arg),*),
            14 => $kernel::<14>($($arg),*),
            15 => $kernel::<15>($($arg),*),
            16 => $kernel::<16>($($arg),*),
            _ => $kernel::<0>($($arg),*),
        }
    };
}
pub(crate) use with_const_dim;

/// Defines `$name::<D>(args)`, which runs `$kernel::<D>(args)` (an `#[inline(always)]`
/// function) compiled for the best instruction set of the CPU ([`crate::kernels::dispatch`]):
/// AVX2 where present, where a distance over 64 coordinates takes half the instructions of
/// the portable SSE2 code. The kernels use no fused multiply-add and reduce in a fixed lane
/// order, so the wider instructions change no bit.
macro_rules! dispatched {
    ($name:ident = $kernel:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $out:ty)?) => {
        $crate::kmeans::chunked::define_dispatched!(plain $name = $kernel ($($arg: $ty),*) $(-> $out)?);
    };
}
pub(crate) use dispatched;

/// [`dispatched!`] for kernels written against [`crate::kernels::Quad`]:
/// `$kernel::<Q, D>(quad, args)` runs on one AVX2 vector per four lanes where the CPU has
/// AVX2 (compiled for it), in plain f64 lanes elsewhere, with the same bits either way.
macro_rules! quad_dispatched {
    ($name:ident = $kernel:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $out:ty)?) => {
        $crate::kmeans::chunked::define_dispatched!(quad $name = $kernel ($($arg: $ty),*) $(-> $out)?);
    };
}
pub(crate) use quad_dispatched;

/// What [`dispatched!`] (`plain`) and [`quad_dispatched!`] (`quad`) define: the arguments
/// packed for [`crate::kernels::dispatch`] (or `dispatch_quad`), unpacked by the kernel's
/// `run` compiled for the instruction set chosen.
macro_rules! define_dispatched {
    ($variant:ident $name:ident = $kernel:ident ( $($arg:ident : $ty:ty),* ) $(-> $out:ty)?) => {
        #[allow(clippy::too_many_arguments)]
        fn $name<'a, 'b, const D: usize>($($arg: $ty),*) $(-> $out)? {
            struct Args<'a, 'b> {
                $($arg: $ty,)*
                _lifetimes: std::marker::PhantomData<(&'a (), &'b ())>,
            }
            struct Run<'a, 'b, const D: usize>(Args<'a, 'b>);
            $crate::kmeans::chunked::define_dispatched!(@run $variant $kernel ($($arg),*) $(-> $out)?);
            let args = Args {
                $($arg,)*
                _lifetimes: std::marker::PhantomData,
            };
            $crate::kmeans::chunked::define_dispatched!(@dispatch $variant Run::<D>(args))
        }
    };
    (@run plain $kernel:ident ($($arg:ident),*) $(-> $out:ty)?) => {
        impl<'a, 'b, const D: usize> crate::kernels::Kernel for Run<'a, 'b, D> {
            type Output = $crate::kmeans::chunked::define_dispatched!(@out $($out)?);
            #[inline(always)]
            fn run(self) -> Self::Output {
                let Args { $($arg,)* .. } = self.0;
                $kernel::<D>($($arg),*)
            }
        }
    };
    (@run quad $kernel:ident ($($arg:ident),*) $(-> $out:ty)?) => {
        impl<'a, 'b, const D: usize> crate::kernels::QuadKernel for Run<'a, 'b, D> {
            type Output = $crate::kmeans::chunked::define_dispatched!(@out $($out)?);
            #[inline(always)]
            fn run<Q: crate::kernels::Quad>(self, quad: Q) -> Self::Output {
                let Args { $($arg,)* .. } = self.0;
                $kernel::<Q, D>(quad, $($arg),*)
            }
        }
    };
    (@dispatch plain $run:expr) => { crate::kernels::dispatch($run) };
    (@dispatch quad $run:expr) => { crate::kernels::dispatch_quad($run) };
    (@out) => { () };
    (@out $out:ty) => { $out };
}
pub(crate) use define_dispatched;
