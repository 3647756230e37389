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

use std::cell::RefCell;
use std::io::Write;

use clap::{ArgGroup, Args};
use pacstream::experts::bounds::{Bounded, Guarantee};
use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorConfig, AggregatorParams, AnyAggregator, ExpertStep,
    LearningRate, Loss, LossRound, Rule, check_rate, limits,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{InputSummary, human_number, no_good_rows, note_skipped, write_summary};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::{parse_column_list, parse_selector};
use crate::io::reader::{FirstRow, InputProgress, Row, RowReader};
use crate::io::records::{Cell, RecordSink};
use crate::options::CommonArgsWithoutColumns;
use crate::plot::{ExpertsFigure, draw_experts};
use crate::stream::{FaultAt, StreamTask, inconsistent, point_fault, row_fault, run_stream};
use crate::ui::{Notes, report_writer};

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
        average of real-valued advice), fpl (follow the perturbed leader).\n\n\
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
    group(ArgGroup::new("rate").args(["beta", "eta", "horizon", "anytime", "doubling", "adahedge"]))
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
    #[arg(long, value_name = "LOSS", value_parser = parse_loss)]
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

    #[command(flatten)]
    pub common: CommonArgsWithoutColumns,
}

fn parse_loss(text: &str) -> Result<Loss, String> {
    let loss = match text {
        "zero-one" => Loss::ZeroOne,
        "square" => Loss::Square,
        "absolute" => Loss::Absolute,
        other => match other.strip_prefix("pinball:") {
            Some(tau) => Loss::Pinball {
                tau: tau
                    .parse()
                    .map_err(|_| format!("pinball:τ needs a number τ, got {tau:?}"))?,
            },
            None => {
                return Err(format!(
                    "unknown loss {other:?}: zero-one, square, absolute or pinball:τ"
                ));
            }
        },
    };
    loss.check().map_err(|e| e.to_string())?;
    Ok(loss)
}

/// The rule's settings from the arguments: which rate option was given, and the library
/// resolves the rest (defaults, what each rule takes).
fn aggregator_config(
    args: &ExpertsArgs,
    n_experts: usize,
    seed: u64,
) -> anyhow::Result<AggregatorConfig> {
    let rule = args.rule;
    if !args.losses && args.outcome.is_none() {
        return Err(bad_input(
            "name the outcome column with --outcome (or give losses with --losses)",
        ));
    }
    if args.beta.is_some() && !rule.is_binary() {
        return Err(bad_input(
            "--beta is weighted majority's parameter; the other rules take --eta",
        ));
    }
    let rate = if let Some(beta) = args.beta {
        Some(LearningRate::beta(beta).map_err(|e| bad_input(format!("--beta: {e}")))?)
    } else if let Some(eta) = args.eta {
        // Checked as the η given, before weighted majority turns it into β = e^{−η}.
        let rate = LearningRate::Fixed(eta);
        check_rate(rate).map_err(library_error)?;
        Some(rate)
    } else if let Some(horizon) = args.horizon {
        Some(LearningRate::Horizon(horizon))
    } else if args.anytime {
        Some(LearningRate::Anytime)
    } else if args.doubling {
        Some(LearningRate::Doubling)
    } else if args.adahedge {
        Some(LearningRate::AdaHedge)
    } else {
        None
    };
    AggregatorParams {
        rule,
        n_experts,
        rate,
        loss: args.loss,
        loss_bound: args.loss_bound,
        gradient: args.gradient,
        prior: args.prior.clone(),
        sample: args.sample,
        losses_given: args.losses,
        seed,
    }
    .check()
    .map_err(library_error)
}

/// The settings a checkpoint must match: the rule's, and how the input is read.
fn settings(args: &ExpertsArgs, config: &AggregatorConfig, reader: &RowReader) -> Value {
    let mut settings = serde_json::to_value(config.settings()).unwrap_or_default();
    if let Value::Object(map) = &mut settings {
        let columns: Vec<usize> = reader.layout().features.iter().map(|i| i + 1).collect();
        map.insert("columns".into(), json!(columns));
        map.insert("weights".into(), json!(args.weights));
        map.insert(
            "on_bad_row".into(),
            json!(args.common.input_options.on_bad_row),
        );
    }
    settings
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<ExpertsArgs>("experts", error)
}

/// Where each part of a row is, among the feature columns the reader returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Columns {
    /// Whether feature 0 is the outcome.
    has_outcome: bool,
    /// The number of experts (the features after the outcome).
    n_experts: usize,
    /// For each expert, the position of its `<expert>_awake` column among the features.
    masks: Vec<Option<usize>>,
}

