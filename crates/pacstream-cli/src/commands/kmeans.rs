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
use clap::{Args, ValueEnum};
use ndarray::{ArrayView1, ArrayView2};
use pacstream::eval::{Prequential, Totals};
use pacstream::geometry::squared_distance;
use pacstream::kmeans::{
    Centres, Init, KMeansConfig, KMeansParams, KMeansReport, SequentialKMeans,
    SequentialKMeansConfig, SequentialKMeansParams, SequentialKMeansReport, SequentialKMeansStep,
};
use pacstream::{OnlineLearner, UnsupervisedLearner};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    InputSummary, human_number, human_seconds, no_good_rows, note_skipped, plot_axes, plural,
    short_name, write_summary,
};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::parse_selector;
use crate::io::reader::{ExtraColumn, InputProgress, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{BadRowPolicy, CommonArgs, RunOptions};
use crate::plot::{CentreMarks, ClusterFigure, LossCurve, RowSample, ThinnedSeries, draw_clusters};
use crate::stream::{StreamTask, check_restored_learner, inconsistent, point_fault, run_stream};
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
    #[arg(long, value_name = "K")]
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
        long,
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

/// `--init` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InitMethod {
    /// Greedy k-means++: several candidates per step, the best kept.
    #[value(name = "greedy++")]
    Greedy,
    /// Vanilla k-means++ (the 8(ln k + 2) guarantee).
    #[value(name = "k-means++")]
    KMeansPlusPlus,
    /// k distinct points drawn at random.
    Random,
}

impl InitMethod {
    fn to_init(self) -> Init {
        match self {
            InitMethod::Greedy => Init::GreedyKMeansPlusPlus {
                n_local_trials: None,
            },
            InitMethod::KMeansPlusPlus => Init::KMeansPlusPlus,
            InitMethod::Random => Init::Random,
        }
    }

