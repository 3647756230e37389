//! `pacstream kmeans --online --batch-size B` on several workers and processes
//! (`--workers`, `--processes`, `--process`, `--hostfile`) or by chunks (`--chunk-size`):
//! data-parallel mini-batch k-means, run by the code of `pacstream dataflow kmeans`.
//!
//! What it computes (`pacstream_dataflow::kmeans`): each mini-batch of B rows (cut from the
//! first row, as the one-process run cuts it) is summarised by chunks of C rows against the
//! batch's starting centres, the chunks' per-centre sums merged in chunk order and applied.
//! The chunks are positions in the stream, so the bytes written are the same on any number
//! of workers and processes. Without `--chunk-size` a batch is one chunk and that is
//! exactly the one-process `learn_batch`: the records, summary and report are those of
//! `pacstream kmeans --online --batch-size B`. A smaller chunk shares each batch between
//! the workers; its sums are grouped by chunk, which changes the last bits of the centres,
//! so the one-process run to compare with is the one given the same `--chunk-size` (it runs
//! through here on one worker).
//!
//! Sequential k-means (no `--batch-size`) moves a centre after every row, so no two rows
//! can be learned apart: it is refused, as are the options with no counterpart on a
//! cluster (a weight column, a figure, one-process checkpoints, skipped rows, records on
//! standard output or in CSV).

use pacstream::OnlineLearner;
use pacstream::kmeans::SequentialKMeansConfig;
use pacstream_dataflow::RunFiles;
use pacstream_dataflow::kmeans::KMeansJob;

use super::online::{online_settings, report_and_summary};
use super::{KMeansArgs, online_config};
use crate::commands::dataflow::{CsvColumns, flow_error, kmeans_on_cluster};
use crate::commands::scale_out::check_shared_options;
use crate::failure::bad_input;
use crate::io::reader::{InputProgress, RowReader};
use crate::options::RunOptions;
use crate::ui::Notes;

/// Runs `pacstream kmeans` with scale-out options: everything is checked (and every refusal
/// made) before the input is read or anything written.
pub(super) fn run(args: &KMeansArgs, options: &RunOptions, notes: Notes) -> anyhow::Result<()> {
    let refuse = |what: &str| bad_input(format!("kmeans on several workers: {what}"));
    if !args.online {
        return Err(refuse(
            "--workers, --processes and --chunk-size apply to --online --batch-size runs; \
             batch k-means already uses every core of one machine",
        ));
    }
    let Some(batch_size) = args.online_mode.batch_size else {
        return Err(refuse(
            "sequential k-means moves a centre after every row, so no two rows can be \
             learned apart: give --batch-size B for data-parallel mini-batch k-means (the \
             same --batch-size on one process gives the same output)",
        ));
    };
    if args.sample_weights.is_some() {
        return Err(refuse(
            "--sample-weights is not available: the workers' statistics count every row once",
        ));
    }
    let files = check_shared_options(options, "kmeans")?;
    let cluster = args.scale_out.config(&files)?;
    let config: SequentialKMeansConfig = online_config(args, options.seed)?;
    // Both are at most 1,000,000 (clap checks it), below the dataflow's own limit.
    let batch_size = usize::try_from(batch_size)?;
    let chunk_size = match args.online_mode.chunk_size {
        Some(size) => usize::try_from(size)?,
        None => batch_size,
    };
    let job = KMeansJob {
        config: config.clone(),
        batch_size,
        chunk_size,
    };
    job.check().map_err(flow_error)?;

    let reader = RowReader::open(&options.input, &[], notes)?;
    let layout = reader.layout();
    let (delimiter, has_header) = reader.dialect();
    let columns = CsvColumns::from_layout(
        &files.input,
        None,
        layout.features.clone(),
        layout.feature_labels.clone(),
        delimiter,
        has_header,
    );
    let run_files = RunFiles {
        records: files.records.clone(),
        checkpoints: None,
        summary: options.summary.is_some(),
    };
    let Some(outcome) = kmeans_on_cluster(cluster, job, columns, run_files)? else {
        // Another process holds worker 0: it writes the outputs.
        return Ok(());
    };
    let learner = &outcome.learner;
    let settings = online_settings(args, &config.build(), layout, options)?;
    let input = InputProgress {
        rows_consumed: learner.n_rounds(),
        ..InputProgress::default()
    };
    report_and_summary(
        options,
        &reader,
        &input,
        &settings,
        learner,
        (&outcome.totals, outcome.last.as_ref()),
    )
}
