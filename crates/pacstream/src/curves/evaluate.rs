//! Incremental evaluation of a candidate curve (spec §4, last paragraph).
//!
//! A candidate replaces the vertices v_first..v_last of a window by m new vertices and keeps
//! the rest. The parts of the curve it removes are the vertices of the window and the
//! segments that touch them (S_{first−1} to S_last); their cells are the *modified cells*.
//! The candidate adds the new parts: the segment from v_{first−1} to the first new vertex,
//! the new vertices and the segments between them, the segment to v_{last+1}.
//!
//! A stored point's distance to the candidate differs from d_cur(x) only if
//!
//! - x lies in a modified cell: its new distance is the smaller of the distance to the
//!   unchanged parts (computed once per window, shared by all its candidates) and the
//!   distance to the new parts; or
//! - the new parts come nearer than √d_cur(x): for a ball B(o, r_B) holding the new parts,
//!   only if ‖x − o‖ − r_B < √d_cur(x), which the grid of [`super::partition`] answers
//!   without a scan.
//!
//! Every other point keeps its distance, so a candidate's reward (or loss) is the current
//! one plus the change over those points. The learner scores *atoms* rather than points
//! (`super::partition`: a point, or the points of one small bin summarised by count, mean and
//! scatter): "point" below means an atom's mean, weighted by the atom's mass, and an atom's
//! loss on a part is its mean's plus a spread term. Ties between parts are broken as on a fresh
//! projection (first along the new curve), so applying the change gives the same partition,
//! bit for bit, as projecting every point afresh.
//!
//! All candidates of a window draw their new vertices from one *pool*: the kept neighbours
//! v_{first−1}, v_{last+1} and the window's local vertex set Q. So the squared distances
//! from each relevant point to the pool's points are computed once per window (a table),
//! and the distance to any new segment follows from two table entries and the segment's
//! squared length ([`super::partition::interior`]): scoring a candidate costs a few
//! operations per point, whatever the dimension.

use super::partition::{CellKey, CurveState, interior, trace};
use crate::geometry::{Part, squared_distance};

/// A window: the consecutive vertices v_first..=v_last that candidates replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) first: usize,
    pub(crate) last: usize,
}

impl Window {
    /// The window N(x) of a point whose nearest part is `part`.
    pub(crate) fn around(part: Part, n_segments: usize) -> Self {
        let (first, last) = part.neighbour_vertices(n_segments);
        Self { first, last }
    }

    /// Every window N(x) can be, along the curve: {v_i, v_{i+1}} for each segment and
    /// {v_{i−1}, v_i, v_{i+1}} for each inner vertex.
    pub(crate) fn all(n_segments: usize) -> Vec<Self> {
        let mut windows = Vec::with_capacity(2 * n_segments);
        for i in 0..n_segments {
            windows.push(Self {
                first: i,
                last: i + 1,
            });
            if i + 2 <= n_segments {
                windows.push(Self {
                    first: i,
                    last: i + 2,
                });
            }
        }
        windows
    }

    /// The cells of U(x): the vertices of the window and the segments between them.
    pub(crate) fn neighbourhood_cells(&self, state: &CurveState) -> Vec<CellKey> {
        let mut cells = Vec::with_capacity(5);
        for i in self.first..=self.last {
            cells.push(state.cell_key(Part::Vertex(i)));
            if i < self.last {
                cells.push(state.cell_key(Part::Segment(i)));
            }
        }
        cells
    }

    /// The cells a candidate of this window removes.
    fn modified_cells(&self, state: &CurveState) -> Vec<CellKey> {
        let k = state.n_segments();
        let mut cells = Vec::with_capacity(7);
        if self.first > 0 {
            cells.push(state.cell_key(Part::Segment(self.first - 1)));
        }
        for i in self.first..=self.last {
            cells.push(state.cell_key(Part::Vertex(i)));
            if i < k {
                cells.push(state.cell_key(Part::Segment(i)));
            }
        }
        cells
    }
}

/// The position of a part along a candidate curve: unchanged parts before the window (by
/// old rank), new parts (in order), unchanged parts after the window (by old rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Order(u8, usize);

const BEFORE: u8 = 0;
const NEW: u8 = 1;
const AFTER: u8 = 2;

/// The points new vertices are drawn from, for one window: v_{first−1} (if any), the local
/// vertex set Q, v_{last+1} (if any), in internal coordinates; their pairwise squared
/// distances; and a ball B(o, r) that holds them all (so every candidate's new parts).
#[derive(Debug)]
pub(crate) struct Pool {
    window: Window,
    dim: usize,
    points: Vec<f64>,
    has_left: bool,
    has_right: bool,
    n_local: usize,
    lengths2: Vec<f64>,
    centre: Vec<f64>,
    radius: f64,
}

