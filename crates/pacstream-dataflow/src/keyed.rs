//! Keyed learners: one learner per key, the keys spread over the workers.
//!
//! Each epoch of `epoch_size` rows, worker w reads (parses, generates) only the rows whose
//! offset is w mod W, or, given [`ChunkClaims`], the chunks of rows it claims as it reaches
//! them, and sends each (position, key, values) to the worker `hash(key) mod W` (FNV-1a, the
//! same in every process). That worker sorts what it received by position and feeds each row to its
//! key's learner, so every key's learner sees its rows in stream order: its records, its
//! state and its summary are those of a one-process run of the library on that key's rows,
//! whatever the number of workers. The records travel to worker 0, which writes them in
//! stream order; at each checkpointed epoch every worker saves its keys' learners (the
//! library's snapshots).
//!
//! Any learner of the library plays, through [`KeyedFamily`]: [`PointFamily`] for the
//! learners of points (sequential k-means, PACBO, principal curves: anything that is
//! [`Describe`] over `&[f64]`) and [`AggregatorFamily`] for the expert rules (a row is the
//! experts' advice followed by the outcome).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::{IoSlice, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;

use pacstream::OnlineLearner;
use pacstream::describe::Describe;
use pacstream::eval::{Prequential, Totals};
use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorConfig, AggregatorRecord, AnyAggregator,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::channel::Channel;
use crate::checkpoint::{Start, save_if_due, start};
use crate::error::{Error, Failure, Result};
use crate::sink::{Records, RunFiles};
use crate::{ROWS_LIMIT, Rows, Selection, Source};

/// A keyed row held alone (the rows of a [`crate::VecSource`]): the key and the values.
pub type KeyedRow = (String, Vec<f64>);

/// How the learners of one family are built, fed and summarised, from validated settings.
///
/// Records and summaries are written straight from the library's types (no intermediate
/// JSON value): with small learners and many keys, building them is most of the work.
pub trait KeyedFamily {
    /// A key's state (the learner and what the front-end accounts), as snapshotted.
    type State: Serialize + DeserializeOwned + 'static;
    /// A learner with no data.
    fn build(&self) -> Result<Self::State>;
    /// Learns one row; with `record`, appends the round's record to it as one JSON object
    /// (a run that writes no records builds none).
    fn learn(
        &self,
        state: &mut Self::State,
        row: &[f64],
        record: Option<&mut Vec<u8>>,
    ) -> Result<()>;
    /// Appends the key's entry of the summary document to `out` ([`summary_entry`] of the
    /// key's summary). The caller passes the same buffer for every key, so printing
    /// 10^5 entries does not allocate 10^5 times.
    fn summary_entry(&self, key: &str, state: &Self::State, out: &mut Vec<u8>) -> Result<()>;
}

/// A learner of points and its running totals.
#[derive(Debug, Serialize, Deserialize)]
pub struct PointState<L> {
    /// The learner.
    pub learner: L,
    /// Its prequential totals.
    pub totals: Prequential,
    /// The totals after its last round.
    pub last: Option<Totals>,
}

/// Learners of points built by `build` from validated settings (for example
/// `move || config.build()` for a `SequentialKMeansConfig`).
#[derive(Debug)]
pub struct PointFamily<F>(pub F);

impl<L, F> KeyedFamily for PointFamily<F>
where
    F: Fn() -> L,
    L: for<'a> OnlineLearner<Input<'a> = &'a [f64]>
        + Describe
        + Serialize
        + DeserializeOwned
        + 'static,
{
    type State = PointState<L>;

    fn build(&self) -> Result<Self::State> {
        Ok(PointState {
            learner: (self.0)(),
            totals: Prequential::new(),
            last: None,
        })
    }

    fn learn(
        &self,
        state: &mut Self::State,
        row: &[f64],
        record: Option<&mut Vec<u8>>,
    ) -> Result<()> {
        let step = state.learner.learn_one(row)?;
        let totals = state.totals.record(&step);
        state.last = Some(totals);
        match record {
            Some(out) => write_json(out, &state.learner.record(&step, &totals)),
            None => Ok(()),
        }
    }

    fn summary_entry(&self, key: &str, state: &Self::State, out: &mut Vec<u8>) -> Result<()> {
        summary_entry(
            key,
            &state.learner.summary(&state.totals, state.last.as_ref()),
            out,
        )
    }
}

/// Expert rules of validated settings; a row is the advice of every expert, then the
/// outcome.
#[derive(Debug)]
pub struct AggregatorFamily {
    /// The validated settings.
    pub config: AggregatorConfig,
    /// The experts' names (one per expert).
    pub names: Vec<String>,
}

impl KeyedFamily for AggregatorFamily {
    type State = AnyAggregator;

    fn build(&self) -> Result<AnyAggregator> {
        Ok(self.config.build()?)
    }

    fn learn(
        &self,
        state: &mut AnyAggregator,
        row: &[f64],
        record: Option<&mut Vec<u8>>,
    ) -> Result<()> {
        let Some((outcome, advice)) = row.split_last() else {
            return Err(Error::Usage(
                "an expert row needs advice and an outcome".into(),
            ));
        };
        let step = state.learn_advice(AdviceRound::new(advice, *outcome), self.config.loss)?;
        match record {
            // The library's record of the round, as `pacstream experts` writes it.
            Some(out) => write_json(out, &AggregatorRecord::new(state, &step)),
            None => Ok(()),
        }
    }

    fn summary_entry(&self, key: &str, state: &AnyAggregator, out: &mut Vec<u8>) -> Result<()> {
        summary_entry(key, &self.config.summary(state.as_dyn(), &self.names), out)
    }
}

