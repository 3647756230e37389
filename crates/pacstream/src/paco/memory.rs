//! The memory of past points that S_t is evaluated on.
//!
//! Each point x_s is kept with the two numbers its term of S_t needs besides the candidate
//! centres: ℓ̂_s = ℓ(ĉ_s, x_s), the loss the learner paid on it, and w_s = λ_{s−1}/2, the weight
//! of its variance term (0 for warm-up points, which were not predicted, and in batch mode):
//!
//! S_t(c) = Σ_s [ ℓ(c, x_s) + w_s (ℓ(c, x_s) − ℓ̂_s)² ].
//!
//! Two layouts of the same points:
//!
//! - **rows** (row-major, one point after the other): what k-means and snapshots use;
//! - **chunks** for the evaluation kernel ([`super::evaluate`]): the stream is cut into chunks of
//!   [`CHUNK`] consecutive points by their absolute position (point a is in chunk a / CHUNK),
//!   and each chunk stores its coordinates column by column (coordinate i of its 128 points
//!   contiguous), then ‖x_s‖², ℓ̂_s, w_s and a 0/1 flag `live` (0 for a slot not filled yet or
//!   a point that left the window). Column storage lets the kernel run the same arithmetic on
//!   many points at once with vector instructions.
//!
//! Memory `All` keeps every point. Window memory keeps the last W: the oldest point's flag is
//! cleared when a new one arrives, and a chunk is dropped once all its points have left.
//! Chunk boundaries depend only on the positions of the points in the stream, never on the
//! number of threads, so every sum over chunks is a fixed function of the data.

use serde::{Deserialize, Serialize};

use super::evaluate::{MAX_INDEX_DECLINES, longest_index_decline};
use super::index::SpatialIndex;
use super::params::{Memory as MemoryMode, Summation};
use crate::error::{Error, Result};
use crate::geometry::squared_norm;

/// Points per chunk: the unit of the parallel evaluation and of early rejection.
pub(crate) const CHUNK: usize = 128;

/// The fields stored after the d coordinate columns of a chunk.
const NORM: usize = 0;
const PREDICTED: usize = 1;
const VARIANCE: usize = 2;
const LIVE: usize = 3;
const EXTRA_COLUMNS: usize = 4;

/// The memory of past points (in the learner's internal coordinates).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MemorySnapshot", into = "MemorySnapshot")]
pub(crate) struct PointMemory {
    dim: usize,
    window: Option<usize>,
    /// Row-major points; the first `dead_rows` have left the window.
    rows: Vec<f64>,
    predicted: Vec<f64>,
    variance: Vec<f64>,
    dead_rows: usize,
    /// The number of points ever stored (the absolute position of the next one).
    pushed: u64,
    /// The chunks, the first holding the oldest live point.
    chunks: Vec<f64>,
    /// The spatial index of the live points (a function of them; rebuilt on restore).
    index: SpatialIndex,
    /// Whether the index is kept and used ([`super::params::Summation`]).
    indexed: bool,
    /// Whether it is used whatever the number of points ([`Summation::Index`]).
    #[doc(hidden)]
    always_indexed: bool,
    /// [`Summation::Auto`]'s fallback ([`PointMemory::review_index`]): while fewer points
    /// than this have been stored, S_t is summed point by point although the index is kept.
    index_declined_until: u64,
    /// How many reviews in a row found the index dearer than the scan (the length of the
    /// next decline doubles with each).
    index_declines: u32,
}

/// What a snapshot holds: the live points and their numbers; the chunks are rebuilt.
#[derive(Serialize, Deserialize)]
struct MemorySnapshot {
    dim: usize,
    window: Option<usize>,
    pushed: u64,
    points: Vec<f64>,
    predicted_losses: Vec<f64>,
    variance_weights: Vec<f64>,
    #[serde(default = "indexed_by_default")]
    indexed: bool,
    #[serde(default)]
    always_indexed: bool,
    // Auto's fallback from the index; left out while none is under way, so that such a
    // snapshot is the one written before the fallback existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    index_declined_until: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    index_declines: u32,
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn indexed_by_default() -> bool {
    true
}

impl From<PointMemory> for MemorySnapshot {
    fn from(memory: PointMemory) -> Self {
        let start = memory.dead_rows;
        MemorySnapshot {
            dim: memory.dim,
            window: memory.window,
            pushed: memory.pushed,
            points: memory.rows[start * memory.dim..].to_vec(),
            predicted_losses: memory.predicted[start..].to_vec(),
            variance_weights: memory.variance[start..].to_vec(),
            indexed: memory.indexed,
            always_indexed: memory.always_indexed,
            index_declined_until: memory.index_declined_until,
            index_declines: memory.index_declines,
        }
    }
}

impl TryFrom<MemorySnapshot> for PointMemory {
    type Error = Error;

