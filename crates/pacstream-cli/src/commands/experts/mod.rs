//! `pacstream experts`: prediction with expert advice over a stream.
//!
//! The input holds one outcome column and one column per expert (their advice), or, with
//! `--losses`, one column per expert holding its loss. An empty cell means the expert gave no
//! advice that round: it sleeps. A column named `<expert>_awake` (0/1) beside an expert's
//! column says the same explicitly. Every row is a round: the rule predicts, the outcome is
//! revealed, everybody pays, the weights move.
//!
//! Output per round: t, prediction, loss, realised loss (randomised rules), chosen expert,
//! cumulative loss, the best expert so far, its loss, the regret against it and the bound of
//! the rule on that regret, as the library states it (`--weights` adds the weight of every
//! expert). The summary holds every expert's cumulative loss, regret and bound, the final
//! weights, and what the bound bounds under which theorem (or why there is none); the figure
//! shows the weights over time, the regret against its bound, and the running average loss
//! of every expert against the learner's.

mod columns;
mod config;
mod figures;
mod history;
mod keyed;
mod report;
mod task;

use std::cell::RefCell;

use clap::{ArgGroup, Args};
use pacstream::experts::{
    Aggregator, AggregatorRecord, AggregatorSummary, Loss, Regulariser, Rule, limits,
};
use serde::Serialize;
use serde_json::Value;

use super::scale_out::ScaleOutArgs;
use super::{InputSummary, no_good_rows, stream_input, write_summary};
use crate::io::reader::{FirstRow, RowReader};
use crate::options::{CommonArgsWithoutColumns, OtherFiles, check_plot_path};
use crate::ui::{Notes, report_writer};
use columns::{Columns, plan_columns};
use config::aggregator_config;
use figures::FigureHistory;
use history::History;
use report::{draw_figure, print_report};
use task::{ExpertsState, ExpertsTask, Settings};

/// Arguments of `pacstream experts`.
#[derive(Args, Debug, Clone)]
#[command(
    about = "Aggregate experts' advice over a stream (weighted majority, Hedge/EWA, FPL)",
    long_about = "Aggregate experts' advice over a stream, with the rule's regret bound.\n\n\
        The input has an outcome column (--outcome) and one column per expert (--experts, \
        default: every other numeric column); with --losses the expert columns hold losses \
        and there is no outcome. An empty cell, or 0 in a column named <expert>_awake, means \
        the expert sleeps that round (Hedge, EWA and FPL only).\n\n\
        Rules: wm (weighted majority, binary advice), rwm (randomized weighted majority), \
        hedge (plays the mixture; its loss is the mixture loss), ewa (predicts the weighted \
        average of real-valued advice), fpl (follow the perturbed leader); for forecasts: \
        mlpol, fixed-share (--eta, --alpha), ftrl (--eta, --regulariser) and ogd (--eta: \
        steps η/√t) over the simplex on the linearised losses, ridge (--lambda: online \
        ridge regression on the forecasts, square loss, every expert awake).\n\n\
        Learning rate: --beta (wm, rwm), --eta, --horizon T (tuned for T rounds), --anytime, \
        --doubling (the doubling trick), --adahedge (no horizon, no loss range). The loss \
        range --loss-bound B is required by every rate except AdaHedge, for every loss but \
        zero-one.\n\n\
        The report gives the regret against the best expert and the bound of the rule's \
        theorem for exactly these settings (prior, rate, loss range): on the regret, or on \
        the expected regret for rwm and fpl. Where no theorem covers the settings (ewa on the \
        zero-one loss, AdaHedge or fpl with sleeping experts, a loss beyond --loss-bound) it \
        prints no bound and says why.",
    after_help = "Examples:\n  \
        pacstream experts --rule ewa --adahedge --outcome DAX data/eustock-forecasts.csv --plot experts.svg\n  \
        pacstream experts --rule rwm --doubling --outcome up data/eustock-updown.csv -o rounds.csv",
    group(ArgGroup::new("rate").args(["beta", "eta", "horizon", "anytime", "doubling", "adahedge"])),
    // The workers share out keys: without --key there is nothing to share (see
    // docs/dataflow.md on sharded experts).
    group(ArgGroup::new("cluster").args(["workers", "processes", "process", "hostfile"]).multiple(true).requires("key"))
)]
pub struct ExpertsArgs {
    /// The aggregation rule.
    #[arg(long, value_enum, value_name = "RULE")]
    pub rule: Rule,

