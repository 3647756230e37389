//! Online mode: sequential (or mini-batch) k-means over the stream, checkpointed.

use std::io::Write;

use anyhow::Context;
use ndarray::{ArrayView1, ArrayView2};
use pacstream::OnlineLearner;
use pacstream::describe::{Describe, StreamTotals};
use pacstream::eval::{Prequential, Totals};
use pacstream::kmeans::{
    SequentialKMeans, SequentialKMeansConfig, SequentialKMeansStep, SequentialKMeansSummary,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{KMeansArgs, library_error};
use crate::commands::clusters::{Axes, draw_sample_clusters, write_centres_table};
use crate::commands::{
    InputSummary, human_number, no_good_rows, plural, report_heading, short_name, stream_input,
    write_summary,
};
use crate::io::reader::{ColumnLayout, InputProgress, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::RunOptions;
use crate::plot::{LossCurve, RowSample, ThinnedSeries};
use crate::point_state;
use crate::stream::{PointFamily, PointTask, check_same_sample, point_fault, point_settings};
use crate::ui::{Notes, report_writer};

point_state!(
    /// Everything a checkpoint holds about an online k-means run.
    OnlineState<SequentialKMeans> {
        /// What `--plot` will draw, kept in bounded memory.
        plot: Option<PlotSample>,
    }
);

/// A bounded picture of the stream for `--plot`: a uniform sample of the points and the
/// running average loss, (round t, mean loss) indexed by scored rounds.
#[derive(Debug, Serialize, Deserialize)]
struct PlotSample {
    rows: RowSample,
    curve: ThinnedSeries<(u64, f64)>,
}

impl PlotSample {
    fn new(capacity: usize, dim: usize, seed: u64) -> Self {
        Self {
            rows: RowSample::new(capacity, dim, seed),
            curve: ThinnedSeries::default(),
        }
    }

    fn add(&mut self, point: &[f64], number: u64, totals: &Totals) {
        self.rows.add(point, number);
        if let Some(mean) = totals.mean_loss() {
            self.curve.push(totals.scored_rounds, (totals.round, mean));
        }
    }

    /// Checks a sample read from a checkpoint, so that drawing it cannot fail.
    fn validate(&self, capacity: usize, dim: usize) -> Result<(), String> {
        self.rows.validate(capacity, dim)?;
        self.curve.validate(|(_, mean)| mean.is_finite())
    }
}

/// Online k-means's hooks: one row at a time, or mini-batches.
#[derive(Debug)]
struct OnlineKMeans {
    config: SequentialKMeansConfig,
    dim: usize,
    weighted: bool,
    batch_size: Option<usize>,
    /// The rows of the mini-batch being filled (values, weights, data row numbers).
    batch_values: Vec<f64>,
    batch_weights: Vec<f64>,
    batch_numbers: Vec<u64>,
}

/// Accounts a step and writes its record.
fn account(
    state: &mut OnlineState,
    step: &SequentialKMeansStep,
    point: &[f64],
    number: u64,
    sink: &mut RecordSink,
) -> anyhow::Result<()> {
    let totals = state.account(step);
    sink.write(&state.learner.record(step, &totals))?;
    if let Some(sample) = &mut state.plot {
        sample.add(point, number, &totals);
    }
    Ok(())
}

impl OnlineKMeans {
    fn learn_batch(
        &mut self,
        state: &mut OnlineState,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let rows = self.batch_numbers.len();
        if rows > 0 {
            let view = ArrayView2::from_shape((rows, self.dim), &self.batch_values)
                .context("invariant: every row has the number of columns")?;
            let weight_view = self.weighted.then(|| ArrayView1::from(&self.batch_weights));
            let steps = state
                .learner
                .learn_batch(view, weight_view)
                .map_err(library_error)?;
            let points = self.batch_values.chunks_exact(self.dim);
            for ((step, point), &number) in steps.iter().zip(points).zip(&self.batch_numbers) {
                account(state, step, point, number, sink)?;
            }
        }
        self.batch_values.clear();
        self.batch_weights.clear();
        self.batch_numbers.clear();
        Ok(())
    }
}

impl PointFamily for OnlineKMeans {
    const COMMAND: &'static str = "kmeans";
    type State = OnlineState;

    fn same_config(&self, learner: &SequentialKMeans) -> bool {
        learner.config() == &self.config
    }

    fn check_extra(
        &self,
        mine: &OnlineState,
        theirs: &OnlineState,
        dim: usize,
    ) -> Result<(), String> {
        check_same_sample(mine.plot.as_ref(), theirs.plot.as_ref(), |mine, theirs| {
            theirs.validate(mine.rows.capacity(), dim)
        })
    }

    fn learn(
        &mut self,
        state: &mut OnlineState,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let weight = row.extras.first().copied();
        match self.batch_size {
            None => {
                let step = match weight {
                    Some(weight) => state.learner.learn_one_weighted(row.values, weight),
                    None => state.learner.learn_one(row.values),
                }
                .map_err(|e| point_fault(e, 0, library_error))?;
                account(state, &step, row.values, row.number, sink)
            }
            Some(size) => {
                self.batch_values.extend_from_slice(row.values);
                self.batch_weights.push(weight.unwrap_or(1.0));
                self.batch_numbers.push(row.number);
                if self.batch_numbers.len() >= size {
                    self.learn_batch(state, sink)?;
                }
                Ok(())
            }
        }
    }

    fn is_settled(&self) -> bool {
        self.batch_numbers.is_empty()
    }

    fn finish(&mut self, state: &mut OnlineState, sink: &mut RecordSink) -> anyhow::Result<()> {
        self.learn_batch(state, sink)
    }
}

#[derive(Serialize)]
struct OnlineSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    #[serde(flatten)]
    run: SequentialKMeansSummary<'a>,
}

pub(super) fn run(
    args: &KMeansArgs,
    options: &RunOptions,
    config: SequentialKMeansConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    let batch_size = match args.online_mode.batch_size {
        Some(size) => Some(usize::try_from(size).context("--batch-size is too large")?),
        None => None,
    };
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    let learner = config.build();
    let settings = online_settings(args, &learner, &layout, options)?;
    let mut task = PointTask {
        family: OnlineKMeans {
            config,
            dim,
            weighted: !layout.extras.is_empty(),
            batch_size,
            batch_values: Vec::new(),
            batch_weights: Vec::new(),
            batch_numbers: Vec::new(),
        },
        settings,
        dim,
        state: OnlineState {
            learner,
            totals: Prequential::new(),
            last: None,
            plot: plot_points.map(|capacity| PlotSample::new(capacity, dim, options.seed)),
        },
    };
    let input = stream_input(&mut task, &mut reader, options, notes)?;
    let state = &task.state;
    let learner = &state.learner;
    let last = state.last;
    report_and_summary(
        options,
        &reader,
        &input,
        &task.settings,
        learner,
        (&state.totals, last.as_ref()),
    )?;
    let Some(centres) = learner.centres() else {
        return Ok(());
    };

    if let (Some(path), Some(sample)) = (&options.plot, &state.plot) {
        let mut curve: Vec<(f64, f64)> = sample
            .curve
            .points()
            .iter()
            .map(|&(_, (round, mean))| (round as f64, mean))
            .collect();
        if let Some(last) = last
            && let Some(mean) = last.mean_loss()
            && curve.last().is_none_or(|p| p.0 < last.round as f64)
        {
            curve.push((last.round as f64, mean));
        }
        let title = format!(
            "sequential k-means on {}: k = {}, {} rounds",
            short_name(reader.source_name()),
            args.k,
            learner.n_rounds()
        );
        let curve = Some(LossCurve { points: curve });
        draw_sample_clusters(path, &reader, axes, &title, &sample.rows, centres, curve)?;
    }
    Ok(())
}

/// The settings a run's summary (and checkpoint) records: the learner's, how the input is
/// read, the mini-batch size, and the chunk size when one is given.
pub(super) fn online_settings(
    args: &KMeansArgs,
    learner: &SequentialKMeans,
    layout: &ColumnLayout,
    options: &RunOptions,
) -> anyhow::Result<Value> {
    let mut settings = point_settings(learner.settings(), layout, Some("weights"), options)?;
    settings["batch_size"] = serde_json::to_value(args.online_mode.batch_size)?;
    if let Some(chunk_size) = args.online_mode.chunk_size {
        settings["chunk_size"] = serde_json::to_value(chunk_size)?;
    }
    Ok(settings)
}

/// Prints the report and writes the summary of a finished run (a one-process run, or the
/// process holding worker 0 of a cluster); an input with no good row is an error.
pub(super) fn report_and_summary(
    options: &RunOptions,
    reader: &RowReader,
    input: &InputProgress,
    settings: &Value,
    learner: &SequentialKMeans,
    (totals, last): (&Prequential, Option<&Totals>),
) -> anyhow::Result<()> {
    if learner.centres().is_none() {
        return Err(no_good_rows(reader.source_name(), input));
    }
    let run = learner.summary(totals, last);
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_report(&mut out, reader, learner, &run.totals)?;
    }
    let summary = OnlineSummary {
        command: "kmeans",
        mode: "online",
        input: InputSummary::new(reader, input),
        settings,
        run,
    };
    write_summary(options, &summary)
}

