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

use super::cover::{POINT, PlanScratch, RobustCover, Unit};
use super::index::{
    KdTree, MAX_INDEX_DIM, MomentLayout, N, Node, NodeLayout, SUM_W, SUM_WE, SUM_WEE, SUM_YY,
    SpatialIndex,
};
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

/// A candidate clustering, prepared for the evaluation: the centres, −2c_j and ‖c_j‖² for
/// the chunk kernel, and the scratch buffers of the tree walk (reused from one evaluation
/// to the next).
#[derive(Clone, Debug)]
pub(crate) struct PreparedCentres {
    dim: usize,
    n_centres: usize,
    centres: Vec<f64>,
    minus_twice: Vec<f64>,
    norms: Vec<f64>,
    walk: WalkScratch,
    /// The scratch of the births' refined walk ([`super::birth::refined_birth_rejected`]).
    pub(crate) refine: super::birth::RefineScratch,
}

impl PreparedCentres {
    pub(crate) fn new(dim: usize) -> Self {
        Self {
            dim,
            n_centres: 0,
            centres: Vec::new(),
            minus_twice: Vec::new(),
            norms: Vec::new(),
            walk: WalkScratch::default(),
            refine: super::birth::RefineScratch::default(),
        }
    }

    /// Plans the sum of the prepared centres on `cover` ([`RobustCover::plan`]), for
    /// [`PointMemory::evaluate_planned`].
    pub(crate) fn plan_on(&mut self, cover: &RobustCover) -> &PlanScratch {
        cover.plan(&self.centres, &mut self.walk.plan);
        &self.walk.plan
    }

    /// Prepares `centres` (row-major, k × d), reusing the buffers.
    pub(crate) fn set(&mut self, centres: &[f64]) {
        self.n_centres = centres.len() / self.dim;
        self.centres.clear();
        self.centres.extend_from_slice(centres);
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
    /// S_t(c) when complete; otherwise the running sum when the rejection was decided.
    pub(crate) value: f64,
    /// Whether every point was summed without a rejection.
    pub(crate) complete: bool,
    /// The points whose terms were summed (one by one or in closed form).
    pub(crate) points: usize,
    /// Of those, the points whose terms were summed one by one.
    pub(crate) direct_points: usize,
    /// Tree nodes visited.
    pub(crate) nodes: usize,
}

impl Evaluation {
    fn rejected_at_once() -> Self {
        Self {
            value: 0.0,
            complete: false,
            points: 0,
            direct_points: 0,
            nodes: 0,
        }
    }
}

/// Below this many points in memory, S_t is summed point by point (the linear scan, with
/// its vectorised kernel, is then cheaper than the index and its per-round covers; measured
/// with `examples/paco_performance.rs -- crossover`, see `docs/paco-calibration.md`). The
/// thresholds were halved for d ≥ 4 on 2026-12-04, when the covers and the birth and jump
/// tests had made the index cheaper: at t = 1,000 it was faster than the scan in 2 of 3
/// streams at d = 4 and 5 and in 8 of 9 at d = 8, 10 and 20 (and
/// [`PointMemory::review_index`] falls back where it is not).
pub(crate) fn index_min_points(dim: usize) -> usize {
    match dim {
        0..=2 => 16_384,
        3 => 4_096,
        4 => 2_048,
        _ => 1_024,
    }
}

/// The work of visiting one tree node in an evaluation on the index, in units of one point
/// summed by the linear scan, for [`PointMemory::review_index`].
const NODE_WORK: f64 = 100.0;
/// The work an evaluation on the index costs whatever it visits (the plan of the centres
/// over the round's cover), in the same units.
const EVALUATION_WORK: f64 = 500.0;
/// The index is left only when its work is at least this many times the scan's: a wrong
/// fallback costs up to the index's whole advantage (5–40× in the measurements) for the
/// rounds it lasts, staying on the index where it is dearer at most 1/0.45 ≈ 2.2× (the
/// slowest ratio measured at the sizes where Auto uses the index), and one round's work
/// varies more than the averages the constants were fitted to (a round at k = 6 on
/// well-separated groups in d = 5 came out at 1.3× the scan's while the index was 2–3×
/// cheaper there).
const FALLBACK_MARGIN: f64 = 1.5;
/// Rounds summed point by point after the first review that finds the index dearer; each
/// further review in a row doubles it, up to [`MAX_INDEX_DECLINES`] doublings (so the
/// count of reviews in a row is kept up to `MAX_INDEX_DECLINES + 1`).
const FIRST_INDEX_DECLINE: u64 = 16;
pub(crate) const MAX_INDEX_DECLINES: u32 = 6;

/// The longest fallback a review sets, in rounds (1,024).
pub(crate) fn longest_index_decline() -> u64 {
    FIRST_INDEX_DECLINE << MAX_INDEX_DECLINES
}

impl PointMemory {
    /// Whether S_t is evaluated on the index: a function of d, n_t and, with
    /// [`super::params::Summation::Auto`], of the reviews of the rounds before
    /// ([`Self::review_index`]); fixed for the whole of a round.
    pub(crate) fn uses_index(&self) -> bool {
        self.indexed()
            && self.dim() <= MAX_INDEX_DIM
            && (self.always_indexed()
                || (self.len() >= index_min_points(self.dim())
                    && self.pushed() >= self.index_declined_until()))
    }

    /// [`super::params::Summation::Auto`]'s fallback, after a round: whether the index
    /// did more work than the linear scan would have, from the round's report. Where two
    /// clusters lie a few standard deviations apart, many points sit near the bisector of
    /// their centres, the filtering test rarely isolates a node, and the index stays dearer
    /// than the scan at any t measured (`docs/paco-calibration.md`, "The crossover depends
    /// on how far apart the clusters are"); no threshold on d and n_t tells those streams
    /// from the ones where it is many times cheaper.
    ///
    /// Per evaluation, the index's work is taken as [`NODE_WORK`] per node visited, one
    /// unit per point summed one by one and [`EVALUATION_WORK`]; the scan's as the points
    /// the index covered before its decision (the scan, which stops at the same threshold,
    /// covered 10–25 % more in the measurements). The constants were fitted to the
    /// crossover measurements of 72 cases (d = 2, 3, 5, 20; t = 2,000 to 64,000; three
    /// streams each; 20-round averages). The index is left when its work is at least
    /// [`FALLBACK_MARGIN`] = 1.5 times the scan's: on those cases that never leaves it where
    /// it was faster, and leaves it in 13 of the 18 where it was slower (the five kept ran
    /// at 0.61–0.87 of the scan's speed).
    ///
    /// When the index is dearer, the next 16 rounds are summed point by point, then one
    /// round on the index reviews it again; each review in a row that finds it dearer
    /// doubles the fallback, up to 1,024 rounds, and one that finds it cheaper ends the
    /// fallback. Everything here is a function of the run (no clock), carried in
    /// snapshots, so results stay deterministic and independent of the thread count. The
    /// index is kept up to date meanwhile, so a review costs one round. Does nothing with
    /// [`super::params::Summation::Index`] or `PointByPoint`, or in a round that did not
    /// use the index.
    pub(crate) fn review_index(
        &mut self,
        nodes_per_evaluation: f64,
        direct_fraction: f64,
        data_fraction: f64,
    ) {
        if self.always_indexed() || !self.uses_index() {
            return;
        }
        let points = self.len() as f64;
        let index_work =
            NODE_WORK * nodes_per_evaluation + direct_fraction * points + EVALUATION_WORK;
        if index_work >= FALLBACK_MARGIN * data_fraction * points {
            let declines = (self.index_declines() + 1).min(MAX_INDEX_DECLINES + 1);
            let until = self.pushed() + (FIRST_INDEX_DECLINE << (declines - 1));
            self.set_index_decline(declines, until);
        } else {
            self.set_index_decline(0, self.index_declined_until());
        }
    }

