//! Data-parallel sequential k-means: one stream, its mini-batches split across the workers.
//!
//! # What it computes
//!
//! The stream is cut into mini-batches of `batch_size` rows from its first row, as
//! [`SequentialKMeans::learn_batch`] is fed by a one-process run. Every worker holds a
//! replica of the learner. Within a batch:
//!
//! 1. rows that arrive while the learner warms up are learned one at a time by every
//!    replica (the warm-up is sequential by nature and only `init_size` rows long; while it
//!    lasts every worker reads whole batches);
//! 2. the remaining rows are cut into chunks of `chunk_size` rows, in stream order; chunk j
//!    is summarised by worker j mod W: the library's [`CentreStats`] against the centres
//!    held at the start of the batch, its rows added in stream order, with each row's label
//!    and loss; a worker reads (parses, generates) only the rows of its own chunks;
//! 3. every worker receives every chunk's statistics, merges them **in chunk order**
//!    (`S = S_0; S.merge(S_1); ...`) and applies them with
//!    [`SequentialKMeans::apply_stats`].
//!
//! The chunks are positions in the stream, not workers, so the centres are the same bit for
//! bit for any number of workers and processes. They equal, bit for bit, the one-process
//! library computation written out in [`reference`]; when a batch fits in one chunk
//! (`chunk_size ≥ batch_size`) that is exactly [`SequentialKMeans::learn_batch`], and
//! otherwise it differs from it only by the grouping of the per-centre sums (the library's
//! sums in one pass against sums of chunk sums): a relative difference of the order of
//! 1e-15 per batch. Each row's label and loss are those `learn_batch` gives, bit for bit.
//!
//! The totals (the cumulative loss, summed in stream order) are replayed from each chunk's
//! losses, which travel with its statistics. In a run that writes records or checkpoints,
//! every worker replays them (to format the records of its own chunks, or to save them in
//! its checkpoint); worker 0 only writes the formatted blocks in stream order. Otherwise
//! only worker 0 replays them (for the summary), the losses go to worker 0 alone and the
//! other workers receive only the statistics: no worker does per-row work for the rows of
//! other workers.
//!
//! Reassignment of dying centres is refused: it draws from the recent points of the whole
//! stream, which no worker holds.

use ndarray::ArrayView2;
use pacstream::OnlineLearner;
use pacstream::describe::Describe;
use pacstream::eval::{Prequential, Totals};
use pacstream::kmeans::{
    CentreStats, SequentialKMeans, SequentialKMeansConfig, SequentialKMeansStep,
};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::channel::Channel;
use crate::checkpoint::{Start, save_if_due, start};
use crate::error::{Error, Failure, Result};
use crate::sink::{Records, RunFiles};
use crate::{ROWS_LIMIT, Rows, Selection, Source};

/// The largest `batch_size` and `chunk_size` (checked before anything is allocated).
pub const BATCH_LIMIT: usize = ROWS_LIMIT;

/// Settings of a data-parallel k-means run.
#[derive(Clone, Debug)]
pub struct KMeansJob {
    /// The library's validated settings.
    pub config: SequentialKMeansConfig,
    /// Rows per mini-batch (an epoch of the dataflow).
    pub batch_size: usize,
    /// Rows per chunk: the unit of work of a worker, fixed whatever the number of workers.
    pub chunk_size: usize,
}

impl KMeansJob {
    /// Checks the settings the distributed mode adds.
    pub fn check(&self) -> Result<()> {
        if self.config.reassignment_ratio() > 0.0 {
            return Err(Error::Usage(
                "reassignment of dying centres is not available in the distributed mode".into(),
            ));
        }
        for (name, value) in [
            ("--batch-size", self.batch_size),
            ("--chunk-size", self.chunk_size),
        ] {
            if value == 0 || value > BATCH_LIMIT {
                return Err(Error::Usage(format!(
                    "{name} must be between 1 and {BATCH_LIMIT}, got {value}"
                )));
            }
        }
        Ok(())
    }
}

