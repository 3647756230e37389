//! Data-parallel sequential k-means: one stream, its mini-batches split across the workers.
//!
//! # What it computes
//!
//! The stream is cut into mini-batches of `batch_size` rows from its first row, as
//! [`SequentialKMeans::learn_batch`] is fed by a one-process run. Every worker holds a
//! replica of the learner. Within a batch:
//!
//! 1. rows that arrive while the learner warms up are learned one at a time by every
//!    replica (the warm-up is sequential by nature and only `init_size` rows long);
//! 2. the remaining rows are cut into chunks of `chunk_size` rows, in stream order; chunk j
//!    is summarised by worker j mod W: the library's [`CentreStats`] against the centres
//!    held at the start of the batch, its rows added in stream order, with each row's label
//!    and loss;
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
use crate::checkpoint::{Store, agree_on_epoch};
use crate::error::{Error, Result};
use crate::sink::{Records, RunFiles};
use crate::{ROWS_LIMIT, Source};

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
    /// The totals of the records (worker 0; other workers hold empty totals).
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

/// Runs data-parallel k-means on this worker; `rows` is the whole stream (every worker reads
/// it and summarises only its chunks). Every worker must call it with the same arguments.
pub fn run_kmeans(
    worker: &mut Worker,
    job: &KMeansJob,
    rows: &mut dyn Source<Row = Vec<f64>>,
    files: &RunFiles,
) -> Result<KMeansOutcome> {
    job.check()?;
    let index = worker.index();
    let peers = worker.peers();
    let store = match &files.checkpoints {
        Some(config) => Some(Store::new(config, index, peers)?),
        None => None,
    };
    let writes_records = index == 0 && files.records.is_some();
    let (resume, _) = agree_on_epoch(worker, store.as_ref(), writes_records)?;
    let (mut learner, mut done, mut totals, mut last, records_len, mut epoch) =
        match (resume, &store) {
            (Some(epoch), Some(store)) => {
                let state: State = store.load(epoch)?;
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
            _ => (job.config.build(), 0, Prequential::new(), None, None, 0),
        };
    let mut records = match (&files.records, index) {
        (Some(path), 0) => Some(Records::open(
            path,
            records_len.filter(|_| resume.is_some()),
        )?),
        _ => None,
    };
    rows.skip_rows(done)?;
    let mut stats_channel = Channel::<(u64, CentreStats)>::broadcast(worker);
    let mut steps_channel = Channel::<(u64, SequentialKMeansStep)>::exchange(worker, |_| 0);
    let mut batch = Vec::new();
    loop {
        batch.clear();
        rows.next_batch(job.batch_size, &mut batch)?;
        if batch.is_empty() {
            break;
        }
        let first_row = done;
        let mut steps = Vec::new();
        let mut start = 0;
        while start < batch.len() && learner.is_warming_up() {
            let step = learner
                .learn_one(&batch[start])
                .map_err(|e| row_error(e, first_row + start as u64))?;
            if index == 0 {
                steps.push((first_row + start as u64, step));
            }
            start += 1;
        }
        let mut chunk_stats = Vec::new();
        if start < batch.len() {
            let centres = learner.centres().expect("fitted after warm-up").clone();
            for (chunk, chunk_rows) in batch[start..].chunks(job.chunk_size).enumerate() {
                if chunk % peers != index {
                    continue;
                }
                let mut stats = CentreStats::new(centres.n_centres(), centres.dim());
                let chunk_first = first_row + (start + chunk * job.chunk_size) as u64;
                for (offset, row) in chunk_rows.iter().enumerate() {
                    let position = chunk_first + offset as u64;
                    let (label, loss) = stats
                        .add(&centres, row, 1.0)
                        .map_err(|e| row_error(e, position))?;
                    steps.push((
                        position,
                        SequentialKMeansStep {
                            round: position + 1,
                            label: Some(label),
                            loss: Some(loss),
                            initialised: false,
                            reassigned: 0,
                        },
                    ));
                }
                chunk_stats.push((chunk as u64, stats));
            }
        }
        // Every chunk's statistics travel to every worker, merged there in chunk order.
        let mut all = stats_channel.round(worker, chunk_stats);
        all.sort_unstable_by_key(|(chunk, _)| *chunk);
        let mut merged: Option<CentreStats> = None;
        for (_, stats) in all {
            match &mut merged {
                None => merged = Some(stats),
                Some(merged) => merged.merge(&stats)?,
            }
        }
        if let Some(merged) = merged {
            learner.apply_stats(&merged)?;
        }
        // The steps travel to worker 0, which writes them in stream order.
        let mut steps = steps_channel.round(worker, steps);
        if index == 0 {
            steps.sort_unstable_by_key(|(position, _)| *position);
            for (_, step) in &steps {
                let round = totals.record(step);
                if let Some(records) = &mut records {
                    records.write(&learner.record(step, &round))?;
                }
                last = Some(round);
            }
        }
        done += batch.len() as u64;
        epoch += 1;
        if let Some(store) = &store
            && store.due(epoch)
        {
            let records_len = records.as_mut().map(|records| records.sync()).transpose()?;
            store.save(
                epoch,
                &State {
                    learner: learner.clone(),
                    rows: done,
                    totals: totals.clone(),
                    last,
                    records_len,
                },
            )?;
        }
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

fn row_error(error: pacstream::Error, position: u64) -> Error {
    Error::Row {
        row: position + 1,
        message: error.to_string(),
    }
}
