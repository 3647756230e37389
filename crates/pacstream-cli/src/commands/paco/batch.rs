//! `--batch`: one chain on the whole data set.

use std::io::Write;
use std::time::Instant;

use pacstream::kmeans::centre_rows;
use pacstream::paco::{PacoConfig, PacoSettings, SamplerReport};
use serde::Serialize;

use super::library_error;
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
    settings: PacoSettings,
    n_clusters: usize,
    centres: Vec<Vec<f64>>,
    cluster_sizes: Vec<u64>,
    radius: f64,
    origin: &'a [f64],
    report: &'a SamplerReport,
    fit_seconds: f64,
}

pub(super) fn run(
    options: &RunOptions,
    config: &PacoConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let rows = BatchRows::read(&mut reader, notes)?;
    let n = rows.len();
    let data = rows.view()?;
    let started = Instant::now();
    let fit = config.fit(data).map_err(library_error)?;
    let fit_seconds = started.elapsed().as_secs_f64();
    let centres = fit.centres();
    let labels = fit.labels();
    let k = centres.n_centres();
    let sizes = cluster_sizes(labels, k);
    let report = fit.report();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        let feature_labels = &reader.layout().feature_labels;
        writeln!(
            out,
            "{}",
            report_heading("PACBO (batch)", &reader, n as u64, "row")
        )?;
        writeln!(out, "  clusters found         {k}")?;
        writeln!(
            out,
            "  acceptance rate        {}% of {} iterations",
            human_number(100.0 * report.acceptance_rate),
            report.iterations
        )?;
        writeln!(
            out,
            "  radius R               {}",
            human_number(fit.frame().radius())
        )?;
        write_batch_report_end(&mut out, fit_seconds, feature_labels, centres, &sizes)?;
    }
    let summary = BatchSummary {
        command: "paco",
        mode: "batch",
        input: InputSummary::labelled(&reader, &rows.input),
        settings: config.settings(),
        n_clusters: k,
        centres: centre_rows(centres),
        cluster_sizes: sizes,
        radius: fit.frame().radius(),
        origin: fit.frame().origin(),
        report,
        fit_seconds,
    };
    rows.write_outputs(options, &reader, axes, centres, labels, &summary, || {
        format!(
            "PACBO (batch) on {}: k̂ = {k}",
            short_name(reader.source_name())
        )
    })
}
