//! Keyed learners: one learner per key, the keys spread over the workers.
//!
//! Each epoch of `epoch_size` rows, worker w reads the rows whose position is w mod W and
//! sends each (position, key, values) to the worker `hash(key) mod W` (FNV-1a, the same in
//! every process). That worker sorts what it received by position and feeds each row to its
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

use std::collections::BTreeMap;

use pacstream::OnlineLearner;
use pacstream::describe::Describe;
use pacstream::eval::{Prequential, Totals};
use pacstream::experts::{AdviceRound, Aggregator, AggregatorConfig, AnyAggregator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::channel::Channel;
use crate::checkpoint::{Store, agree_on_epoch};
use crate::error::{Error, Result};
use crate::sink::{Records, RunFiles};
use crate::{ROWS_LIMIT, Source};

/// A keyed row: the key and the values.
pub type KeyedRow = (String, Vec<f64>);

/// How the learners of one family are built, fed and summarised, from validated settings.
pub trait KeyedFamily {
    /// A key's state (the learner and what the front-end accounts), as snapshotted.
    type State: Serialize + DeserializeOwned + 'static;
    /// A learner with no data.
    fn build(&self) -> Result<Self::State>;
    /// Learns one row; returns the round's record.
    fn learn(&self, state: &mut Self::State, row: &[f64]) -> Result<serde_json::Value>;
    /// The key's summary.
    fn summary(&self, state: &Self::State) -> serde_json::Value;
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

    fn learn(&self, state: &mut Self::State, row: &[f64]) -> Result<serde_json::Value> {
        let step = state.learner.learn_one(row)?;
        let totals = state.totals.record(&step);
        state.last = Some(totals);
        json(&state.learner.record(&step, &totals))
    }

    fn summary(&self, state: &Self::State) -> serde_json::Value {
        serde_json::to_value(state.learner.summary(&state.totals, state.last.as_ref()))
            .unwrap_or(serde_json::Value::Null)
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

    fn learn(&self, state: &mut AnyAggregator, row: &[f64]) -> Result<serde_json::Value> {
        let Some((outcome, advice)) = row.split_last() else {
            return Err(Error::Usage(
                "an expert row needs advice and an outcome".into(),
            ));
        };
        let step = state.learn_advice(AdviceRound::new(advice, *outcome), self.config.loss)?;
        json(&step)
    }

    fn summary(&self, state: &AnyAggregator) -> serde_json::Value {
        serde_json::to_value(self.config.summary(state.as_dyn(), &self.names))
            .unwrap_or(serde_json::Value::Null)
    }
}

fn json(value: &impl Serialize) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| Error::Checkpoint(e.to_string()))
}

/// 64-bit FNV-1a: the same in every process and every build, unlike std's hasher.
pub fn key_hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One record of a keyed run, as written.
#[derive(Debug, Serialize)]
struct KeyedRecord<'a> {
    key: &'a str,
    #[serde(flatten)]
    record: &'a serde_json::Value,
}

#[derive(Serialize)]
struct StateRef<'a, S> {
    learners: &'a BTreeMap<String, S>,
    rows: u64,
    records_len: Option<u64>,
}

#[derive(Deserialize)]
struct State<S> {
    learners: BTreeMap<String, S>,
    rows: u64,
    records_len: Option<u64>,
}

/// What a worker ends with: its keys' summaries (every key's on worker 0, in key order).
#[derive(Debug)]
pub struct KeyedOutcome {
    /// Key → summary.
    pub summaries: BTreeMap<String, serde_json::Value>,
    /// The epoch the run resumed from (None: it started afresh).
    pub resumed_from: Option<u64>,
}