/// What a worker ends with.
#[derive(Debug)]
pub struct KMeansOutcome {
    /// The learner (the same on every worker).
    pub learner: SequentialKMeans,
    /// The totals of the records (worker 0, and every worker of a run that writes records or
    /// checkpoints; the others hold empty totals).
    pub totals: Prequential,
    /// The totals after the last round (worker 0).
    pub last: Option<Totals>,
    /// The epoch the run resumed from (None: it started afresh).
    pub resumed_from: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct State {
    learner: SequentialKMeans,
    rows: u64,
    totals: Prequential,
    last: Option<Totals>,
    records_len: Option<u64>,
}

/// Runs data-parallel k-means on this worker; `rows` is the whole stream, of which the worker
/// reads the warm-up and then only the rows of its chunks ([`Source::next_selected`]).
/// Every worker must call it with the same arguments.
pub fn run_kmeans(
    worker: &mut Worker,
    job: &KMeansJob,
    rows: &mut dyn Source,
    files: &RunFiles,
) -> Result<KMeansOutcome> {
    job.check()?;
    let index = worker.index();
    let peers = worker.peers();
    let Start {
        store,
        resumed,
        want_records,
        any_checkpoints,
        ..
    } = start::<State>(worker, files)?;
    let resume = resumed.as_ref().map(|(epoch, _)| *epoch);
    let (mut learner, mut done, mut totals, mut last, records_len, mut epoch) = match resumed {
        Some((epoch, state)) => {
            if state.learner.config() != &job.config {
                return Err(Error::Checkpoint(
                    "the checkpoint was written with other settings".into(),
                ));
            }
            (
                state.learner,
                state.rows,
                state.totals,
                state.last,
                state.records_len,
                epoch,
            )
        }
        None => (job.config.build(), 0, Prequential::new(), None, None, 0),
    };
    let mut records = Records::for_worker(files, index, records_len)?;
    rows.skip_rows(done)?;
    let chunk_size = job.chunk_size;
    // Each part goes to the worker it names: the statistics to every worker, the losses only
    // to the workers that replay the totals.
    let mut parts_channel = Channel::<(usize, Part)>::exchange(worker, |(to, _)| *to as u64);
    let mut lines_channel = Channel::<(u64, Vec<u8>)>::exchange(worker, |_| 0);
    // Who replays the totals: worker 0 always (the summary); every worker in a run that
    // writes records (the records of its own chunks) or checkpoints (a run resumed with a
    // records file its first part did not write must find them in every worker's
    // checkpoint, which therefore holds them as in a run with records). Every worker knows
    // both from the start, so each sender knows who needs the losses.
    let everyone_replays = want_records || any_checkpoints;
    let replays = everyone_replays || index == 0;
    let my_chunks_of = Selection::blocks(chunk_size, peers, index);
    let mut batch = Rows::new();
    loop {
        batch.clear();
        // While the learner warms up, every worker reads the whole batch (the warm-up is
        // learned by every replica); afterwards a worker reads only the rows of its chunks.
        let whole = learner.is_warming_up();
        let share = if whole {
            Selection::all()
        } else {
            my_chunks_of
        };
        let read = rows.next_selected(job.batch_size, &share, &mut batch);
        let (passed, mut failure) = match read {
            Ok(0) => break,
            Ok(passed) => (passed, None),
            // Only this worker may have seen it (a row of its share): it is shared in the
            // round below, so that every worker stops at the same point.
            Err(error) => (0, Some(error)),
        };
        let first_row = done;
        let mut warm_steps = Vec::new();
        let mut start = 0;
        while failure.is_none() && start < batch.len() && learner.is_warming_up() {
            let step = learner
                .learn_one(batch.values(start))
                .map_err(|e| row_error(e, first_row + start as u64))?;
            warm_steps.push(step);
            start += 1;
        }
        // Offsets of the chunked part count from the first row after the warm-up.
        let chunked_from = if whole { start } else { 0 };
        let mut parts = Vec::new();
        let mut my_chunks: Vec<(u64, Vec<SequentialKMeansStep>)> = Vec::new();
        if failure.is_none() && start < batch.len() {
            let centres = learner.centres().expect("fitted after warm-up").clone();
            let mut current: Option<(u64, CentreStats, Vec<f64>, Vec<SequentialKMeansStep>)> = None;
            for (offset, _, row) in batch.iter().skip(start) {
                let offset = offset as usize;
                let chunk = ((offset - chunked_from) / chunk_size) as u64;
                if chunk as usize % peers != index {
                    continue;
                }
                if current.as_ref().is_none_or(|(c, ..)| *c != chunk) {
                    if let Some((chunk, stats, losses, steps)) = current.take() {
                        parts.push(Part::Chunk {
                            chunk,
                            stats,
                            losses,
                        });
                        my_chunks.push((chunk, steps));
                    }
                    let stats = CentreStats::new(centres.n_centres(), centres.dim());
                    current = Some((chunk, stats, Vec::new(), Vec::new()));
                }
                let (_, stats, losses, steps) = current.as_mut().expect("set above");
                let position = first_row + offset as u64;
                match stats.add(&centres, row, 1.0) {
                    Ok((label, loss)) => {
                        losses.push(loss);
                        // A step is kept only to format its record: without a records
                        // file it would be one more allocation per row for nothing.
                        if want_records {
                            steps.push(SequentialKMeansStep {
                                round: position + 1,
                                label: Some(label),
                                loss: Some(loss),
                                initialised: false,
                                reassigned: 0,
                            });
                        }
                    }
                    Err(e) => {
                        failure = Some(row_error(e, position));
                        break;
                    }
                }
            }
            if let Some((chunk, stats, losses, steps)) = current {
                parts.push(Part::Chunk {
                    chunk,
                    stats,
                    losses,
                });
                my_chunks.push((chunk, steps));
            }
        }
        if let Some(failure) = &failure {
            parts = vec![Part::Failed(Failure::of(failure))];
        }
        // Every chunk's statistics travel to every worker, its losses to those that replay
        // the totals; the statistics are merged in chunk order.
        let mut addressed = Vec::with_capacity(parts.len() * peers);
        for part in parts {
            for to in 1..peers {
                addressed.push((to, part.for_worker(everyone_replays)));
            }
            addressed.push((0, part));
        }
        let mut all: Vec<Part> = parts_channel
            .round(worker, addressed)
            .into_iter()
            .map(|(_, part)| part)
            .collect();
        let failures = all.iter().filter_map(|part| match part {
            Part::Failed(failure) => Some(failure),
            Part::Chunk { .. } => None,
        });
        if let Some(error) = Failure::settle(failure, failures) {
            return Err(error);
        }
        all.sort_unstable_by_key(Part::chunk);
        let mut merged: Option<CentreStats> = None;
        for part in &all {
            if let Part::Chunk { stats, .. } = part {
                match &mut merged {
                    None => merged = Some(stats.clone()),
                    Some(merged) => merged.merge(stats)?,
                }
            }
        }
        if let Some(merged) = merged {
            learner.apply_stats(&merged)?;
        }
        // The totals, replayed in stream order; each worker formats the records of the rows
        // it learned (worker 0 also those of the warm-up), and worker 0 writes the blocks
        // in stream order.
        let mut blocks: Vec<(u64, Vec<u8>)> = Vec::new();
        if replays {
            let mut block = Vec::new();
            for step in &warm_steps {
                let round = totals.record(step);
                if want_records && index == 0 {
                    write_record(&mut block, &learner.record(step, &round))?;
                }
                last = Some(round);
            }
            if !block.is_empty() {
                blocks.push((first_row, block));
            }
            let mut mine = my_chunks.iter().peekable();
            for part in &all {
                let Part::Chunk { chunk, losses, .. } = part else {
                    continue;
                };
                let chunk_first = first_row + (chunked_from + *chunk as usize * chunk_size) as u64;
                let own = match mine.peek() {
                    Some((c, _)) if c == chunk => mine.next().map(|(_, steps)| steps),
                    _ => None,
                };
                // A chunk whose records this worker writes is replayed row by row (each
                // record holds the totals after its row); any other only needs the totals
                // after its last row. Worker 0 replays every row of the stream while the
                // others wait for its next chunks, so a `Totals` built per row was work
                // of the whole stream on one worker.
                let Some(steps) = own.filter(|_| want_records) else {
                    if let Some(round) = totals.record_losses(chunk_first + 1, losses) {
                        last = Some(round);
                    }
                    continue;
                };
                let mut block = Vec::new();
                for (offset, &loss) in losses.iter().enumerate() {
                    let position = chunk_first + offset as u64;
                    let replayed = SequentialKMeansStep {
                        round: position + 1,
                        label: None,
                        loss: Some(loss),
                        initialised: false,
                        reassigned: 0,
                    };
                    let round = totals.record(&replayed);
                    write_record(&mut block, &learner.record(&steps[offset], &round))?;
                    last = Some(round);
                }
                if !block.is_empty() {
                    blocks.push((chunk_first, block));
                }
            }
        }
        // Without a records file (every worker knows it) no block is formatted, and the
        // round is not held: each round is a wait for the slowest worker.
        let mut blocks = if want_records {
            lines_channel.round(worker, blocks)
        } else {
            Vec::new()
        };
        if let Some(records) = &mut records {
            blocks.sort_unstable_by_key(|(position, _)| *position);
            for (_, block) in &blocks {
                records.write_bytes(block)?;
            }
        }
        done += passed as u64;
        epoch += 1;
        save_if_due(store.as_ref(), records.as_mut(), epoch, |records_len| {
            State {
                learner: learner.clone(),
                rows: done,
                totals: totals.clone(),
                last,
                records_len,
            }
        })?;
    }
    if let Some(records) = &mut records {
        records.sync()?;
    }
    Ok(KMeansOutcome {
        learner,
        totals,
        last,
        resumed_from: resume,
    })
}

/// The one-process computation data-parallel k-means equals bit for bit, written with the
/// library's calls only: mini-batches of `batch_size` rows from the first row; warm-up rows
/// one at a time; the rest of each batch as chunks of `chunk_size` rows whose
/// [`CentreStats`] (against the batch's starting centres) are merged in chunk order and
/// applied.
pub fn reference(
    config: &SequentialKMeansConfig,
    rows: &[Vec<f64>],
    batch_size: usize,
    chunk_size: usize,
) -> pacstream::Result<SequentialKMeans> {
    let mut learner = config.build();
    for batch in rows.chunks(batch_size) {
        let mut start = 0;
        while start < batch.len() && learner.is_warming_up() {
            learner.learn_one(&batch[start])?;
            start += 1;
        }
        let mut merged: Option<CentreStats> = None;
        for chunk in batch[start..].chunks(chunk_size) {
            let flat: Vec<f64> = chunk.iter().flatten().copied().collect();
            let view = ArrayView2::from_shape((chunk.len(), chunk[0].len()), &flat)
                .map_err(|e| pacstream::Error::InconsistentInput(e.to_string()))?;
            let stats = learner.batch_stats(view)?;
            match &mut merged {
                None => merged = Some(stats),
                Some(merged) => merged.merge(&stats)?,
            }
        }
        if let Some(merged) = merged {
            learner.apply_stats(&merged)?;
        }
    }
    Ok(learner)
}

/// What a worker contributes to a batch: one chunk's statistics against the batch's starting
/// centres and the losses of its rows in stream order, or the error that stops the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Part {
    Chunk {
        chunk: u64,
        stats: CentreStats,
        losses: Vec<f64>,
    },
    Failed(Failure),
}

impl Part {
    /// The part as a worker gets it: with the losses if `with_losses` (it replays the
    /// totals), else the statistics only.
    fn for_worker(&self, with_losses: bool) -> Self {
        match self {
            Self::Chunk {
                chunk,
                stats,
                losses,
            } => Self::Chunk {
                chunk: *chunk,
                stats: stats.clone(),
                losses: if with_losses {
                    losses.clone()
                } else {
                    Vec::new()
                },
            },
            Self::Failed(failure) => Self::Failed(failure.clone()),
        }
    }

    fn chunk(&self) -> u64 {
        match self {
            Self::Chunk { chunk, .. } => *chunk,
            Self::Failed(_) => u64::MAX,
        }
    }
}

/// Appends one record as a JSON line (the bytes the records file gets).
fn write_record(block: &mut Vec<u8>, record: &impl Serialize) -> Result<()> {
    serde_json::to_writer(&mut *block, record).map_err(|e| Error::Checkpoint(e.to_string()))?;
    block.push(b'\n');
    Ok(())
}

fn row_error(error: pacstream::Error, position: u64) -> Error {
    Error::Row {
        row: position + 1,
        message: error.to_string(),
    }
}
