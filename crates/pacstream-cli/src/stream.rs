//! The streaming loop every online command shares: read a row, hand it to the command's
//! learner, write its records, checkpoint now and then, resume from a checkpoint.
//!
//! A command plugs in through [`StreamTask`]: its state (learner snapshot, running totals,
//! anything else it must carry across a restart) is serialisable; the loop owns the input,
//! the output file, the checkpoint cadence and the resume protocol:
//!
//! - a checkpoint is made every `--checkpoint-every` input rows (at the first row after
//!   which the task is *settled*, that is holds no partly filled mini-batch), and at the end;
//!   before it the output is flushed and fsynced, and what it holds recorded (length,
//!   SHA-256, records);
//! - `--resume` loads a checkpoint made by the same command with the same settings (its
//!   checksum verified first), restores the task, skips the rows already consumed (checking
//!   their fingerprint), checks that the output holds exactly what the checkpoint recorded,
//!   cuts it back to that and continues, so the result equals an uninterrupted run; nothing
//!   is written before every check has passed;
//! - a bad row under `--on-bad-row error` stops the run, but a checkpoint of what was learned
//!   before it is saved first (when checkpoints are on), so nothing is lost. A row the
//!   learner refuses though it parsed ([`RowFault`]: an outcome missing, a point far outside
//!   the ball) is a bad row like the others: named by file, line and column, and skipped
//!   with `--on-bad-row skip`.

use std::fmt;
use std::path::Path;

use anyhow::Context;
use pacstream::eval::Prequential;
use pacstream::{OnlineLearner, UnsupervisedLearner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::failure::bad_input;
use crate::io::atomic::{checkpoint_path, remove_stale_temporaries};
use crate::io::checkpoint::{self, Checkpoint};
use crate::io::reader::{ColumnLayout, InputProgress, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{CheckpointOptions, OutputTarget, RecordOutput, RunOptions};
use crate::ui::{Notes, Progress};

/// Where in a row a [`RowFault`] lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAt {
    /// The row as a whole.
    Row,
    /// The feature column at this position (among the columns the command reads).
    Feature(usize),
    /// The extra column (weights, labels) at this position.
    Extra(usize),
}

/// A row that parsed but that the command or its learner refuses: the problem, and where in
/// the row it lies. The streaming loop names the file, line and column, and skips the row
/// under `--on-bad-row skip`. A task returns it only when it changed nothing (the library's
/// steps are atomic).
#[derive(Debug)]
pub struct RowFault {
    /// Where.
    pub at: FaultAt,
    /// What is wrong, without the location (`the outcome is missing`).
    pub problem: String,
}

impl fmt::Display for RowFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem)
    }
}

impl std::error::Error for RowFault {}

/// A [`RowFault`] as an error.
pub fn row_fault(at: FaultAt, problem: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(RowFault {
        at,
        problem: problem.into(),
    })
}

/// A library error about the point a row gave (a value not finite or too large, a point
/// the model cannot take) as a [`RowFault`]: at the column where the library names one (its
/// column `c` is the feature at `first_feature + c`), else at the row. Other errors (a
/// setting, a broken snapshot) go to `otherwise`, the command's mapping of library errors.
pub fn point_fault(
    error: pacstream::Error,
    first_feature: usize,
    otherwise: impl FnOnce(pacstream::Error) -> anyhow::Error,
) -> anyhow::Error {
    use pacstream::Error;
    match &error {
        Error::NonFinite { column, .. } | Error::ValueTooLarge { column, .. } => {
            row_fault(FaultAt::Feature(first_feature + column), error.to_string())
        }
        Error::InconsistentInput(problem) => row_fault(FaultAt::Row, problem.clone()),
        Error::DimensionMismatch { .. } => row_fault(FaultAt::Row, error.to_string()),
        Error::InvalidWeight { .. } => row_fault(FaultAt::Extra(0), error.to_string()),
        _ => otherwise(error),
    }
}

