//! `pacstream experts --key COLUMN`: one aggregator per key, the keys spread over the
//! workers (`--workers`) and processes (`--processes`, `--process`, `--hostfile`) by the
//! keyed operator of `pacstream dataflow keyed`.
//!
//! Each key's aggregator is built from the same validated settings as a one-process
//! `pacstream experts` run and sees its key's rows in stream order, so its rounds and its
//! summary are those of `pacstream experts` on that key's rows alone. The files are the
//! keyed operator's, the same bytes on any number of workers and processes: `--output`
//! holds one JSON line per row, in input order, `{"key": ...,` then the record of the
//! round the one-process command writes (the library's `AggregatorRecord`); `--summary` one
//! object, key → the one-process command's summary document, in key order (its `input`
//! names the keyed file, its columns and the key's rows).
//!
//! Refused (exit code 2, nothing written), with the reason: `--losses`, `--weights`, the
//! figures, sleeping experts (`<expert>_awake` columns; an empty cell is a bad row here),
//! and the shared options a cluster has no counterpart for.

use std::cell::Cell;
use std::sync::Arc;

use pacstream::experts::{Aggregator, AnyAggregator};
use pacstream_dataflow::RunFiles;
use pacstream_dataflow::keyed::{AggregatorFamily, KeyedFamily, summary_entry};
use serde_json::Value;

use super::columns::plan_columns;
use super::config::aggregator_config;
use super::task::Settings;
use super::{ExpertsArgs, ExpertsSummary};
use crate::commands::InputSummary;
use crate::commands::dataflow::{CsvColumns, keyed};
use crate::commands::scale_out::check_shared_options;
use crate::failure::bad_input;
use crate::io::columns::parse_selector;
use crate::io::reader::{FirstRow, RowReader};
use crate::ui::Notes;

/// Rows per epoch of the keyed operator (the output does not depend on it). Each epoch is
/// two or three rounds in which every worker waits for the slowest: at 4,096 rows those
/// waits were a large part of a 2-worker run's time (docs/benchmarks.md, Scale-out); at
/// 65,536 (about 5 MB of input held at once) they are a small part of the epoch.
const EPOCH_SIZE: usize = 65_536;

/// Runs `pacstream experts --key` (or refuses the scale-out options it cannot honour).
pub(super) fn run(args: &ExpertsArgs) -> anyhow::Result<()> {
    let refuse = |what: &str| bad_input(format!("experts on several workers: {what}"));
    let Some(key) = &args.key else {
        return Err(refuse(
            "--workers and --processes spread keyed aggregators over the workers: name the \
             key column with --key (one aggregator per key)",
        ));
    };
    if args.losses {
        return Err(refuse(
            "--losses is not available with --key: a keyed row holds the experts' advice \
             and the outcome",
        ));
    }
    if args.weights {
        return Err(refuse(
            "--weights is not available with --key: the records are the library's round \
             records",
        ));
    }
    if args.plot_loss.is_some() || args.plot_contributions.is_some() {
        return Err(refuse(
            "--plot-loss and --plot-contributions draw one aggregator; draw a key's with a \
             one-process run on its rows",
        ));
    }
    let key_selector = parse_selector(key).map_err(|r| bad_input(format!("--key: {r}")))?;
    let options = args.common.validate()?;
    let files = check_shared_options(&options, "experts")?;
    let cluster = args.scale_out.config(&files)?;

    let key_index = Cell::new(0);
    let plan = |first: &FirstRow<'_>| {
        let key = first
            .names
            .resolve_one(&key_selector)
            .map_err(|r| bad_input(format!("--key: {r}")))?;
        let (features, columns) = plan_columns(args, first)?;
        if columns.masks.iter().any(Option::is_some) {
            return Err(refuse(
                "sleeping experts (<expert>_awake columns) are not available with --key",
            ));
        }
        if features.first() == Some(&key) {
            return Err(bad_input("--outcome and --key name the same column"));
        }
        if args.experts.is_some() && features.contains(&key) {
            return Err(bad_input(format!(
                "--experts: column {} is the --key column",
                first.names.describe(key)
            )));
        }
        key_index.set(key);
        // A numeric key column is not an expert.
        Ok(features.into_iter().filter(|&i| i != key).collect())
    };
    let reader = RowReader::open_with(&options.input, &[], Notes::new(options.quiet), Some(&plan))?;
    let layout = reader.layout();
    let n_experts = layout.features.len().saturating_sub(1);
    if n_experts == 0 {
        return Err(bad_input("--key: no expert column is left besides the key"));
    }
    let config = aggregator_config(args, n_experts, options.seed)?;
    // The library's keyed rows are the advice, then the outcome.
    let values = layout.features[1..]
        .iter()
        .chain(&layout.features[..1])
        .copied()
        .collect();
    let labels = &layout.feature_labels;
    let names: Vec<String> = labels[1..].to_vec();
    let value_names = names.iter().chain(&labels[..1]).cloned().collect();
    let (delimiter, has_header) = reader.dialect();
    let columns = CsvColumns::from_layout(
        &files.input,
        Some(key_index.get()),
        values,
        value_names,
        delimiter,
        has_header,
    );
    let settings = serde_json::to_value(Settings {
        rule: &config,
        columns: layout.features.iter().map(|i| i + 1).collect(),
        weights: false,
        on_bad_row: args.common.input_options.on_bad_row,
    })?;
    let family = Arc::new(CommandFamily {
        aggregators: AggregatorFamily { config, names },
        settings,
        source: reader.source_name().to_string(),
        columns: labels.clone(),
    });
    let run_files = RunFiles {
        records: files.records.clone(),
        checkpoints: None,
        summary: options.summary.is_some(),
    };
    // The document (366 MB at 10^5 keys) is written as the workers print it, then a newline
    // as after every summary of the command.
    let summary = options.summary.as_ref();
    keyed(
        cluster, columns, family, EPOCH_SIZE, run_files, summary, b"\n",
    )?;
    Ok(())
}

/// The keyed aggregators of the command: the dataflow operator's family (its records are
/// the library's [`pacstream::experts::AggregatorRecord`], as the one-process command
/// writes them), with the one-process command's summary for each key: the command, the
/// input (this file, its columns and the key's rows), the settings, and the run.
struct CommandFamily {
    aggregators: AggregatorFamily,
    settings: Value,
    source: String,
    columns: Vec<String>,
}

impl KeyedFamily for CommandFamily {
    type State = AnyAggregator;

    fn build(&self) -> pacstream_dataflow::Result<AnyAggregator> {
        self.aggregators.build()
    }

    fn learn(
        &self,
        state: &mut AnyAggregator,
        row: &[f64],
        record: Option<&mut Vec<u8>>,
    ) -> pacstream_dataflow::Result<()> {
        self.aggregators.learn(state, row, record)
    }

    fn summary_entry(
        &self,
        key: &str,
        state: &AnyAggregator,
        out: &mut Vec<u8>,
    ) -> pacstream_dataflow::Result<()> {
        let summary = ExpertsSummary {
            command: "experts",
            input: InputSummary::of_rows(&self.source, &self.columns, state.rounds()),
            settings: &self.settings,
            run: self
                .aggregators
                .config
                .summary(state.as_dyn(), &self.aggregators.names),
        };
        summary_entry(key, &summary, out)
    }
}