/// Chooses the columns: the outcome, the experts (given, or every other numeric column not
/// named `*_awake`), and the masks named after the experts.
fn plan_columns(args: &ExpertsArgs, first: &FirstRow<'_>) -> anyhow::Result<(Vec<usize>, Columns)> {
    let names = &first.names;
    let outcome = match &args.outcome {
        Some(text) => {
            let selector =
                parse_selector(text).map_err(|r| bad_input(format!("--outcome: {r}")))?;
            Some(
                names
                    .resolve_one(&selector)
                    .map_err(|r| bad_input(format!("--outcome: {r}")))?,
            )
        }
        None => None,
    };
    let labels: Vec<String> = (0..names.width).map(|i| names.label(i)).collect();
    let is_mask = |index: usize| labels[index].ends_with("_awake");
    let experts: Vec<usize> = match &args.experts {
        Some(text) => {
            let selectors =
                parse_column_list(text).map_err(|r| bad_input(format!("--experts: {r}")))?;
            let experts = names
                .resolve_list(&selectors)
                .map_err(|r| bad_input(format!("--experts: {r}")))?;
            if let Some(outcome) = outcome.filter(|o| experts.contains(o)) {
                return Err(bad_input(format!(
                    "--experts: column {} is also the outcome",
                    names.describe(outcome)
                )));
            }
            experts
        }
        None => (0..names.width)
            .filter(|&i| Some(i) != outcome && !is_mask(i) && first.numeric[i])
            .collect(),
    };
    if experts.is_empty() {
        return Err(bad_input(format!(
            "'{}' has no expert column (line {}): name them with --experts",
            names.source, first.line
        )));
    }
    let mut features: Vec<usize> = outcome.into_iter().chain(experts.iter().copied()).collect();
    let mut masks = Vec::with_capacity(experts.len());
    // Each expert's mask by name, in one pass over the header (linear in its width).
    let mut mask_columns: std::collections::HashMap<&str, usize> = Default::default();
    for (index, label) in labels.iter().enumerate() {
        if let Some(expert) = label.strip_suffix("_awake") {
            mask_columns.entry(expert).or_insert(index);
        }
    }
    for &expert in &experts {
        match mask_columns.get(labels[expert].as_str()).copied() {
            Some(index) => {
                masks.push(Some(features.len()));
                features.push(index);
            }
            None => masks.push(None),
        }
    }
    Ok((
        features,
        Columns {
            has_outcome: outcome.is_some(),
            n_experts: experts.len(),
            masks,
        },
    ))
}

/// One `--output` record's fixed fields, in order.
const RECORD_FIELDS: [&str; 10] = [
    "t",
    "prediction",
    "loss",
    "realised_loss",
    "chosen",
    "cumulative_loss",
    "best_expert",
    "best_expert_loss",
    "regret",
    "regret_bound",
];

/// The history kept for the figure, thinned to at most [`History::LIMIT`] rounds by
/// doubling the stride, so that memory stays bounded on any stream.
#[derive(Debug, Default, Serialize, Deserialize)]
struct History {
    stride: u64,
    rounds: Vec<u64>,
    /// Row-major: the weights after each kept round.
    weights: Vec<f64>,
    regret: Vec<f64>,
    bound: Vec<Option<f64>>,
    learner_mean: Vec<f64>,
    /// Row-major: every expert's running average loss (on its awake rounds).
    expert_means: Vec<f64>,
    /// Rounds each expert was awake (for the running averages).
    awake_rounds: Vec<u64>,
}

impl History {
    const LIMIT: usize = 1000;

    fn new(n_experts: usize) -> Self {
        Self {
            stride: 1,
            awake_rounds: vec![0; n_experts],
            ..Self::default()
        }
    }