/// An online command, as the streaming loop drives it.
///
/// Every row learned writes exactly one record to the output (when there is one), so that
/// a checkpoint's record count can be checked against the rows it learned.
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

    /// Learns one row and writes the records it produces. A row it refuses without changing
    /// anything is a [`RowFault`].
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
    // The checkpoint's own file (a symlink's target; a device or FIFO is refused) is known
    // before anything is read; its stale temporaries are cleared once the resume's checks
    // have passed.
    let save_target = match &checkpoints.save {
        Some((path, _)) => Some(checkpoint_path(path)?),
        None => None,
    };
    let mut sink = match &checkpoints.resume {
        Some(path) => resume(task, reader, output, path, notes)?,
        None => RecordSink::create(output)?,
    };
    if let Some(target) = &save_target {
        remove_stale_temporaries(target);
    }
    let mut progress = Progress::new(notes, reader.bytes().1);
    let mut last_checkpoint = reader.progress().rows_consumed;
    loop {
        // A row the reader or the learner refuses is skipped, or stops the run (a bad row).
        let bad_row = match reader.next_row() {
            Ok(Some(row)) => match task.learn(&row, &mut sink) {
                Ok(()) => None,
                Err(error) if error.is::<RowFault>() => {
                    let fault = error
                        .downcast::<RowFault>()
                        .context("invariant: a row fault")?;
                    match reader.refuse_current(fault.at, &fault.problem) {
                        Ok(()) => continue,
                        Err(error) => Some(error),
                    }
                }
                Err(error) => return Err(error),
            },
            Ok(None) => break,
            Err(error) => Some(error),
        };
        if let Some(error) = bad_row {
            return Err(stop_at_bad_row(
                task,
                reader,
                &mut sink,
                checkpoints,
                notes,
                error,
            ));
        }
        let consumed = reader.progress().rows_consumed;
        if consumed.is_multiple_of(4096) {
            progress.update(consumed, reader.bytes().0);
        }
        if let Some((path, every)) = &checkpoints.save
            && consumed - last_checkpoint >= *every
            && task.is_settled()
        {
            save(task, reader.progress(), &mut sink, path)?;
            last_checkpoint = consumed;
        }
    }
    task.finish(&mut sink)?;
    if let Some((path, _)) = &checkpoints.save {
        save(task, reader.progress(), &mut sink, path)?;
    }
    sink.finish()?;
    progress.finish();
    Ok(reader.progress())
}

