//! The streaming loop every online command shares: read a row, hand it to the command's
//! learner, write its records, checkpoint now and then, resume from a checkpoint.
//!
//! A command plugs in through [`StreamTask`]: its state (learner snapshot, running totals,
//! anything else it must carry across a restart) is serialisable; the loop owns the input,
//! the output file, the checkpoint cadence and the resume protocol:
//!
//! - a checkpoint is made every `--checkpoint-every` input rows (at the first row after
//!   which the task is *settled*, that is holds no partly filled mini-batch), and at the end;
//!   before it the output is flushed and fsynced, and its length recorded;
//! - `--resume` loads a checkpoint made by the same command with the same settings, restores
//!   the task, skips the rows already consumed (checking their fingerprint), cuts the output
//!   back to its recorded length and continues, so the result equals an uninterrupted run;
//! - a bad row under `--on-bad-row error` stops the run, but a checkpoint of what was learned
//!   before it is saved first (when checkpoints are on), so nothing is lost.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::failure::bad_input;
use crate::io::atomic::remove_stale_temporaries;
use crate::io::checkpoint::{self, Checkpoint};
use crate::io::reader::{InputProgress, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{CheckpointOptions, OutputTarget, RecordOutput};
use crate::ui::{Notes, Progress};

/// An online command, as the streaming loop drives it.
pub trait StreamTask {
    /// The command's name, as written in checkpoints (`kmeans`).
    const COMMAND: &'static str;

    /// Everything a checkpoint must hold to continue the run bit for bit.
    type State: Serialize + DeserializeOwned;

    /// The settings that must be equal for a checkpoint to be resumed, as a JSON object keyed
    /// by option name (`k`, `decay`, ...).
    fn settings(&self) -> Value;

    /// The current state.
    fn state(&self) -> &Self::State;

    /// Replaces the state with a checkpoint's, after checking that it fits these settings
    /// and the input progress it was saved with.
    fn restore(&mut self, state: Self::State, input: &InputProgress) -> anyhow::Result<()>;

    /// Learns one row and writes the records it produces.
    fn learn(&mut self, row: &Row<'_>, sink: &mut RecordSink) -> anyhow::Result<()>;

    /// Whether every row given so far is learned (no partly filled mini-batch waits), so
    /// that the state is a consistent checkpoint.
    fn is_settled(&self) -> bool;

    /// Learns whatever is still buffered at the end of the input.
    fn finish(&mut self, sink: &mut RecordSink) -> anyhow::Result<()>;
}

/// The error of a checkpoint whose state does not fit the run it would resume.
pub fn inconsistent(what: &str) -> anyhow::Error {
    bad_input(format!("the checkpoint is inconsistent: {what}"))
}

/// What every learner restored from a checkpoint must satisfy: the settings it was built
/// with, its round count and that of the running totals against the rows read, and its
/// dimension (`None` before its first point).
pub fn check_restored_learner(
    same_settings: bool,
    learner_rounds: u64,
    totals_rounds: u64,
    learner_dim: Option<usize>,
    dim: usize,
    input: &InputProgress,
) -> anyhow::Result<()> {
    if !same_settings {
        return Err(inconsistent(
            "its learner's settings differ from the settings it records",
        ));
    }
    let learned = input.rows_consumed - input.bad_rows_skipped;
    if learner_rounds != learned || totals_rounds != learned {
        return Err(inconsistent(
            "the rounds learned do not match the rows it read",
        ));
    }
    if learner_dim.is_some_and(|d| d != dim) {
        return Err(inconsistent("its learner has another number of columns"));
    }
    Ok(())
}

/// Runs `task` over the rest of `reader`'s input (after resuming, if asked); returns the
/// input's final progress.
pub fn run_stream<T: StreamTask>(
    task: &mut T,
    reader: &mut RowReader,
    output: Option<&RecordOutput>,
    checkpoints: &CheckpointOptions,
    notes: Notes,
) -> anyhow::Result<InputProgress> {
    if let Some((path, _)) = &checkpoints.save {
        remove_stale_temporaries(path);
    }
    let mut sink = match &checkpoints.resume {
        Some(path) => resume(task, reader, output, path, notes)?,
        None => RecordSink::create(output)?,
    };
    let mut progress = Progress::new(notes, reader.bytes().1);
    let mut last_checkpoint = reader.progress().rows_consumed;
    loop {
        let row = match reader.next_row() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(error) => {
                // Keep what was learned: save it (when checkpoints are on), then report the
                // bad row. A failure to save is noted, never allowed to hide the bad row.
                if let Some((path, _)) = &checkpoints.save {
                    let consumed = reader.progress().rows_consumed;
                    if task.is_settled() && consumed > 0 {
                        match save(task, reader.progress(), &mut sink, output, path) {
                            Ok(()) => notes.note(format!(
                                "the {consumed} rows before the bad row are learned and saved in \
                                 '{}': fix the row and continue with --resume {}",
                                path.display(),
                                path.display()
                            )),
                            Err(save_error) => notes.note(format!(
                                "the rows before the bad row could not be saved: {save_error:#}"
                            )),
                        }
                    }
                }
                // The records written so far stay: they are the rounds that were learned.
                let _ = sink.sync();
                return Err(error);
            }
        };
        task.learn(&row, &mut sink)?;
        let consumed = reader.progress().rows_consumed;
        if consumed % 4096 == 0 {
            progress.update(consumed, reader.bytes().0);
        }
        if let Some((path, every)) = &checkpoints.save {
            if consumed - last_checkpoint >= *every && task.is_settled() {
                save(task, reader.progress(), &mut sink, output, path)?;
                last_checkpoint = consumed;
            }
        }
    }
    task.finish(&mut sink)?;
    if let Some((path, _)) = &checkpoints.save {
        save(task, reader.progress(), &mut sink, output, path)?;
    }
    sink.finish()?;
    progress.finish();
    Ok(reader.progress())
}

/// Restores `task` from the checkpoint at `path`, skips the input it consumed, and reopens
/// the output where it stood.
fn resume<T: StreamTask>(
    task: &mut T,
    reader: &mut RowReader,
    output: Option<&RecordOutput>,
    path: &Path,
    notes: Notes,
) -> anyhow::Result<RecordSink> {
    let saved: Checkpoint<T::State> = checkpoint::load(path, T::COMMAND, &task.settings())?;
    let input = saved.input;
    if input.bad_rows_skipped > input.rows_consumed {
        return Err(bad_input(format!(
            "'{}' is not a valid checkpoint: it skipped more rows than it read",
            path.display()
        )));
    }
    if let (Some(output), Some(format)) = (output, &saved.output_format) {
        if output.format.name() != format {
            return Err(bad_input(format!(
                "the run saved in '{}' wrote its --output as {format}; resume with --format {format}",
                path.display()
            )));
        }
    }
    task.restore(saved.state, &input)
        .with_context(|| format!("cannot resume from '{}'", path.display()))?;
    reader.fast_forward(&input)?;
    let sink = match (output, saved.output_bytes) {
        (None, _) => RecordSink::disabled(),
        (Some(output), _) if output.target == OutputTarget::Stdout => {
            RecordSink::create(Some(output))?
        }
        (Some(output), Some(length)) => RecordSink::resume(Some(output), length)?,
        (Some(_), None) => {
            return Err(bad_input(format!(
                "the run saved in '{}' had no --output, so a resumed run cannot write a complete \
                 one: resume without --output, or start a new run",
                path.display()
            )));
        }
    };
    notes.note(format!(
        "resuming from '{}' after {} rows of '{}'",
        path.display(),
        input.rows_consumed,
        reader.source_name()
    ));
    Ok(sink)
}

/// Flushes the output, then saves a checkpoint of `task` atomically.
fn save<T: StreamTask>(
    task: &T,
    input: InputProgress,
    sink: &mut RecordSink,
    output: Option<&RecordOutput>,
    path: &Path,
) -> anyhow::Result<()> {
    let output_bytes = sink.sync()?;
    let output_format = output_bytes.and(output.map(|o| o.format.name().to_string()));
    checkpoint::save(
        path,
        &Checkpoint {
            format: checkpoint::FORMAT.to_string(),
            version: checkpoint::VERSION,
            command: T::COMMAND.to_string(),
            settings: task.settings(),
            input,
            output_bytes,
            output_format,
            state: task.state(),
        },
    )
}