    fn try_from(snapshot: MemorySnapshot) -> Result<Self> {
        let invalid = |what: &str| Err(Error::InvalidSnapshot(format!("PACBO memory: {what}")));
        let n = snapshot.predicted_losses.len();
        if snapshot.dim == 0
            || snapshot.points.len() != n * snapshot.dim
            || snapshot.variance_weights.len() != n
            || (n as u64) > snapshot.pushed
        {
            return invalid("its parts have inconsistent sizes");
        }
        if snapshot.window.is_some_and(|w| w == 0 || n > w)
            || (snapshot.window.is_none() && n as u64 != snapshot.pushed)
        {
            return invalid("it holds more or fewer points than its mode keeps");
        }
        if crate::data::check_coordinates(&snapshot.points).is_err()
            || snapshot
                .predicted_losses
                .iter()
                .chain(&snapshot.variance_weights)
                .any(|v| !(v.is_finite() && *v >= 0.0))
        {
            return invalid("a value is not finite or a loss or weight is negative");
        }
        if snapshot.index_declines > MAX_INDEX_DECLINES + 1
            || snapshot.index_declined_until > snapshot.pushed + longest_index_decline()
        {
            return invalid("its fallback from the index is longer than any review sets");
        }
        let mut memory = PointMemory {
            dim: snapshot.dim,
            window: snapshot.window,
            rows: Vec::with_capacity(snapshot.points.len()),
            predicted: Vec::with_capacity(n),
            variance: Vec::with_capacity(n),
            dead_rows: 0,
            pushed: snapshot.pushed - n as u64,
            chunks: Vec::new(),
            index: SpatialIndex::default(),
            indexed: snapshot.indexed,
            always_indexed: snapshot.always_indexed,
            index_declined_until: snapshot.index_declined_until,
            index_declines: snapshot.index_declines,
        };
        for (index, point) in snapshot.points.chunks_exact(snapshot.dim).enumerate() {
            memory.store(
                point,
                snapshot.predicted_losses[index],
                snapshot.variance_weights[index],
            );
        }
        // The index is a function of the live points: built once, it equals the one the
        // pushes of the original run maintained.
        memory.sync_index();
        Ok(memory)
    }
}

impl PointMemory {
    /// An empty memory whose S_t is summed on the index where it pays
    /// ([`super::params::Summation::Auto`]).
    #[cfg_attr(
        not(feature = "testing"),
        allow(dead_code, reason = "used by the entry points of the testing feature")
    )]
    pub(crate) fn new(dim: usize, mode: MemoryMode) -> Self {
        Self::with_summation(dim, mode, Summation::Auto)
    }

    /// An empty memory with the given summation.
    pub(crate) fn with_summation(dim: usize, mode: MemoryMode, summation: Summation) -> Self {
        Self {
            dim,
            window: match mode {
                MemoryMode::All => None,
                MemoryMode::Window(w) => Some(w),
            },
            rows: Vec::new(),
            predicted: Vec::new(),
            variance: Vec::new(),
            dead_rows: 0,
            pushed: 0,
            chunks: Vec::new(),
            index: SpatialIndex::default(),
            indexed: summation != Summation::PointByPoint,
            always_indexed: summation == Summation::Index,
            index_declined_until: 0,
            index_declines: 0,
        }
    }

    /// Whether the index is used whatever the number of points.
    #[inline]
    pub(crate) fn always_indexed(&self) -> bool {
        self.always_indexed
    }

    /// Whether the index is kept.
    #[inline]
    pub(crate) fn indexed(&self) -> bool {
        self.indexed
    }

    /// The fallback from the index ([`Self::review_index`]): the points stored before which
    /// it is not used.
    #[inline]
    pub(crate) fn index_declined_until(&self) -> u64 {
        self.index_declined_until
    }

    /// The reviews in a row that found the index dearer than the scan.
    #[inline]
    pub(crate) fn index_declines(&self) -> u32 {
        self.index_declines
    }

    pub(crate) fn set_index_decline(&mut self, declines: u32, until: u64) {
        self.index_declines = declines;
        self.index_declined_until = until;
    }

    #[inline]
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// The window W, if any.
    pub(crate) fn window(&self) -> Option<usize> {
        self.window
    }

    /// The number of points in memory (n_t).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.predicted.len() - self.dead_rows
    }

    /// The number of points ever stored.
    pub(crate) fn pushed(&self) -> u64 {
        self.pushed
    }

    /// The live points, row-major, oldest first.
    #[inline]
    pub(crate) fn rows(&self) -> &[f64] {
        &self.rows[self.dead_rows * self.dim..]
    }

    /// ℓ̂_s of the live points.
    pub(crate) fn predicted_losses(&self) -> &[f64] {
        &self.predicted[self.dead_rows..]
    }

    /// w_s = λ_{s−1}/2 of the live points.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn variance_weights(&self) -> &[f64] {
        &self.variance[self.dead_rows..]
    }

    /// Values per chunk: d coordinate columns and the four extra columns.
    #[inline]
    pub(crate) fn chunk_stride(&self) -> usize {
        (self.dim + EXTRA_COLUMNS) * CHUNK
    }

    /// The chunks, oldest first (see the module docs for their layout).
    #[inline]
    pub(crate) fn chunks(&self) -> &[f64] {
        &self.chunks
    }

    /// The number of chunks.
    #[inline]
    pub(crate) fn n_chunks(&self) -> usize {
        self.chunks.len() / self.chunk_stride()
    }

    /// The number of live points in the first `n_chunks` chunks.
    pub(crate) fn live_points_in_first_chunks(&self, n_chunks: usize) -> usize {
        let first = self.pushed - self.len() as u64;
        let first_chunk = first / CHUNK as u64;
        let end = ((first_chunk + n_chunks as u64) * CHUNK as u64).min(self.pushed);
        end.saturating_sub(first) as usize
    }

    /// Stores a point (finite, of the memory's dimension) with ℓ̂ and w; in window memory,
    /// the oldest point leaves once W are held. The index follows.
    pub(crate) fn push(&mut self, point: &[f64], predicted_loss: f64, variance_weight: f64) {
        self.store(point, predicted_loss, variance_weight);
        self.sync_index();
    }

    /// The spatial index of the live points.
    #[inline]
    pub(crate) fn index(&self) -> &SpatialIndex {
        &self.index
    }

    fn sync_index(&mut self) {
        if !self.indexed {
            return;
        }
        let mut index = std::mem::take(&mut self.index);
        index.sync(self);
        self.index = index;
    }

    /// The rows, ℓ̂ and w of the live positions `start..end` (absolute positions).
    pub(crate) fn positions(&self, start: u64, end: u64) -> (&[f64], &[f64], &[f64]) {
        let first = self.pushed - self.len() as u64;
        debug_assert!(first <= start && start <= end && end <= self.pushed);
        let a = (start - first) as usize + self.dead_rows;
        let b = (end - first) as usize + self.dead_rows;
        (
            &self.rows[a * self.dim..b * self.dim],
            &self.predicted[a..b],
            &self.variance[a..b],
        )
    }

    fn store(&mut self, point: &[f64], predicted_loss: f64, variance_weight: f64) {
        debug_assert_eq!(point.len(), self.dim);
        let position = self.pushed;
        self.rows.extend_from_slice(point);
        self.predicted.push(predicted_loss);
        self.variance.push(variance_weight);
        self.pushed += 1;

        let stride = self.chunk_stride();
        let first_live = position + 1 - self.len() as u64;
        let first_chunk = first_live / CHUNK as u64;
        let chunk = (position / CHUNK as u64 - first_chunk) as usize;
        if chunk == self.n_chunks() {
            self.chunks.resize(self.chunks.len() + stride, 0.0);
        }
        let slot = (position % CHUNK as u64) as usize;
        let base = chunk * stride;
        let values = &mut self.chunks[base..base + stride];
        for (i, &x) in point.iter().enumerate() {
            values[i * CHUNK + slot] = x;
        }
        let extra = self.dim * CHUNK;
        values[extra + NORM * CHUNK + slot] = squared_norm(point);
        values[extra + PREDICTED * CHUNK + slot] = predicted_loss;
        values[extra + VARIANCE * CHUNK + slot] = variance_weight;
        values[extra + LIVE * CHUNK + slot] = 1.0;

        if let Some(window) = self.window {
            if self.len() > window {
                self.evict_oldest();
            }
        }
    }

    fn evict_oldest(&mut self) {
        let position = self.pushed - self.len() as u64;
        let stride = self.chunk_stride();
        let slot = (position % CHUNK as u64) as usize;
        // The oldest point is in the first chunk. Every column of its slot is cleared, so
        // that the chunks are a function of the live points alone (as after a restore).
        for column in 0..self.dim + EXTRA_COLUMNS {
            self.chunks[column * CHUNK + slot] = 0.0;
        }
        self.dead_rows += 1;
        if slot == CHUNK - 1 {
            self.chunks.drain(..stride);
        }
        // Compact the rows once the dead ones outnumber the live ones: O(1) amortised.
        if self.dead_rows >= self.len().max(1) {
            let dead = self.dead_rows;
            self.rows.drain(..dead * self.dim);
            self.predicted.drain(..dead);
            self.variance.drain(..dead);
            self.dead_rows = 0;
        }
    }

    /// Column `column` (an extra column) of chunk `chunk`.
    #[cfg(test)]
    fn extra_column(&self, chunk: usize, column: usize) -> &[f64] {
        let base = chunk * self.chunk_stride() + (self.dim + column) * CHUNK;
        &self.chunks[base..base + CHUNK]
    }
}