impl Pool {
    /// The pool of `window` with local vertex set `local` (row-major keys).
    pub(crate) fn new(state: &CurveState, window: Window, local: &[i64]) -> Self {
        let dim = state.dim;
        let k = state.n_segments();
        let has_left = window.first > 0;
        let has_right = window.last < k;
        let n_local = local.len() / dim;
        let mut points = Vec::with_capacity((n_local + 2) * dim);
        if has_left {
            points.extend_from_slice(state.vertex(window.first - 1));
        }
        let mut position = vec![0.0; dim];
        for key in local.chunks_exact(dim) {
            state.lattice.position(key, &mut position);
            points.extend_from_slice(&position);
        }
        if has_right {
            points.extend_from_slice(state.vertex(window.last + 1));
        }
        let n = points.len() / dim;
        let row = |p: usize| &points[p * dim..(p + 1) * dim];
        let mut lengths2 = vec![0.0; n * n];
        for a in 0..n {
            for b in 0..n {
                lengths2[a * n + b] = squared_distance(row(a), row(b));
            }
        }
        let mut centre = vec![0.0; dim];
        for (axis, c) in centre.iter_mut().enumerate() {
            let (low, high) = (0..n)
                .map(|p| points[p * dim + axis])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                    (l.min(v), h.max(v))
                });
            *c = 0.5 * (low + high);
        }
        let radius = (0..n)
            .map(|p| squared_distance(row(p), &centre))
            .fold(0.0, f64::max)
            .sqrt();
        Self {
            window,
            dim,
            points,
            has_left,
            has_right,
            n_local,
            lengths2,
            centre,
            radius,
        }
    }

    fn len(&self) -> usize {
        self.points.len() / self.dim
    }

    fn point(&self, p: usize) -> &[f64] {
        &self.points[p * self.dim..(p + 1) * self.dim]
    }

    /// The new parts of the candidate that puts the local vertices `order` (indices into
    /// Q, in curve order) in the window, with the part of the new curve each one is, into
    /// `pieces` (a buffer reused across candidates).
    pub(crate) fn pieces(&self, order: impl IntoIterator<Item = usize>, pieces: &mut Pieces) {
        let first = self.window.first;
        let offset = usize::from(self.has_left);
        pieces.pieces.clear();
        let mut previous: Option<usize> = self.has_left.then_some(0);
        let mut m = 0;
        for q in order {
            let p = offset + q;
            if let Some(a) = previous {
                // From the left neighbour (vertex first − 1) or the previous new vertex.
                pieces
                    .pieces
                    .push((Piece::Segment(a, p), Part::Segment(first + m - 1)));
            }
            pieces
                .pieces
                .push((Piece::Vertex(p), Part::Vertex(first + m)));
            previous = Some(p);
            m += 1;
        }
        if self.has_right {
            if let Some(a) = previous {
                pieces.pieces.push((
                    Piece::Segment(a, offset + self.n_local),
                    Part::Segment(first + m - 1),
                ));
            }
        }
        pieces.n_new = m;
    }
}

/// One new part, by pool indices.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Vertex(usize),
    Segment(usize, usize),
}

/// A candidate's new parts.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    pieces: Vec<(Piece, Part)>,
    n_new: usize,
}

/// An atom whose distance a candidate of the window may change.
#[derive(Clone, Copy, Debug)]
struct Row {
    /// The atom's index.
    index: usize,
    /// For a point of a modified cell: its nearest unchanged part.
    rest: Option<(f64, Order)>,
}

/// The atoms a window's candidates may change and their distances to the pool, laid out
/// by columns so that scoring a candidate is a few vectorised passes over the rows.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<Row>,
    /// Scratch of [`Table::new_in`]: the merged rows while the rows are partitioned.
    merged_rows: Vec<Row>,
    /// Scratch of [`Table::new_in`]: the rows' means, coordinate by coordinate.
    merged_means: Vec<f64>,
    /// The mass of each row (count × weight of its atom).
    mass: Vec<f64>,
    /// d_cur of each row.
    current: Vec<f64>,
    /// The distance a row keeps if no new part comes nearer: the nearest unchanged part for
    /// an atom of a modified cell, d_cur for the others.
    base: Vec<f64>,
    /// pool × rows: column p holds the squared distances from the rows to pool point p.
    columns: Vec<f64>,
    /// Scratch: the distance from each row to the nearest new part of a candidate.
    nearest: Vec<f64>,
    /// Columns of distances to segment interiors between pool points (∞ where the nearest
    /// point is an end), computed on first use: many candidates share a segment.
    segment_columns: Vec<f64>,
    /// For each ordered pool pair (a, b), the index of its column, or `NOT_COMPUTED`.
    segment_slot: Vec<u32>,
    /// Rows `0..n_single` are atoms of one point (no spread term), scored by the plain
    /// kernel; the others by the kernel with spreads.
    n_single: usize,
    /// With merged points: the spread terms of rows `n_single..` (see [`Spreads`]).
    spreads: Option<Spreads>,
}