    /// Whether an evaluation of this round may sum chunks in parallel waves (the linear
    /// scan of more than [`PARALLEL_MIN_CHUNKS`] chunks); nothing else in a round is
    /// parallel.
    pub(crate) fn may_sum_in_parallel(&self) -> bool {
        !self.uses_index() && self.n_chunks() > PARALLEL_MIN_CHUNKS
    }

    /// S_t(c) for prepared centres, stopping as soon as S_t(c) ≥ `threshold` is certain
    /// (pass +∞ for the full sum). `cover`, the round's robust cover for this number of
    /// centres (if any), must be the same for every evaluation of a round at that k. The
    /// value is the one defined in the module docs whichever way the evaluation stops, and
    /// a rejection is decided only when the full value would reach the threshold.
    pub(crate) fn evaluate(
        &self,
        centres: &mut PreparedCentres,
        threshold: f64,
        cover: Option<&RobustCover>,
    ) -> Evaluation {
        debug_assert_eq!(centres.dim, self.dim());
        if 0.0 >= threshold {
            return Evaluation::rejected_at_once();
        }
        if self.uses_index() {
            crate::kernels::dispatch(IndexWalk {
                memory: self,
                centres,
                threshold,
                cover,
                planned: false,
            })
        } else {
            self.evaluate_linear(centres, threshold)
        }
    }

    /// [`PointMemory::evaluate`] on the index and `cover`, for centres whose plan on it
    /// [`PreparedCentres::plan_on`] has made (and nothing has changed since).
    pub(crate) fn evaluate_planned(
        &self,
        centres: &mut PreparedCentres,
        threshold: f64,
        cover: &RobustCover,
    ) -> Evaluation {
        debug_assert!(self.uses_index());
        if 0.0 >= threshold {
            return Evaluation::rejected_at_once();
        }
        crate::kernels::dispatch(IndexWalk {
            memory: self,
            centres,
            threshold,
            cover: Some(cover),
            planned: true,
        })
    }

    /// S_t(c) in full.
    #[cfg(test)]
    pub(crate) fn cumulative_loss(
        &self,
        centres: &mut PreparedCentres,
        cover: Option<&RobustCover>,
    ) -> f64 {
        self.evaluate(centres, f64::INFINITY, cover).value
    }

    /// The point-by-point sum over the chunks (see the module docs).
    pub(crate) fn evaluate_linear(&self, centres: &PreparedCentres, threshold: f64) -> Evaluation {
        let n_chunks = self.n_chunks();
        let stride = self.chunk_stride();
        let layout = ChunkLayout { dim: self.dim() };
        if 0.0 >= threshold {
            return Evaluation::rejected_at_once();
        }
        let stopped_at = |value: f64, complete: bool, chunks: usize| {
            let points = self.live_points_in_first_chunks(chunks);
            Evaluation {
                value,
                complete,
                points,
                direct_points: points,
                nodes: 0,
            }
        };
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
            return stopped_at(scan.partial, false, scan.done);
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
                    return stopped_at(partial, false, next + offset + 1);
                }
            }
            next = end;
            wave = (wave * 2).min(LAST_WAVE);
        }
        stopped_at(partial, true, n_chunks)
    }
}

/// One evaluation on the index, compiled for the running CPU (so that `mul_add` is one
/// instruction where the CPU has it).
struct IndexWalk<'a> {
    memory: &'a PointMemory,
    centres: &'a mut PreparedCentres,
    threshold: f64,
    cover: Option<&'a RobustCover>,
    /// Whether the scratch already holds the plan of these centres on `cover`.
    planned: bool,
}

impl crate::kernels::Kernel for IndexWalk<'_> {
    type Output = Evaluation;

    #[inline(always)]
    fn run(self) -> Evaluation {
        let IndexWalk {
            memory,
            centres,
            threshold,
            cover,
            planned,
        } = self;
        let dim = memory.dim();
        let index = memory.index();
        let PreparedCentres {
            centres: values,
            walk: scratch,
            ..
        } = centres;
        let WalkScratch { plan, frames } = scratch;
        let mut walker = Walker {
            index,
            layout: NodeLayout { dim },
            centres: values,
            // γ ≥ 4 (n + k + 4) u, u = 2^−53: the relative slack that covers every rounding
            // between the bound and the full sum (module docs, "Early rejection").
            slack: 1.0 - 2.0 * ((memory.len() + values.len() / dim) as f64 + 4.0) * f64::EPSILON,
            closed_form_min: closed_form_min_points(dim),
            threshold,
            sum: 0.0,
            points: 0,
            direct_points: 0,
            nodes: 0,
            frames,
        };
        let on_cover = cover.filter(|cover| planned || cover.plan(values, plan));
        let rejected = match on_cover {
            Some(cover) => {
                // The slots' aggregated units in closed form, then the walk of the rest.
                let mut rejected = false;
                'slots: for (j, (&prefixes, &home)) in
                    plan.prefixes.iter().zip(&plan.homes).enumerate()
                {
                    let centre = &walker.centres[home * dim..(home + 1) * dim];
                    for (sum, points) in cover.slot_sums(j, prefixes, centre) {
                        if points > 0 {
                            walker.sum += sum;
                            walker.points += points;
                            if walker.sum >= threshold {
                                rejected = true;
                                break 'slots;
                            }
                        }
                    }
                }
                rejected || {
                    // The bounds of the groups left to walk may already decide.
                    let (sum, slack) = (walker.sum, walker.slack);
                    if cover.walk_bound_decides(values, plan, |bound| {
                        (sum + bound) * slack >= threshold
                    }) {
                        true
                    } else {
                        cover.walk_list(values, plan);
                        walker.walk(plan.walk.iter().copied(), false)
                    }
                }
            }
            None => walker.walk((0..index.trees.len() as u32).map(|t| ((t, 0), 0.0)), true),
        };
        Evaluation {
            value: walker.sum,
            complete: !rejected,
            points: walker.points,
            direct_points: walker.direct_points,
            nodes: walker.nodes,
        }
    }
}

