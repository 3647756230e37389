//! `pacstream paco`: PAC-Bayesian online clustering (PACBO) of a stream whose number of
//! clusters is unknown and may change; `--batch` for one chain on a static data set.
//!
//! Online mode streams the rows through [`Paco`]: every row after the warm-up pays the loss
//! of the current clustering and then the round's chain draws the next one. It writes one
//! record per round (t, k̂_t, loss, cumulative loss, label, acceptance rate, and the centres
//! with `--centres`), a summary (final centres, k̂, the k̂_t path, time, the regret against
//! the best fixed clustering in hindsight for every k and the bound on the ideal sampler's
//! expected loss, as the library's [`hindsight_report`] gives them), and three figures: the
//! final clustering (`--plot`), k̂_t over time against the true number of clusters when
//! `--labels` names a column of cluster labels (`--plot-k`), and the cumulative loss against
//! the best fixed clustering in hindsight with the final k̂ and the bound (`--plot-loss`).
//! Long runs can be checkpointed and resumed.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use ndarray::ArrayView2;
use pacstream::eval::Prequential;
use pacstream::geometry::squared_distance;
use pacstream::kmeans::Centres;
use pacstream::paco::oracle::{
    HindsightReport, IdealSamplerBound, hindsight_report, ideal_sampler_bound,
};
use pacstream::paco::{
    Memory, Paco, PacoConfig, PacoParams, PacoReport, PacoStep, ProposalScale, Radius,
    SamplerReport,
};
use pacstream::{OnlineLearner, UnsupervisedLearner};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::clusters::{Axes, cluster_figure, write_centres_table};
use super::{
    InputSummary, human_number, human_seconds, no_good_rows, note_skipped, plural, short_name,
    stream_input, write_summary,
};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::parse_selector;
use crate::io::reader::{ExtraColumn, Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{CommonArgs, OtherFiles, RecordFormat, RunOptions, check_plot_path};
use crate::plot::{
    LineFigure, LossCurve, RowSample, Series, SeriesStyle, ThinnedSeries, draw_clusters, draw_lines,
};
use crate::point_state;
use crate::stream::{PointFamily, PointTask, check_same_sample, point_fault};
use crate::ui::{Notes, Progress, report_writer};
use pacstream::kmeans::centre_rows;

/// Arguments of `pacstream paco`.
#[derive(Args, Debug, Clone)]
#[command(
    about = "Cluster a stream with PACBO: an unknown, changing number of clusters",
    long_about = "PAC-Bayesian online clustering (PACBO, Li, Guedj & Loustau 2018).\n\n\
        Each row, after a warm-up, pays the squared distance to the nearest centre of the \
        current clustering; then a reversible-jump MCMC chain of --iterations steps draws the \
        next clustering, number of clusters included, from the quasi-posterior. --output \
        gets one record per round: t, k (the number of clusters that predicted the row), \
        loss, cumulative_loss, label (the nearest centre), acceptance_rate (of the chain run \
        after the row), and true_label with --labels, centres with --centres. Warm-up rows \
        (with --radius auto, the default) are not predicted: their loss is undefined (null \
        in JSON, empty in CSV).\n\n\
        The report and the summary compare the run with the best fixed clustering in \
        hindsight of the predicted rows for every k ≤ p (k-means with --oracle-restarts \
        restarts, a local optimum: its loss is an over-estimate, the regret against it an \
        under-estimate), and give the bound of Li, Guedj & Loustau (2018, adaptive \
        corollary) for the run's a: a bound on the expected cumulative loss of the ideal \
        sampler (exact draws from the quasi-posterior), not of this chain, which only \
        approximates those draws; the k that minimises the bound is named as such. Warm-up \
        rows count in the bound's T and comparator, not in the learner's loss. No bound is \
        given in window memory or when a row lies beyond R (the corollary does not apply).\n\n\
        --batch runs one chain on the whole data set instead (an estimate of the number of \
        clusters and the centres).",
    after_help = "Examples:\n  \
        pacstream paco data/faithful.csv --plot faithful.svg --plot-k faithful-k.svg\n  \
        pacstream paco data/changing.csv --columns x,y --labels cluster --window 400 \\\n      \
        --plot-k k.svg --plot-loss loss.svg -o rounds.csv --summary summary.json"
)]
pub struct PacoArgs {
    /// p, the largest number of clusters (1 to 1,000; p × the number of columns at most
    /// 10,000,000).
    #[arg(long, value_name = "P", default_value_t = 50)]
    pub max_k: usize,

