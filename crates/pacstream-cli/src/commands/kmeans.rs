//! `pacstream kmeans`: batch k-means (seeding, then Lloyd's iterations) or, with `--online`,
//! sequential k-means over a stream.
//!
//! Batch mode reads every row into memory, fits, prints the report, and writes the labels
//! (`--output`: row, label, squared distance), the centres and report (`--summary`, with the
//! wall time of the fit alone as `fit_seconds`) and a figure (`--plot`).
//!
//! Online mode streams the rows through [`SequentialKMeans`] in constant memory, writes one
//! record per round (t, label, loss, cumulative loss; the loss of round 1 is undefined), the
//! final centres and totals, and can checkpoint and resume.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use ndarray::{ArrayView1, ArrayView2};
use pacstream::OnlineLearner;
use pacstream::describe::{Describe, StreamTotals};
use pacstream::eval::{Prequential, Totals};
use pacstream::geometry::squared_distance;
use pacstream::kmeans::{
    Centres, InitMethod, KMeansConfig, KMeansParams, KMeansReport, KMeansSettings,
    SequentialKMeans, SequentialKMeansConfig, SequentialKMeansParams, SequentialKMeansSettings,
    SequentialKMeansStep, SequentialKMeansSummary, centre_rows,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::clusters::Axes;
use super::clusters::{cluster_figure, write_centres_table};
use super::{
    InputSummary, human_number, human_seconds, no_good_rows, note_skipped, plural, short_name,
    stream_input, write_summary,
};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::parse_selector;
use crate::io::reader::{ExtraColumn, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{BadRowPolicy, CommonArgs, RunOptions};
use crate::plot::{LossCurve, RowSample, ThinnedSeries, draw_clusters};
use crate::point_state;
use crate::stream::{PointFamily, PointTask, check_same_sample, point_fault};
use crate::ui::{Notes, Progress, report_writer};

/// Arguments of `pacstream kmeans`.
#[derive(Args, Debug, Clone)]
#[command(
    about = "Cluster points with k-means (batch) or sequential k-means (--online)",
    long_about = "Cluster points with k-means.\n\n\
        Batch mode (the default) reads every row, seeds the centres (greedy k-means++ by \
        default), runs Lloyd's iterations, prints a report, and writes the label of every row \
        (--output), the centres (--summary) and a figure (--plot).\n\n\
        Online mode (--online) learns from the stream one row at a time in constant memory: \
        the first --init-size rows are buffered and fitted, then every row pays the squared \
        distance to its nearest centre and moves that centre (a running mean). --output gets \
        one record per round: t, label, loss, cumulative_loss (the loss of round 1 is \
        undefined: null in JSON, empty in CSV; during the warm-up, labels index the distinct \
        points seen so far). Long runs can be checkpointed and resumed.",
    after_help = "Examples:\n  \
        pacstream kmeans --k 2 data/faithful.csv --plot faithful.svg\n  \
        pacstream kmeans --k 3 --online data/xclara.csv -o rounds.csv --summary model.json"
)]
pub struct KMeansArgs {
    /// The number of clusters (1 to 10,000).
    #[arg(long = "k", id = "n_clusters", value_name = "K")]
    pub k: usize,

    /// How the first centres are chosen.
    #[arg(long, value_enum, default_value = "greedy++", value_name = "METHOD")]
    pub init: InitMethod,

    /// Batch restarts, each from its own seeding; the lowest inertia wins (1 to 1,000;
    /// default 1, or 10 with --init random).
    #[arg(long, value_name = "N", conflicts_with = "online")]
    pub n_init: Option<usize>,

    /// The largest number of Lloyd iterations per restart (1 to 1,000,000) [default: 300].
    #[arg(long, value_name = "M", conflicts_with = "online")]
    pub max_iter: Option<usize>,

    /// Stop Lloyd's iterations once at most a fraction T of the points (by weight) changed
    /// cluster in a pass; 0: until no label changes [default: 1e-4].
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "online",
        allow_negative_numbers = true
    )]
    pub tol: Option<f64>,

    /// Learn from the stream, one row at a time (sequential k-means).
    #[arg(long)]
    pub online: bool,

    /// Forget old points: a point's weight in its centre halves every H rows.
    #[arg(
        long = "decay",
        id = "decay_half_life",
        value_name = "H",
        requires = "online",
        help_heading = "Online mode"
    )]
    pub decay: Option<f64>,

    /// Learn mini-batches of B rows (Sculley's mini-batch k-means) instead of one at a time
    /// (1 to 1,000,000).
    #[arg(long, value_name = "B", requires = "online", help_heading = "Online mode",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: Option<u64>,

    /// Rows buffered and fitted before the first update (k to 10,000,000) [default: 10·k].
    #[arg(
        long,
        value_name = "N",
        requires = "online",
        help_heading = "Online mode"
    )]
    pub init_size: Option<usize>,

    /// Move a centre whose count falls below R × the largest count to a recent, badly served
    /// point (0 = never).
    #[arg(
        long,
        value_name = "R",
        requires = "online",
        help_heading = "Online mode"
    )]
    pub reassignment_ratio: Option<f64>,

    /// A column of sample weights (name or 1-based index; values finite and >= 0).
    #[arg(long, value_name = "COL", help_heading = "Input")]
    pub weights: Option<String>,

    /// The two columns drawn by --plot (default: the first two columns clustered).
    #[arg(
        long,
        value_name = "COL,COL",
        requires = "plot",
        help_heading = "Output"
    )]
    pub axes: Option<String>,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `pacstream kmeans`.