/// Scratch buffers of the evaluation on the index.
#[derive(Clone, Debug, Default)]
struct WalkScratch {
    plan: PlanScratch,
    frames: FrameStack,
}

/// The unopened nodes of a walk, with the running sums of their lower bounds and their
/// candidate lists.
#[derive(Clone, Debug, Default)]
struct FrameStack {
    stack: Vec<Frame>,
    /// bounds[i]: the sum of the lower bounds of stack[0..=i] (formed in that order).
    bounds: Vec<f64>,
    /// The candidate lists of the frames on the stack.
    arena: Vec<u32>,
    candidates: Vec<u32>,
    survivors: Vec<u32>,
}

/// An unopened node and its candidate centres (`arena[begin..begin + len]`).
#[derive(Clone, Copy, Debug)]
struct Frame {
    tree: u32,
    node: u32,
    candidates_begin: u32,
    candidates_len: u32,
}

impl FrameStack {
    #[inline(always)]
    fn push(&mut self, frame: Frame, bound: f64) {
        let below = self.bounds.last().copied().unwrap_or(0.0);
        self.stack.push(frame);
        self.bounds.push(below + bound);
    }

    /// The sum of the bounds of the frames on the stack.
    #[inline(always)]
    fn unopened(&self) -> f64 {
        self.bounds.last().copied().unwrap_or(0.0)
    }
}

/// The filtering walk (module docs): the pieces of S_t in their fixed order, with the
/// running sum and the bound test.
struct Walker<'a> {
    index: &'a SpatialIndex,
    layout: NodeLayout,
    centres: &'a [f64],
    slack: f64,
    closed_form_min: usize,
    threshold: f64,
    sum: f64,
    points: usize,
    direct_points: usize,
    nodes: usize,
    frames: &'a mut FrameStack,
}

impl Walker<'_> {
    /// Walks the subtrees rooted at `starts` in order, every centre a candidate at each
    /// start, adding each piece to the running sum. Returns whether the bound test decided
    /// a rejection (the walk then stops).
    #[inline(always)]
    fn walk(
        &mut self,
        starts: impl DoubleEndedIterator<Item = (Unit, f64)> + Clone,
        box_bounds: bool,
    ) -> bool {
        let dim = self.layout.dim;
        let k = (self.centres.len() / dim) as u32;
        let frames = &mut *self.frames;
        frames.stack.clear();
        frames.bounds.clear();
        frames.arena.clear();
        frames.arena.extend(0..k);
        // The starts, the first on top, each with its given bound, or with
        // n · min_j dist²(box, c_j) (the starts of the walk from the roots).
        for ((tree, node), given) in starts.rev() {
            // A point, or a walk without box bounds, starts from its given bound.
            let bound = if node & POINT != 0 || !box_bounds {
                given
            } else {
                let tree_ref = &self.index.trees[tree as usize];
                let stats = tree_ref.node_stats(node as usize, self.layout);
                let mut nearest = f64::INFINITY;
                for centre in self.centres.chunks_exact(dim) {
                    nearest = nearest.min(box_distance(stats, self.layout, centre));
                }
                tree_ref.nodes[node as usize].len() as f64 * nearest
            };
            frames.push(
                Frame {
                    tree,
                    node,
                    candidates_begin: 0,
                    candidates_len: k,
                },
                bound,
            );
        }
        if (self.sum + frames.unopened()) * self.slack >= self.threshold {
            return true;
        }
        while let Some(frame) = frames.stack.pop() {
            frames.bounds.pop();
            self.nodes += 1;
            frames.candidates.clear();
            let begin = frame.candidates_begin as usize;
            frames
                .candidates
                .extend_from_slice(&frames.arena[begin..begin + frame.candidates_len as usize]);
            let keep = frames.stack.last().map_or(k as usize, |f| {
                (f.candidates_begin + f.candidates_len) as usize
            });
            frames.arena.truncate(keep);
            let tree = &self.index.trees[frame.tree as usize];
            if frame.node & POINT != 0 {
                // One point, with every centre.
                let i = (frame.node & !POINT) as usize;
                self.sum += scan_points(
                    dim,
                    &tree.points[i * dim..(i + 1) * dim],
                    &tree.predicted[i..=i],
                    &tree.variance[i..=i],
                    self.centres,
                );
                self.points += 1;
                self.direct_points += 1;
                if self.sum >= self.threshold
                    || (self.sum + frames.unopened()) * self.slack >= self.threshold
                {
                    return true;
                }
                continue;
            }
            let node = tree.nodes[frame.node as usize];
            let stats = tree.node_stats(frame.node as usize, self.layout);
            let nearest = filter_candidates(
                stats,
                self.layout,
                self.centres,
                &frames.candidates,
                &mut frames.survivors,
            );
            let n = node.len();
            let piece = if frames.survivors.len() == 1 {
                let z = frames.survivors[0] as usize;
                let centre = &self.centres[z * dim..(z + 1) * dim];
                if n >= self.closed_form_min {
                    let moments = &stats[self.layout.moments()..];
                    let mean = &stats[self.layout.mean()..self.layout.mean() + dim];
                    closed_form(moments, MomentLayout { dim }, mean, centre)
                } else {
                    self.direct_points += n;
                    scan_node(tree, node, dim, self.centres, &frames.survivors)
                }
            } else if node.is_leaf() {
                self.direct_points += n;
                scan_node(tree, node, dim, self.centres, &frames.survivors)
            } else {
                let list_begin = frames.arena.len() as u32;
                let list_len = frames.survivors.len() as u32;
                frames.arena.extend_from_slice(&frames.survivors);
                for child in [node.right, frame.node + 1] {
                    let bound = tree.nodes[child as usize].len() as f64 * nearest;
                    frames.push(
                        Frame {
                            tree: frame.tree,
                            node: child,
                            candidates_begin: list_begin,
                            candidates_len: list_len,
                        },
                        bound,
                    );
                }
                continue;
            };
            // Every piece is at least n · min_j dist²(box, c_j), also in floating point.
            self.sum += piece.max(n as f64 * nearest);
            self.points += n;
            // The bound: the running sum plus the bounds of every unopened node, with the
            // slack (the plain running sum is a bound too).
            if self.sum >= self.threshold
                || (self.sum + frames.unopened()) * self.slack >= self.threshold
            {
                return true;
            }
        }
        false
    }
}

/// The smallest node summed in closed form rather than point by point: the closed form
/// costs about 9d + d² operations, a point about 3d + 4 per candidate.
pub(crate) fn closed_form_min_points(dim: usize) -> usize {
    (9 * dim + dim * dim).div_ceil(3 * dim + 4).max(2)
}