/// Offsets of the extra columns within a chunk, for the kernel.
pub(crate) struct ChunkLayout {
    pub(crate) dim: usize,
}

impl ChunkLayout {
    #[inline(always)]
    pub(crate) fn coordinate(&self, i: usize) -> usize {
        i * CHUNK
    }
    #[inline(always)]
    pub(crate) fn norm(&self) -> usize {
        (self.dim + NORM) * CHUNK
    }
    #[inline(always)]
    pub(crate) fn predicted(&self) -> usize {
        (self.dim + PREDICTED) * CHUNK
    }
    #[inline(always)]
    pub(crate) fn variance(&self) -> usize {
        (self.dim + VARIANCE) * CHUNK
    }
    #[inline(always)]
    pub(crate) fn live(&self) -> usize {
        (self.dim + LIVE) * CHUNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(mode: MemoryMode, n: usize) -> PointMemory {
        let mut memory = PointMemory::new(2, mode);
        for s in 0..n {
            memory.push(&[s as f64, -(s as f64)], s as f64 * 0.5, 0.25);
        }
        memory
    }

    #[test]
    fn exact_memory_keeps_everything_in_chunks() {
        let memory = filled(MemoryMode::All, 300);
        assert_eq!(memory.len(), 300);
        assert_eq!(memory.n_chunks(), 3);
        let live: f64 = (0..3)
            .map(|c| memory.extra_column(c, LIVE).iter().sum::<f64>())
            .sum();
        assert_eq!(live, 300.0);
        // Point 130 is slot 2 of chunk 1.
        assert_eq!(memory.chunks()[memory.chunk_stride() + 2], 130.0);
        assert_eq!(memory.extra_column(1, NORM)[2], 2.0 * 130.0 * 130.0);
        assert_eq!(memory.live_points_in_first_chunks(1), 128);
        assert_eq!(memory.live_points_in_first_chunks(3), 300);
    }

    #[test]
    fn window_memory_forgets_and_drops_chunks() {
        let memory = filled(MemoryMode::Window(100), 1000);
        assert_eq!(memory.len(), 100);
        assert_eq!(memory.rows()[0], 900.0);
        assert_eq!(memory.predicted_losses()[0], 450.0);
        // Points 900..1000 live in chunks 7 (896..1024): one chunk, 100 live flags.
        assert_eq!(memory.n_chunks(), 1);
        let live: f64 = memory.extra_column(0, LIVE).iter().sum();
        assert_eq!(live, 100.0);
        assert_eq!(memory.live_points_in_first_chunks(1), 100);
        let memory = filled(MemoryMode::Window(200), 1000);
        // 800..1000: chunks 6 (768..896) and 7.
        assert_eq!(memory.n_chunks(), 2);
        assert_eq!(memory.live_points_in_first_chunks(1), 96);
    }

    #[test]
    fn snapshots_restore_the_same_memory() {
        for mode in [MemoryMode::All, MemoryMode::Window(50)] {
            for n in [0, 1, 127, 128, 129, 333] {
                let memory = filled(mode, n);
                let text = serde_json::to_string(&memory).unwrap();
                let restored: PointMemory = serde_json::from_str(&text).unwrap();
                assert_eq!(restored.rows(), memory.rows());
                assert_eq!(restored.chunks(), memory.chunks(), "{mode:?} n = {n}");
                assert_eq!(serde_json::to_string(&restored).unwrap(), text);
            }
        }
        let bad = r#"{"dim":2,"window":null,"pushed":2,"points":[1.0,2.0],"predicted_losses":[0.0],"variance_weights":[0.0]}"#;
        assert!(serde_json::from_str::<PointMemory>(bad).is_err());
    }
}
