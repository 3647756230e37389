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

mod batch;
mod online;
mod scale_out;

use clap::Args;
use pacstream::kmeans::{
    InitMethod, KMeansConfig, KMeansParams, Refinement, SequentialKMeansConfig,
    SequentialKMeansParams, Stopping,
};

use super::Given;
use super::clusters::AxesArg;
use super::scale_out::ScaleOutArgs;
use crate::failure::bad_input;
use crate::io::columns::parse_selector;
use crate::io::reader::{ExtraColumn, RowReader};
use crate::options::CommonArgs;
use crate::ui::Notes;

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

    /// The tolerance of Lloyd's stopping rule (--stopping): by default they stop once the
    /// centres' total squared shift in an update is at most T × the data's mean per-feature
    /// variance (scikit-learn's rule); 0: until no label changes [default: 1e-4].
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "online",
        allow_negative_numbers = true
    )]
    pub tol: Option<f64>,

    /// When Lloyd's iterations stop (besides --max-iter, and a pass that changes no label):
    /// centre-shift, the total squared shift of the centres against --tol × the mean
    /// per-feature variance (the k-means spec's rule and scikit-learn's); changed-labels,
    /// at most a fraction --tol of the points (by weight) changed cluster in the last pass
    /// (scale-free; it follows a centre's slow drift between two groups to its end).
    #[arg(
        long,
        value_enum,
        value_name = "RULE",
        default_value = "centre-shift",
        conflicts_with = "online",
        hide_possible_values = true
    )]
    pub stopping: Stopping,

    /// What runs after Lloyd's iterations: Hartigan's single-point moves (a point moves to
    /// another cluster whenever that lowers the inertia, counting how it moves both
    /// centres; never a higher inertia than Lloyd's) or none. Before the moves, Lloyd runs
    /// on past --stopping's rule until a pass changes at most 10⁻⁵ of the points (by
    /// weight): a slow drift costs less in parallel passes than in sequential sweeps.
    #[arg(
        long,
        value_enum,
        value_name = "METHOD",
        default_value = "hartigan",
        conflicts_with = "online"
    )]
    pub refinement: Refinement,

    /// Learn from the stream, one row at a time (sequential k-means).
    #[arg(long)]
    pub online: bool,

    #[command(flatten)]
    pub online_mode: OnlineModeArgs,

    /// A column of sample weights: each row counts as many times as its weight (name or
    /// 1-based index; values finite and >= 0).
    // `--weights`, its former name, is still accepted (hidden: the word is the experts').
    #[arg(long, alias = "weights", value_name = "COL", help_heading = "Input")]
    pub sample_weights: Option<String>,

    #[command(flatten)]
    pub axes: AxesArg,

    #[command(flatten)]
    pub scale_out: ScaleOutArgs,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// The options of `--online` runs, each of which requires it, under their own heading.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Online mode")]
pub struct OnlineModeArgs {
    /// Forget old points: a point's weight in its centre halves every H rows.
    #[arg(
        long = "decay",
        id = "decay_half_life",
        value_name = "H",
        requires = "online"
    )]
    pub decay: Option<f64>,

    /// Learn mini-batches of B rows (Sculley's mini-batch k-means) instead of one at a time
    /// (1 to 1,000,000).
    #[arg(long, value_name = "B", requires = "online",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: Option<u64>,

    /// Sum each mini-batch's per-centre statistics by chunks of C rows, merged in stream
    /// order: the unit of work of a worker with --workers (1 to 1,000,000; default: the
    /// whole batch). The same --batch-size and --chunk-size give the same bytes on any
    /// number of workers and processes.
    #[arg(long, value_name = "C", requires = "batch_size",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub chunk_size: Option<u64>,

    /// Rows buffered and fitted before the first update (k to 10,000,000) [default: 10·k].
    #[arg(long, value_name = "N", requires = "online")]
    pub init_size: Option<usize>,

    /// Move a centre whose count falls below R × the largest count to a recent, badly served
    /// point (0 = never).
    #[arg(long, value_name = "R", requires = "online")]
    pub reassignment_ratio: Option<f64>,
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
    let extra_columns = match &args.sample_weights {
        Some(text) => vec![ExtraColumn {
            option: "--sample-weights",
            selector: parse_selector(text)
                .map_err(|r| bad_input(format!("--sample-weights: {r}")))?,
            non_negative: true,
        }],
        None => Vec::new(),
    };
    // Settings are checked before any data is read, so a typo fails at once.
    if args.scale_out.is_given() || args.online_mode.chunk_size.is_some() {
        return scale_out::run(args, &options, notes);
    }
    if args.online {
        let config = online_config(args, options.seed)?;
        let reader = RowReader::open(&options.input, &extra_columns, notes)?;
        let axes = args.axes.choose(&reader)?;
        online::run(args, &options, config, reader, axes, notes)
    } else {
        let config = batch_config(args, options.seed)?;
        let reader = RowReader::open(&options.input, &extra_columns, notes)?;
        let axes = args.axes.choose(&reader)?;
        batch::run(args, &options, &config, reader, axes, notes)
    }
}

fn batch_config(args: &KMeansArgs, seed: u64) -> anyhow::Result<KMeansConfig> {
    let params = KMeansParams::new(args.k)
        .init(args.init.to_init())
        .refinement(args.refinement)
        .stopping(args.stopping)
        .seed(seed)
        .given(args.n_init, KMeansParams::n_init)
        .given(args.max_iter, KMeansParams::max_iter)
        .given(args.tol, KMeansParams::tol);
    params.check().map_err(library_error)
}

fn online_config(args: &KMeansArgs, seed: u64) -> anyhow::Result<SequentialKMeansConfig> {
    let params = SequentialKMeansParams::new(args.k)
        .init(args.init.to_init())
        .seed(seed)
        .given(
            args.online_mode.init_size,
            SequentialKMeansParams::init_size,
        )
        .given(
            args.online_mode.decay,
            SequentialKMeansParams::decay_half_life,
        )
        .given(
            args.online_mode.reassignment_ratio,
            SequentialKMeansParams::reassignment_ratio,
        );
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<KMeansArgs>("k-means", error)
}