/// min over the box of ‖x − c‖², in floating point a non-decreasing function of the box
/// (a smaller box gives a value at least as large).
#[inline(always)]
fn box_distance(stats: &[f64], layout: NodeLayout, centre: &[f64]) -> f64 {
    let mut total = 0.0;
    for (i, &c) in centre.iter().enumerate() {
        let lo = stats[layout.lo() + i];
        let hi = stats[layout.hi() + i];
        let gap = if c < lo {
            lo - c
        } else if c > hi {
            c - hi
        } else {
            0.0
        };
        total = gap.mul_add(gap, total);
    }
    total
}

/// The filtering test: writes the candidates not dominated on the node's box into
/// `survivors` (in the order of `candidates`) and returns min over them of
/// dist²(box, c_j).
#[inline(always)]
pub(crate) fn filter_candidates(
    stats: &[f64],
    layout: NodeLayout,
    centres: &[f64],
    candidates: &[u32],
    survivors: &mut Vec<u32>,
) -> f64 {
    let dim = layout.dim;
    let lo = &stats[layout.lo()..layout.lo() + dim];
    let hi = &stats[layout.hi()..layout.hi() + dim];
    let mut best = (candidates[0], f64::INFINITY);
    for &j in candidates {
        let centre = &centres[j as usize * dim..(j as usize + 1) * dim];
        let mut distance = 0.0;
        for i in 0..dim {
            let gap = 0.5 * (lo[i] + hi[i]) - centre[i];
            distance = gap.mul_add(gap, distance);
        }
        if distance < best.1 {
            best = (j, distance);
        }
    }
    let star = &centres[best.0 as usize * dim..(best.0 as usize + 1) * dim];
    survivors.clear();
    let mut nearest = f64::INFINITY;
    for &j in candidates {
        let centre = &centres[j as usize * dim..(j as usize + 1) * dim];
        if j != best.0 {
            // max over the box of ‖p − z*‖² − ‖p − z‖² = Σ u_i (2p_i − z*_i − z_i), at the
            // vertex farthest in the direction u = z − z*.
            let mut excess = 0.0;
            for i in 0..dim {
                let u = centre[i] - star[i];
                let p = if u > 0.0 { hi[i] } else { lo[i] };
                excess = u.mul_add(2.0 * p - star[i] - centre[i], excess);
            }
            if excess <= 0.0 {
                continue;
            }
        }
        survivors.push(j);
        nearest = nearest.min(box_distance(stats, layout, centre));
    }
    nearest
}

/// The contribution of a set of points whose nearest centre is `centre`, from their moments
/// about `mean` (module docs of [`super::index`]).
#[inline(always)]
pub(crate) fn closed_form(
    moments: &[f64],
    layout: MomentLayout,
    mean: &[f64],
    centre: &[f64],
) -> f64 {
    // The magnitude is unused here, and its pure arithmetic is compiled away.
    closed_form_magnitude(moments, layout, mean, centre).0
}

/// [`closed_form`] and the magnitude of its terms (the loss part's n‖v‖² + Σ‖y‖² + 2|v·Σy|
/// and the variance part's, from [`variance_part`]), for bounds on its rounding.
#[inline(always)]
pub(crate) fn closed_form_magnitude(
    moments: &[f64],
    layout: MomentLayout,
    mean: &[f64],
    centre: &[f64],
) -> (f64, f64) {
    let dim = layout.dim;
    let (n, sum_yy, sum_w) = (moments[N], moments[SUM_YY], moments[SUM_W]);
    let mut v = [0.0f64; MAX_INDEX_DIM];
    let v = &mut v[..dim];
    let mut q = 0.0;
    let mut v_sum_y = 0.0;
    for i in 0..dim {
        v[i] = centre[i] - mean[i];
        q = v[i].mul_add(v[i], q);
        v_sum_y = v[i].mul_add(moments[layout.sum_y() + i], v_sum_y);
    }
    let loss = n.mul_add(q, sum_yy) - 2.0 * v_sum_y;
    let loss_magnitude = n * q + sum_yy + 2.0 * v_sum_y.abs();
    if sum_w == 0.0 {
        return (loss, loss_magnitude);
    }
    let (variance, variance_magnitude) = variance_part(moments, layout, v, q);
    (loss + variance, loss_magnitude + variance_magnitude)
}

/// Σ w (‖y − v‖² − ℓ̂)² over a set of points, from their moments about their mean
/// (y = x − mean, v = centre − mean, q = ‖v‖²; module docs of [`super::index`]), and a bound
/// on the sum of the magnitudes of the terms it is made of, down to the points' own terms in
/// the moments (for bounds on its rounding error): by Cauchy–Schwarz, Σ|w e| ≤ √(Σw Σwe²),
/// Σ|w e y_i| ≤ √(Σwe² M_ii), Σ|w y_i| ≤ √(Σw M_ii) and |M_ij| ≤ √(M_ii M_jj), with
/// M = Σ w y yᵀ.
#[inline(always)]
pub(crate) fn variance_part(
    moments: &[f64],
    layout: MomentLayout,
    v: &[f64],
    q: f64,
) -> (f64, f64) {
    let dim = layout.dim;
    let (sum_w, sum_we, sum_wee) = (moments[SUM_W], moments[SUM_WE], moments[SUM_WEE]);
    let mut v_wy = 0.0;
    let mut v_wey = 0.0;
    let mut quadratic = 0.0;
    let mut diagonal_root = 0.0;
    let mut m = layout.sum_wyy();
    for i in 0..dim {
        v_wy = v[i].mul_add(moments[layout.sum_wy() + i], v_wy);
        v_wey = v[i].mul_add(moments[layout.sum_wey() + i], v_wey);
        // Row i of the upper triangle: M_ii v_i + 2 Σ_{j>i} M_ij v_j.
        let diagonal = moments[m] * v[i];
        diagonal_root += moments[m].abs().sqrt() * v[i].abs();
        m += 1;
        let mut off = 0.0;
        for vj in &v[i + 1..] {
            off = moments[m].mul_add(*vj, off);
            m += 1;
        }
        quadratic = v[i].mul_add(2.0f64.mul_add(off, diagonal), quadratic);
    }
    let value =
        sum_wee + 2.0 * q * sum_we + q * q * sum_w - 4.0 * v_wey - 4.0 * q * v_wy + 4.0 * quadratic;
    let (root_w, root_wee) = (sum_w.abs().sqrt(), sum_wee.abs().sqrt());
    let magnitude = sum_wee.abs()
        + 2.0 * q * root_w * root_wee
        + q * q * sum_w.abs()
        + 4.0 * diagonal_root * (root_wee + q * root_w + diagonal_root);
    (value, magnitude)
}