    /// Weighted majority's β ∈ (0, 1): the factor of a wrong expert's weight [wm default: 0.5].
    #[arg(long, value_name = "B", help_heading = "Learning rate")]
    pub beta: Option<f64>,

    /// A fixed learning rate η > 0 (at most 1e50).
    #[arg(long, value_name = "E", help_heading = "Learning rate")]
    pub eta: Option<f64>,

    /// Tune the rate for a known number of rounds T (1 to 2^53).
    #[arg(long, value_name = "T", help_heading = "Learning rate")]
    pub horizon: Option<u64>,

    /// η_t = √(8 ln N / t) / B: no horizon needed.
    #[arg(long, help_heading = "Learning rate")]
    pub anytime: bool,

    /// The doubling trick: restart at rounds 2^m with the rate tuned for 2^m rounds
    /// [rwm default].
    #[arg(long, help_heading = "Learning rate")]
    pub doubling: bool,

    /// AdaHedge: η_t = ln N / Δ_{t−1} (Δ the cumulative mixability gap) [hedge, ewa default].
    #[arg(long, help_heading = "Learning rate")]
    pub adahedge: bool,

    /// The loss: zero-one, square, absolute or pinball:τ [default: zero-one for wm and rwm,
    /// square otherwise].
    #[arg(long, value_name = "LOSS", value_parser = config::parse_loss)]
    pub loss: Option<Loss>,

    /// The loss range B: every expert's loss lies in [0, B] (with --gradient, the
    /// linearised losses lie in [−B/2, B/2]); B in [1e-40, 1e200].
    #[arg(long, value_name = "B")]
    pub loss_bound: Option<f64>,

    /// EWA: charge the experts the linearised losses ℓ'(ŷ, y)·advice, which competes with
    /// the best convex combination of the experts.
    #[arg(long)]
    pub gradient: bool,

    /// Prior weights of the experts, in their order (hedge, ewa; positive, normalised).
    #[arg(long, value_name = "W,W,...", value_delimiter = ',')]
    pub prior: Option<Vec<f64>>,

    /// Hedge: also draw an expert from the weights each round and report its loss.
    #[arg(long)]
    pub sample: bool,

    /// Fixed share: the share α ∈ [0, 1) of the weight given back to every expert each
    /// round (with --eta).
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,

    /// Ridge: the penalty λ of the regression on the experts' forecasts, in [1e-8, 1e100].
    #[arg(long, value_name = "L")]
    pub lambda: Option<f64>,

    /// FTRL: the regulariser, quadratic (Euclidean projection) or entropic (exponential
    /// weights on the linearised losses) [default: quadratic].
    #[arg(long, value_enum, value_name = "R")]
    pub regulariser: Option<Regulariser>,

    /// The outcome column (name or 1-based index).
    #[arg(long, value_name = "COL", help_heading = "Input")]
    pub outcome: Option<String>,

    /// The expert columns (names, indices or ranges; default: every other numeric column
    /// except <expert>_awake masks).
    #[arg(long, id = "n_experts", value_name = "COLS", help_heading = "Input")]
    pub experts: Option<String>,

    /// The expert columns hold losses, not advice; there is no outcome (hedge, fpl).
    #[arg(long, help_heading = "Input", conflicts_with = "outcome")]
    pub losses: bool,

    /// Add every expert's weight to the per-round records.
    #[arg(long, help_heading = "Output")]
    pub weights: bool,

    /// Draw every expert's and the hindsight oracles' cumulative loss minus the learner's,
    /// over time, to FILE (SVG; the best convex and linear combinations for the square loss,
    /// every expert awake, at most 16 experts).
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot_loss: Option<std::path::PathBuf>,

    /// Draw the contribution of each expert to the prediction (weight × forecast, stacked)
    /// over time, with the outcome, to FILE (SVG).
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot_contributions: Option<std::path::PathBuf>,

    /// One aggregator per value of this column (name or 1-based index), spread over the
    /// workers with --workers and --processes.
    #[arg(long, value_name = "COL", help_heading = "Scale-out (timely dataflow)")]
    pub key: Option<String>,