    fn keep(&mut self, step: &ExpertStep, aggregator: &AnyAggregator, bound: Option<f64>) {
        let n = self.awake_rounds.len();
        if step.round % self.stride != 0 {
            return;
        }
        let ledger = aggregator.ledger();
        self.rounds.push(step.round);
        self.weights.extend(aggregator.weights());
        self.regret.push(step.regret);
        self.bound.push(bound);
        self.learner_mean
            .push(ledger.learner_loss() / step.round as f64);
        for (loss, awake) in ledger.expert_losses().iter().zip(&self.awake_rounds) {
            self.expert_means.push(loss / (*awake).max(1) as f64);
        }
        if self.rounds.len() > Self::LIMIT {
            self.stride *= 2;
            let stride = self.stride;
            let keep: Vec<bool> = self.rounds.iter().map(|r| r % stride == 0).collect();
            let filter = |values: &mut Vec<f64>, width: usize| {
                let kept: Vec<f64> = values
                    .chunks_exact(width)
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .flat_map(|(chunk, _)| chunk.iter().copied())
                    .collect();
                *values = kept;
            };
            filter(&mut self.weights, n);
            filter(&mut self.expert_means, n);
            filter(&mut self.regret, 1);
            filter(&mut self.learner_mean, 1);
            let mut index = 0;
            self.bound.retain(|_| {
                index += 1;
                keep[index - 1]
            });
            self.rounds.retain(|r| r % stride == 0);
        }
    }

    fn validate(&self, n_experts: usize) -> Result<(), String> {
        let kept = self.rounds.len();
        if self.stride == 0
            || kept > Self::LIMIT
            || self.awake_rounds.len() != n_experts
            || self.weights.len() != kept * n_experts
            || self.expert_means.len() != kept * n_experts
            || self.regret.len() != kept
            || self.bound.len() != kept
            || self.learner_mean.len() != kept
        {
            return Err("its figure history is inconsistent".to_string());
        }
        Ok(())
    }
}

/// What a checkpoint holds.
#[derive(Debug, Serialize, Deserialize)]
struct ExpertsState {
    aggregator: AnyAggregator,
    history: Option<History>,
}

struct ExpertsTask {
    config: AggregatorConfig,
    columns: Columns,
    settings: Value,
    state: ExpertsState,
    write_weights: bool,
    record_names: Vec<String>,
    /// Scratch buffers of a round.
    advice: Vec<f64>,
    losses: Vec<f64>,
    awake: Vec<bool>,
    cells: Vec<Cell>,
}

impl ExpertsTask {
    /// Splits a row into advice (or losses), outcome and awake flags.
    fn read_row(&mut self, row: &Row<'_>) -> anyhow::Result<(f64, bool)> {
        let n = self.columns.n_experts;
        let start = usize::from(self.columns.has_outcome);
        let outcome = if self.columns.has_outcome {
            row.values[0]
        } else {
            0.0
        };
        if outcome.is_nan() {
            return Err(row_fault(FaultAt::Feature(0), "the outcome is missing"));
        }
        self.advice.clear();
        self.advice.extend_from_slice(&row.values[start..start + n]);
        self.awake.clear();
        let mut sleeping = false;
        for i in 0..n {
            let mut awake = !self.advice[i].is_nan();
            if let Some(position) = self.columns.masks[i] {
                let flag = row.values[position];
                match flag {
                    1.0 => {}
                    0.0 => awake = false,
                    _ if flag.is_nan() => awake = false,
                    _ => {
                        return Err(row_fault(
                            FaultAt::Feature(position),
                            format!("an <expert>_awake column holds {flag}, not 0 or 1"),
                        ));
                    }
                }
            }
            sleeping |= !awake;
            self.awake.push(awake);
        }
        Ok((outcome, sleeping))
    }

    fn step(&mut self, outcome: f64, sleeping: bool) -> Result<ExpertStep, pacstream::Error> {
        let awake = sleeping.then_some(self.awake.as_slice());
        let aggregator = &mut self.state.aggregator;
        if self.config.losses_given {
            // A sleeping expert's cell may be empty (NaN): it pays nothing.
            self.losses.clear();
            let awake_losses = self.advice.iter().zip(&self.awake);
            self.losses
                .extend(awake_losses.map(|(&loss, &awake)| if awake { loss } else { 0.0 }));
            aggregator.learn_losses(LossRound {
                losses: &self.losses,
                awake,
            })
        } else {
            let round = AdviceRound {
                advice: &self.advice,
                outcome,
                awake,
            };
            aggregator.learn_advice(round, self.config.loss)
        }
    }
}

impl StreamTask for ExpertsTask {
    const COMMAND: &'static str = "experts";
    type State = ExpertsState;

    fn settings(&self) -> Value {
        self.settings.clone()
    }

    fn state(&self) -> &ExpertsState {
        &self.state
    }

