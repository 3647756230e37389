//! Batch mode: every row read, one fit, the label of every row.

use std::io::Write;
use std::time::Instant;

use ndarray::ArrayView1;
use pacstream::kmeans::{Centres, KMeansConfig, KMeansReport, KMeansSettings, centre_rows};
use serde::Serialize;

use super::{KMeansArgs, library_error};
use crate::commands::clusters::{Axes, BatchRows, cluster_sizes, write_batch_report_end};
use crate::commands::{InputSummary, human_number, report_heading, short_name};
use crate::io::reader::RowReader;
use crate::options::RunOptions;
use crate::ui::{Notes, report_writer};

#[derive(Serialize)]
struct BatchSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: KMeansSettings,
    centres: Vec<Vec<f64>>,
    cluster_sizes: Vec<u64>,
    cluster_weights: Option<Vec<f64>>,
    report: &'a KMeansReport,
    /// Wall time of the library's fit call alone, in seconds.
    fit_seconds: f64,
}

pub(super) fn run(
    args: &KMeansArgs,
    options: &RunOptions,
    config: &KMeansConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let weighted = !reader.layout().extras.is_empty();
    let rows = BatchRows::read(&mut reader, notes)?;
    let n = rows.len();
    let data = rows.view()?;
    let weights = &rows.extras;
    // Every fit on small pages, whatever the size of the data: a fresh process's buffers
    // are all new memory, and on 2 MiB pages a 0.9 MiB data set's fit sometimes spent most
    // of its time zeroing them (see `crate::memory`).
    crate::memory::prefer_small_pages();
    // Start the worker threads first: `fit_seconds` times the fit, not the thread pool's
    // start-up, which a long-lived program pays once.
    rayon::broadcast(|_| ());
    let started = Instant::now();
    let fit = if weighted {
        config.fit_weighted(data, ArrayView1::from(weights))
    } else {
        config.fit(data)
    }
    .map_err(library_error)?;
    let fit_seconds = started.elapsed().as_secs_f64();

    let centres = fit.centres();
    let labels = fit.labels();
    let k = centres.n_centres();
    let sizes = cluster_sizes(labels, k);
    let mut cluster_weights = vec![0.0; k];
    if weighted {
        for (index, &label) in labels.iter().enumerate() {
            cluster_weights[label] += weights[index];
        }
    }
    let report = fit.report();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_report(
            &mut out,
            &reader,
            n,
            args.k,
            report,
            fit_seconds,
            centres,
            &sizes,
        )?;
    }
    let summary = BatchSummary {
        command: "kmeans",
        mode: "batch",
        input: InputSummary::new(&reader, &rows.input),
        settings: config.settings(),
        centres: centre_rows(centres),
        cluster_sizes: sizes,
        cluster_weights: weighted.then_some(cluster_weights),
        report,
        fit_seconds,
    };
    rows.write_outputs(options, &reader, axes, centres, labels, &summary, || {
        format!(
            "k-means on {}: k = {k}, inertia {}",
            short_name(reader.source_name()),
            human_number(report.inertia)
        )
    })
}

#[allow(clippy::too_many_arguments, reason = "one report, every part of it")]
fn print_report(
    out: &mut dyn Write,
    reader: &RowReader,
    n: usize,
    k: usize,
    report: &KMeansReport,
    fit_seconds: f64,
    centres: &Centres,
    sizes: &[u64],
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    writeln!(
        out,
        "{}, k = {k}",
        report_heading("k-means", reader, n as u64, "row")
    )?;
    writeln!(
        out,
        "  inertia                {}",
        human_number(report.inertia)
    )?;
    writeln!(
        out,
        "  iterations             {} ({})",
        report.n_iter,
        if report.converged {
            "converged"
        } else {
            "not converged: --max-iter reached"
        }
    )?;
    writeln!(
        out,
        "  restarts               {} (best: {})",
        report.n_init,
        report.best_init + 1
    )?;
    writeln!(
        out,
        "  empty-cluster re-seeds {}",
        report.empty_cluster_reseeds
    )?;
    writeln!(
        out,
        "  duplicate centres      {}",
        if report.duplicate_centres {
            "yes: fewer distinct points than k"
        } else {
            "no"
        }
    )?;
    write_batch_report_end(out, fit_seconds, labels, centres, sizes)
}