    #[command(flatten)]
    pub scale_out: ScaleOutArgs,

    #[command(flatten)]
    pub common: CommonArgsWithoutColumns,
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<ExpertsArgs>("experts", error)
}

#[derive(Serialize)]
struct ExpertsSummary<'a> {
    command: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    #[serde(flatten)]
    run: AggregatorSummary<'a>,
}

/// Runs `pacstream experts`.
pub fn run(args: &ExpertsArgs) -> anyhow::Result<()> {
    if args.key.is_some() || args.scale_out.is_given() {
        return keyed::run(args);
    }
    let mut other = OtherFiles::default();
    for (name, path) in [
        ("--plot-loss", &args.plot_loss),
        ("--plot-contributions", &args.plot_contributions),
    ] {
        if let Some(path) = path {
            check_plot_path(name, path)?;
            other.outputs.push((name, path.clone()));
        }
    }
    if args.losses && args.plot_contributions.is_some() {
        return Err(crate::failure::bad_input(
            "--plot-contributions draws weight × forecast: it needs advice, not --losses",
        ));
    }
    let mut options = args.common.validate_with(&other)?;
    options.input.empty_is_missing = true;
    // Values the library would refuse are refused (or skipped) by the reader, by line and
    // column: advice and outcomes within ±1e100, losses within ±1e201.
    options.input.max_magnitude = Some(if args.losses {
        limits::MAX_LOSS
    } else {
        limits::MAX_ADVICE
    });
    let notes = Notes::new(options.quiet);
    let columns = RefCell::new(Columns::default());
    let plan_columns = |first: &FirstRow<'_>| {
        let (features, found) = plan_columns(args, first)?;
        *columns.borrow_mut() = found;
        Ok(features)
    };
    let mut reader = RowReader::open_with(&options.input, &[], notes, Some(&plan_columns))?;
    let columns = columns.into_inner();
    let n = columns.n_experts;
    let config = aggregator_config(args, n, options.seed)?;
    let expert_names: Vec<String> = {
        let labels = &reader.layout().feature_labels;
        let start = usize::from(columns.has_outcome);
        labels[start..start + n].to_vec()
    };
    let mut record_names: Vec<String> = AggregatorRecord::FIELDS
        .iter()
        .map(|s| s.to_string())
        .collect();
    if args.weights {
        record_names.extend(expert_names.iter().map(|name| format!("weight_{name}")));
    }
    let settings = serde_json::to_value(Settings {
        rule: &config,
        columns: reader.layout().features.iter().map(|i| i + 1).collect(),
        weights: args.weights,
        on_bad_row: args.common.input_options.on_bad_row,
    })?;
    let mut task = ExpertsTask {
        state: ExpertsState {
            aggregator: config.build().map_err(library_error)?,
            history: options.plot.is_some().then(|| History::new(n)),
            figures: if args.plot_loss.is_some() || args.plot_contributions.is_some() {
                Some(FigureHistory::new(n, config.loss)?)
            } else {
                None
            },
        },
        config,
        columns,
        settings,
        write_weights: args.weights,
        record_names,
        advice: Vec::with_capacity(n),
        losses: Vec::with_capacity(n),
        awake: Vec::with_capacity(n),
        cells: Vec::new(),
    };
    let input = stream_input(&mut task, &mut reader, &options, notes)?;
    let aggregator = &task.state.aggregator;
    if aggregator.rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    let summary = ExpertsSummary {
        command: "experts",
        input: InputSummary::new(&reader, &input),
        settings: &task.settings,
        run: task.config.summary(aggregator, &expert_names),
    };
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_report(&mut out, &reader, &task.config, &summary.run)?;
    }
    write_summary(&options, &summary)?;
    if let (Some(path), Some(history)) = (&options.plot, &task.state.history) {
        draw_figure(
            path,
            &reader,
            &task.config,
            &expert_names,
            history,
            &summary.run.guarantee,
        )?;
    }
    if let Some(figures) = &task.state.figures {
        let title = format!(
            "{} on {}",
            task.config.rule.name(),
            crate::commands::short_name(reader.source_name())
        );
        figures.draw(
            &title,
            &expert_names,
            args.plot_loss.as_deref(),
            args.plot_contributions.as_deref(),
        )?;
    }
    Ok(())
}