    /// R, the radius that bounds the centred data: a number, or `auto` (1.5 × the largest
    /// distance from the warm-up mean among the warm-up rows, which are not predicted).
    #[arg(
        long,
        value_name = "R|auto",
        default_value = "auto",
        allow_negative_numbers = true
    )]
    pub radius: String,

    /// Centre the data on the mean of the warm-up rows (the default with --radius auto).
    #[arg(long, conflicts_with = "no_center")]
    pub center: bool,

    /// Do not centre the data (the default with a given radius).
    #[arg(long)]
    pub no_center: bool,

    /// Standardise the columns by their standard deviations over the warm-up rows (needs
    /// --radius auto). Losses are then in standardised units; centres stay in the data's.
    #[arg(long)]
    pub scale: bool,

    /// Warm-up rows buffered (not predicted) to fix the centre, R and the scales (up to
    /// 1,000,000).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub warmup: usize,

    /// η, the prior's price of one cluster: q(k) ∝ e^{−ηk} (0 to 100) [default: the
    /// calibrated value].
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub eta: Option<f64>,

    /// a, the temperature multiplier: λ_t = a (d + 2)/(2 √n_t R²) [default: the calibrated
    /// value; the bound reported is for the run's a].
    #[arg(long, value_name = "A", allow_negative_numbers = true)]
    pub coeff: Option<f64>,

    /// The scale of the Student-t proposal of each centre.
    #[arg(long, value_enum, default_value = "laplace", value_name = "RULE")]
    pub proposal: ProposalArg,

    /// b, the multiplier of the proposal scale [default: the calibrated value of the rule].
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub proposal_scale: Option<f64>,

    /// N, the MCMC iterations per round (1 to 1,000,000).
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub iterations: usize,

    /// Keep only the last W rows in memory (constant cost per round; the model forgets; 1 to
    /// 100,000,000).
    /// Default: every row (exact memory, the setting of the regret bound).
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,

    /// Start each round's chain from k-means centres for the current k̂ (the R package's
    /// behaviour) instead of the previous round's state.
    #[arg(long)]
    pub restart: bool,

    /// One chain on the whole data set (no stream, no checkpoints).
    #[arg(long)]
    pub batch: bool,

    /// A column of true cluster labels (name or 1-based index; numbers): reported beside each
    /// round, and the true number of clusters in memory is drawn by --plot-k.
    #[arg(long, value_name = "COL", help_heading = "Input")]
    pub labels: Option<String>,

    /// Add the centres of the clustering that predicted each row to its --output record.
    #[arg(long, help_heading = "Output")]
    pub centres: bool,

    /// Draw k̂_t over time to FILE (SVG), with the true number of clusters if --labels.
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot_k: Option<PathBuf>,

    /// Draw the cumulative loss, the best fixed clustering in hindsight with the final k̂ and
    /// the bound on the ideal sampler's expected loss to FILE (SVG).
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot_loss: Option<PathBuf>,

    /// The two columns drawn by --plot (default: the first two columns clustered).
    #[arg(
        long,
        value_name = "COL,COL",
        requires = "plot",
        help_heading = "Output"
    )]
    pub axes: Option<String>,

    /// k-means restarts of the hindsight oracle, per number of clusters (1 to 1,000; it fits
    /// every k ≤ p once on the predicted rows, and as few k as the bound needs on every row).
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "Output",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub oracle_restarts: u64,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--proposal` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProposalArg {
    /// The width of the quasi-posterior of one centre, b / √(2 λ_t n_j).
    Laplace,
    /// The paper's τ_t = b R / √(p n_t) (Li, Guedj & Loustau 2018).
    #[value(alias = "seed")]
    Paper,
}

impl ProposalArg {
    fn rule(self) -> ProposalScale {
        match self {
            ProposalArg::Laplace => ProposalScale::Laplace,
            ProposalArg::Paper => ProposalScale::Paper,
        }
    }
}

/// Runs `pacstream paco`.
pub fn run(args: &PacoArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate_with(&extra_plots(args)?)?;
    options.input.max_magnitude = Some(pacstream::data::MAX_COORDINATE);
    if args.batch {
        let checkpoints = &options.checkpoints;
        if checkpoints.save.is_some() || checkpoints.resume.is_some() {
            return Err(bad_input(
                "--checkpoint and --resume apply to streams; --batch fits a data set at once",
            ));
        }
        if args.window.is_some() || args.restart {
            return Err(bad_input(
                "--window and --restart apply to streams, not to --batch",
            ));
        }
        if args.plot_k.is_some() || args.plot_loss.is_some() {
            return Err(bad_input(
                "--plot-k and --plot-loss draw a stream's rounds; --batch has none (use --plot)",
            ));
        }
    }
    let config = config(args, options.seed)?;
    let notes = Notes::new(options.quiet);
    let extra_columns = match &args.labels {
        Some(text) => vec![ExtraColumn {
            option: "--labels",
            selector: parse_selector(text).map_err(|r| bad_input(format!("--labels: {r}")))?,
            non_negative: false,
        }],
        None => Vec::new(),
    };
    let reader = RowReader::open(&options.input, &extra_columns, notes)?;
    // p × d within bounds before any row is read.
    config
        .check_dim(reader.layout().features.len())
        .map_err(library_error)?;
    let axes = Axes::choose(args.axes.as_deref(), &reader)?;
    if args.batch {
        run_batch(&options, &config, reader, axes, notes)
    } else {
        run_online(args, &options, config, reader, axes, notes)
    }
}

/// `--plot-k` and `--plot-loss` are SVG files; the shared same-file check compares them
/// with every other file of the run.
fn extra_plots(args: &PacoArgs) -> anyhow::Result<OtherFiles> {
    let mut other = OtherFiles::default();
    for (name, path) in [("--plot-k", &args.plot_k), ("--plot-loss", &args.plot_loss)] {
        if let Some(path) = path {
            check_plot_path(name, path)?;
            other.outputs.push((name, path.clone()));
        }
    }
    Ok(other)
}

fn config(args: &PacoArgs, seed: u64) -> anyhow::Result<PacoConfig> {
    let radius = match args.radius.as_str() {
        "auto" => Radius::Auto,
        text => Radius::Given(text.parse::<f64>().map_err(|_| {
            bad_input(format!(
                "invalid --radius: expected a number or `auto`, got {text:?}"
            ))
        })?),
    };
    let mut params = PacoParams::new()
        .max_k(args.max_k)
        .radius(radius)
        .scale(args.scale)
        .warmup(args.warmup)
        .proposal(args.proposal.rule())
        .iterations(args.iterations)
        .restart(args.restart)
        .seed(seed);
    if args.center {
        params = params.center(true);
    }
    if args.no_center {
        params = params.center(false);
    }
    if let Some(eta) = args.eta {
        params = params.eta(eta);
    }
    if let Some(coeff) = args.coeff {
        params = params.coeff(coeff);
    }
    if let Some(b) = args.proposal_scale {
        params = params.proposal_scale(b);
    }
    if let Some(window) = args.window {
        params = params.memory(Memory::Window(window));
    }
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<PacoArgs>("PACBO", error)
}

/// The settings, as the summary and checkpoints record them.
#[derive(Serialize)]
struct Settings {
    max_k: usize,
    radius: String,
    center: bool,
    scale: bool,
    warmup: usize,
    eta: f64,
    coeff: f64,
    proposal: &'static str,
    proposal_scale: f64,
    iterations: usize,
    window: Option<usize>,
    restart: bool,
    seed: u64,
}

impl Settings {
    fn new(config: &PacoConfig) -> Self {
        Self {
            max_k: config.max_k(),
            radius: match config.radius() {
                Radius::Auto => "auto".to_string(),
                Radius::Given(r) => format!("{r:e}"),
            },
            center: config.center(),
            scale: config.scale(),
            warmup: config.warmup(),
            eta: config.eta(),
            coeff: config.coeff(),
            proposal: config.proposal().name(),
            proposal_scale: config.proposal_scale(),
            iterations: config.iterations(),
            window: match config.memory() {
                Memory::Exact => None,
                Memory::Window(w) => Some(w),
            },
            restart: config.restart(),
            seed: config.seed(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Batch mode

#[derive(Serialize)]
struct LabelRecord {
    row: u64,
    label: usize,
    squared_distance: f64,
}

#[derive(Serialize)]
struct BatchSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: Settings,
    n_clusters: usize,
    centres: Vec<Vec<f64>>,
    cluster_sizes: Vec<u64>,
    radius: f64,
    origin: &'a [f64],
    report: &'a SamplerReport,
    fit_seconds: f64,
}

fn run_batch(
    options: &RunOptions,
    config: &PacoConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let dim = reader.layout().features.len();
    let mut values = Vec::new();
    let mut numbers = Vec::new();
    let mut progress = Progress::new(notes, reader.bytes().1);
    while let Some(row) = reader.next_row()? {
        values.extend_from_slice(row.values);
        numbers.push(row.number);
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
    let started = Instant::now();
    let fit = config.fit(data).map_err(library_error)?;
    let fit_seconds = started.elapsed().as_secs_f64();
    let centres = fit.centres();
    let labels = fit.labels();
    let mut sink = RecordSink::create(options.output.as_ref())?;
    if sink.is_enabled() {
        for (index, point) in values.chunks_exact(dim).enumerate() {
            sink.write(&LabelRecord {
                row: numbers[index],
                label: labels[index],
                squared_distance: squared_distance(point, centres.centre(labels[index])),
            })?;
        }
    }
    sink.finish()?;
    let k = centres.n_centres();
    let mut sizes = vec![0u64; k];
    for &label in labels {
        sizes[label] += 1;
    }
    let report = fit.report();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        let feature_labels = &reader.layout().feature_labels;
        writeln!(
            out,
            "PACBO (batch) on '{}': {} × {}",
            reader.source_name(),
            plural(n as u64, "row"),
            plural(dim as u64, "column")
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
        writeln!(
            out,
            "  fit time               {}",
            human_seconds(fit_seconds)
        )?;
        write_centres_table(&mut out, feature_labels, centres, "size", |j| {
            sizes[j].to_string()
        })?;
    }
    let summary = BatchSummary {
        command: "paco",
        mode: "batch",
        input: InputSummary::labelled(&reader, &input),
        settings: Settings::new(config),
        n_clusters: k,
        centres: centre_rows(centres),
        cluster_sizes: sizes,
        radius: fit.frame().radius(),
        origin: fit.frame().origin(),
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
                "PACBO (batch) on {}: k̂ = {k}",
                short_name(reader.source_name())
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

// ---------------------------------------------------------------------------------------
// Online mode

/// The centres of a record: nested arrays in JSON lines, JSON text in delimited files
/// (which cannot hold nested values).
#[derive(Serialize)]
#[serde(untagged)]
enum CentresField {
    Nested(Vec<Vec<f64>>),
    Text(String),
}

/// One `--output` record of online mode.
#[derive(Serialize)]
struct RoundRecord {
    /// The round t (1-based; bad rows skipped are not rounds).
    t: u64,
    /// k̂_t, the number of clusters that predicted the row (undefined during the warm-up).
    k: Option<usize>,
    /// ℓ(ĉ_t, x_t) (undefined during the warm-up).
    loss: Option<f64>,
    /// The sum of the losses so far.
    cumulative_loss: f64,
    /// The nearest centre of ĉ_t.
    label: Option<usize>,
    /// The acceptance rate of the chain run after the row (none while the warm-up buffers).
    acceptance_rate: Option<f64>,
    /// The --labels value of the row (a column only with --labels).
    #[serde(skip_serializing_if = "Column::is_absent")]
    true_label: Column<f64>,
    /// The centres of ĉ_t (a column only with --centres; undefined during the warm-up).
    #[serde(skip_serializing_if = "Column::is_absent")]
    centres: Column<CentresField>,
}

/// An optional column of the records: absent from every record, or present in every record
/// (undefined in some), so that delimited files keep one width.
enum Column<T> {
    Absent,
    Present(Option<T>),
}

impl<T> Column<T> {
    fn is_absent(&self) -> bool {
        matches!(self, Column::Absent)
    }
}

impl<T: Serialize> Serialize for Column<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Column::Present(Some(value)) => value.serialize(serializer),
            _ => serializer.serialize_none(),
        }
    }
}

/// Run-length path of a count over rounds: (first round, value) at every change, in bounded
/// memory: once it holds [`CountPath::LIMIT`] changes, every other one is dropped (the first
/// and the last kept), so that a long stream whose k̂_t keeps changing keeps a sketch of the
/// path, not all of it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CountPath {
    changes: Vec<(u64, usize)>,
    last_round: u64,
    /// Every change seen, kept or dropped.
    total_changes: u64,
}

impl CountPath {
    const LIMIT: usize = 20_000;

    fn record(&mut self, round: u64, value: usize) {
        if self.changes.last().is_none_or(|&(_, v)| v != value) {
            self.changes.push((round, value));
            self.total_changes += 1;
            if self.changes.len() >= Self::LIMIT {
                let last = self.changes.len() - 1;
                let mut index = 0;
                self.changes.retain(|_| {
                    index += 1;
                    (index - 1) % 2 == 0 || index - 1 == last
                });
            }
        }
        self.last_round = round;
    }

    /// Whether every change is kept.
    fn is_complete(&self) -> bool {
        self.total_changes == self.changes.len() as u64
    }

    /// The staircase points (round, value), closed at the last round.
    fn points(&self) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = self
            .changes
            .iter()
            .map(|&(t, v)| (t as f64, v as f64))
            .collect();
        if let Some(&(t, v)) = self.changes.last() {
            if self.last_round > t {
                points.push((self.last_round as f64, v as f64));
            }
        }
        points
    }
}

/// The number of distinct true labels among the rows in memory (all rows, or the last W).
#[derive(Debug, Serialize, Deserialize)]
struct LabelTracker {
    window: Option<usize>,
    /// Labels of the rows in the window, oldest first (window memory only).
    recent: VecDeque<u64>,
    /// How many rows in memory carry each label (keyed by the bits of the value).
    counts: BTreeMap<u64, u64>,
}

impl LabelTracker {
    fn new(window: Option<usize>) -> Self {
        Self {
            window,
            recent: VecDeque::new(),
            counts: BTreeMap::new(),
        }
    }

    fn add(&mut self, label: f64) -> usize {
        let key = (label + 0.0).to_bits();
        *self.counts.entry(key).or_insert(0) += 1;
        if let Some(window) = self.window {
            self.recent.push_back(key);
            if self.recent.len() > window {
                if let Some(old) = self.recent.pop_front() {
                    if let Some(count) = self.counts.get_mut(&old) {
                        *count -= 1;
                        if *count == 0 {
                            self.counts.remove(&old);
                        }
                    }
                }
            }
        }
        self.counts.len()
    }
}

point_state!(
    /// Everything a checkpoint holds about an online PACBO run.
    OnlineState<Paco> {
        k_path: CountPath,
        true_k_path: Option<CountPath>,
        labels: Option<LabelTracker>,
        /// (round t, cumulative loss), indexed by scored rounds.
        loss_trace: ThinnedSeries<(u64, f64)>,
        plot: Option<RowSample>,
        /// Seconds spent learning, over every run that built this state.
        seconds: f64,
    }
);

/// PACBO's hooks into the streaming loop.
#[derive(Debug)]
struct OnlinePaco {
    config: PacoConfig,
    with_centres: bool,
    format: Option<RecordFormat>,
}

impl OnlinePaco {
    fn centres_field(&self, centres: Option<&Centres>) -> Column<CentresField> {
        if !self.with_centres {
            return Column::Absent;
        }
        Column::Present(centres.map(|centres| {
            let rows = centre_rows(centres);
            match self.format {
                Some(RecordFormat::Delimited(_)) => {
                    CentresField::Text(serde_json::to_string(&rows).unwrap_or_default())
                }
                _ => CentresField::Nested(rows),
            }
        }))
    }
}

impl PointFamily for OnlinePaco {
    const COMMAND: &'static str = "paco";
    type State = OnlineState;

    fn same_config(&self, learner: &Paco) -> bool {
        learner.config() == &self.config
    }

    fn check_extra(
        &self,
        mine: &OnlineState,
        state: &OnlineState,
        dim: usize,
    ) -> Result<(), String> {
        if state.labels.is_some() != mine.labels.is_some()
            || state.true_k_path.is_some() != mine.true_k_path.is_some()
        {
            return Err("its label tracking does not match --labels".to_string());
        }
        check_same_sample(mine.plot.as_ref(), state.plot.as_ref(), |mine, theirs| {
            theirs.validate(mine.capacity(), dim)
        })?;
        state.loss_trace.validate(|(_, loss)| loss.is_finite())?;
        if !(state.seconds.is_finite() && state.seconds >= 0.0) {
            return Err("its run time is not a number of seconds".to_string());
        }
        Ok(())
    }

    fn learn(
        &mut self,
        state: &mut OnlineState,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let predicted_by = if self.with_centres {
            state.learner.centres().cloned()
        } else {
            None
        };
        let step: PacoStep = state
            .learner
            .learn_one(row.values)
            .map_err(|e| point_fault(e, 0, library_error))?;
        state.seconds += started.elapsed().as_secs_f64();
        let totals = state.account(&step);
        if let Some(k) = step.n_clusters {
            state.k_path.record(step.round, k);
        }
        let true_label = row.extras.first().copied();
        if let (Some(label), Some(tracker), Some(path)) = (
            true_label,
            state.labels.as_mut(),
            state.true_k_path.as_mut(),
        ) {
            let distinct = tracker.add(label);
            path.record(step.round, distinct);
        }
        if totals.loss.is_some() {
            state
                .loss_trace
                .push(totals.scored_rounds, (totals.round, totals.cumulative_loss));
        }
        if let Some(sample) = &mut state.plot {
            sample.add(row.values, row.number);
        }
        let centres = self.centres_field(predicted_by.as_ref());
        sink.write(&RoundRecord {
            t: step.round,
            k: step.n_clusters,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
            label: step.label,
            acceptance_rate: step.sampler.as_ref().map(|s| s.acceptance_rate),
            true_label: if state.labels.is_some() {
                Column::Present(true_label)
            } else {
                Column::Absent
            },
            centres,
        })
    }
}

/// One k of the hindsight oracle, as the summary records it.
#[derive(Serialize)]
struct FitSummary {
    k: usize,
    /// The cumulative loss of the best fixed k-clustering of the predicted rows (k-means,
    /// the best of the restarts: an over-estimate of the true optimum).
    loss: f64,
    /// The learner's cumulative loss minus that (an under-estimate of the true regret).
    regret: f64,
}

/// The comparison with hindsight and the bound, as the summary records them.
#[derive(Serialize)]
struct HindsightSummary {
    predicted_rows: u64,
    warmup_rows: u64,
    /// This chain's cumulative loss over the predicted rows.
    cumulative_loss: f64,
    oracle_restarts: usize,
    /// For every k ≤ p: the best fixed k-clustering of the predicted rows in hindsight and
    /// the regret against it.
    regret_by_k: Vec<FitSummary>,
    /// The best fixed clustering in hindsight over every k (least loss).
    best: Option<FitSummary>,
    /// Why there is no comparison, if there is none.
    no_comparison: Option<&'static str>,
    bound: BoundSummary,
}

/// The corollary's bound, labelled.
#[derive(Serialize)]
struct BoundSummary {
    /// What is bounded.
    bounds: &'static str,
    theorem: &'static str,
    warmup_rows: &'static str,
    /// The bound, or none.
    value: Option<f64>,
    /// The temperature multiplier a it is computed for (the run's).
    coeff: f64,
    /// The k that minimises the bound (not the best clustering in hindsight).
    k_minimising_the_bound: Option<usize>,
    /// L*_k there, over every row (warm-up rows included).
    oracle_loss: Option<f64>,
    /// The term outside the infimum and the price of one cluster.
    constant: Option<f64>,
    per_cluster: Option<f64>,
    /// Why there is no bound, if there is none.
    no_bound: Option<String>,
}

impl HindsightSummary {
    fn new(report: &HindsightReport, coeff: f64) -> Self {
        let fit = |f: &pacstream::paco::oracle::HindsightFit| FitSummary {
            k: f.n_clusters,
            loss: f.loss,
            regret: f.regret,
        };
        let bound = report.bound.bound();
        Self {
            predicted_rows: report.predicted_rows,
            warmup_rows: report.warmup_rows,
            cumulative_loss: report.cumulative_loss,
            oracle_restarts: report.restarts,
            regret_by_k: report.fits.iter().map(fit).collect(),
            best: report.best().map(fit),
            no_comparison: report.no_fits,
            bound: BoundSummary {
                bounds: IdealSamplerBound::WHAT,
                theorem: IdealSamplerBound::THEOREM,
                warmup_rows: IdealSamplerBound::WARMUP_ROWS,
                value: bound.map(|b| b.value),
                coeff: bound.map_or(coeff, |b| b.settings.coeff),
                k_minimising_the_bound: bound.map(|b| b.bound_k),
                oracle_loss: bound.map(|b| b.oracle_loss),
                constant: bound.map(|b| b.constant),
                per_cluster: bound.map(|b| b.per_cluster),
                no_bound: match &report.bound {
                    IdealSamplerBound::NoBound { reason } => Some(reason.clone()),
                    IdealSamplerBound::Bound(_) => None,
                },
            },
        }
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
    n_clusters: Option<usize>,
    centres: Option<Vec<Vec<f64>>>,
    /// (first round, k̂) at every change of k̂_t; past 20,000 changes a sketch of the path
    /// (every other change dropped each time the limit is reached).
    k_path: &'a [(u64, usize)],
    /// The number of changes of k̂_t (more than `k_path` holds when it is a sketch).
    k_path_changes: u64,
    /// (first round, number of distinct labels in memory) at every change, with --labels.
    true_k_path: Option<&'a [(u64, usize)]>,
    totals: OnlineTotals,
    /// Seconds spent learning (the library's learn_one calls).
    learn_seconds: f64,
    radius: Option<f64>,
    origin: Option<&'a [f64]>,
    scales: Option<&'a [f64]>,
    report: &'a PacoReport,
    last_chain: Option<&'a SamplerReport>,
    hindsight: Option<HindsightSummary>,
}

fn run_online(
    args: &PacoArgs,
    options: &RunOptions,
    config: PacoConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    let window = match config.memory() {
        Memory::Exact => None,
        Memory::Window(w) => Some(w),
    };
    let labelled = !layout.extras.is_empty();
    let mut settings = serde_json::to_value(Settings::new(&config))?;
    settings["columns"] = serde_json::to_value(
        layout
            .features
            .iter()
            .map(|i| i + 1)
            .collect::<Vec<usize>>(),
    )?;
    settings["labels"] = serde_json::to_value(layout.extras.first().map(|i| i + 1))?;
    settings["on_bad_row"] = serde_json::to_value(options.input.on_bad_row)?;
    settings["plot_points"] = serde_json::to_value(plot_points)?;
    let mut task = PointTask {
        settings,
        dim,
        state: OnlineState {
            learner: config.build(),
            totals: Prequential::new(),
            last: None,
            k_path: CountPath::default(),
            true_k_path: labelled.then(CountPath::default),
            labels: labelled.then(|| LabelTracker::new(window)),
            loss_trace: ThinnedSeries::default(),
            plot: plot_points.map(|capacity| RowSample::new(capacity, dim, options.seed)),
            seconds: 0.0,
        },
        family: OnlinePaco {
            config,
            with_centres: args.centres,
            format: options.output.as_ref().map(|o| o.format),
        },
    };
    let input = stream_input(&mut task, &mut reader, options, notes)?;
    let state = &task.state;
    let learner = &state.learner;
    if learner.n_rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    if learner.is_warming_up() {
        notes.note(format!(
            "the stream ended during the warm-up ({} of {} rows): nothing was predicted",
            learner.n_rounds(),
            learner.config().warmup()
        ));
    }
    let last = state.last;
    let totals = OnlineTotals {
        rounds: learner.n_rounds(),
        scored_rounds: last.map_or(0, |t| t.scored_rounds),
        cumulative_loss: state.totals.cumulative_loss(),
        mean_loss: last.and_then(|t| t.mean_loss()),
    };

    // The comparison with the best fixed clusterings in hindsight and the bound, as the
    // library reports them.
    let restarts = usize::try_from(args.oracle_restarts).unwrap_or(5);
    let hindsight = if learner.is_warming_up() {
        None
    } else {
        Some(hindsight_report(learner, restarts, options.seed).map_err(library_error)?)
    };
    let hindsight_summary = hindsight
        .as_ref()
        .map(|report| HindsightSummary::new(report, learner.config().coeff()));

    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_online_report(
            &mut out,
            &reader,
            learner,
            &totals,
            state,
            hindsight.as_ref(),
        )?;
    }
    let frame = learner.frame();
    let summary = OnlineSummary {
        command: "paco",
        mode: "online",
        input: InputSummary::labelled(&reader, &input),
        settings: &task.settings,
        n_clusters: learner.n_clusters(),
        centres: learner.centres().map(centre_rows),
        k_path: &state.k_path.changes,
        k_path_changes: state.k_path.total_changes,
        true_k_path: state.true_k_path.as_ref().map(|p| p.changes.as_slice()),
        totals,
        learn_seconds: state.seconds,
        radius: frame.map(|f| f.radius()),
        origin: frame.map(|f| f.origin()),
        scales: frame.and_then(|f| f.scales()),
        report: learner.report(),
        last_chain: learner.last_chain(),
        hindsight: hindsight_summary,
    };
    write_summary(options, &summary)?;

    let source = short_name(reader.source_name()).to_string();
    if let (Some(path), Some(sample), Some(centres)) =
        (&options.plot, &state.plot, learner.centres())
    {
        let points: Vec<&[f64]> = sample.points().chunks_exact(dim).collect();
        let figure = cluster_figure(
            &reader,
            axes,
            format!(
                "PACBO on {source}: k̂ = {}, {} rounds{}",
                centres.n_centres(),
                learner.n_rounds(),
                sample.sampled_note()
            ),
            points.iter().copied().zip(sample.numbers().iter().copied()),
            points.iter().map(|p| centres.nearest(p).0),
            centres,
            None::<LossCurve>,
        );
        write_atomically(path, draw_clusters(&figure)?.as_bytes())?;
    }
    if let Some(path) = &args.plot_k {
        let mut series = vec![Series {
            name: "k̂_t (PACBO)".to_string(),
            points: state.k_path.points(),
            style: SeriesStyle::Steps,
            colour: 0,
        }];
        if let Some(true_path) = &state.true_k_path {
            series.push(Series {
                name: if window.is_some() {
                    "true k (labels in the window)".to_string()
                } else {
                    "true k (labels seen)".to_string()
                },
                points: true_path.points(),
                style: SeriesStyle::DashedSteps,
                colour: 3,
            });
        }
        let figure = LineFigure {
            title: format!("number of clusters over time: {source}"),
            x_label: "round t".to_string(),
            y_label: "clusters".to_string(),
            series,
            log_y: false,
            integer_y: true,
        };
        write_atomically(path, draw_lines(&figure)?.as_bytes())?;
    }
    if let Some(path) = &args.plot_loss {
        let mut series = vec![Series {
            name: "PACBO cumulative loss".to_string(),
            points: state
                .loss_trace
                .points()
                .iter()
                .map(|&(_, (t, loss))| (t as f64, loss))
                .collect(),
            style: SeriesStyle::Line,
            colour: 0,
        }];
        match &hindsight {
            Some(report) => series.extend(loss_figure_series(
                learner,
                report,
                state,
                restarts,
                options.seed,
            )?),
            None => {
                notes.note("--plot-loss: nothing was predicted; drawing the cumulative loss alone")
            }
        }
        let figure = LineFigure {
            title: format!("cumulative loss: {source}"),
            x_label: "round t".to_string(),
            y_label: "cumulative loss (log scale)".to_string(),
            series,
            log_y: true,
            integer_y: false,
        };
        write_atomically(path, draw_lines(&figure)?.as_bytes())?;
    }
    Ok(())
}

/// The cumulative loss along the stream of the best fixed clustering in hindsight with the
/// learner's final number of clusters k̂_T (fitted on every predicted row), and the bound on
/// the ideal sampler's expected loss at a dozen prefixes of the stream.
fn loss_figure_series(
    learner: &Paco,
    report: &HindsightReport,
    state: &OnlineState,
    restarts: usize,
    seed: u64,
) -> anyhow::Result<Vec<Series>> {
    let mut series = Vec::new();
    let warmup = report.warmup_rows;
    let dim = learner.dim().unwrap_or(1);
    let rows = learner.memory_points().len() / dim;
    let final_k = learner.n_clusters();
    if let Some(fit) = final_k.and_then(|k| report.fit(k)) {
        let wanted: Vec<u64> = state.loss_trace.points().iter().map(|p| p.0).collect();
        let mut cumulative = 0.0;
        let mut points = Vec::new();
        let mut next = 0;
        let predicted = &learner.memory_points()[warmup as usize * dim..];
        for (index, point) in predicted.chunks_exact(dim).enumerate() {
            cumulative += fit.centres.nearest(point).1;
            let round = warmup + index as u64 + 1;
            while next < wanted.len() && wanted[next] < round {
                next += 1;
            }
            if next < wanted.len() && wanted[next] == round {
                points.push((round as f64, cumulative));
            }
        }
        if points.last().is_none_or(|p| p.0 < rows as f64) {
            points.push((rows as f64, cumulative));
        }
        series.push(Series {
            name: format!(
                "best fixed clustering in hindsight with k = k̂_T = {} (k-means, best of {} restarts)",
                fit.n_clusters, report.restarts
            ),
            points,
            style: SeriesStyle::Dashed,
            colour: 1,
        });
    }
    if report.bound.bound().is_some() {
        let mut points = Vec::new();
        let predicted = rows - warmup as usize;
        let steps = 12.min(predicted);
        for i in 1..=steps {
            let prefix = warmup as usize + predicted * i / steps;
            let bound =
                ideal_sampler_bound(learner, prefix, restarts, seed).map_err(library_error)?;
            if let Some(bound) = bound.bound() {
                points.push((prefix as f64, bound.value));
            }
        }
        series.push(Series {
            name: format!(
                "bound on the ideal sampler's expected loss (Li, Guedj & Loustau 2018, a = {})",
                learner.config().coeff()
            ),
            points,
            style: SeriesStyle::Markers,
            colour: 3,
        });
    }
    Ok(series)
}

fn print_online_report(
    out: &mut dyn Write,
    reader: &RowReader,
    learner: &Paco,
    totals: &OnlineTotals,
    state: &OnlineState,
    hindsight: Option<&HindsightReport>,
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    writeln!(
        out,
        "PACBO on '{}': {} × {}",
        reader.source_name(),
        plural(totals.rounds, "round"),
        plural(labels.len() as u64, "column")
    )?;
    if let Some(k) = learner.n_clusters() {
        writeln!(out, "  clusters (k̂)           {k}")?;
    }
    let changes = state.k_path.total_changes.saturating_sub(1) as usize;
    let sketch = if state.k_path.is_complete() {
        ""
    } else {
        ", a sketch of them"
    };
    writeln!(
        out,
        "  k̂_t path               {} (see --summary{sketch})",
        plural(changes as u64, "change")
    )?;
    writeln!(
        out,
        "  cumulative loss        {} over {} (this chain)",
        human_number(totals.cumulative_loss),
        plural(totals.scored_rounds, "predicted row")
    )?;
    if let Some(mean) = totals.mean_loss {
        writeln!(out, "  mean loss per round    {}", human_number(mean))?;
    }
    let warmup = totals.rounds - totals.scored_rounds;
    if warmup > 0 {
        writeln!(
            out,
            "  warm-up rows           {warmup} (not predicted: they fix the centre and R)"
        )?;
    }
    let report = learner.report();
    if report.iterations > 0 {
        writeln!(
            out,
            "  acceptance rate        {}% of {} iterations",
            human_number(100.0 * report.accepted as f64 / report.iterations as f64),
            report.iterations
        )?;
    }
    if let Some(frame) = learner.frame() {
        writeln!(
            out,
            "  radius R               {}",
            human_number(frame.radius())
        )?;
    }
    if report.points_beyond_radius > 0 {
        writeln!(
            out,
            "  rows beyond R          {} (the bound assumes none; the run went on)",
            report.points_beyond_radius
        )?;
    }
    if let Some(hindsight) = hindsight {
        print_hindsight(out, learner, hindsight)?;
    }
    writeln!(
        out,
        "  learning time          {}",
        human_seconds(state.seconds)
    )?;
    if let Some(centres) = learner.centres() {
        write_centres_table(out, labels, centres, "", |_| String::new())?;
    }
    Ok(())
}

/// The regret against the best fixed clusterings in hindsight and the bound, as the library
/// reports them.
fn print_hindsight(
    out: &mut dyn Write,
    learner: &Paco,
    hindsight: &HindsightReport,
) -> anyhow::Result<()> {
    match hindsight.no_fits {
        Some(reason) => writeln!(out, "  regret                 not computed: {reason}")?,
        None => {
            writeln!(
                out,
                "  regret against the best fixed clustering in hindsight of the predicted rows \
                 (k-means, best of {} restarts; every k in --summary):",
                hindsight.restarts
            )?;
            let best = hindsight.best().map(|f| f.n_clusters);
            let shown: Vec<usize> = (1..=6)
                .chain(learner.n_clusters())
                .chain(best)
                .filter(|&k| hindsight.fit(k).is_some())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            for k in shown {
                let fit = hindsight.fit(k).expect("filtered above");
                let mut tags = Vec::new();
                if Some(k) == learner.n_clusters() {
                    tags.push("k̂_T");
                }
                if Some(k) == best {
                    tags.push("the best in hindsight");
                }
                writeln!(
                    out,
                    "    k = {k:<4} loss {:<12} regret {}{}",
                    human_number(fit.loss),
                    human_number(fit.regret),
                    if tags.is_empty() {
                        String::new()
                    } else {
                        format!("  ({})", tags.join(", "))
                    }
                )?;
            }
        }
    }
    match &hindsight.bound {
        IdealSamplerBound::Bound(bound) => {
            writeln!(
                out,
                "  bound                  {} on {}",
                human_number(bound.value),
                IdealSamplerBound::WHAT
            )?;
            writeln!(
                out,
                "                         ({}: a = {}; the k that minimises it: {}; {})",
                IdealSamplerBound::THEOREM,
                human_number(bound.settings.coeff),
                bound.bound_k,
                IdealSamplerBound::WARMUP_ROWS
            )?;
        }
        IdealSamplerBound::NoBound { reason } => {
            writeln!(out, "  bound                  none: {reason}")?;
        }
    }
    Ok(())
}