    fn restore(&mut self, state: ExpertsState, input: &InputProgress) -> anyhow::Result<()> {
        let kind = |a: &AnyAggregator| std::mem::discriminant(a);
        if kind(&state.aggregator) != kind(&self.state.aggregator)
            || state.aggregator.ledger().expert_losses().len() != self.columns.n_experts
        {
            return Err(inconsistent("its aggregator does not match the settings"));
        }
        if state.aggregator.rounds() != input.rows_consumed - input.bad_rows_skipped {
            return Err(inconsistent(
                "the rounds learned do not match the rows it read",
            ));
        }
        match (&self.state.history, &state.history) {
            (None, None) => {}
            (Some(_), Some(history)) => history
                .validate(self.columns.n_experts)
                .map_err(|what| inconsistent(&what))?,
            _ => return Err(inconsistent("its figure history does not match --plot")),
        }
        self.state = state;
        Ok(())
    }

    fn learn(&mut self, row: &Row<'_>, sink: &mut RecordSink) -> anyhow::Result<()> {
        let (outcome, sleeping) = self.read_row(row)?;
        let step = self.step(outcome, sleeping).map_err(|e| {
            point_fault(e, usize::from(self.columns.has_outcome), |e| {
                library_error(e)
            })
        })?;
        let ledger = self.state.aggregator.ledger();
        let best_loss = ledger.expert_losses()[step.best_expert];
        let bound = self
            .state
            .aggregator
            .regret_bound_against(step.best_expert)
            .value();
        if sink.is_enabled() {
            self.cells.clear();
            self.cells.extend([
                Cell::Integer(step.round),
                Cell::from_option(step.prediction),
                Cell::Number(step.loss),
                Cell::from_option(step.realised_loss),
                step.chosen
                    .map_or(Cell::Missing, |c| Cell::Integer(c as u64)),
                Cell::Number(ledger.learner_loss()),
                Cell::Integer(step.best_expert as u64),
                Cell::Number(best_loss),
                Cell::Number(step.regret),
                Cell::from_option(bound),
            ]);
            if self.write_weights {
                let weights = self.state.aggregator.weights();
                self.cells.extend(weights.into_iter().map(Cell::Number));
            }
            sink.write_fields(&self.record_names, &self.cells)?;
        }
        if let Some(history) = &mut self.state.history {
            for (count, awake) in history.awake_rounds.iter_mut().zip(&self.awake) {
                *count += u64::from(*awake);
            }
            history.keep(&step, &self.state.aggregator, bound);
        }
        Ok(())
    }

    fn is_settled(&self) -> bool {
        true
    }

    fn finish(&mut self, _sink: &mut RecordSink) -> anyhow::Result<()> {
        Ok(())
    }
}

#[derive(Serialize)]
struct ExpertSummary<'a> {
    name: &'a str,
    cumulative_loss: f64,
    regret_against: f64,
    /// The rule's bound on the regret against this expert, if a theorem gives one.
    regret_bound: Option<f64>,
    final_weight: f64,
}

#[derive(Serialize)]
struct ExpertsSummary<'a> {
    command: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    rounds: u64,
    cumulative_loss: f64,
    best_expert: &'a str,
    best_expert_loss: f64,
    regret: f64,
    /// The rule's bound on that regret (for FPL and RWM, on the expected regret), or none.
    regret_bound: Option<f64>,
    /// What the regret is: the regret of the learner's loss, or its expected regret
    /// (randomised rules).
    #[serde(rename = "regret_is")]
    guarantee_bounded: Bounded,
    /// What the bound bounds and under which theorem, or why there is none.
    guarantee: Guarantee,
    /// Rounds where a loss fell outside the range the bound assumes.
    out_of_range_rounds: u64,
    /// The loss range --loss-bound gave (1 for the zero-one loss), if any.
    loss_bound: Option<f64>,
    experts: Vec<ExpertSummary<'a>>,
}