/// The spread terms of the rows of a table that are atoms of several points: an atom's loss
/// on a part is mass × (its mean's squared distance) + spread, with spread tr C on a vertex
/// and tr C − uᵀCu on a segment of direction u. Indexed from the first such row.
#[derive(Debug, Default)]
struct Spreads {
    /// The packed scatter matrices, slot by slot: entry s of every row, then entry s + 1.
    scatter: Vec<f64>,
    /// tr C of each row: the spread on any vertex.
    trace: Vec<f64>,
    /// The spread on the row's current part.
    current: Vec<f64>,
    /// The spread on the part that gives `base`.
    base: Vec<f64>,
    /// Columns of spreads on pool segments, in the slots of `segment_slot`.
    segment_columns: Vec<f64>,
    /// Scratch: the spread on the nearest new part of a candidate, in two halves (the
    /// second is used by [`SpreadSelection::TwoBuffers`]).
    nearest: Vec<f64>,
}

const NOT_COMPUTED: u32 = u32::MAX;

/// The buffers of the tables of earlier rounds, for the tables of the next ones. A round
/// builds a table per window scored and drops them all; their largest buffers (the pool's
/// columns and the segment columns, up to megabytes each) are fresh allocations every time,
/// which the allocator maps and the kernel zeroes page by page: a fifth of a 10⁵-point run
/// with full feedback went to that (page faults, `memset` and unmapping; see
/// docs/slpc-calibration.md). Reused, their pages stay mapped. What a table holds does not
/// depend on the buffers it got: only their capacities are kept.
#[derive(Debug, Default)]
pub(crate) struct TableScratch {
    tables: Vec<Table>,
    spreads: Vec<Spreads>,
}

impl Clone for TableScratch {
    /// A clone starts with no buffers: they are a cache, not state.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl TableScratch {
    /// Keeps `table`'s buffers for a later table.
    pub(crate) fn recycle(&mut self, mut table: Table) {
        if let Some(spreads) = table.spreads.take() {
            self.spreads.push(spreads);
        }
        self.tables.push(table);
    }

    /// A table of empty buffers (with the capacities of an earlier one, if any).
    fn table(&mut self) -> Table {
        self.tables.pop().unwrap_or_default()
    }

    fn spreads(&mut self) -> Spreads {
        self.spreads.pop().unwrap_or_default()
    }
}

/// `buffer` emptied and filled from `values`.
fn refill<T>(buffer: &mut Vec<T>, values: impl IntoIterator<Item = T>) {
    buffer.clear();
    buffer.extend(values);
}

/// The columns of squared distances from the rows' means to every pool point, pool point by
/// pool point, into `columns`. Below four coordinates [`squared_distance`] is the sum of the
/// squared gaps in coordinate order from 0, so the columns are built the same way a
/// coordinate at a time over contiguous copies of the means (`means`, coordinate-major): the
/// same bits, in passes the compiler vectorises, where a row at a time reads each mean
/// through its atom's index. From four coordinates on, row by row with that function.
fn pool_columns(
    state: &CurveState,
    pool: &Pool,
    rows: &[Row],
    columns: &mut Vec<f64>,
    means: &mut Vec<f64>,
) {
    let n_rows = rows.len();
    let dim = pool.dim;
    columns.clear();
    columns.reserve(pool.len() * n_rows);
    if n_rows == 0 {
        return;
    }
    if dim >= 4 || dim == 0 {
        for p in pool.points.chunks_exact(dim.max(1)) {
            columns.extend(
                rows.iter()
                    .map(|r| squared_distance(state.atom_mean(r.index), p)),
            );
        }
        return;
    }
    means.clear();
    for k in 0..dim {
        means.extend(rows.iter().map(|r| state.atom_mean(r.index)[k]));
    }
    for p in pool.points.chunks_exact(dim) {
        let start = columns.len();
        // 0 + g² is g² (a square is never −0), so the first coordinate is written as is.
        columns.extend(means[..n_rows].iter().map(|&x| (x - p[0]) * (x - p[0])));
        let column = &mut columns[start..];
        for (coordinate, &centre) in means.chunks_exact(n_rows).zip(p).skip(1) {
            for (out, &x) in column.iter_mut().zip(coordinate) {
                let gap = x - centre;
                *out += gap * gap;
            }
        }
    }
}

impl Table {
    /// The table of `pool`'s window over the atoms for which `keep(index)` holds.
    pub(crate) fn new(state: &CurveState, pool: &Pool, keep: impl Fn(usize) -> bool) -> Self {
        Self::new_in(state, pool, keep, &mut TableScratch::default())
    }

