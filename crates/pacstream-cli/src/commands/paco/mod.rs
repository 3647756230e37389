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

mod batch;
mod figures;
mod hindsight;
mod online;
mod paths;
mod records;
mod report;

use std::path::PathBuf;

use clap::Args;
use pacstream::paco::Paco;
use pacstream::paco::{Memory, PacoConfig, PacoParams, ProposalScale, Radius};

use self::paths::{CountPath, LabelTracker};
use crate::plot::{RowSample, ThinnedSeries};

use super::Given;
use super::clusters::AxesArg;
use crate::failure::bad_input;
use crate::io::columns::parse_selector;
use crate::io::reader::{ExtraColumn, RowReader};
use crate::options::{CommonArgs, OtherFiles, check_plot_path};
use crate::ui::Notes;

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
    pub radius: Radius,

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
    pub proposal: ProposalScale,

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

    #[command(flatten)]
    pub axes: AxesArg,

    /// k-means restarts of the hindsight oracle, per number of clusters (1 to 1,000; it fits
    /// every k ≤ p once on the predicted rows, and as few k as the bound needs on every row).
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "Output",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub oracle_restarts: u64,

    #[command(flatten)]
    pub common: CommonArgs,
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
    let axes = args.axes.choose(&reader)?;
    if args.batch {
        batch::run(&options, &config, reader, axes, notes)
    } else {
        online::run(args, &options, config, reader, axes, notes)
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
    let params = PacoParams::new()
        .max_k(args.max_k)
        .radius(args.radius)
        .scale(args.scale)
        .warmup(args.warmup)
        .proposal(args.proposal)
        .iterations(args.iterations)
        .restart(args.restart)
        .seed(seed)
        .given(args.center.then_some(true), PacoParams::center)
        .given(args.no_center.then_some(false), PacoParams::center)
        .given(args.eta, PacoParams::eta)
        .given(args.coeff, PacoParams::coeff)
        .given(args.proposal_scale, PacoParams::proposal_scale)
        .given(args.window.map(Memory::Window), PacoParams::memory);
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<PacoArgs>("PACBO", error)
}

crate::point_state!(
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

#[cfg(test)]
mod tests {
    use clap::Parser;
    use pacstream::paco::{ProposalScale, Radius};

    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<super::PacoArgs, clap::Error> {
        let mut full = vec!["pacstream", "paco", "data.csv"];
        full.extend(args);
        match Cli::try_parse_from(full)?.command {
            Command::Paco(args) => Ok(args),
            other => panic!("parsed as {other:?}"),
        }
    }

    /// The library's names are the options' values, and the name `seed` of the paper's
    /// proposal scale still works.
    #[test]
    fn library_names_are_the_values() {
        for (name, rule) in [
            ("laplace", ProposalScale::Laplace),
            ("paper", ProposalScale::Paper),
            ("seed", ProposalScale::Paper),
        ] {
            assert_eq!(parse(&["--proposal", name]).unwrap().proposal, rule);
        }
        assert!(parse(&["--proposal", "wide"]).is_err());
        assert_eq!(parse(&[]).unwrap().radius, Radius::Auto);
        assert_eq!(
            parse(&["--radius", "2.5"]).unwrap().radius,
            Radius::Given(2.5)
        );
        assert!(parse(&["--radius", "big"]).is_err());
    }
}