/// Runs `pacstream experts`.
pub fn run(args: &ExpertsArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate()?;
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
    let mut record_names: Vec<String> = RECORD_FIELDS.iter().map(|s| s.to_string()).collect();
    if args.weights {
        record_names.extend(expert_names.iter().map(|name| format!("weight_{name}")));
    }
    let settings = settings(args, &config, &reader);
    let mut task = ExpertsTask {
        state: ExpertsState {
            aggregator: config.build().map_err(library_error)?,
            history: options.plot.is_some().then(|| History::new(n)),
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
    let input = run_stream(
        &mut task,
        &mut reader,
        options.output.as_ref(),
        &options.checkpoints,
        notes,
    )?;
    note_skipped(notes, &input, reader.source_name());
    let aggregator = &task.state.aggregator;
    if aggregator.rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    let ledger = aggregator.ledger();
    let (best, regret) = ledger.best_expert();
    let weights = aggregator.weights();
    let guarantee = aggregator.regret_bound();
    let summary = ExpertsSummary {
        command: "experts",
        input: InputSummary::new(&reader, &input),
        settings: &task.settings,
        rounds: aggregator.rounds(),
        cumulative_loss: ledger.learner_loss(),
        best_expert: &expert_names[best],
        best_expert_loss: ledger.expert_losses()[best],
        regret,
        regret_bound: guarantee.value(),
        guarantee_bounded: guarantee.bounded(),
        guarantee: guarantee.clone(),
        out_of_range_rounds: aggregator.out_of_range_rounds(),
        loss_bound: task.config.loss_bound,
        experts: expert_names
            .iter()
            .enumerate()
            .map(|(i, name)| ExpertSummary {
                name,
                cumulative_loss: ledger.expert_losses()[i],
                regret_against: ledger.regret_against(i),
                regret_bound: aggregator.regret_bound_against(i).value(),
                final_weight: weights[i],
            })
            .collect(),
    };
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_report(&mut out, &reader, &task.config, &summary)?;
    }
    write_summary(&options, &summary)?;
    if let (Some(path), Some(history)) = (&options.plot, &task.state.history) {
        draw_figure(
            path,
            &reader,
            &task.config,
            &expert_names,
            history,
            &guarantee,
        )?;
    }
    Ok(())
}

fn print_report(
    out: &mut dyn Write,
    reader: &RowReader,
    config: &AggregatorConfig,
    summary: &ExpertsSummary<'_>,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} on '{}': {} experts, {} rounds, rate {}",
        config.rule.name(),
        reader.source_name(),
        config.n_experts,
        summary.rounds,
        config.rate.name()
    )?;
    writeln!(
        out,
        "  cumulative loss    {}",
        human_number(summary.cumulative_loss)
    )?;
    writeln!(
        out,
        "  best expert        {} ({})",
        summary.best_expert,
        human_number(summary.best_expert_loss)
    )?;
    writeln!(
        out,
        "  {:<18} {} against {}",
        summary.guarantee_bounded.name(),
        human_number(summary.regret),
        summary.best_expert
    )?;
    match &summary.guarantee {
        Guarantee::Bound(bound) => writeln!(
            out,
            "  bound              {} on the {} ({})",
            human_number(bound.value),
            bound.bounded.name(),
            bound.theorem
        )?,
        Guarantee::NoBound { reason, .. } => writeln!(out, "  bound              none: {reason}")?,
    }
    if summary.out_of_range_rounds > 0 {
        writeln!(
            out,
            "  note: in {} rounds a loss fell outside the range the bound assumes (--loss-bound)",
            summary.out_of_range_rounds
        )?;
    }
    let width = summary
        .experts
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln!(
        out,
        "  {:<width$}  {:>14}  {:>12}  {:>12}  {:>10}",
        "expert", "loss", "regret", "bound", "weight"
    )?;
    for expert in &summary.experts {
        writeln!(
            out,
            "  {:<width$}  {:>14}  {:>12}  {:>12}  {:>10}",
            expert.name,
            human_number(expert.cumulative_loss),
            human_number(expert.regret_against),
            expert.regret_bound.map_or("-".to_string(), human_number),
            human_number(expert.final_weight)
        )?;
    }
    Ok(())
}

fn draw_figure(
    path: &std::path::Path,
    reader: &RowReader,
    config: &AggregatorConfig,
    names: &[String],
    history: &History,
    guarantee: &Guarantee,
) -> anyhow::Result<()> {
    let n = names.len();
    let figure = ExpertsFigure {
        title: format!(
            "{} ({}) on {}",
            config.rule.name(),
            config.rate.name(),
            std::path::Path::new(reader.source_name())
                .file_name()
                .map_or_else(
                    || reader.source_name().to_string(),
                    |f| f.to_string_lossy().into_owned()
                )
        ),
        names: names.to_vec(),
        rounds: history.rounds.iter().map(|&r| r as f64).collect(),
        weights: history
            .weights
            .chunks_exact(n)
            .map(<[f64]>::to_vec)
            .collect(),
        regret: history.regret.clone(),
        bound: history.bound.clone(),
        regret_name: guarantee.bounded().name().to_string(),
        no_bound: guarantee.value().is_none(),
        learner_mean: history.learner_mean.clone(),
        expert_means: history
            .expert_means
            .chunks_exact(n)
            .map(<[f64]>::to_vec)
            .collect(),
    };
    write_atomically(path, draw_experts(&figure)?.as_bytes())
}