/// Runs keyed learners on this worker; `rows` is the whole stream (every worker reads it
/// and sends on its share). Every worker must call it with the same arguments.
pub fn run_keyed<F: KeyedFamily>(
    worker: &mut Worker,
    family: &F,
    epoch_size: usize,
    rows: &mut dyn Source<Row = KeyedRow>,
    files: &RunFiles,
) -> Result<KeyedOutcome> {
    if epoch_size == 0 || epoch_size > ROWS_LIMIT {
        return Err(Error::Usage(format!(
            "--epoch-size must be between 1 and {ROWS_LIMIT}, got {epoch_size}"
        )));
    }
    let index = worker.index();
    let peers = worker.peers();
    let store = match &files.checkpoints {
        Some(config) => Some(Store::new(config, index, peers)?),
        None => None,
    };
    let writes_records = index == 0 && files.records.is_some();
    let (resume, want_records) = agree_on_epoch(worker, store.as_ref(), writes_records)?;
    let (mut learners, mut done, records_len, mut epoch) = match (resume, &store) {
        (Some(epoch), Some(store)) => {
            let state: State<F::State> = store.load(epoch)?;
            (state.learners, state.rows, state.records_len, epoch)
        }
        _ => (BTreeMap::new(), 0, None, 0),
    };
    let mut records = match (&files.records, index) {
        (Some(path), 0) => Some(Records::open(
            path,
            records_len.filter(|_| resume.is_some()),
        )?),
        _ => None,
    };
    rows.skip_rows(done)?;
    let mut rows_channel =
        Channel::<(u64, String, Vec<f64>)>::exchange(worker, |(_, key, _)| key_hash(key));
    let mut records_channel = Channel::<(u64, String)>::exchange(worker, |_| 0);
    let mut batch = Vec::new();
    loop {
        batch.clear();
        rows.next_batch(epoch_size, &mut batch)?;
        if batch.is_empty() {
            break;
        }
        let first_row = done;
        let batch_len = batch.len() as u64;
        let mine = batch
            .drain(..)
            .enumerate()
            .filter(|(offset, _)| offset % peers == index)
            .map(|(offset, (key, values))| (first_row + offset as u64, key, values));
        let mut received = rows_channel.round(worker, mine);
        received.sort_unstable_by_key(|(position, _, _)| *position);
        let mut out = Vec::with_capacity(received.len());
        let mut failure = None;
        for (position, key, values) in received {
            if !learners.contains_key(&key) {
                learners.insert(key.clone(), family.build()?);
            }
            let state = learners.get_mut(&key).expect("inserted above");
            match family.learn(state, &values) {
                // Without a records file, no record is built or sent.
                Ok(_) if !want_records => {}
                Ok(record) => {
                    let line = serde_json::to_string(&KeyedRecord {
                        key: &key,
                        record: &record,
                    })
                    .map_err(|e| Error::Checkpoint(e.to_string()))?;
                    out.push((position, line));
                }
                Err(e) => {
                    // Kept until the round is closed: leaving now would stall the others.
                    failure.get_or_insert(Error::Row {
                        row: position + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
        let mut lines = records_channel.round(worker, out);
        if let Some(failure) = failure {
            return Err(failure);
        }
        if let Some(records) = &mut records {
            lines.sort_unstable_by_key(|(position, _)| *position);
            for (_, line) in &lines {
                records.write_line(line)?;
            }
        }
        done += batch_len;
        epoch += 1;
        if let Some(store) = &store
            && store.due(epoch)
        {
            let records_len = records.as_mut().map(|records| records.sync()).transpose()?;
            store.save(
                epoch,
                &StateRef {
                    learners: &learners,
                    rows: done,
                    records_len,
                },
            )?;
        }
    }
    if let Some(records) = &mut records {
        records.sync()?;
    }
    // Every key's summary travels to worker 0.
    let summaries: Vec<(String, String)> = learners
        .iter()
        .map(|(key, state)| (key.clone(), family.summary(state).to_string()))
        .collect();
    let mut summaries_channel = Channel::<(String, String)>::exchange(worker, |_| 0);
    let all = summaries_channel.round(worker, summaries);
    let summaries = all
        .into_iter()
        .map(|(key, summary)| {
            let value = serde_json::from_str(&summary).unwrap_or(serde_json::Value::Null);
            (key, value)
        })
        .collect();
    Ok(KeyedOutcome {
        summaries,
        resumed_from: resume,
    })
}