pub fn run(args: &KMeansArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate()?;
    // Rows the library would refuse are refused (or skipped) by the reader, by line.
    options.input.max_magnitude = Some(pacstream::data::MAX_COORDINATE);
    let checkpoints = &options.checkpoints;
    if !args.online && (checkpoints.save.is_some() || checkpoints.resume.is_some()) {
        return Err(bad_input(
            "--checkpoint and --resume apply to --online runs; a batch fit is not a stream",
        ));
    }
    let notes = Notes::new(options.quiet);
    let extra_columns = match &args.weights {
        Some(text) => vec![ExtraColumn {
            option: "--weights",
            selector: parse_selector(text).map_err(|r| bad_input(format!("--weights: {r}")))?,
            non_negative: true,
        }],
        None => Vec::new(),
    };
    // Settings are checked before any data is read, so a typo fails at once.
    if args.online {
        let config = online_config(args, options.seed)?;
        let reader = RowReader::open(&options.input, &extra_columns, notes)?;
        let axes = Axes::choose(args.axes.as_deref(), &reader)?;
        run_online(args, &options, config, reader, axes, notes)
    } else {
        let config = batch_config(args, options.seed)?;
        let reader = RowReader::open(&options.input, &extra_columns, notes)?;
        let axes = Axes::choose(args.axes.as_deref(), &reader)?;
        run_batch(args, &options, &config, reader, axes, notes)
    }
}

fn batch_config(args: &KMeansArgs, seed: u64) -> anyhow::Result<KMeansConfig> {
    let mut params = KMeansParams::new(args.k)
        .init(args.init.to_init())
        .seed(seed);
    if let Some(n_init) = args.n_init {
        params = params.n_init(n_init);
    }
    if let Some(max_iter) = args.max_iter {
        params = params.max_iter(max_iter);
    }
    if let Some(tol) = args.tol {
        params = params.tol(tol);
    }
    params.check().map_err(library_error)
}

fn online_config(args: &KMeansArgs, seed: u64) -> anyhow::Result<SequentialKMeansConfig> {
    let mut params = SequentialKMeansParams::new(args.k)
        .init(args.init.to_init())
        .seed(seed);
    if let Some(init_size) = args.init_size {
        params = params.init_size(init_size);
    }
    if let Some(half_life) = args.decay {
        params = params.decay_half_life(half_life);
    }
    if let Some(ratio) = args.reassignment_ratio {
        params = params.reassignment_ratio(ratio);
    }
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<KMeansArgs>("k-means", error)
}

// ---------------------------------------------------------------------------------------
// Batch mode

/// One `--output` record of batch mode.
#[derive(Serialize)]
struct LabelRecord {
    /// The data row number in the input (1-based; skipped bad rows are counted).
    row: u64,
    /// The index of the row's centre in the summary's `centres`.
    label: usize,
    /// The squared distance from the row to its centre.
    squared_distance: f64,
}

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

fn run_batch(
    args: &KMeansArgs,
    options: &RunOptions,
    config: &KMeansConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let dim = reader.layout().features.len();
    let weighted = !reader.layout().extras.is_empty();
    let mut values = Vec::new();
    let mut numbers = Vec::new();
    let mut weights = Vec::new();
    let mut progress = Progress::new(notes, reader.bytes().1);
    while let Some(row) = reader.next_row()? {
        values.extend_from_slice(row.values);
        numbers.push(row.number);
        if let Some(&weight) = row.extras.first() {
            weights.push(weight);
        }
        if numbers.len() % 4096 == 0 {
            progress.update(numbers.len() as u64, reader.bytes().0);
        }
    }
    progress.finish();
    let input = reader.progress();
    note_skipped(notes, &input, reader.source_name());
    let n = numbers.len();
    if n == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    let data = ArrayView2::from_shape((n, dim), &values)
        .context("invariant: every row has the number of columns")?;
    // Start the worker threads first: `fit_seconds` times the fit, not the thread pool's
    // start-up, which a long-lived program pays once.
    rayon::broadcast(|_| ());
    let started = Instant::now();
    let fit = if weighted {
        config.fit_weighted(data, ArrayView1::from(&weights))
    } else {
        config.fit(data)
    }
    .map_err(library_error)?;
    let fit_seconds = started.elapsed().as_secs_f64();

    let centres = fit.centres();
    let labels = fit.labels();
    let mut sink = RecordSink::create(options.output.as_ref())?;
    if sink.is_enabled() {
        for (index, point) in values.chunks_exact(dim).enumerate() {
            let label = labels[index];
            sink.write(&LabelRecord {
                row: numbers[index],
                label,
                squared_distance: squared_distance(point, centres.centre(label)),
            })?;
        }
    }
    sink.finish()?;

    let k = centres.n_centres();
    let mut sizes = vec![0u64; k];
    let mut cluster_weights = vec![0.0; k];
    for (index, &label) in labels.iter().enumerate() {
        sizes[label] += 1;
        if weighted {
            cluster_weights[label] += weights[index];
        }
    }
    let report = fit.report();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_batch_report(
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
        input: InputSummary::new(&reader, &input),
        settings: config.settings(),
        centres: centre_rows(centres),
        cluster_sizes: sizes,
        cluster_weights: weighted.then_some(cluster_weights),
        report,
        fit_seconds,
    };
    write_summary(options, &summary)?;

    if let Some(path) = &options.plot {
        let stride = n.div_ceil(options.plot_points.max(1));
        let sample: Vec<usize> = (0..n).step_by(stride).collect();
        let figure = cluster_figure(
            &reader,
            axes,
            format!(
                "k-means on {}: k = {k}, inertia {}",
                short_name(reader.source_name()),
                human_number(report.inertia)
            ),
            sample
                .iter()
                .map(|&i| (&values[i * dim..(i + 1) * dim], numbers[i])),
            sample.iter().map(|&i| labels[i]),
            centres,
            None,
        );
        write_atomically(path, draw_clusters(&figure)?.as_bytes())?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments, reason = "one report, every part of it")]