    /// [`Table::new`] in buffers from `scratch` (give them back with
    /// [`TableScratch::recycle`]); the same table.
    pub(crate) fn new_in(
        state: &CurveState,
        pool: &Pool,
        keep: impl Fn(usize) -> bool,
        scratch: &mut TableScratch,
    ) -> Self {
        let window = pool.window;
        let modified = window.modified_cells(state);
        let k = state.n_segments();
        let mut table = scratch.table();
        let rows = &mut table.rows;
        rows.clear();
        for &cell in &modified {
            for &id in state.members(cell) {
                let index = state.atom_index(id);
                if keep(index) {
                    let rest = rest_of_curve(state, window, k, state.atom_mean(index));
                    rows.push(Row {
                        index,
                        rest: Some(rest),
                    });
                }
            }
        }
        state.for_each_reachable(&pool.centre, pool.radius, |index| {
            if keep(index) && !modified.contains(&state.atom_cell(index)) {
                rows.push(Row { index, rest: None });
            }
        });
        // Atoms of one point first (a stable partition: the order stays a function of the
        // state): most atoms while bins are sparsely filled, and they need no spread terms.
        let n_single = if state.merges_points() {
            let merged = &mut table.merged_rows;
            merged.clear();
            rows.retain(|r| {
                let single = state.atom_count(r.index) == 1.0;
                if !single {
                    merged.push(*r);
                }
                single
            });
            let n_single = rows.len();
            rows.extend_from_slice(merged);
            n_single
        } else {
            rows.len()
        };
        let rows = &table.rows;
        let n_rows = rows.len();
        refill(
            &mut table.mass,
            rows.iter().map(|r| state.atom_mass(r.index)),
        );
        refill(
            &mut table.current,
            rows.iter().map(|r| state.atom_distance(r.index)),
        );
        refill(
            &mut table.base,
            rows.iter()
                .zip(&table.current)
                .map(|(r, c)| r.rest.map_or(*c, |rest| rest.0)),
        );
        pool_columns(
            state,
            pool,
            rows,
            &mut table.columns,
            &mut table.merged_means,
        );
        table.spreads = (n_single < n_rows).then(|| {
            let dim = state.dim;
            let merged = &rows[n_single..];
            let packed = dim * (dim + 1) / 2;
            let mut spreads = scratch.spreads();
            let scatter = &mut spreads.scatter;
            scatter.clear();
            scatter.reserve(merged.len() * packed);
            for slot in 0..packed {
                scatter.extend(merged.iter().map(|r| state.atom_scatter(r.index)[slot]));
            }
            refill(
                &mut spreads.current,
                merged.iter().map(|r| state.atom_spread(r.index)),
            );
            refill(
                &mut spreads.base,
                merged
                    .iter()
                    .zip(&spreads.current)
                    .map(|(r, c)| match r.rest {
                        // No unchanged part (the window is the whole curve): never selected.
                        Some((rest, _)) if rest == f64::INFINITY => 0.0,
                        Some((_, order)) => state.spread_on(r.index, unchanged_part(order)),
                        None => *c,
                    }),
            );
            refill(
                &mut spreads.trace,
                merged
                    .iter()
                    .map(|r| trace(state.atom_scatter(r.index), dim)),
            );
            spreads.segment_columns.clear();
            refill(
                &mut spreads.nearest,
                std::iter::repeat_n(0.0, 2 * merged.len()),
            );
            spreads
        });
        refill(&mut table.nearest, std::iter::repeat_n(0.0, n_rows));
        table.segment_columns.clear();
        refill(
            &mut table.segment_slot,
            std::iter::repeat_n(NOT_COMPUTED, pool.len() * pool.len()),
        );
        table.n_single = n_single;
        table
    }

    /// Asserts that every entry of the pool columns is [`squared_distance`] from its row's
    /// mean to its pool point, bit for bit.
    #[cfg(test)]
    pub(crate) fn assert_pool_columns(&self, state: &CurveState, pool: &Pool) {
        for (p, point) in pool.points.chunks_exact(pool.dim).enumerate() {
            for (r, row) in self.rows.iter().enumerate() {
                let expected = squared_distance(state.atom_mean(row.index), point);
                assert_eq!(
                    self.column(p)[r].to_bits(),
                    expected.to_bits(),
                    "pool point {p}, row {r}: {} against {expected}",
                    self.column(p)[r]
                );
            }
        }
    }

    fn column(&self, p: usize) -> &[f64] {
        let n = self.rows.len();
        &self.columns[p * n..(p + 1) * n]
    }

    /// The nearest new part to row `r` (the first on a tie) and the squared distance.
    fn nearest_part(&self, r: usize, pool: &Pool, pieces: &Pieces) -> (f64, usize) {
        let n_pool = pool.len();
        let n = self.rows.len();
        let to = |p: usize| self.columns[p * n + r];
        let mut best = (f64::INFINITY, usize::MAX);
        for (j, (piece, _)) in pieces.pieces.iter().enumerate() {
            let distance = match *piece {
                Piece::Vertex(a) => to(a),
                Piece::Segment(a, b) => {
                    match interior(to(a), to(b), pool.lengths2[a * n_pool + b]) {
                        Some(d) => d,
                        None => continue,
                    }
                }
            };
            if distance < best.0 {
                best = (distance, j);
            }
        }
        best
    }