    fn name(self) -> &'static str {
        match self {
            InitMethod::Greedy => "greedy++",
            InitMethod::KMeansPlusPlus => "k-means++",
            InitMethod::Random => "random",
        }
    }
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
        let axes = plot_axes(args.axes.as_deref(), &reader)?;
        run_online(args, &options, config, reader, axes, notes)
    } else {
        let config = batch_config(args, options.seed)?;
        let reader = RowReader::open(&options.input, &extra_columns, notes)?;
        let axes = plot_axes(args.axes.as_deref(), &reader)?;
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

/// A library error, with the library's parameter names turned into this command's options.
fn library_error(error: pacstream::Error) -> anyhow::Error {
    if let pacstream::Error::InvalidParameter { name, reason } = &error {
        let option = match *name {
            "n_clusters" => Some("k"),
            "n_init" => Some("n-init"),
            "max_iter" => Some("max-iter"),
            "tol" => Some("tol"),
            "init_size" => Some("init-size"),
            "decay_half_life" => Some("decay"),
            "reassignment_ratio" => Some("reassignment-ratio"),
            _ => None,
        };
        if let Some(option) = option {
            return bad_input(format!(
                "invalid --{option}: {}",
                reason.replace("n_clusters", "k")
            ));
        }
    }
    anyhow::Error::new(error).context("k-means")
}

pub(crate) fn centre_rows(centres: &Centres) -> Vec<Vec<f64>> {
    centres.iter().map(<[f64]>::to_vec).collect()
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
struct BatchSettings {
    k: usize,
    init: &'static str,
    n_init: usize,
    max_iter: usize,
    tol: f64,
    seed: u64,
}

#[derive(Serialize)]
struct BatchSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: BatchSettings,
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
    axes: (usize, Option<usize>),
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
        settings: BatchSettings {
            k: config.n_clusters(),
            init: args.init.name(),
            n_init: config.n_init(),
            max_iter: config.max_iter(),
            tol: config.tol(),
            seed: config.seed(),
        },
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

pub(crate) fn write_centres_table(
    out: &mut dyn Write,
    labels: &[String],
    centres: &Centres,
    count_name: &str,
    count: impl Fn(usize) -> String,
) -> anyhow::Result<()> {
    write!(out, "  {:<8}{:>10}", "centre", count_name)?;
    for label in labels {
        write!(out, "  {label:>12}")?;
    }
    writeln!(out)?;
    for (j, centre) in centres.iter().enumerate() {
        write!(out, "  {j:<8}{:>10}", count(j))?;
        for value in centre {
            write!(out, "  {:>12}", human_number(*value))?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// Builds the cluster figure from sampled points (the clustered values and the data row
/// number) and their labels.
pub(crate) fn cluster_figure<'a>(
    reader: &RowReader,
    axes: (usize, Option<usize>),
    title: String,
    points: impl Iterator<Item = (&'a [f64], u64)>,
    labels: impl Iterator<Item = usize>,
    centres: &Centres,
    loss: Option<LossCurve>,
) -> ClusterFigure {
    let feature_labels = &reader.layout().feature_labels;
    let (x, y) = axes;
    let coordinates = |point: &[f64], number: u64| match y {
        Some(y) => [point[x], point[y]],
        None => [point[x], number as f64],
    };
    ClusterFigure {
        title,
        x_label: feature_labels[x].clone(),
        y_label: match y {
            Some(y) => feature_labels[y].clone(),
            None => "row".to_string(),
        },
        points: points.map(|(p, number)| coordinates(p, number)).collect(),
        labels: labels.collect(),
        n_clusters: centres.n_centres(),
        centres: match y {
            Some(y) => CentreMarks::Points(centres.iter().map(|c| [c[x], c[y]]).collect()),
            None => CentreMarks::VerticalLines(centres.iter().map(|c| c[x]).collect()),
        },
        loss,
    }
}

// ---------------------------------------------------------------------------------------
// Online mode

/// One `--output` record of online mode.
#[derive(Serialize)]
struct RoundRecord {
    /// The round t (1-based; bad rows skipped are not rounds).
    t: u64,
    /// The nearest centre under the model held before the round (undefined in round 1).
    label: Option<usize>,
    /// The squared distance to it: the loss paid this round (undefined in round 1).
    loss: Option<f64>,
    /// The sum of the losses of the rounds so far.
    cumulative_loss: f64,
}

/// The settings a checkpoint must share with the run that resumes it (keyed by option).
#[derive(Serialize)]
struct OnlineSettings {
    k: usize,
    init: &'static str,
    init_size: usize,
    decay: Option<f64>,
    batch_size: Option<u64>,
    reassignment_ratio: f64,
    seed: u64,
    /// 1-based input columns clustered.
    columns: Vec<usize>,
    /// 1-based input column of the weights.
    weights: Option<usize>,
    on_bad_row: BadRowPolicy,
    /// The size of the plot's reservoir, when plotting (the reservoir is part of the state).
    plot_points: Option<usize>,
}

/// Everything a checkpoint holds about an online k-means run.
#[derive(Debug, Serialize, Deserialize)]
struct OnlineState {
    learner: SequentialKMeans,
    totals: Prequential,
    /// The totals after the last round (none before the first).
    last: Option<Totals>,
    /// What `--plot` will draw, kept in bounded memory.
    plot: Option<PlotSample>,
}

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

/// Online k-means as a [`StreamTask`].
struct OnlineTask {
    config: SequentialKMeansConfig,
    settings: Value,
    state: OnlineState,
    dim: usize,
    weighted: bool,
    batch_size: Option<usize>,
    /// The rows of the mini-batch being filled (values, weights, data row numbers).
    batch_values: Vec<f64>,
    batch_weights: Vec<f64>,
    batch_numbers: Vec<u64>,
}

impl OnlineTask {
    /// Accounts a step and writes its record.
    fn account(
        &mut self,
        step: &SequentialKMeansStep,
        point: &[f64],
        number: u64,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let totals = self.state.totals.record(step);
        self.state.last = Some(totals);
        sink.write(&RoundRecord {
            t: step.round,
            label: step.label,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
        })?;
        if let Some(sample) = &mut self.state.plot {
            sample.add(point, number, &totals);
        }
        Ok(())
    }

    fn learn_batch(&mut self, sink: &mut RecordSink) -> anyhow::Result<()> {
        let values = std::mem::take(&mut self.batch_values);
        let weights = std::mem::take(&mut self.batch_weights);
        let numbers = std::mem::take(&mut self.batch_numbers);
        let rows = numbers.len();
        if rows > 0 {
            let view = ArrayView2::from_shape((rows, self.dim), &values)
                .context("invariant: every row has the number of columns")?;
            let weight_view = self.weighted.then(|| ArrayView1::from(&weights));
            let steps = self
                .state
                .learner
                .learn_batch(view, weight_view)
                .map_err(library_error)?;
            for ((step, point), &number) in steps
                .iter()
                .zip(values.chunks_exact(self.dim))
                .zip(&numbers)
            {
                self.account(step, point, number, sink)?;
            }
        }
        // Give the buffers back, emptied, to keep their capacity.
        self.batch_values = values;
        self.batch_weights = weights;
        self.batch_numbers = numbers;
        self.batch_values.clear();
        self.batch_weights.clear();
        self.batch_numbers.clear();
        Ok(())
    }
}

impl StreamTask for OnlineTask {
    const COMMAND: &'static str = "kmeans";
    type State = OnlineState;

    fn settings(&self) -> Value {
        self.settings.clone()
    }

    fn state(&self) -> &OnlineState {
        &self.state
    }

    fn restore(&mut self, state: OnlineState, input: &InputProgress) -> anyhow::Result<()> {
        check_restored_learner(
            state.learner.config() == &self.config,
            state.learner.n_rounds(),
            state.totals.rounds(),
            state.learner.dim(),
            self.dim,
            input,
        )?;
        match (&self.state.plot, &state.plot) {
            (None, None) => {}
            (Some(mine), Some(theirs)) => theirs
                .validate(mine.rows.capacity(), self.dim)
                .map_err(|what| inconsistent(&what))?,
            _ => return Err(inconsistent("its plot sample does not match --plot")),
        }
        self.state = state;
        Ok(())
    }

    fn learn(&mut self, row: &Row<'_>, sink: &mut RecordSink) -> anyhow::Result<()> {
        let weight = row.extras.first().copied();
        match self.batch_size {
            None => {
                let step = match weight {
                    Some(weight) => self.state.learner.learn_one_weighted(row.values, weight),
                    None => self.state.learner.learn_one(row.values),
                }
                .map_err(|e| point_fault(e, 0, library_error))?;
                self.account(&step, row.values, row.number, sink)
            }
            Some(size) => {
                self.batch_values.extend_from_slice(row.values);
                self.batch_weights.push(weight.unwrap_or(1.0));
                self.batch_numbers.push(row.number);
                if self.batch_numbers.len() >= size {
                    self.learn_batch(sink)?;
                }
                Ok(())
            }
        }
    }

    fn is_settled(&self) -> bool {
        self.batch_numbers.is_empty()
    }

    fn finish(&mut self, sink: &mut RecordSink) -> anyhow::Result<()> {
        self.learn_batch(sink)
    }
}

#[derive(Serialize)]
struct OnlineTotals {
    rounds: u64,
    scored_rounds: u64,
    cumulative_loss: f64,
    mean_loss: Option<f64>,
}

#[derive(Serialize)]
struct OnlineSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    /// Whether the warm-up buffer never filled (the centres are then the distinct points
    /// seen).
    warming_up: bool,
    centres: Option<Vec<Vec<f64>>>,
    counts: &'a [f64],
    totals: OnlineTotals,
    report: &'a SequentialKMeansReport,
}

fn run_online(
    args: &KMeansArgs,
    options: &RunOptions,
    config: SequentialKMeansConfig,
    mut reader: RowReader,
    axes: (usize, Option<usize>),
    notes: Notes,
) -> anyhow::Result<()> {
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    let batch_size = match args.batch_size {
        Some(size) => Some(usize::try_from(size).context("--batch-size is too large")?),
        None => None,
    };
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    let settings = OnlineSettings {
        k: config.n_clusters(),
        init: args.init.name(),
        init_size: config.init_size(),
        decay: config.decay_half_life(),
        batch_size: args.batch_size,
        reassignment_ratio: config.reassignment_ratio(),
        seed: config.seed(),
        columns: layout.features.iter().map(|i| i + 1).collect(),
        weights: layout.extras.first().map(|i| i + 1),
        on_bad_row: options.input.on_bad_row,
        plot_points,
    };
    let mut task = OnlineTask {
        settings: serde_json::to_value(&settings)?,
        state: OnlineState {
            learner: config.build(),
            totals: Prequential::new(),
            last: None,
            plot: plot_points.map(|capacity| PlotSample::new(capacity, dim, options.seed)),
        },
        config,
        dim,
        weighted: !layout.extras.is_empty(),
        batch_size,
        batch_values: Vec::new(),
        batch_weights: Vec::new(),
        batch_numbers: Vec::new(),
    };
    let input = run_stream(
        &mut task,
        &mut reader,
        options.output.as_ref(),
        &options.checkpoints,
        notes,
    )?;
    note_skipped(notes, &input, reader.source_name());
    let state = &task.state;
    let learner = &state.learner;
    let Some(centres) = learner.centres() else {
        return Err(no_good_rows(reader.source_name(), &input));
    };
    let last = state.last;
    let totals = OnlineTotals {
        rounds: learner.n_rounds(),
        scored_rounds: last.map_or(0, |t| t.scored_rounds),
        cumulative_loss: state.totals.cumulative_loss(),
        mean_loss: last.and_then(|t| t.mean_loss()),
    };
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_online_report(&mut out, &reader, learner, &totals)?;
    }
    let summary = OnlineSummary {
        command: "kmeans",
        mode: "online",
        input: InputSummary::new(&reader, &input),
        settings: &task.settings,
        warming_up: learner.is_warming_up(),
        centres: Some(centre_rows(centres)),
        counts: learner.counts(),
        totals,
        report: learner.report(),
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
    totals: &OnlineTotals,
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