fn write_json(out: &mut Vec<u8>, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer(out, value).map_err(|e| Error::Checkpoint(e.to_string()))
}

/// 64-bit FNV-1a: the same in every process and every build, unlike std's hasher.
pub fn key_hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One record line of a keyed run: `{"key":...,` then the fields of the library's record
/// (`record`, one JSON object) in its own order.
pub fn keyed_line(key: &str, record: &[u8]) -> Result<String> {
    let fields = record
        .strip_prefix(b"{")
        .and_then(|rest| std::str::from_utf8(rest).ok())
        .ok_or_else(|| Error::Checkpoint("a record is not a JSON object".into()))?;
    let key = serde_json::to_string(key).map_err(|e| Error::Checkpoint(e.to_string()))?;
    let mut line = String::with_capacity(8 + key.len() + fields.len());
    line.push_str("{\"key\":");
    line.push_str(&key);
    if fields != "}" {
        line.push(',');
    }
    line.push_str(fields);
    Ok(line)
}

#[derive(Serialize)]
struct StateRef<'a, S> {
    learners: BTreeMap<&'a String, &'a S>,
    rows: u64,
    records_len: Option<u64>,
}

#[derive(Deserialize)]
struct State<S> {
    learners: HashMap<String, S>,
    rows: u64,
    records_len: Option<u64>,
}

/// What a worker ends with.
#[derive(Debug)]
pub struct KeyedOutcome {
    /// On worker 0 of a run that writes a summary ([`RunFiles::summary`]), every key's entry
    /// of the summary document; empty elsewhere, and when the pieces were sent on as they
    /// came ([`run_keyed_streaming`]).
    pub summary: KeyedSummary,
    /// The epoch the run resumed from (None: it started afresh).
    pub resumed_from: Option<u64>,
}

impl KeyedOutcome {
    /// Key → summary, read back from the summary document (worker 0).
    pub fn summaries(&self) -> BTreeMap<String, serde_json::Value> {
        serde_json::from_str(&self.summary.to_json()).unwrap_or_default()
    }
}

/// Every key's entry of the summary document, as the workers printed them: each worker's
/// entries in key order, in pieces of about [`PIECE_BYTES`]. [`KeyedSummary::write_to`]
/// merges the workers' runs in key order straight into the output, so that no worker joins
/// the whole document (at 10^5 keys, 366 MB that worker 0 alone used to copy while the
/// others waited).
#[derive(Debug, Default)]
pub struct KeyedSummary {
    /// Per worker, its pieces in order.
    runs: Vec<Vec<SummaryPiece>>,
}

/// The most bytes of summary entries a piece holds (unless one entry is larger): a worker's
/// run is sent in pieces, not one message of a hundred megabytes.
pub const PIECE_BYTES: usize = 1 << 24;

/// Consecutive summary entries of one worker, in key order: entry i is `keys[i]`'s, the
/// bytes of `text` up to `ends[i]` (from the previous entry's end). A worker's pieces are
/// numbered from 0 and its `last` one says so (a worker without keys sends one empty piece).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SummaryPiece {
    worker: usize,
    workers: usize,
    piece: usize,
    last: bool,
    text: String,
    keys: Vec<String>,
    ends: Vec<usize>,
}

impl SummaryPiece {
    fn entry(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The next piece of `worker`'s run: the entries of `keys` (sorted) from the first, up
    /// to `piece_bytes` of them (at least one); and how many keys it holds. `carry` holds
    /// the first key's entry when the previous piece printed it and had no room for it; it
    /// is left holding the entry this piece has no room for.
    fn next<F: KeyedFamily>(
        family: &F,
        (worker, workers, piece): (usize, usize, usize),
        keys: &[&String],
        learners: &HashMap<String, Box<F::State>>,
        piece_bytes: usize,
        carry: &mut Option<Vec<u8>>,
    ) -> Result<(Self, usize)> {
        // The text is allocated once at its full size, and a piece ends before an entry that
        // would outgrow it: grown by doubling, the pieces of 10^5 keys' entries (366 MB)
        // were copied about once more and took twice the fresh pages, whose clearing by the
        // kernel was half of the CPU time of a run of 3 rows per key.
        let mut out = Self {
            worker,
            workers,
            piece,
            text: String::with_capacity(piece_bytes.min(PIECE_BYTES)),
            ..Self::default()
        };
        // Each entry is printed into one buffer that goes from key to key: a fresh string
        // per entry (grown by doubling to about 3.6 kB for a Hedge of 10 experts, then
        // copied once more without its braces) was a fifth of the CPU time of printing.
        let mut scratch = Vec::new();
        for key in keys {
            let entry = match carry.take() {
                Some(entry) => entry,
                None => {
                    scratch.clear();
                    family.summary_entry(key, &learners[*key], &mut scratch)?;
                    std::mem::take(&mut scratch)
                }
            };
            if !out.keys.is_empty() && out.text.len() + entry.len() > piece_bytes {
                *carry = Some(entry);
                break;
            }
            let text = std::str::from_utf8(&entry).map_err(|_| {
                Error::Checkpoint(format!("the summary entry of key {key:?} is not UTF-8"))
            })?;
            out.text.push_str(text);
            out.keys.push((*key).clone());
            out.ends.push(out.text.len());
            scratch = entry;
        }
        let used = out.keys.len();
        out.last = used == keys.len();
        Ok((out, used))
    }
}

/// Where the k-way merge of the workers' runs stands: the next entry, or why there is none.
enum Next {
    /// The next entry in key order: (worker, piece, entry).
    Entry(usize, usize, usize),
    /// A worker whose next entry has not arrived may hold a smaller key.
    Wait,
    /// Every run is complete and written.
    End,
}

/// The next entry of the merged runs, in key order; `cursors[w]` is where worker w's run
/// stands (piece, entry) and moves past the entry returned; `complete[w]` says that all of
/// w's pieces are in `runs[w]`. The runs are sorted and hold disjoint keys (a key lives on
/// one worker), so the smallest head is the next key, once every run that may still grow
/// has a head.
fn next_entry(
    runs: &[Vec<SummaryPiece>],
    cursors: &mut [(usize, usize)],
    complete: &[bool],
) -> Next {
    let mut next: Option<(usize, &str)> = None;
    for (worker, run) in runs.iter().enumerate() {
        let (piece, entry) = &mut cursors[worker];
        while *piece < run.len() && *entry >= run[*piece].keys.len() {
            *piece += 1;
            *entry = 0;
        }
        match run.get(*piece) {
            Some(head) => {
                let key = head.keys[*entry].as_str();
                if next.is_none_or(|(_, smallest)| key < smallest) {
                    next = Some((worker, key));
                }
            }
            None if !complete[worker] => return Next::Wait,
            None => {}
        }
    }
    let Some((worker, _)) = next else {
        return Next::End;
    };
    let (piece, entry) = &mut cursors[worker];
    let found = Next::Entry(worker, *piece, *entry);
    *entry += 1;
    found
}

/// The separator written before an entry: `{\n` before the first, `,\n` before the others.
fn separator(first: bool) -> &'static [u8] {
    if first { b"{\n" } else { b",\n" }
}