    /// The change of the weighted sums of rewards and losses from the current curve to the
    /// candidate with new parts `pieces`; `loss_bound` is c_0 (rewards are max(0, c_0 − Δ)).
    pub(crate) fn change(&mut self, pool: &Pool, pieces: &Pieces, loss_bound: f64) -> Change {
        let n_pool = pool.len();
        let n_rows = self.rows.len();
        let dim = pool.dim;
        for (piece, _) in &pieces.pieces {
            if let Piece::Segment(a, b) = *piece {
                if self.segment_slot[a * n_pool + b] == NOT_COMPUTED {
                    let slot = self.segment_columns.len() / n_rows.max(1);
                    self.segment_slot[a * n_pool + b] = slot as u32;
                    let start = self.segment_columns.len();
                    if start == 0 {
                        // Room for every segment between pool points, so that the columns
                        // are never copied as they come (only the pages written are used).
                        self.segment_columns.reserve(n_pool * n_pool * n_rows);
                    }
                    let (columns, segment_columns) = (&self.columns, &mut self.segment_columns);
                    let length2 = pool.lengths2[a * n_pool + b];
                    crate::kernels::dispatch_widest(SegmentColumn {
                        to_a: &columns[a * n_rows..(a + 1) * n_rows],
                        to_b: &columns[b * n_rows..(b + 1) * n_rows],
                        length2,
                        out: segment_columns,
                    });
                    if let Some(spreads) = &mut self.spreads {
                        // tr C − (b − a)ᵀC(b − a)/‖b − a‖², the quadratic form as a fixed
                        // combination of the scatter's entries.
                        let (pa, pb) = (pool.point(a), pool.point(b));
                        let mut weights = Vec::with_capacity(dim * (dim + 1) / 2);
                        for r in 0..dim {
                            let dr = pb[r] - pa[r];
                            weights.push(dr * dr / length2);
                            for c in r + 1..dim {
                                weights.push(2.0 * dr * (pb[c] - pa[c]) / length2);
                            }
                        }
                        let n_merged = spreads.trace.len();
                        if spreads.segment_columns.is_empty() {
                            spreads.segment_columns.reserve(n_pool * n_pool * n_merged);
                        }
                        crate::kernels::dispatch_widest(SpreadColumn {
                            scatter: &spreads.scatter,
                            trace: &spreads.trace,
                            weights: &weights,
                            out: &mut spreads.segment_columns,
                        });
                    }
                }
            }
        }
        let n_single = self.n_single;
        let mut nearest = std::mem::take(&mut self.nearest);
        let (mut reward, mut loss) = crate::kernels::dispatch_widest(ScoreCandidate {
            table: self,
            rows: 0..n_single,
            pool,
            pieces,
            nearest: &mut nearest[..n_single],
            loss_bound,
        });
        if let Some(mut spreads) = self.spreads.take() {
            let mut nearest_spread = std::mem::take(&mut spreads.nearest);
            let (r, l) = crate::kernels::dispatch_widest(ScoreMerged {
                table: self,
                spreads: &spreads,
                rows: n_single..n_rows,
                pool,
                pieces,
                nearest: &mut nearest[n_single..],
                nearest_spread: &mut nearest_spread,
                loss_bound,
            });
            reward += r;
            loss += l;
            spreads.nearest = nearest_spread;
            self.spreads = Some(spreads);
        }
        self.nearest = nearest;
        Change { reward, loss }
    }

    /// The new distance and part (of the new curve) of every atom of the table that the
    /// candidate changes, for [`CurveState::replace`]; the table must hold every atom of the
    /// modified cells.
    pub(crate) fn updates(
        &self,
        state: &CurveState,
        pool: &Pool,
        pieces: &Pieces,
    ) -> Vec<(usize, f64, Part)> {
        let window = pool.window;
        let mut changes = Vec::with_capacity(self.rows.len());
        for (r, row) in self.rows.iter().enumerate() {
            let (d_new, j) = self.nearest_part(r, pool, pieces);
            match row.rest {
                Some((rest, order)) => {
                    if d_new < rest || (d_new == rest && Order(NEW, j) < order) {
                        changes.push((row.index, d_new, pieces.pieces[j].1));
                    } else {
                        changes.push((row.index, rest, shifted(order, window, pieces.n_new)));
                    }
                }
                None => {
                    // An unchanged part after the window follows the new parts along the
                    // new curve, so a new part at the same distance takes the point; one
                    // before keeps it. A point that stays keeps its cell: cells are named by
                    // vertex identities.
                    let current = self.current[r];
                    let after =
                        state.part_of(state.atom_cell(row.index)).rank() > 2 * window.last + 1;
                    if d_new < current || (d_new == current && after) {
                        changes.push((row.index, d_new, pieces.pieces[j].1));
                    }
                }
            }
        }
        changes
    }
}

