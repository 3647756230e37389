//! Keyed learners: one learner per key, the keys spread over the workers.
//!
//! Each epoch of `epoch_size` rows, worker w reads (parses, generates) only the rows whose
//! offset is w mod W and sends each (position, key, values) to the worker `hash(key) mod W` (FNV-1a, the same in
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

use std::collections::{BTreeMap, HashMap};

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
use crate::{ROWS_LIMIT, Source};

/// A keyed row: the key and the values.
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
    /// The key's entry of the summary document ([`summary_entry`] of the key's summary).
    fn summary_entry(&self, key: &str, state: &Self::State) -> Result<String>;
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

    fn summary_entry(&self, key: &str, state: &Self::State) -> Result<String> {
        summary_entry(
            key,
            &state.learner.summary(&state.totals, state.last.as_ref()),
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

    fn summary_entry(&self, key: &str, state: &AnyAggregator) -> Result<String> {
        summary_entry(key, &self.config.summary(state.as_dyn(), &self.names))
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
    /// On worker 0, every key's summary as one JSON object (key → summary, in key order),
    /// pretty-printed as `serde_json::to_string_pretty` prints the map; empty elsewhere.
    pub summary_json: String,
    /// The epoch the run resumed from (None: it started afresh).
    pub resumed_from: Option<u64>,
}

impl KeyedOutcome {
    /// Key → summary, read back from [`KeyedOutcome::summary_json`] (worker 0).
    pub fn summaries(&self) -> BTreeMap<String, serde_json::Value> {
        serde_json::from_str(&self.summary_json).unwrap_or_default()
    }
}

/// One entry of the pretty-printed summary object, `  "key": {...}` with the indentation
/// it has inside the object: printed as a one-key object whose braces are cut off.
pub fn summary_entry(key: &str, summary: &impl Serialize) -> Result<String> {
    let one = BTreeMap::from([(key, summary)]);
    let text = serde_json::to_string_pretty(&one).map_err(|e| Error::Checkpoint(e.to_string()))?;
    Ok(text
        .strip_prefix("{\n")
        .and_then(|t| t.strip_suffix("\n}"))
        .unwrap_or_default()
        .to_string())
}

/// Runs keyed learners on this worker; `rows` is the whole stream, of which each worker reads
/// only its share ([`Source::next_selected`]) and sends each row on to its key's worker.
/// Every worker must call it with the same arguments.
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
    let Start {
        store,
        resumed,
        want_records,
    } = start::<State<F::State>>(worker, files)?;
    let resume = resumed.as_ref().map(|(epoch, _)| *epoch);
    let (mut learners, mut done, records_len, mut epoch) = match resumed {
        Some((epoch, state)) => (state.learners, state.rows, state.records_len, epoch),
        None => (HashMap::new(), 0, None, 0),
    };
    let mut records = Records::for_worker(files, index, records_len)?;
    rows.skip_rows(done)?;
    let mut rows_channel =
        Channel::<(u64, String, Vec<f64>)>::exchange(worker, |(_, key, _)| key_hash(key));
    let mut records_channel = Channel::<(u64, String)>::exchange(worker, |_| 0);
    let mut status_channel = Channel::<Failure>::broadcast(worker);
    let mut mine = Vec::new();
    loop {
        mine.clear();
        // Worker w reads (parses, generates) only the rows at offsets w mod W.
        let read = rows.next_selected(epoch_size, &|offset| offset % peers == index, &mut mine);
        let (batch_len, mut failure) = match read {
            Ok(0) => break,
            Ok(passed) => (passed as u64, None),
            // Kept until the epoch is over: leaving now would stall the others.
            Err(error) => (0, Some(error)),
        };
        let first_row = done;
        let sent = mine
            .drain(..)
            .map(|(offset, (key, values))| (first_row + offset as u64, key, values));
        let mut received = rows_channel.round(worker, sent);
        received.sort_unstable_by_key(|(position, _, _)| *position);
        let mut out = Vec::with_capacity(received.len());
        let mut record = Vec::new();
        for (position, key, values) in received {
            if failure.is_some() {
                break;
            }
            // A hash map: one lookup per row, whatever the number of keys (the checkpoints
            // and the summary list the keys in order).
            let state = match learners.get_mut(&key) {
                Some(state) => state,
                None => learners.entry(key.clone()).or_insert(family.build()?),
            };
            // Without a records file, no record is built or sent.
            record.clear();
            match family.learn(state, &values, want_records.then_some(&mut record)) {
                Ok(()) if want_records => out.push((position, keyed_line(&key, &record)?)),
                Ok(()) => {}
                Err(e) => {
                    failure = Some(Error::Row {
                        row: position + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
        // Without a records file (every worker knows it) the records round is not held:
        // each round is a wait for the slowest worker.
        let mut lines = if want_records {
            records_channel.round(worker, out)
        } else {
            Vec::new()
        };
        // Every worker learns whether any stopped, and all stop at the same epoch.
        let failures = status_channel.round(worker, failure.as_ref().map(Failure::of));
        if let Some(error) = Failure::first(&failures) {
            return Err(failure.unwrap_or(error));
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
                learners: learners.iter().collect(),
                rows: done,
                records_len,
            }
        })?;
    }
    if let Some(records) = &mut records {
        records.sync()?;
    }
    // Every worker formats its keys' entries of the summary document; worker 0 only joins
    // them in key order.
    let entries = learners
        .iter()
        .map(|(key, state)| Ok((key.clone(), family.summary_entry(key, state)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut summaries_channel = Channel::<(String, String)>::exchange(worker, |_| 0);
    let mut entries = summaries_channel.round(worker, entries);
    entries.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
    let summary_json = if index != 0 {
        String::new()
    } else if entries.is_empty() {
        "{}".to_string()
    } else {
        // Sized once: at 10^5 keys the document is hundreds of megabytes, and growing it by
        // doubling cost worker 0 copies and page faults the other workers wait for.
        let length = entries
            .iter()
            .map(|(_, entry)| entry.len() + 2)
            .sum::<usize>()
            + 2;
        let mut document = String::with_capacity(length);
        document.push_str("{\n");
        for (i, (_, entry)) in entries.iter().enumerate() {
            if i > 0 {
                document.push_str(",\n");
            }
            document.push_str(entry);
        }
        document.push_str("\n}");
        document
    };
    Ok(KeyedOutcome {
        summary_json,
        resumed_from: resume,
    })
}