/// The end of the document: `{}` without entries, `\n}` after them.
fn closing(entries: usize) -> &'static [u8] {
    if entries == 0 { b"{}" } else { b"\n}" }
}

impl KeyedSummary {
    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.runs
            .iter()
            .flatten()
            .all(|piece| piece.keys.is_empty())
    }

    /// Writes the summary document, key → summary in key order: the bytes
    /// `serde_json::to_string_pretty` prints for the whole map (`{}` without keys).
    pub fn write_to<W: Write + ?Sized>(&self, out: &mut W) -> std::io::Result<()> {
        write_all_slices(out, &self.slices())
    }

    /// The summary document ([`KeyedSummary::write_to`]) as the byte slices it is made of,
    /// in order: `{\n`, the entries separated by `,\n`, `\n}` (or `{}` without keys). A
    /// writer hands them to the kernel as they are ([`write_all_slices`]): the 366 MB
    /// document of 10^5 keys is never copied into a buffer first, a copy which took about as
    /// long as the kernel's own copy into the page cache, all of it after the workers had
    /// finished.
    pub fn slices(&self) -> Vec<&[u8]> {
        let n_keys: usize = self
            .runs
            .iter()
            .flatten()
            .map(|piece| piece.keys.len())
            .sum();
        let mut slices: Vec<&[u8]> = Vec::with_capacity(2 * n_keys + 1);
        let mut cursors = vec![(0, 0); self.runs.len()];
        let complete = vec![true; self.runs.len()];
        let mut entries = 0;
        while let Next::Entry(worker, piece, entry) =
            next_entry(&self.runs, &mut cursors, &complete)
        {
            slices.push(separator(entries == 0));
            slices.push(self.runs[worker][piece].entry(entry).as_bytes());
            entries += 1;
        }
        slices.push(closing(entries));
        slices
    }

    /// The summary document as one string ([`KeyedSummary::write_to`]).
    pub fn to_json(&self) -> String {
        let mut bytes = Vec::new();
        // Writing to memory cannot fail, and the entries are text.
        let _ = self.write_to(&mut bytes);
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Worker 0's summary from every worker's pieces, received in any order.
    fn from_pieces(peers: usize, mut pieces: Vec<SummaryPiece>) -> Self {
        pieces.sort_unstable_by_key(|piece| (piece.worker, piece.piece));
        let mut runs: Vec<Vec<SummaryPiece>> = (0..peers).map(|_| Vec::new()).collect();
        for piece in pieces {
            if let Some(run) = runs.get_mut(piece.worker) {
                run.push(piece);
            }
        }
        Self { runs }
    }
}

/// The summary document written as its pieces arrive ([`run_keyed_streaming`]): each call
/// of [`SummaryMerge::write_ready`] writes the entries whose place in key order is already
/// known and frees the pieces written, so that the document goes to disk while the workers
/// are still printing it, and is never held whole. The bytes are those of
/// [`KeyedSummary::write_to`].
#[derive(Debug, Default)]
pub struct SummaryMerge {
    runs: Vec<Vec<SummaryPiece>>,
    cursors: Vec<(usize, usize)>,
    complete: Vec<bool>,
    entries: usize,
}

impl SummaryMerge {
    /// Takes one piece. A worker's pieces must come in their order (they do: each round of
    /// the summary carries one piece per worker, and rounds are sequential).
    ///
    /// # Errors
    /// [`Error::Checkpoint`] for a piece out of order or of another run (a different number
    /// of workers): the merge would otherwise be wrong.
    pub fn push(&mut self, piece: SummaryPiece) -> Result<()> {
        if self.runs.is_empty() {
            self.runs = (0..piece.workers).map(|_| Vec::new()).collect();
            self.cursors = vec![(0, 0); piece.workers];
            self.complete = vec![false; piece.workers];
        }
        let in_order = piece.workers == self.runs.len()
            && piece.worker < self.runs.len()
            && !self.complete[piece.worker]
            && self.runs[piece.worker].len() == piece.piece;
        if !in_order {
            return Err(Error::Checkpoint(format!(
                "summary piece {} of worker {} (of {}) arrived out of order",
                piece.piece, piece.worker, piece.workers
            )));
        }
        self.complete[piece.worker] = piece.last;
        self.runs[piece.worker].push(piece);
        Ok(())
    }