/// Scores one candidate over a table: the distance from every row to the nearest new part,
/// piece by piece over whole columns, then the sums of the mass-weighted changes of reward
/// and loss over 16 lanes combined in a fixed order (the same bits on every CPU).
struct ScoreCandidate<'a> {
    table: &'a Table,
    /// The rows scored (a range of the table's).
    rows: std::ops::Range<usize>,
    pool: &'a Pool,
    pieces: &'a Pieces,
    nearest: &'a mut [f64],
    loss_bound: f64,
}

impl crate::kernels::Kernel for ScoreCandidate<'_> {
    type Output = (f64, f64);

    #[inline(always)]
    fn run(self) -> (f64, f64) {
        let table = self.table;
        let nearest = self.nearest;
        nearest.fill(f64::INFINITY);
        let n_pool = self.pool.len();
        let n_rows = table.rows.len();
        let rows = self.rows;
        for (piece, _) in &self.pieces.pieces {
            let column = match *piece {
                Piece::Vertex(a) => &table.column(a)[rows.clone()],
                Piece::Segment(a, b) => {
                    let slot = table.segment_slot[a * n_pool + b] as usize;
                    &table.segment_columns[slot * n_rows..(slot + 1) * n_rows][rows.clone()]
                }
            };
            // Distances are never NaN (nor −0), so `min` is exact and order-free.
            for (best, &d) in nearest.iter_mut().zip(column) {
                *best = best.min(d);
            }
        }
        const LANES: usize = 16;
        let bound = self.loss_bound;
        let mut reward = [0.0f64; LANES];
        let mut loss = [0.0f64; LANES];
        let change = |nearest: f64, base: f64, old: f64, mass: f64| {
            let new = nearest.min(base);
            (
                mass * ((bound - new).max(0.0) - (bound - old).max(0.0)),
                mass * (new - old),
            )
        };
        let base = &table.base[rows.clone()];
        let current = &table.current[rows.clone()];
        let mass = &table.mass[rows];
        let mut chunks = nearest
            .chunks_exact(LANES)
            .zip(base.chunks_exact(LANES))
            .zip(current.chunks_exact(LANES))
            .zip(mass.chunks_exact(LANES));
        for (((near, base), old), mass) in &mut chunks {
            for lane in 0..LANES {
                let (r, l) = change(near[lane], base[lane], old[lane], mass[lane]);
                reward[lane] += r;
                loss[lane] += l;
            }
        }
        let tail = nearest.len() - nearest.len() % LANES;
        for (lane, r) in (tail..nearest.len()).enumerate() {
            let (dr, dl) = change(nearest[r], base[r], current[r], mass[r]);
            reward[lane] += dr;
            loss[lane] += dl;
        }
        (
            crate::kernels::tree_sum(reward),
            crate::kernels::tree_sum(loss),
        )
    }
}

/// How [`ScoreMerged`] keeps, row by row, the spread of the nearest piece so far. Both make
/// the same choices, so the same bits; they differ in speed by CPU. In place,
/// `best = if closer { s } else { best }` compiles to a masked store. On AMD's cores such a
/// store costs several times a plain one: the selection took a fifth of a 10⁵-point run
/// there, and reading the spreads so far from one buffer and writing them to another (a
/// blend and a plain store) makes the whole run 15–20 % faster (docs/slpc-calibration.md).
/// On Intel's cores masked stores are cheap and the second buffer's extra load made the run
/// 5–15 % slower, so the selection stays in place. Where the kernels run on AVX-512 (the
/// `avx512` feature on a CPU that has it, AMD's Zen 4 included) the masked store is the
/// native 512-bit one, and in place was faster on the AMD host too (100.3 s of CPU against
/// 112.9 s for a 10⁵-point full-feedback run, side by side), so AVX-512 selects in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpreadSelection {
    /// One buffer, updated under a mask.
    InPlace,
    /// Two buffers that the pieces read and write in turn.
    TwoBuffers,
}

#[cfg(test)]
thread_local! {
    static FORCED_SELECTION: std::cell::Cell<Option<SpreadSelection>> =
        const { std::cell::Cell::new(None) };
}