/// Ends a run at a bad row under `--on-bad-row error`: keeps what was learned (saves it,
/// when checkpoints are on), then returns the bad row's error. A failure to save is noted,
/// never allowed to hide the bad row.
fn stop_at_bad_row<T: StreamTask>(
    task: &T,
    reader: &RowReader,
    sink: &mut RecordSink,
    checkpoints: &CheckpointOptions,
    notes: Notes,
    error: anyhow::Error,
) -> anyhow::Error {
    if let Some((path, _)) = &checkpoints.save {
        let consumed = reader.progress().rows_consumed;
        if task.is_settled() && consumed > 0 {
            match save(task, reader.progress(), sink, path) {
                Ok(()) => notes.note(format!(
                    "the {consumed} rows before the bad row are learned and saved in '{}': fix \
                     the row and continue with --resume {}",
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
    error
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
    if let (Some(output), Some(mark)) = (output, &saved.output)
        && output.format.name() != mark.format
    {
        return Err(bad_input(format!(
            "the run saved in '{}' wrote its --output as {}; resume with --format {}",
            path.display(),
            mark.format,
            mark.format
        )));
    }
    if let Some(mark) = &saved.output {
        // One record per row learned (the task was settled when it was saved).
        if mark.records != input.rows_consumed - input.bad_rows_skipped {
            return Err(inconsistent(
                "the records it wrote do not match the rows it learned",
            ));
        }
    }
    task.restore(saved.state, &input)
        .with_context(|| format!("cannot resume from '{}'", path.display()))?;
    reader.fast_forward(&input)?;
    let sink = match (output, &saved.output) {
        (None, _) => RecordSink::disabled(),
        (Some(output), _) if output.target == OutputTarget::Stdout => {
            RecordSink::create(Some(output))?
        }
        (Some(output), Some(mark)) => RecordSink::resume(Some(output), mark)?,
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
    path: &Path,
) -> anyhow::Result<()> {
    let mark = sink.sync()?;
    checkpoint::save(
        path,
        &Checkpoint {
            command: T::COMMAND.to_string(),
            settings: task.settings(),
            input,
            output: mark,
            state: task.state(),
        },
    )
}

/// What the checkpoint of every point learner (k-means online, PACBO, curves) holds first:
/// the learner, its running totals, and those after its last round. A family declares its
/// state with [`point_state!`], which puts these three first and its own fields (figure
/// samples, timings) after them.
pub trait PointParts {
    /// The learner.
    type Learner: UnsupervisedLearner;
    /// The learner.
    fn learner(&self) -> &Self::Learner;
    /// Its running totals.
    fn totals(&self) -> &Prequential;
}

/// Declares a point learner's checkpoint state (see [`PointParts`]):
/// `point_state!(State<Learner> { plot: Option<Sample>, })`.
#[macro_export]
macro_rules! point_state {
    ($(#[$meta:meta])* $name:ident<$learner:ty> {
        $($(#[$field_meta:meta])* $field:ident: $type:ty,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, serde::Serialize, serde::Deserialize)]
        struct $name {
            learner: $learner,
            totals: pacstream::eval::Prequential,
            /// The totals after the last round (none before the first).
            last: Option<pacstream::eval::Totals>,
            $($(#[$field_meta])* $field: $type,)*
        }

        impl $crate::stream::PointParts for $name {
            type Learner = $learner;
            fn learner(&self) -> &$learner {
                &self.learner
            }
            fn totals(&self) -> &pacstream::eval::Prequential {
                &self.totals
            }
        }

        impl $name {
            /// Accounts a step; returns the totals after it.
            #[allow(dead_code, reason = "not every family accounts its steps here")]
            fn account(&mut self, step: &impl pacstream::Step) -> pacstream::eval::Totals {
                let totals = self.totals.record(step);
                self.last = Some(totals);
                totals
            }
        }
    };
}

/// A family's hooks into the streaming loop, for a learner of points ([`PointTask`]).
pub trait PointFamily {
    /// The command's name, as written in checkpoints.
    const COMMAND: &'static str;
    /// What its checkpoint holds, declared with [`point_state!`].
    type State: PointParts + Serialize + DeserializeOwned;

    /// Whether a restored learner was built with this run's settings.
    fn same_config(&self, learner: &<Self::State as PointParts>::Learner) -> bool;

    /// Checks the family's part of a restored state against this run's (`mine`).
    fn check_extra(
        &self,
        mine: &Self::State,
        theirs: &Self::State,
        dim: usize,
    ) -> Result<(), String>;

    /// Learns one row and writes its record (a refused point is a [`RowFault`]).
    fn learn(
        &mut self,
        state: &mut Self::State,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()>;

    /// Whether no row waits in a partly filled mini-batch.
    fn is_settled(&self) -> bool {
        true
    }

    /// Learns whatever is still buffered at the end of the input.
    fn finish(&mut self, state: &mut Self::State, sink: &mut RecordSink) -> anyhow::Result<()> {
        let _ = (state, sink);
        Ok(())
    }
}

/// The [`StreamTask`] of a learner of points: the settings and restore checks every family
/// shares, the family's hooks for the rest.
#[derive(Debug)]
pub struct PointTask<F: PointFamily> {
    /// The family's hooks and scratch.
    pub family: F,
    /// The settings a checkpoint must match.
    pub settings: Value,
    /// The number of columns learned.
    pub dim: usize,
    /// What a checkpoint holds.
    pub state: F::State,
}

impl<F: PointFamily> StreamTask for PointTask<F> {
    const COMMAND: &'static str = F::COMMAND;
    type State = F::State;

    fn settings(&self) -> Value {
        self.settings.clone()
    }

    fn state(&self) -> &Self::State {
        &self.state
    }

    fn restore(&mut self, state: Self::State, input: &InputProgress) -> anyhow::Result<()> {
        let learner = state.learner();
        check_restored_learner(
            self.family.same_config(learner),
            learner.n_rounds(),
            state.totals().rounds(),
            learner.dim(),
            self.dim,
            input,
        )?;
        self.family
            .check_extra(&self.state, &state, self.dim)
            .map_err(|what| inconsistent(&what))?;
        self.state = state;
        Ok(())
    }

    fn learn(&mut self, row: &Row<'_>, sink: &mut RecordSink) -> anyhow::Result<()> {
        self.family.learn(&mut self.state, row, sink)
    }

    fn is_settled(&self) -> bool {
        self.family.is_settled()
    }

    fn finish(&mut self, sink: &mut RecordSink) -> anyhow::Result<()> {
        self.family.finish(&mut self.state, sink)
    }
}

/// The settings a point learner's checkpoint must match: the learner's own, by name, and
/// how the input is read: the 1-based columns learned, the 1-based extra column under
/// `extra` (`weights`, `labels`) for a command that reads one, `--on-bad-row`, and the size
/// of the figure's sample (part of the state) when plotting.
pub fn point_settings(
    learner: impl Serialize,
    layout: &ColumnLayout,
    extra: Option<&str>,
    options: &RunOptions,
) -> anyhow::Result<Value> {
    let mut settings = serde_json::to_value(learner)?;
    let columns: Vec<usize> = layout.features.iter().map(|i| i + 1).collect();
    settings["columns"] = serde_json::to_value(columns)?;
    if let Some(name) = extra {
        settings[name] = serde_json::to_value(layout.extras.first().map(|i| i + 1))?;
    }
    settings["on_bad_row"] = serde_json::to_value(options.input.on_bad_row)?;
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    settings["plot_points"] = serde_json::to_value(plot_points)?;
    Ok(settings)
}

/// Checks a restored figure sample against this run's: both absent, or both present and
/// the restored one valid.
pub fn check_same_sample<S>(
    mine: Option<&S>,
    theirs: Option<&S>,
    validate: impl FnOnce(&S, &S) -> Result<(), String>,
) -> Result<(), String> {
    match (mine, theirs) {
        (None, None) => Ok(()),
        (Some(mine), Some(theirs)) => validate(mine, theirs),
        _ => Err("its plot sample does not match --plot".to_string()),
    }
}