    /// Whether every worker's last piece has arrived.
    pub fn is_complete(&self) -> bool {
        !self.complete.is_empty() && self.complete.iter().all(|&done| done)
    }

    /// Writes every entry whose place is known (all of them once complete), then frees the
    /// pieces wholly written.
    pub fn write_ready<W: Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        let mut order = Vec::new();
        while let Next::Entry(worker, piece, entry) =
            next_entry(&self.runs, &mut self.cursors, &self.complete)
        {
            order.push((worker, piece, entry));
        }
        let mut slices: Vec<&[u8]> = Vec::with_capacity(2 * order.len());
        for (i, &(worker, piece, entry)) in order.iter().enumerate() {
            slices.push(separator(self.entries + i == 0));
            slices.push(self.runs[worker][piece].entry(entry).as_bytes());
        }
        write_all_slices(out, &slices)?;
        self.entries += order.len();
        for (run, &(at, _)) in self.runs.iter_mut().zip(&self.cursors) {
            for piece in &mut run[..at] {
                piece.text = String::new();
                piece.keys = Vec::new();
                piece.ends = Vec::new();
            }
        }
        Ok(())
    }

    /// Writes what is left and the end of the document.
    ///
    /// # Errors
    /// An error of kind `UnexpectedEof` when a worker's last piece never came (the run
    /// stopped before its summary was printed), and the writer's errors.
    pub fn finish<W: Write + ?Sized>(mut self, out: &mut W) -> std::io::Result<()> {
        if !self.is_complete() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the summary is incomplete: a worker stopped before printing it",
            ));
        }
        self.write_ready(out)?;
        out.write_all(closing(self.entries))
    }
}