/// The terms of the given points, one by one, with every centre.
#[inline(always)]
fn scan_points(
    dim: usize,
    points: &[f64],
    predicted: &[f64],
    variance: &[f64],
    centres: &[f64],
) -> f64 {
    let mut sum = 0.0;
    for ((point, &predicted), &weight) in points.chunks_exact(dim).zip(predicted).zip(variance) {
        let mut loss = f64::INFINITY;
        for centre in centres.chunks_exact(dim) {
            loss = loss.min(crate::geometry::fused_squared_distance(point, centre));
        }
        let diff = loss - predicted;
        sum += (weight * diff).mul_add(diff, loss);
    }
    sum
}

/// The terms of a node's points, one by one, with the candidates `survivors`.
#[inline(always)]
fn scan_node(tree: &KdTree, node: Node, dim: usize, centres: &[f64], survivors: &[u32]) -> f64 {
    let range = node.begin as usize..node.end as usize;
    let mut sum = 0.0;
    for ((point, &predicted), &weight) in tree.points[range.start * dim..range.end * dim]
        .chunks_exact(dim)
        .zip(&tree.predicted[range.clone()])
        .zip(&tree.variance[range])
    {
        let mut loss = f64::INFINITY;
        for &j in survivors {
            let centre = &centres[j as usize * dim..(j as usize + 1) * dim];
            loss = loss.min(crate::geometry::fused_squared_distance(point, centre));
        }
        let diff = loss - predicted;
        sum += (weight * diff).mul_add(diff, loss);
    }
    sum
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
    crate::kernels::tree_sum(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::params::{Memory as MemoryMode, Summation};
    use crate::rng::StreamRng;

    /// The fallback's schedule: a review that finds the index dearer sets 16 rounds of
    /// the scan, the next one in a row 32, up to 1,024; one that finds it cheaper ends the
    /// doubling; with `Index` or `PointByPoint`, or below the size where Auto uses the
    /// index, a review changes nothing; the state goes through a snapshot, and a snapshot
    /// with a fallback longer than any review sets is refused.
    #[test]
    fn the_fallback_from_the_index_follows_its_schedule_and_is_snapshotted() {
        let dim = 5;
        let filled = |summation: Summation, n: usize| {
            let mut rng = StreamRng::seed_from(3);
            let mut memory = PointMemory::with_summation(dim, MemoryMode::All, summation);
            for _ in 0..n {
                let point: Vec<f64> = (0..dim).map(|_| rng.standard_normal()).collect();
                memory.push(&point, 1.0, 0.01);
            }
            memory
        };
        let n = index_min_points(dim);
        // Dearer: 100 nodes per evaluation are 10,000 units, against 0.7·n = 1,434.
        let (dear, cheap) = ((100.0, 0.01, 0.7), (1.0, 0.01, 0.7));
        let review = |memory: &mut PointMemory, (nodes, direct, data): (f64, f64, f64)| {
            memory.review_index(nodes, direct, data)
        };
        let mut memory = filled(Summation::Auto, n);
        assert!(memory.uses_index());
        let mut rng = StreamRng::seed_from(4);
        let mut push = |memory: &mut PointMemory, rounds: u64| {
            for _ in 0..rounds {
                let point: Vec<f64> = (0..dim).map(|_| rng.standard_normal()).collect();
                memory.push(&point, 1.0, 0.01);
            }
        };
        for decline in [16, 32, 64, 128, 256, 512, 1024, 1024] {
            review(&mut memory, dear);
            assert!(!memory.uses_index());
            // The rounds summed by the scan are not reviewed.
            review(&mut memory, cheap);
            push(&mut memory, decline - 1);
            assert!(
                !memory.uses_index(),
                "before the end of a fallback of {decline}"
            );
            push(&mut memory, 1);
            assert!(memory.uses_index(), "after a fallback of {decline}");
        }
        // Snapshots: one between reviews (seven in a row found the index dearer), one in the
        // middle of a fallback.
        let text = serde_json::to_string(&memory).unwrap();
        let mut within = memory.clone();
        review(&mut within, dear);
        push(&mut within, 100);
        let within_text = serde_json::to_string(&within).unwrap();
        review(&mut memory, cheap);
        assert!(memory.uses_index());
        review(&mut memory, dear);
        push(&mut memory, 16);
        assert!(
            memory.uses_index(),
            "a cheap review starts the doubling again"
        );
        // The first resumes the doubling where it was, the second the fallback.
        let mut restored: PointMemory = serde_json::from_str(&text).unwrap();
        review(&mut restored, dear);
        push(&mut restored, 1023);
        assert!(!restored.uses_index());
        let mut restored: PointMemory = serde_json::from_str(&within_text).unwrap();
        push(&mut restored, 923);
        assert!(!restored.uses_index());
        push(&mut restored, 1);
        assert!(restored.uses_index());
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pushed = value["pushed"].as_u64().unwrap();
        value["index_declined_until"] = (pushed + longest_index_decline() + 1).into();
        assert!(serde_json::from_value::<PointMemory>(value.clone()).is_err());
        value["index_declined_until"] = 0.into();
        value["index_declines"] = (MAX_INDEX_DECLINES + 2).into();
        assert!(serde_json::from_value::<PointMemory>(value).is_err());
        // Nothing changes the other summations, or Auto below its size.
        for (summation, n) in [
            (Summation::Index, n),
            (Summation::PointByPoint, n),
            (Summation::Auto, n - 1),
        ] {
            let mut memory = filled(summation, n);
            let before = memory.uses_index();
            review(&mut memory, dear);
            assert_eq!(memory.uses_index(), before, "{summation:?} with {n} points");
            assert_eq!(memory.index_declines(), 0);
        }
    }

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
            (1, 1, MemoryMode::All),
            (300, 3, MemoryMode::All),
            (5000, 2, MemoryMode::All),
            (5000, 7, MemoryMode::Window(1000)),
            (4000, 20, MemoryMode::Window(3500)),
        ] {
            let memory = memory(n, dim, mode, n as u64);
            let mut rng = StreamRng::seed_from(1000);
            let centres: Vec<f64> = (0..4 * dim).map(|_| 3.0 * rng.standard_normal()).collect();
            let mut prepared = PreparedCentres::new(dim);
            prepared.set(&centres);
            let fast = memory.cumulative_loss(&mut prepared, None);
            let slow = direct(&memory, &centres);
            let linear = memory.evaluate_linear(&prepared, f64::INFINITY).value;
            assert!((linear - slow).abs() <= 1e-11 * slow, "{linear} {slow}");
            assert!((fast - slow).abs() <= 1e-11 * slow, "{fast} {slow}");
        }
    }

    #[test]
    fn early_rejection_stops_where_the_running_sum_crosses() {
        let memory = memory(6000, 3, MemoryMode::All, 4);
        let mut prepared = PreparedCentres::new(3);
        prepared.set(&[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let full = memory.evaluate(&mut prepared, f64::INFINITY, None);
        assert!(full.complete);
        for fraction in [0.0, 0.01, 0.3, 0.7, 0.999, 1.0, 1.5] {
            let threshold = fraction * full.value;
            let early = memory.evaluate(&mut prepared, threshold, None);
            // The same decision as the full sum, always.
            assert_eq!(early.complete, full.value < threshold, "{fraction}");
            if !early.complete {
                // The running sum when the bound decided (at most the full value).
                assert!(early.value <= full.value);
                if fraction > 0.0 && fraction < 0.99 {
                    assert!(early.points < memory.len());
                }
            }
        }
    }

    /// The portable one-lane path and the dispatched path give the same bits.
    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        for (n, dim) in [(1000, 1), (700, 5), (300, 19)] {
            let memory = memory(n, dim, MemoryMode::All, 77);
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
        let memory = memory(70_000, 5, MemoryMode::All, 9);
        assert!(memory.n_chunks() > PARALLEL_MIN_CHUNKS);
        let mut prepared = PreparedCentres::new(5);
        prepared.set(&[1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 2.0, 0.0, 1.0, 0.5]);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| memory.evaluate_linear(&prepared, f64::INFINITY).value)
        };
        assert_eq!(run(1).to_bits(), run(3).to_bits());
    }

    /// On the parallel path (waves of chunks), early rejection decides as the full sum does,
    /// stops at the same chunk and reports the same partial sum whatever the thread count.
    #[test]
    fn early_rejection_in_waves_is_exact_and_thread_independent() {
        let memory = memory(70_000, 3, MemoryMode::All, 11);
        assert!(memory.n_chunks() > PARALLEL_MIN_CHUNKS);
        let mut prepared = PreparedCentres::new(3);
        prepared.set(&[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let full = memory.evaluate_linear(&prepared, f64::INFINITY);
        assert!(full.complete);
        let in_pool = |threads: usize, threshold: f64| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| memory.evaluate_linear(&prepared, threshold))
        };
        // Fractions that stop in the sequential head, in the first wave and in later waves.
        for fraction in [0.01, 0.2, 0.5, 0.9, 0.999, 1.0, 1.5] {
            let threshold = fraction * full.value;
            let single = in_pool(1, threshold);
            let multi = in_pool(3, threshold);
            assert_eq!(single.complete, full.value < threshold, "{fraction}");
            assert_eq!(single.complete, multi.complete, "{fraction}");
            assert_eq!(single.points, multi.points, "{fraction}");
            assert_eq!(single.value.to_bits(), multi.value.to_bits(), "{fraction}");
            if !single.complete {
                assert!(single.value >= threshold);
                if fraction < 0.99 {
                    assert!(single.points < memory.len(), "{fraction}");
                }
            } else {
                assert_eq!(single.value.to_bits(), full.value.to_bits());
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod index_tests {
    use super::*;
    use crate::paco::cover::{CoverCache, RobustCover};
    use crate::paco::params::{Memory as MemoryMode, Summation};
    use crate::rng::StreamRng;

    /// Tight clusters (spread `spread`) around `means`, with losses and variance weights, in
    /// a memory that always uses the index.
    pub(crate) fn clustered(
        means: &[Vec<f64>],
        per_cluster: usize,
        spread: f64,
        seed: u64,
    ) -> PointMemory {
        let dim = means[0].len();
        let mut rng = StreamRng::seed_from(seed);
        let mut memory = PointMemory::with_summation(dim, MemoryMode::All, Summation::Index);
        for s in 0..per_cluster * means.len() {
            let mean = &means[rng.index_below(means.len())];
            let point: Vec<f64> = mean
                .iter()
                .map(|m| m + spread * rng.standard_normal())
                .collect();
            let weight = if s < 10 { 0.0 } else { 0.05 * rng.next_f64() };
            memory.push(&point, spread * spread * 3.0 * rng.next_f64(), weight);
        }
        memory
    }

    /// Σ_s [ℓ + w(ℓ − ℓ̂)²] by direct differences, summed with Neumaier's compensation: the
    /// reference (the birth test's tests use it too).
    pub(crate) fn reference(memory: &PointMemory, centres: &[f64]) -> f64 {
        let dim = memory.dim();
        let mut sum = 0.0f64;
        let mut compensation = 0.0f64;
        let rows = memory.rows();
        let (_, predicted, variance) =
            memory.positions(memory.pushed() - memory.len() as u64, memory.pushed());
        for ((x, &hat), &w) in rows.chunks_exact(dim).zip(predicted).zip(variance) {
            let loss = centres
                .chunks_exact(dim)
                .map(|c| crate::geometry::squared_distance(x, c))
                .fold(f64::INFINITY, f64::min);
            let term = loss + w * (loss - hat) * (loss - hat);
            let t = sum + term;
            compensation += if sum.abs() >= term.abs() {
                (sum - t) + term
            } else {
                (term - t) + sum
            };
            sum = t;
        }
        sum + compensation
    }

    /// The robust cover of `means`, every group scaled by `scale`, from a fresh cache.
    pub(crate) fn cover_for(memory: &PointMemory, means: &[f64], scale: f64) -> RobustCover {
        let dim = memory.dim();
        let k = means.len() / dim;
        RobustCover::build(
            memory.index(),
            dim,
            means,
            &vec![scale; k],
            k,
            &mut CoverCache::default(),
        )
    }

    /// Clusters of spread 10⁻³ at distance ~100 from the origin (a ratio of 10⁵, where
    /// moments about the origin would lose about 20 of the 16 digits of the variance
    /// terms): the index's sum, on the walk from the roots and on the cover, agrees with the
    /// compensated direct sum to a relative 1e−13.
    #[test]
    fn closed_forms_are_accurate_far_from_the_origin() {
        let means = vec![
            vec![100.0, 0.0, 20.0],
            vec![-60.0, 80.0, 0.0],
            vec![0.0, -100.0, -30.0],
        ];
        let memory = clustered(&means, 1500, 1e-3, 3);
        assert!(memory.uses_index());
        let flat: Vec<f64> = means.iter().flatten().copied().collect();
        let cover = cover_for(&memory, &flat, 1e-3);
        let mut rng = StreamRng::seed_from(9);
        let mut worst: f64 = 0.0;
        let mut worst_linear: f64 = 0.0;
        for trial in 0..50 {
            // Centres a few spreads from the means: losses ~1e−6, variance terms that matter.
            let centres: Vec<f64> = flat
                .iter()
                .map(|m| m + 2e-3 * (trial as f64 / 50.0) * rng.standard_normal())
                .collect();
            let exact = reference(&memory, &centres);
            let mut prepared = PreparedCentres::new(3);
            prepared.set(&centres);
            for cover in [None, Some(&cover)] {
                let value = memory.evaluate(&mut prepared, f64::INFINITY, cover).value;
                worst = worst.max((value - exact).abs() / exact);
            }
            let linear = memory.evaluate_linear(&prepared, f64::INFINITY).value;
            worst_linear = worst_linear.max((linear - exact).abs() / exact);
        }
        // For the record: the linear scan's expanded form ‖x‖² − 2x·c + ‖c‖² loses about
        // log₁₀(‖x‖²/ℓ) digits here.
        eprintln!("largest relative errors: index {worst:e}, point by point {worst_linear:e}");
        assert!(worst < 1e-13, "largest relative error {worst:e}");
    }

    /// A centre far from its own mean but inside another slot's cluster (a birth in a
    /// cluster with one mean, labelled into another slot), and a surplus centre inside a
    /// cluster: the cover walks the units they may take points from, and the sum agrees
    /// with the direct one — on the cover, from the roots, and with early rejection at
    /// thresholds below the sum (the walk's lower bounds, the affine hull's among them,
    /// never reject a value below the threshold).
    #[test]
    fn a_centre_in_another_slots_cluster_is_summed_exactly() {
        let means = vec![
            vec![0.0, 0.0, 0.0],
            vec![12.0, 0.0, 3.0],
            vec![-4.0, 11.0, 0.0],
            vec![3.0, -9.0, 8.0],
        ];
        let memory = clustered(&means, 1200, 1.0, 5);
        let flat: Vec<f64> = means.iter().flatten().copied().collect();
        let cover = cover_for(&memory, &flat, 0.05);
        let mut rng = StreamRng::seed_from(17);
        for trial in 0..40 {
            // Slots 0, 1, 3 near their means; slot 2's centre inside cluster 1 (far from
            // m_2); a fifth, surplus centre inside cluster 0 or 3.
            let mut centres: Vec<f64> = flat
                .iter()
                .map(|m| m + 0.02 * rng.standard_normal())
                .collect();
            for i in 0..3 {
                centres[6 + i] = means[1][i] + 0.8 * rng.standard_normal();
            }
            let host = if trial % 2 == 0 { 0 } else { 3 };
            centres.extend(means[host].iter().map(|m| m + 0.8 * rng.standard_normal()));
            let exact = reference(&memory, &centres);
            let mut prepared = PreparedCentres::new(3);
            prepared.set(&centres);
            for cover in [None, Some(&cover)] {
                let value = memory.evaluate(&mut prepared, f64::INFINITY, cover).value;
                assert!(
                    (value - exact).abs() <= 1e-12 * exact,
                    "trial {trial}: {value} against {exact}"
                );
                for fraction in [0.5, 0.9, 0.99, 0.999_999] {
                    let threshold = fraction * exact;
                    let early = memory.evaluate(&mut prepared, threshold, cover);
                    assert!(!early.complete, "trial {trial}, {fraction}");
                    let above = memory.evaluate(&mut prepared, exact * (1.0 + 1e-9), cover);
                    assert!(above.complete, "trial {trial}, {fraction}");
                }
            }
        }
    }

    /// The sum on `cover` equals the direct one to 10⁻¹², early rejection at 0.5, 0.99 and
    /// 0.999999 of it rejects, and a threshold 10⁻⁹ above it accepts.
    fn assert_exact_on_cover(
        memory: &PointMemory,
        cover: &RobustCover,
        centres: &[f64],
        trial: usize,
    ) {
        let exact = reference(memory, centres);
        let mut prepared = PreparedCentres::new(memory.dim());
        prepared.set(centres);
        let value = memory
            .evaluate(&mut prepared, f64::INFINITY, Some(cover))
            .value;
        assert!(
            (value - exact).abs() <= 1e-12 * exact,
            "trial {trial}: {value} against {exact}"
        );
        for fraction in [0.5, 0.99, 0.999_999] {
            let early = memory.evaluate(&mut prepared, fraction * exact, Some(cover));
            assert!(!early.complete, "trial {trial}, {fraction}");
        }
        let above = memory.evaluate(&mut prepared, exact * (1.0 + 1e-9), Some(cover));
        assert!(above.complete, "trial {trial}");
    }

    /// A far slot (its centre out in the prior's ball, holding no point) has its units
    /// summed at the centre nearest its mean when the ball test allows it: exact whether
    /// that centre owns the whole cluster (one surplus centre inside it: the slot's units
    /// are aggregated there) or shares it (two surplus centres splitting it: the test must
    /// cut the prefix and walk the units); and a far centre inside another slot's cluster
    /// takes from that slot only what the bisector test leaves to the walk.
    #[test]
    fn a_far_slot_is_summed_at_the_centre_nearest_its_mean() {
        let means = vec![
            vec![0.0, 0.0, 0.0],
            vec![12.0, 0.0, 3.0],
            vec![-4.0, 11.0, 0.0],
            vec![3.0, -9.0, 8.0],
        ];
        let memory = clustered(&means, 1200, 1.0, 7);
        let flat: Vec<f64> = means.iter().flatten().copied().collect();
        let cover = cover_for(&memory, &flat, 0.05);
        let mut rng = StreamRng::seed_from(23);
        let mut rehomed = 0;
        for trial in 0..60 {
            let mut centres: Vec<f64> = flat
                .iter()
                .map(|m| m + 0.02 * rng.standard_normal())
                .collect();
            // Slot 2's centre far from every point.
            centres[6..9].copy_from_slice(&[-30.0, 30.0, -20.0 + rng.next_f64()]);
            let near = |offset: f64, rng: &mut StreamRng| -> Vec<f64> {
                vec![
                    means[2][0] + offset + 0.1 * rng.standard_normal(),
                    means[2][1] + 0.1 * rng.standard_normal(),
                    means[2][2] + 0.1 * rng.standard_normal(),
                ]
            };
            match trial % 3 {
                // One surplus centre owns cluster 2.
                0 => centres.extend(near(0.3, &mut rng)),
                // Two surplus centres split cluster 2.
                1 => {
                    centres.extend(near(0.6, &mut rng));
                    centres.extend(near(-0.9, &mut rng));
                }
                // One surplus centre inside cluster 2, and slot 0's centre moved into
                // cluster 1 (far from m_0, near slot 1's centre).
                _ => {
                    centres.extend(near(0.0, &mut rng));
                    for i in 0..3 {
                        centres[i] = means[1][i] + 1.5 + 0.3 * rng.standard_normal();
                    }
                }
            }
            let mut scratch = PlanScratch::default();
            cover.plan(&centres, &mut scratch);
            if scratch.homes[2] != 2 && scratch.prefixes[2] != (0, 0) {
                rehomed += 1;
            }
            assert_exact_on_cover(&memory, &cover, &centres, trial);
        }
        // The re-homing path is exercised (the one-owner trials, at least).
        assert!(
            rehomed >= 20,
            "{rehomed} of 60 trials summed slot 2 elsewhere"
        );
    }

    /// A centre 10–16 σ from its own mean but still inside its cluster (a tail draw of a
    /// jump's t₃) makes its slot far (beyond 8 σ), yet within the margins the cover keeps
    /// (up to 16 σ, rounded up to a power of two), and the clusters sit close enough (6 apart, spread 1)
    /// that the ball of the whole slot crosses the bisectors: the units' own margins then
    /// keep most of the memory in closed form, and the sum, with early
    /// rejection, agrees with the direct one — also with another centre moved towards the
    /// far one (the margins must pay for both deviations), and with a centre of another slot
    /// moved nearer the far slot's mean than its own centre (the home is then that centre,
    /// which the margins do not certify).
    #[test]
    fn a_far_centre_in_its_own_cluster_keeps_its_units_by_their_margins() {
        let means = vec![
            vec![0.0, 0.0, 0.0],
            vec![6.0, 0.0, 0.0],
            vec![3.0, 5.2, 0.0],
            vec![3.0, 1.7, 5.0],
        ];
        let memory = clustered(&means, 1500, 1.0, 11);
        let flat: Vec<f64> = means.iter().flatten().copied().collect();
        let sigma = 0.05;
        let cover = cover_for(&memory, &flat, sigma);
        let mut rng = StreamRng::seed_from(29);
        let mut kept = 0;
        for trial in 0..60 {
            let mut centres: Vec<f64> = flat
                .iter()
                .map(|m| m + 0.02 * rng.standard_normal())
                .collect();
            // Slot 2's centre 10–16 σ from m_2, in a random direction.
            let direction: Vec<f64> = (0..3).map(|_| rng.standard_normal()).collect();
            let norm = squared_norm(&direction).sqrt();
            let distance = sigma * (10.0 + 6.0 * rng.next_f64());
            for i in 0..3 {
                centres[6 + i] = means[2][i] + distance * direction[i] / norm;
            }
            match trial % 3 {
                0 => {}
                // Slot 1's centre 6 σ from m_1, towards m_2: not far, but its deviation
                // counts against slot 2's margins.
                1 => {
                    for i in 0..3 {
                        let towards = means[2][i] - means[1][i];
                        centres[3 + i] = means[1][i] + 6.0 * sigma * towards / 6.0;
                    }
                }
                // Slot 0's centre moved 5 σ from m_2, nearer m_2 than slot 2's centre.
                _ => {
                    for i in 0..3 {
                        centres[i] = means[2][i] + 5.0 * sigma * direction[i] / norm;
                    }
                }
            }
            let mut scratch = PlanScratch::default();
            cover.plan(&centres, &mut scratch);
            if trial % 3 == 0
                && scratch.homes[2] == 2
                && cover.aggregated_points(&scratch) > 0.9 * memory.len() as f64
            {
                kept += 1;
            }
            assert_exact_on_cover(&memory, &cover, &centres, trial);
        }
        // With slot 2's centre the only one moved (20 trials), the margins keep slot 2 in
        // closed form. (With slot 1's centre 6 σ towards it as well, δ_1 + δ_2 passes the
        // cap and the ball test cuts both slots: exact, but walked.)
        assert!(
            kept >= 18,
            "{kept} of 20 trials kept 90 % of the memory in closed form"
        );
    }

    /// The decision at the threshold itself: S(c) < thr rejects at thr = S(c) and accepts at
    /// the next float above, on every path, including data whose bounds are tight (points
    /// that coincide, so that a node's bound n·dist² is its exact loss, and no variance
    /// term), thresholds a hair above the bound of the first pieces, and thresholds at the
    /// value of every prefix of the walk.
    #[test]
    fn early_rejection_is_exact_at_the_threshold() {
        let mut cases = Vec::new();
        // Coinciding points, w = 0: bounds equal the pieces.
        let mut tight = PointMemory::with_summation(2, MemoryMode::All, Summation::Index);
        for s in 0..600 {
            let p = [(s % 3) as f64 * 10.0, ((s / 3) % 2) as f64 * 10.0];
            tight.push(&p, 0.0, 0.0);
        }
        cases.push((tight, vec![1.0, 1.0, 12.0, 9.0, -3.0, 8.0]));
        let noisy = clustered(
            &[vec![0.0, 0.0], vec![8.0, 1.0], vec![2.0, 9.0]],
            400,
            1.0,
            5,
        );
        cases.push((noisy, vec![0.5, 0.0, 7.0, 1.5, 2.0, 8.0]));
        for (memory, centres) in &cases {
            let dim = memory.dim();
            let cover = cover_for(memory, centres, 0.3);
            let mut prepared = PreparedCentres::new(dim);
            prepared.set(centres);
            for cover in [None, Some(&cover)] {
                let full = memory.evaluate(&mut prepared, f64::INFINITY, cover);
                assert!(full.complete);
                let value = full.value;
                let mut thresholds = vec![
                    value,
                    value.next_up(),
                    value.next_down(),
                    value * (1.0 + 1e-12),
                    value * (1.0 - 1e-12),
                ];
                // Every running sum the walk passes through, and a hair either side.
                for fraction in 1..40 {
                    let t = value * fraction as f64 / 40.0;
                    thresholds.extend([t, t.next_up(), t.next_down()]);
                }
                for threshold in thresholds {
                    let early = memory.evaluate(&mut prepared, threshold, cover);
                    let accept = early.complete && early.value < threshold;
                    assert_eq!(
                        accept,
                        value < threshold,
                        "threshold {threshold:e}, S {value:e}"
                    );
                    if early.complete {
                        assert_eq!(early.value.to_bits(), value.to_bits());
                    }
                }
            }
        }
    }

    /// The index's sum does not depend on the thread pool it runs in (it runs on one
    /// thread, in a fixed order).
    #[test]
    fn index_sums_do_not_depend_on_the_thread_count() {
        let memory = clustered(&[vec![0.0, 0.0, 0.0], vec![9.0, 1.0, -2.0]], 3000, 1.0, 7);
        let centres = vec![0.2, 0.1, 0.0, 8.5, 1.2, -2.1, 3.0, 3.0, 3.0];
        let cover = cover_for(&memory, &centres, 0.2);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    let mut prepared = PreparedCentres::new(3);
                    prepared.set(&centres);
                    [
                        memory.evaluate(&mut prepared, f64::INFINITY, None).value,
                        memory
                            .evaluate(&mut prepared, f64::INFINITY, Some(&cover))
                            .value,
                    ]
                })
        };
        let one = run(1);
        let three = run(3);
        assert_eq!(one.map(f64::to_bits), three.map(f64::to_bits));
    }
}