fn print_batch_report(
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
        "k-means on '{}': {} × {}, k = {k}",
        reader.source_name(),
        plural(n as u64, "row"),
        plural(labels.len() as u64, "column")
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
    writeln!(
        out,
        "  fit time               {}",
        human_seconds(fit_seconds)
    )?;
    write_centres_table(out, labels, centres, "size", |j| sizes[j].to_string())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Online mode

/// The settings a checkpoint must share with the run that resumes it: the learner's, and
/// how the input is read.
#[derive(Serialize)]
struct OnlineSettings {
    #[serde(flatten)]
    learner: SequentialKMeansSettings,
    batch_size: Option<u64>,
    /// 1-based input columns clustered.
    columns: Vec<usize>,
    /// 1-based input column of the weights.
    weights: Option<usize>,
    on_bad_row: BadRowPolicy,
    /// The size of the plot's reservoir, when plotting (the reservoir is part of the state).
    plot_points: Option<usize>,
}

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

fn run_online(
    args: &KMeansArgs,
    options: &RunOptions,
    config: SequentialKMeansConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    let batch_size = match args.batch_size {
        Some(size) => Some(usize::try_from(size).context("--batch-size is too large")?),
        None => None,
    };
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    let learner = config.build();
    let settings = OnlineSettings {
        learner: learner.settings(),
        batch_size: args.batch_size,
        columns: layout.features.iter().map(|i| i + 1).collect(),
        weights: layout.extras.first().map(|i| i + 1),
        on_bad_row: options.input.on_bad_row,
        plot_points,
    };
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
        settings: serde_json::to_value(&settings)?,
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
    let Some(centres) = learner.centres() else {
        return Err(no_good_rows(reader.source_name(), &input));
    };
    let last = state.last;
    let run = learner.summary(&state.totals, last.as_ref());
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_online_report(&mut out, &reader, learner, &run.totals)?;
    }
    let summary = OnlineSummary {
        command: "kmeans",
        mode: "online",
        input: InputSummary::new(&reader, &input),
        settings: &task.settings,
        run,
    };
    write_summary(options, &summary)?;

    if let (Some(path), Some(sample)) = (&options.plot, &state.plot) {
        let mut curve: Vec<(f64, f64)> = sample
            .curve
            .points()
            .iter()
            .map(|&(_, (round, mean))| (round as f64, mean))
            .collect();
        if let Some(last) = last {
            if let Some(mean) = last.mean_loss() {
                if curve.last().is_none_or(|p| p.0 < last.round as f64) {
                    curve.push((last.round as f64, mean));
                }
            }
        }
        let points: Vec<&[f64]> = sample.rows.points().chunks_exact(dim).collect();
        let figure = cluster_figure(
            &reader,
            axes,
            format!(
                "sequential k-means on {}: k = {}, {} rounds{}",
                short_name(reader.source_name()),
                args.k,
                learner.n_rounds(),
                sample.rows.sampled_note()
            ),
            points
                .iter()
                .copied()
                .zip(sample.rows.numbers().iter().copied()),
            points.iter().map(|p| centres.nearest(p).0),
            centres,
            Some(LossCurve { points: curve }),
        );
        write_atomically(path, draw_clusters(&figure)?.as_bytes())?;
    }
    Ok(())
}

fn print_online_report(
    out: &mut dyn Write,
    reader: &RowReader,
    learner: &SequentialKMeans,
    totals: &StreamTotals,
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    writeln!(
        out,
        "sequential k-means on '{}': {} × {}, k = {}",
        reader.source_name(),
        plural(totals.rounds, "round"),
        plural(labels.len() as u64, "column"),
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