/// Writes `slices` one after the other with vectored writes (at most 1,024 slices, the
/// usual `IOV_MAX`, a call), so that no byte is copied before the kernel copies it.
pub fn write_all_slices<W: Write + ?Sized>(out: &mut W, slices: &[&[u8]]) -> std::io::Result<()> {
    const MOST_SLICES_A_CALL: usize = 1024;
    for batch in slices.chunks(MOST_SLICES_A_CALL) {
        let mut io_slices: Vec<IoSlice<'_>> = batch.iter().map(|s| IoSlice::new(s)).collect();
        let mut pending = &mut io_slices[..];
        // Leading empty slices are dropped first: a batch of empty slices alone would
        // otherwise be written as 0 bytes, which reads as a full writer.
        IoSlice::advance_slices(&mut pending, 0);
        while !pending.is_empty() {
            match out.write_vectored(pending) {
                Ok(0) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WriteZero,
                        "failed to write the whole summary",
                    ));
                }
                Ok(written) => IoSlice::advance_slices(&mut pending, written),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Appends one entry of the pretty-printed summary object to `out`: `  "key": {...}` with the
/// indentation it has inside the object, the bytes `serde_json::to_string_pretty` prints for
/// the entry inside the whole map. `out` is left as it was when printing fails.
pub fn summary_entry(key: &str, summary: &impl Serialize, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    // What the pretty printer writes for the one-key map inside `{\n` and `\n}`: the key
    // at the first level of indentation, then the value printed from that level.
    out.extend_from_slice(b"  ");
    let mut printed = serde_json::to_writer(&mut *out, key);
    if printed.is_ok() {
        out.extend_from_slice(b": ");
        let mut printer = serde_json::Serializer::with_formatter(
            &mut *out,
            Pretty {
                level: 1,
                has_value: false,
            },
        );
        printed = summary.serialize(&mut printer);
    }
    printed.map_err(|e| {
        out.truncate(start);
        Error::Checkpoint(e.to_string())
    })
}

/// serde_json's `PrettyFormatter` with its two-space indent, writing a line's end and its
/// indentation in one call: the pretty printer's one call per level (four or five per line
/// of a summary entry, each a `memcpy` of two bytes) was the largest part of printing a
/// summary. The bytes are the same (tested against `to_string_pretty`).
#[derive(Default)]
struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    /// `,` (unless `first`), a line's end and the indentation of the current level.
    fn new_line<W: ?Sized + Write>(&self, writer: &mut W, first: bool) -> std::io::Result<()> {
        const LINE: &[u8; 130] = b",\n                                                                                                                                ";
        let from = usize::from(first);
        match LINE.get(from..2 + 2 * self.level) {
            Some(line) => writer.write_all(line),
            None => {
                writer.write_all(&LINE[from..2])?;
                (0..self.level).try_for_each(|_| writer.write_all(b"  "))
            }
        }
    }

    /// Opens an array or an object one level deeper.
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// Closes an array or an object: on a line of its own unless it is empty.
    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.new_line(writer, true)?;
        }
        writer.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.new_line(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.new_line(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Rows per chunk of [`ChunkClaims`]: about 0.3 ms of parsing a CSV row of 12 numbers, so a
/// claim (one compare-and-swap) is nothing beside the chunk, and the last chunk of an epoch
/// leaves little for the other workers to wait for.
pub const CLAIM_ROWS: usize = 256;

/// The reading of the rows shared out between the workers of one process as they go: the
/// stream is cut into chunks of [`CLAIM_ROWS`] rows (each epoch from its first row), chunk c
/// goes to process c mod P, and within the process the worker that reaches a chunk first
/// reads it, so a worker on a slower core reads fewer rows instead of holding up every
/// round. Which worker reads a row changes nothing else: every row is sent to its key's
/// worker with its position in the stream, and learned in stream order there.
///
/// The claim: `next` is the number of the process's chunks already claimed. Every worker
/// of the process tries the process's chunks k = 0, 1, 2, … in order and takes chunk k by a
/// compare-and-swap of `next` from k to k + 1. When a worker tries k, `next ≥ k` (its try
/// of k − 1 either moved `next` to k or failed because `next` was past k − 1), so the swap
/// fails only when another worker holds chunk k, and every chunk is read by exactly one
/// worker. A worker that stops at a bad row stops trying; the others go on claiming, and
/// the earliest bad row is still the one reported (every chunk before the failing one was
/// read by some worker, which would have stopped at an earlier bad row).
#[derive(Debug)]
pub struct ChunkClaims {
    next: AtomicU64,
    workers: usize,
}

impl ChunkClaims {
    /// Claims shared by the `workers` worker threads of one process (timely numbers the
    /// workers of process p from p × workers).
    pub fn new(workers: usize) -> Self {
        Self {
            next: AtomicU64::new(0),
            workers: workers.max(1),
        }
    }

    /// Whether this worker takes the process's chunk `k` (tried in order, see above).
    fn claim(&self, k: u64) -> bool {
        self.next
            .compare_exchange(k, k + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// Where a worker stands in the chunks of [`ChunkClaims`].
struct Claiming<'a> {
    claims: &'a ChunkClaims,
    process: u64,
    processes: u64,
    /// The chunks of the stream reached so far (all processes').
    reached: u64,
}

impl Claiming<'_> {
    /// Passes over the next `n` rows (fewer at the end of the stream), reading into `out`
    /// those of the chunks it claims, at their offsets among the `n`; returns the number of
    /// rows passed over.
    fn read(&mut self, rows: &mut dyn Source, n: usize, out: &mut Rows) -> Result<usize> {
        let mut passed = 0;
        while passed < n {
            let len = CLAIM_ROWS.min(n - passed);
            let chunk = self.reached;
            self.reached += 1;
            let ours =
                chunk % self.processes == self.process && self.claims.claim(chunk / self.processes);
            let before = out.len();
            let keep = if ours {
                Selection::all()
            } else {
                Selection::none()
            };
            let got = rows.next_selected(len, &keep, out)?;
            out.shift_offsets(before, passed as u64);
            passed += got;
            if got < len {
                break;
            }
        }
        Ok(passed)
    }
}

/// Runs keyed learners on this worker; `rows` is the whole stream, of which each worker reads
/// only its share ([`Source::next_selected`]) and sends each row on to its key's worker.
/// Every worker must call it with the same arguments.
pub fn run_keyed<F: KeyedFamily>(
    worker: &mut Worker,
    family: &F,
    epoch_size: usize,
    rows: &mut dyn Source,
    files: &RunFiles,
) -> Result<KeyedOutcome> {
    run_keyed_with(worker, family, epoch_size, rows, files, None, None)
}

/// [`run_keyed`], with worker 0 sending the summary's pieces to `pieces_to` as they are
/// printed instead of holding them ([`KeyedOutcome::summary`] is then empty): a
/// [`SummaryMerge`] on the receiving thread writes the document while the workers are
/// still printing it. Every worker sends at least one piece, so the receiver knows the
/// document is whole when [`SummaryMerge::is_complete`] says so.
pub fn run_keyed_streaming<F: KeyedFamily>(
    worker: &mut Worker,
    family: &F,
    epoch_size: usize,
    rows: &mut dyn Source,
    files: &RunFiles,
    pieces_to: &Sender<SummaryPiece>,
) -> Result<KeyedOutcome> {
    run_keyed_with(
        worker,
        family,
        epoch_size,
        rows,
        files,
        None,
        Some(pieces_to),
    )
}

/// [`run_keyed`] (with `pieces_to`, [`run_keyed_streaming`]), the reading shared out by
/// `claims`, which every worker of this process must be given (one per process).
///
/// # Errors
/// As [`run_keyed`], and a number of workers that is not a multiple of the claims'.
pub fn run_keyed_claiming<F: KeyedFamily>(
    worker: &mut Worker,
    family: &F,
    epoch_size: usize,
    rows: &mut dyn Source,
    files: &RunFiles,
    claims: &ChunkClaims,
    pieces_to: Option<&Sender<SummaryPiece>>,
) -> Result<KeyedOutcome> {
    run_keyed_with(
        worker,
        family,
        epoch_size,
        rows,
        files,
        Some(claims),
        pieces_to,
    )
}

fn run_keyed_with<F: KeyedFamily>(
    worker: &mut Worker,
    family: &F,
    epoch_size: usize,
    rows: &mut dyn Source,
    files: &RunFiles,
    claims: Option<&ChunkClaims>,
    pieces_to: Option<&Sender<SummaryPiece>>,
) -> Result<KeyedOutcome> {
    if epoch_size == 0 || epoch_size > ROWS_LIMIT {
        return Err(Error::Usage(format!(
            "--epoch-size must be between 1 and {ROWS_LIMIT}, got {epoch_size}"
        )));
    }
    let index = worker.index();
    let peers = worker.peers();
    let Start {
        store,
        resumed,
        want_records,
        want_summary,
        ..
    } = start::<State<F::State>>(worker, files)?;
    let resume = resumed.as_ref().map(|(epoch, _)| *epoch);
    // Each key's state is boxed: the map then holds a key and a pointer per entry, and
    // growing it moves those, not the learners (an aggregator is a struct of vectors and
    // counters, held inline in the map when unboxed). Unboxed, the rehashes of a map of 10^5 Hedge learners copied every learner at each
    // doubling into fresh memory, whose clearing by the kernel (`clear_page_erms` under
    // `reserve_rehash`) was 10 % of a 2-worker keyed run's CPU samples.
    let (mut learners, mut done, records_len, mut epoch): (
        HashMap<String, Box<F::State>>,
        _,
        _,
        _,
    ) = match resumed {
        Some((epoch, state)) => (
            state
                .learners
                .into_iter()
                .map(|(key, state)| (key, Box::new(state)))
                .collect(),
            state.rows,
            state.records_len,
            epoch,
        ),
        None => (HashMap::new(), 0, None, 0),
    };
    let mut records = Records::for_worker(files, index, records_len)?;
    rows.skip_rows(done)?;
    // Each worker's rows for another travel as one block (see `Rows`).
    let mut rows_channel = Channel::<(usize, Rows)>::exchange(worker, |(to, _)| *to as u64);
    let mut records_channel = Channel::<(u64, String)>::exchange(worker, |_| 0);
    let mut status_channel = Channel::<Failure>::broadcast(worker);
    let mut mine = Rows::new();
    // The blocks this worker received in the last epoch, emptied: the next epoch's blocks
    // to send are filled in their memory. New blocks each epoch (a few megabytes, grown by
    // doubling, then freed by the receiving thread) were fresh memory every epoch, and the
    // kernel's clearing of it 12 % of a 2-worker keyed run's CPU samples.
    let mut spare: Vec<Rows> = Vec::new();
    let share = Selection::blocks(1, peers, index);
    // One worker reads every row, claims or not.
    let mut claiming = match claims {
        Some(claims) if peers > 1 => {
            if !peers.is_multiple_of(claims.workers) {
                return Err(Error::Usage(format!(
                    "{peers} workers are not processes of {} workers each",
                    claims.workers
                )));
            }
            Some(Claiming {
                claims,
                process: (index / claims.workers) as u64,
                processes: (peers / claims.workers) as u64,
                reached: 0,
            })
        }
        _ => None,
    };
    loop {
        mine.clear();
        // Worker w reads (parses, generates) only the rows at offsets w mod W, or those of
        // the chunks it claims.
        let read = match &mut claiming {
            Some(claiming) => claiming.read(rows, epoch_size, &mut mine),
            None => rows.next_selected(epoch_size, &share, &mut mine),
        };
        let (batch_len, mut failure) = match read {
            Ok(0) => break,
            Ok(passed) => (passed as u64, None),
            // Kept until the epoch is over: leaving now would stall the others.
            Err(error) => (0, Some(error)),
        };
        let first_row = done;
        // One block per key's worker, its rows at their positions in the stream.
        let mut blocks: Vec<Rows> = (0..peers)
            .map(|_| {
                let mut block = spare.pop().unwrap_or_default();
                block.clear();
                block
            })
            .collect();
        for (offset, key, values) in mine.iter() {
            let to = (key_hash(key) % peers as u64) as usize;
            blocks[to].push(first_row + offset, key, values);
        }
        let sent = blocks
            .into_iter()
            .enumerate()
            .filter(|(_, block)| !block.is_empty());
        let received: Vec<Rows> = rows_channel
            .round(worker, sent)
            .into_iter()
            .map(|(_, block)| block)
            .collect();
        let mut out = Vec::new();
        let mut record = Vec::new();
        // Every block is in stream order (its sender read in stream order): merged by
        // their next rows' positions, the rows come in stream order.
        let mut next = vec![0; received.len()];
        let mut heads: BinaryHeap<Reverse<(u64, usize)>> = received
            .iter()
            .enumerate()
            .filter(|(_, block)| !block.is_empty())
            .map(|(b, block)| Reverse((block.offset(0), b)))
            .collect();
        while failure.is_none() {
            let Some(Reverse((position, b))) = heads.pop() else {
                break;
            };
            let i = next[b];
            next[b] += 1;
            if next[b] < received[b].len() {
                heads.push(Reverse((received[b].offset(next[b]), b)));
            }
            let (key, values) = (received[b].key(i), received[b].values(i));
            // A hash map: one lookup per row, whatever the number of keys (the checkpoints
            // and the summary list the keys in order).
            let state = match learners.get_mut(key) {
                Some(state) => state,
                None => learners
                    .entry(key.to_string())
                    .or_insert(Box::new(family.build()?)),
            };
            // Without a records file, no record is built or sent.
            record.clear();
            match family.learn(state, values, want_records.then_some(&mut record)) {
                Ok(()) if want_records => out.push((position, keyed_line(key, &record)?)),
                Ok(()) => {}
                Err(e) => {
                    failure = Some(Error::Row {
                        row: position + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
        spare.extend(received);
        // Without a records file (every worker knows it) the records round is not held:
        // each round is a wait for the slowest worker.
        let mut lines = if want_records {
            records_channel.round(worker, out)
        } else {
            Vec::new()
        };
        // Every worker learns whether any stopped, and all stop at the same epoch.
        let failures = status_channel.round(worker, failure.as_ref().map(Failure::of));
        if let Some(error) = Failure::settle(failure, &failures) {
            return Err(error);
        }
        if let Some(records) = &mut records {
            lines.sort_unstable_by_key(|(position, _)| *position);
            for (_, line) in &lines {
                records.write_line(line)?;
            }
        }
        done += batch_len;
        epoch += 1;
        save_if_due(store.as_ref(), records.as_mut(), epoch, |records_len| {
            StateRef {
                learners: learners
                    .iter()
                    .map(|(key, state)| (key, &**state))
                    .collect(),
                rows: done,
                records_len,
            }
        })?;
    }
    if let Some(records) = &mut records {
        records.sync()?;
    }
    // Every worker prints its keys' entries of the summary document, in key order, when a
    // summary is written (every worker knows it), and sends them to worker 0 a piece a
    // round; worker 0 holds them for `KeyedSummary::write_to` or passes them on as they
    // come.
    let summary = if want_summary {
        let mut keys: Vec<&String> = learners.keys().collect();
        keys.sort_unstable();
        let mut pieces_channel = Channel::<SummaryPiece>::exchange(worker, |_| 0);
        let mut more_channel = Channel::<bool>::broadcast(worker);
        let mut held = Vec::new();
        let (mut next, mut piece, mut carry, mut printed) = (0, 0, None, false);
        loop {
            let mine = if printed {
                None
            } else {
                let (out, used) = SummaryPiece::next(
                    family,
                    (index, peers, piece),
                    &keys[next..],
                    &learners,
                    PIECE_BYTES,
                    &mut carry,
                )?;
                next += used;
                piece += 1;
                printed = out.last;
                Some(out)
            };
            let received = pieces_channel.round(worker, mine);
            match pieces_to {
                // The receiver gone, the front-end has given up on the summary (and says
                // why): the run itself goes on.
                Some(sender) => received.into_iter().for_each(|piece| {
                    let _ = sender.send(piece);
                }),
                None => held.extend(received),
            }
            // Every worker sends as many pieces as its entries need: the rounds go on until
            // the last worker has sent its last.
            let more = more_channel.round(worker, Some(!printed));
            if !more.contains(&true) {
                break;
            }
        }
        if index == 0 && pieces_to.is_none() {
            KeyedSummary::from_pieces(peers, held)
        } else {
            KeyedSummary::default()
        }
    } else {
        KeyedSummary::default()
    };
    Ok(KeyedOutcome {
        summary,
        resumed_from: resume,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family whose state is a count and whose summary is a small document.
    struct Counts;

    impl KeyedFamily for Counts {
        type State = u64;
        fn build(&self) -> Result<u64> {
            Ok(0)
        }
        fn learn(&self, state: &mut u64, _: &[f64], _: Option<&mut Vec<u8>>) -> Result<()> {
            *state += 1;
            Ok(())
        }
        fn summary_entry(&self, key: &str, state: &u64, out: &mut Vec<u8>) -> Result<()> {
            summary_entry(
                key,
                &serde_json::json!({"rows": state, "nested": [1.5, {"a": key}]}),
                out,
            )
        }
    }

    /// [`Counts`], counting the entries it prints.
    #[derive(Default)]
    struct Counted(std::cell::Cell<usize>);

    impl KeyedFamily for Counted {
        type State = u64;
        fn build(&self) -> Result<u64> {
            Counts.build()
        }
        fn learn(&self, state: &mut u64, row: &[f64], record: Option<&mut Vec<u8>>) -> Result<()> {
            Counts.learn(state, row, record)
        }
        fn summary_entry(&self, key: &str, state: &u64, out: &mut Vec<u8>) -> Result<()> {
            self.0.set(self.0.get() + 1);
            Counts.summary_entry(key, state, out)
        }
    }

    /// Worker `worker`'s run of `learners` (of `workers`), in pieces of `piece_bytes`; each
    /// key's entry is printed once, the one a piece had no room for carried to the next.
    fn run_of(
        worker: usize,
        workers: usize,
        learners: &HashMap<String, Box<u64>>,
        piece_bytes: usize,
    ) -> Vec<SummaryPiece> {
        let mut keys: Vec<&String> = learners.keys().collect();
        keys.sort_unstable();
        let family = Counted::default();
        let (mut next, mut carry, mut run) = (0, None, Vec::new());
        loop {
            let ids = (worker, workers, run.len());
            let (piece, used) = SummaryPiece::next(
                &family,
                ids,
                &keys[next..],
                learners,
                piece_bytes,
                &mut carry,
            )
            .unwrap();
            next += used;
            let last = piece.last;
            run.push(piece);
            if last {
                assert_eq!(family.0.get(), keys.len(), "entries printed");
                return run;
            }
        }
    }

    /// 50 keys' learners (state i for the i-th key) spread over `workers`, each worker's
    /// run in pieces of `piece_bytes`; and the document `to_string_pretty` prints for them.
    fn runs_and_document(workers: usize, piece_bytes: usize) -> (Vec<Vec<SummaryPiece>>, String) {
        let keys: Vec<String> = (0..50).map(|i| format!("k{}", i * 37 % 101)).collect();
        let expected: BTreeMap<&str, serde_json::Value> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                (
                    key.as_str(),
                    serde_json::json!({"rows": i, "nested": [1.5, {"a": key}]}),
                )
            })
            .collect();
        let runs = (0..workers)
            .map(|worker| {
                let learners: HashMap<String, Box<u64>> = keys
                    .iter()
                    .enumerate()
                    .filter(|(_, key)| key_hash(key) % workers as u64 == worker as u64)
                    .map(|(i, key)| (key.clone(), Box::new(i as u64)))
                    .collect();
                run_of(worker, workers, &learners, piece_bytes)
            })
            .collect();
        (runs, serde_json::to_string_pretty(&expected).unwrap())
    }

    /// An entry is appended after what the buffer holds, as the pretty printer indents it
    /// inside the whole map; an entry that cannot be printed leaves the buffer as it was.
    #[test]
    fn an_entry_is_appended_whole_or_not_at_all() {
        let mut out = b"before".to_vec();
        summary_entry("k\"1", &serde_json::json!({"a": [1, 2.5]}), &mut out).unwrap();
        let whole = serde_json::to_string_pretty(&BTreeMap::from([(
            "k\"1",
            serde_json::json!({"a": [1, 2.5]}),
        )]))
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            format!("before{}", &whole[2..whole.len() - 2])
        );

        // Deeper than the indentation written in one call, and empty containers.
        let mut deep = serde_json::json!({"empty": [], "none": {}, "x": [1, {"y": "z"}]});
        for level in 0..80 {
            deep = serde_json::json!([level, deep, {"at": level}]);
        }
        let mut out = Vec::new();
        summary_entry("deep", &deep, &mut out).unwrap();
        let whole = serde_json::to_string_pretty(&BTreeMap::from([("deep", &deep)])).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            &whole[2..whole.len() - 2]
        );

        /// A value whose printing fails half-way, after some of it is written.
        struct FailsLate;
        impl Serialize for FailsLate {
            fn serialize<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                use serde::ser::{Error as _, SerializeMap};
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("written", &1)?;
                Err(S::Error::custom("cannot print the rest"))
            }
        }
        let mut out = b"before".to_vec();
        let before = out.clone();
        assert!(summary_entry("k2", &FailsLate, &mut out).is_err());
        assert_eq!(out, before);
    }

    /// The workers' runs, merged, are the bytes `to_string_pretty` prints for the whole map,
    /// whatever the pieces and the order they arrive in.
    #[test]
    fn the_merged_runs_are_the_pretty_printed_map() {
        for (peers, piece_bytes) in [(1, PIECE_BYTES), (3, 1), (3, 200), (4, 1)] {
            let (runs, expected) = runs_and_document(peers, piece_bytes);
            let mut pieces: Vec<SummaryPiece> = runs.into_iter().flatten().collect();
            // Arrival order does not matter.
            pieces.reverse();
            let summary = KeyedSummary::from_pieces(peers, pieces);
            assert_eq!(
                summary.to_json(),
                expected,
                "{peers} workers, pieces of {piece_bytes}"
            );
        }
        let none = run_of(0, 2, &HashMap::new(), 1);
        assert_eq!(none.len(), 1);
        assert!(none[0].last);
        let empty = run_of(1, 2, &HashMap::new(), 1);
        assert_eq!(
            KeyedSummary::from_pieces(2, [none, empty].concat()).to_json(),
            "{}"
        );
    }

    /// Written piece by piece as the rounds deliver them (one piece per worker a round, the
    /// runs of different lengths), through a writer that takes a few bytes a call, the
    /// document is the same bytes; the pieces written are freed; a run that stops early is
    /// an error, not a short document.
    #[test]
    fn the_summary_written_as_it_arrives_is_the_same_document() {
        for (peers, piece_bytes) in [(1, PIECE_BYTES), (2, 1), (3, 200), (4, 90)] {
            let (runs, expected) = runs_and_document(peers, piece_bytes);
            let rounds = runs.iter().map(Vec::len).max().unwrap();
            let mut merge = SummaryMerge::default();
            let mut out = Trickle {
                bytes: Vec::new(),
                most: 7,
                calls: 0,
            };
            for round in 0..rounds {
                // Within a round, pieces arrive in any order.
                for run in runs.iter().rev() {
                    if let Some(piece) = run.get(round) {
                        merge.push(piece.clone()).unwrap();
                    }
                }
                merge.write_ready(&mut out).unwrap();
                if round + 1 < rounds {
                    assert!(!merge.is_complete());
                }
                // What is written is a prefix of the document, and what is held is not
                // written yet.
                let written = String::from_utf8(out.bytes.clone()).unwrap();
                assert!(
                    expected.starts_with(&written),
                    "{peers} workers, round {round}"
                );
                let consumed: usize = merge
                    .runs
                    .iter()
                    .zip(&merge.cursors)
                    .map(|(run, &(at, _))| {
                        run[..at.min(run.len())]
                            .iter()
                            .map(|p| p.keys.len())
                            .sum::<usize>()
                    })
                    .sum();
                assert_eq!(consumed, 0, "pieces written are emptied");
            }
            assert!(merge.is_complete());
            merge.finish(&mut out).unwrap();
            assert_eq!(
                String::from_utf8(out.bytes).unwrap(),
                expected,
                "{peers} workers, pieces of {piece_bytes}"
            );
        }

        // A worker's last piece missing: the document is refused.
        let (runs, _) = runs_and_document(2, 200);
        let mut merge = SummaryMerge::default();
        for piece in runs[0].iter().chain(&runs[1][..runs[1].len() - 1]) {
            merge.push(piece.clone()).unwrap();
        }
        let mut sink = Vec::new();
        merge.write_ready(&mut sink).unwrap();
        let error = merge.finish(&mut sink).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof);

        // A piece out of its run's order, or of a run of another size, is refused.
        let mut merge = SummaryMerge::default();
        merge.push(runs[1][0].clone()).unwrap();
        assert!(merge.push(runs[1][0].clone()).is_err());
        let (other, _) = runs_and_document(3, 200);
        assert!(merge.push(other[0][0].clone()).is_err());
    }

    /// A writer that takes at most `most` bytes a call, of the first non-empty slice only
    /// (as `Write::write_vectored` does by default), and is interrupted every third call.
    struct Trickle {
        bytes: Vec<u8>,
        most: usize,
        calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let n = buf.len().min(self.most);
            self.bytes.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Slices written in part, a few bytes at a time, interrupted, empty or more than one
    /// vectored call holds, come out whole and in order.
    #[test]
    fn slices_written_in_part_come_out_whole() {
        let owned: Vec<Vec<u8>> = (0..2_500)
            .map(|i: usize| {
                let len = [0, 1, 5, 13][i % 4];
                (0..len).map(|j| (i * 7 + j) as u8).collect()
            })
            .collect();
        let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for most in [1, 3, 64] {
            let mut out = Trickle {
                bytes: Vec::new(),
                most,
                calls: 0,
            };
            write_all_slices(&mut out, &slices).unwrap();
            assert_eq!(out.bytes, slices.concat(), "at most {most} bytes a call");
        }
        // A writer that accepts nothing is an error, not a loop.
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Ok(0)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let error = write_all_slices(&mut Full, &[b"x"]).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::WriteZero);
    }
}