fn print_report(
    out: &mut dyn Write,
    reader: &RowReader,
    learner: &SequentialKMeans,
    totals: &StreamTotals,
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    writeln!(
        out,
        "{}, k = {}",
        report_heading("sequential k-means", reader, totals.rounds, "round"),
        learner.config().n_clusters()
    )?;
    writeln!(
        out,
        "  cumulative loss        {} over {}",
        human_number(totals.cumulative_loss),
        plural(totals.scored_rounds, "scored round")
    )?;
    if let Some(mean) = totals.mean_loss {
        writeln!(out, "  mean loss per round    {}", human_number(mean))?;
    }
    let report = learner.report();
    match report.warmup_inertia {
        Some(inertia) => writeln!(out, "  warm-up inertia        {}", human_number(inertia))?,
        None => writeln!(
            out,
            "  warm-up                not finished: fewer rows than --init-size ({})",
            learner.config().init_size()
        )?,
    }
    writeln!(out, "  reassignments          {}", report.reassignments)?;
    if let Some(centres) = learner.centres() {
        let counts = learner.counts();
        write_centres_table(out, labels, centres, "count", |j| {
            counts
                .get(j)
                .map_or_else(|| "-".to_string(), |c| human_number(*c))
        })?;
    }
    Ok(())
}