impl SpreadSelection {
    /// In place where the kernels run on AVX-512; otherwise two buffers on AMD's
    /// processors and in place elsewhere. SSE4a is the sign of an AMD
    /// (or Hygon) processor: it is in every AMD core since 2007 and in no Intel one, and
    /// `is_x86_feature_detected!` reads it without unsafe code (the vendor string of `cpuid`
    /// would need a newer compiler than this crate's minimum).
    fn for_this_cpu() -> Self {
        #[cfg(test)]
        if let Some(forced) = FORCED_SELECTION.with(std::cell::Cell::get) {
            return forced;
        }
        if crate::kernels::widest_is_avx512() {
            return Self::InPlace;
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("sse4a") {
            return Self::TwoBuffers;
        }
        Self::InPlace
    }

    /// Runs `f` with [`ScoreMerged`] held to `self` on this thread, for the tests that
    /// compare the two.
    #[cfg(test)]
    pub(crate) fn hold<T>(self, f: impl FnOnce() -> T) -> T {
        let before = FORCED_SELECTION.with(|forced| forced.replace(Some(self)));
        let result = f();
        FORCED_SELECTION.with(|forced| forced.set(before));
        result
    }
}

/// [`ScoreCandidate`] for atoms that merge points: the nearest part (by the mean's distance,
/// the first piece on a tie, the unchanged part on a tie with it) brings its spread term.
/// An atom of several points lies inside the ball, where rewards are not clipped, so its
/// reward change is minus its loss change; an atom outside the ball is one point with no
/// spread, clipped as a point.
struct ScoreMerged<'a> {
    table: &'a Table,
    spreads: &'a Spreads,
    /// The rows scored: those of the spreads.
    rows: std::ops::Range<usize>,
    pool: &'a Pool,
    pieces: &'a Pieces,
    nearest: &'a mut [f64],
    /// Scratch of twice the rows: the spreads chosen so far, in two halves.
    nearest_spread: &'a mut [f64],
    loss_bound: f64,
}

impl crate::kernels::Kernel for ScoreMerged<'_> {
    type Output = (f64, f64);

    #[inline(always)]
    fn run(self) -> (f64, f64) {
        let table = self.table;
        let spreads = self.spreads;
        let nearest = self.nearest;
        nearest.fill(f64::INFINITY);
        let n_pool = self.pool.len();
        let n_table = table.rows.len();
        let rows = self.rows;
        let n_rows = rows.len();
        let columns = |piece: Piece| -> (&[f64], &[f64]) {
            match piece {
                Piece::Vertex(a) => (&table.column(a)[rows.clone()], spreads.trace.as_slice()),
                Piece::Segment(a, b) => {
                    let slot = table.segment_slot[a * n_pool + b] as usize;
                    (
                        &table.segment_columns[slot * n_table..(slot + 1) * n_table][rows.clone()],
                        &spreads.segment_columns[slot * n_rows..(slot + 1) * n_rows],
                    )
                }
            }
        };
        let (mut chosen, mut next) = self.nearest_spread.split_at_mut(n_rows);
        chosen.fill(0.0);
        match SpreadSelection::for_this_cpu() {
            SpreadSelection::InPlace => {
                for (piece, _) in &self.pieces.pieces {
                    let (column, spread) = columns(*piece);
                    for ((best, best_spread), (&d, &s)) in nearest
                        .iter_mut()
                        .zip(chosen.iter_mut())
                        .zip(column.iter().zip(spread))
                    {
                        let closer = d < *best;
                        *best = if closer { d } else { *best };
                        *best_spread = if closer { s } else { *best_spread };
                    }
                }
            }
            SpreadSelection::TwoBuffers => {
                for (piece, _) in &self.pieces.pieces {
                    let (column, spread) = columns(*piece);
                    for ((best, (&so_far, best_spread)), (&d, &s)) in nearest
                        .iter_mut()
                        .zip(chosen.iter().zip(next.iter_mut()))
                        .zip(column.iter().zip(spread))
                    {
                        let closer = d < *best;
                        // `min`, not a select of the old value (a masked store again): the
                        // same bits, since distances are never NaN nor −0 and a tie is one
                        // value.
                        *best = best.min(d);
                        *best_spread = if closer { s } else { so_far };
                    }
                    std::mem::swap(&mut chosen, &mut next);
                }
            }
        }
        let nearest_spread: &[f64] = chosen;
        const LANES: usize = 16;
        let bound = self.loss_bound;
        let mut reward = [0.0f64; LANES];
        let mut loss = [0.0f64; LANES];
        let base = &table.base[rows.clone()];
        let current = &table.current[rows.clone()];
        let mass = &table.mass[rows];
        #[inline(always)]
        fn change(
            bound: f64,
            (nearest, nearest_spread): (f64, f64),
            (base, base_spread): (f64, f64),
            (old, old_spread): (f64, f64),
            mass: f64,
        ) -> (f64, f64) {
            let new_part = nearest < base;
            let d = if new_part { nearest } else { base };
            let s = if new_part {
                nearest_spread
            } else {
                base_spread
            };
            let spread = s - old_spread;
            (
                mass * ((bound - d).max(0.0) - (bound - old).max(0.0)) - spread,
                mass * (d - old) + spread,
            )
        }
        let whole = n_rows - n_rows % LANES;
        for start in (0..whole).step_by(LANES) {
            let r = start..start + LANES;
            let (near, near_s) = (&nearest[r.clone()], &nearest_spread[r.clone()]);
            let (base, base_s) = (&base[r.clone()], &spreads.base[r.clone()]);
            let (old, old_s) = (&current[r.clone()], &spreads.current[r.clone()]);
            let mass = &mass[r];
            for lane in 0..LANES {
                let (dr, dl) = change(
                    bound,
                    (near[lane], near_s[lane]),
                    (base[lane], base_s[lane]),
                    (old[lane], old_s[lane]),
                    mass[lane],
                );
                reward[lane] += dr;
                loss[lane] += dl;
            }
        }
        for (lane, r) in (whole..n_rows).enumerate() {
            let (dr, dl) = change(
                bound,
                (nearest[r], nearest_spread[r]),
                (base[r], spreads.base[r]),
                (current[r], spreads.current[r]),
                mass[r],
            );
            reward[lane] += dr;
            loss[lane] += dl;
        }
        (
            crate::kernels::tree_sum(reward),
            crate::kernels::tree_sum(loss),
        )
    }
}

