//! One module per command family. Each turns its arguments into validated library settings,
//! runs the library, and writes what the shared options ask for.

pub mod clusters;
pub mod curve;
pub mod dataflow;
pub mod experts;
pub mod kmeans;
pub mod paco;
pub mod project;
pub mod scale_out;

use serde::Serialize;

use crate::failure::bad_input;
use crate::io::atomic::write_document;
use crate::io::reader::{InputProgress, RowReader};
use crate::options::RunOptions;
use crate::stream::{StreamTask, run_stream};
use crate::ui::Notes;

/// Sets an option the user may leave out on a library builder, keeping the library's
/// default otherwise: `params.given(args.delta, PrincipalCurveParams::delta)`.
pub trait Given: Sized {
    /// `set(self, value)` when there is a value, else `self`.
    #[must_use]
    fn given<T>(self, value: Option<T>, set: impl FnOnce(Self, T) -> Self) -> Self {
        match value {
            Some(value) => set(self, value),
            None => self,
        }
    }
}

impl<P> Given for P {}

/// What the summary says of the input. The first extra column is the weights column of
/// the commands that weigh rows, or the labels column of those that compare with labels.
#[derive(Debug, Serialize)]
pub struct InputSummary<'a> {
    source: &'a str,
    columns: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    weights: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<String>,
    rows: u64,
    bad_rows_skipped: u64,
}

impl<'a> InputSummary<'a> {
    /// The input of a command whose extra column, if any, holds weights.
    pub fn new(reader: &'a RowReader, progress: &InputProgress) -> Self {
        let layout = reader.layout();
        Self {
            source: reader.source_name(),
            columns: &layout.feature_labels,
            weights: layout
                .extras
                .first()
                .map(|&index| reader.column_names().label(index)),
            labels: None,
            rows: progress.rows_consumed - progress.bad_rows_skipped,
            bad_rows_skipped: progress.bad_rows_skipped,
        }
    }

    /// The input of a run that learned `rows` rows of `source` (read from its columns
    /// `columns`), no row skipped and no extra column: one key's share of a keyed run.
    pub fn of_rows(source: &'a str, columns: &'a [String], rows: u64) -> Self {
        Self {
            source,
            columns,
            weights: None,
            labels: None,
            rows,
            bad_rows_skipped: 0,
        }
    }

    /// The input of a command whose extra column, if any, holds labels.
    pub fn labelled(reader: &'a RowReader, progress: &InputProgress) -> Self {
        let mut summary = Self::new(reader, progress);
        summary.labels = summary.weights.take();
        summary
    }
}

/// Notes the bad rows skipped, if any.
pub fn note_skipped(notes: Notes, progress: &InputProgress, source: &str) {
    if progress.bad_rows_skipped > 0 {
        notes.note(format!(
            "skipped {} bad row{} of '{source}' (of {} data rows)",
            progress.bad_rows_skipped,
            if progress.bad_rows_skipped == 1 {
                ""
            } else {
                "s"
            },
            progress.rows_consumed
        ));
    }
}

/// Streams the rest of the input through `task` ([`run_stream`] with the run's output and
/// checkpoints), then notes the bad rows skipped.
pub fn stream_input<T: StreamTask>(
    task: &mut T,
    reader: &mut RowReader,
    options: &RunOptions,
    notes: Notes,
) -> anyhow::Result<InputProgress> {
    let input = run_stream(
        task,
        reader,
        options.output.as_ref(),
        &options.checkpoints,
        notes,
    )?;
    note_skipped(notes, &input, reader.source_name());
    Ok(input)
}

/// The error of an input whose every row was bad.
pub fn no_good_rows(source: &str, progress: &InputProgress) -> anyhow::Error {
    bad_input(format!(
        "'{source}' has no good rows to learn from: all {} data rows were bad and skipped",
        progress.rows_consumed
    ))
}

/// Writes the summary and, for a file, says nothing more; `-` prints it.
pub fn write_summary(options: &RunOptions, summary: &impl Serialize) -> anyhow::Result<()> {
    if let Some(target) = &options.summary {
        let mut bytes = serde_json::to_vec_pretty(summary)?;
        bytes.push(b'\n');
        write_document(target, &bytes)?;
    }
    Ok(())
}

/// A number for a human-readable report: six significant digits, plain notation for
/// everyday magnitudes and scientific notation otherwise.
pub fn human_number(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let decimals = if value == 0.0 {
            0
        } else {
            (5 - magnitude.log10().floor() as i32).clamp(0, 9) as usize
        };
        let text = format!("{value:.decimals$}");
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    } else {
        format!("{value:.5e}")
    }
}

/// The first line of a point learner's report: `WHAT on 'INPUT': N rows × D columns`
/// (`unit`: `row` for a batch fit, `round` for a stream).
pub fn report_heading(what: &str, reader: &RowReader, count: u64, unit: &str) -> String {
    format!(
        "{what} on '{}': {} × {}",
        reader.source_name(),
        plural(count, unit),
        plural(reader.layout().feature_labels.len() as u64, "column")
    )
}

/// `1 row`, `2 rows`.
pub fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// A duration for a human-readable report.
pub fn human_seconds(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{} µs", human_number(seconds * 1e6))
    } else if seconds < 1.0 {
        format!("{} ms", human_number(seconds * 1e3))
    } else {
        format!("{} s", human_number(seconds))
    }
}

/// The file name of a source, for titles.
pub fn short_name(source: &str) -> &str {
    std::path::Path::new(source)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(source)
}

#[cfg(test)]
mod tests {
    use super::human_number;

    #[test]
    fn numbers_read_well() {
        assert_eq!(human_number(0.0), "0");
        assert_eq!(human_number(8901.768852), "8901.77");
        assert_eq!(human_number(3.5), "3.5");
        assert_eq!(human_number(-0.0123456789), "-0.0123457");
        assert_eq!(human_number(1.5e-9), "1.50000e-9");
        assert_eq!(human_number(2.0e12), "2.00000e12");
    }
}