/// The spread terms of the merged rows on one pool segment, tr C − uᵀCu (as
/// [`segment_spread`], clamped at 0), as a weighted sum of the scatter's entry columns
/// accumulated entry by entry (a fixed order); appended to `out`. The first entry's
/// products are written as they are rather than added to zeros: the same values (0 + x = x
/// but for the sign of a zero, which tr C − 0 and the clamp do not see), without a pass
/// that writes zeros.
struct SpreadColumn<'a> {
    scatter: &'a [f64],
    trace: &'a [f64],
    weights: &'a [f64],
    out: &'a mut Vec<f64>,
}

impl crate::kernels::Kernel for SpreadColumn<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let n = self.trace.len();
        let start = self.out.len();
        let mut entries = self.scatter.chunks_exact(n).zip(self.weights);
        match entries.next() {
            Some((first, &weight)) => self.out.extend(first.iter().map(|&c| weight * c)),
            None => self.out.extend(std::iter::repeat_n(0.0, n)),
        }
        let out = &mut self.out[start..];
        for (column, &weight) in entries {
            for (out, &c) in out.iter_mut().zip(column) {
                *out += weight * c;
            }
        }
        for (out, &trace) in out.iter_mut().zip(self.trace) {
            *out = (trace - *out).max(0.0);
        }
    }
}

/// The distances from the rows to the interior of one pool segment: [`interior`],
/// branch-free, with ∞ where the nearest point of the segment is an end; appended to `out`
/// (written once: no zeros first, which cost as much as the column itself).
struct SegmentColumn<'a> {
    to_a: &'a [f64],
    to_b: &'a [f64],
    length2: f64,
    out: &'a mut Vec<f64>,
}

impl crate::kernels::Kernel for SegmentColumn<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let length2 = self.length2;
        let twice = 2.0 * length2;
        self.out
            .extend(self.to_a.iter().zip(self.to_b).map(|(&to_a, &to_b)| {
                let along2 = to_a + length2 - to_b;
                let along = 0.5 * along2;
                let d = (to_a - along * along / length2).max(0.0);
                let inside = along2 > 0.0 && along2 < twice;
                if inside { d } else { f64::INFINITY }
            }));
    }
}

/// The nearest unchanged part of the curve (parts outside the window's modified cells, in
/// rank order: V_0, S_0, …, V_{first−1}, then V_{last+1}, …, V_k).
fn rest_of_curve(state: &CurveState, window: Window, k: usize, point: &[f64]) -> (f64, Order) {
    let mut best = (f64::INFINITY, Order(AFTER, usize::MAX));
    for (range, region) in [
        (0..window.first, BEFORE),
        ((window.last + 1)..(k + 1), AFTER),
    ] {
        let end = range.end;
        let mut previous: Option<f64> = None;
        for i in range {
            let to_b = squared_distance(point, state.vertex(i));
            if let Some(to_a) = previous {
                if let Some(d) = interior(to_a, to_b, state.lengths2[i - 1]) {
                    if d < best.0 {
                        best = (d, Order(region, 2 * i - 1));
                    }
                }
            }
            if to_b < best.0 {
                best = (to_b, Order(region, 2 * i));
            }
            previous = (i + 1 < end).then_some(to_b);
        }
    }
    best
}

/// The part of the current curve at `order` (an unchanged part: its old rank).
fn unchanged_part(order: Order) -> Part {
    let index = order.1 / 2;
    if order.1 % 2 == 0 {
        Part::Vertex(index)
    } else {
        Part::Segment(index)
    }
}

/// The part of the new curve that the unchanged old part at `order` becomes.
fn shifted(order: Order, window: Window, n_new: usize) -> Part {
    let index = order.1 / 2;
    let index = if order.0 == AFTER {
        index + window.first + n_new - (window.last + 1)
    } else {
        index
    };
    if order.1 % 2 == 0 {
        Part::Vertex(index)
    } else {
        Part::Segment(index)
    }
}

/// The change of the weighted sums of rewards and of losses from the current curve to a
/// candidate, over the points counted by the scoring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Change {
    pub(crate) reward: f64,
    pub(crate) loss: f64,
}
