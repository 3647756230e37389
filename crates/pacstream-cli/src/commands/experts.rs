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

use clap::{ArgGroup, Args, ValueEnum};
use pacstream::OnlineLearner;
use pacstream::experts::bounds::{Bounded, Guarantee};
use pacstream::experts::{
    AdviceRound, Ewa, EwaParams, ExpertLedger, ExpertStep, FollowThePerturbedLeader, FplParams,
    Hedge, HedgeParams, LearningRate, Loss, LossRound, RandomizedWeightedMajority,
    RandomizedWeightedMajorityParams, WeightedMajority, WeightedMajorityParams, check_rate, limits,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{InputSummary, human_number, no_good_rows, note_skipped, write_summary};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::{parse_column_list, parse_selector};
use crate::io::reader::{FirstRow, InputProgress, Row, RowReader};
use crate::io::records::{Cell, RecordSink};
use crate::options::CommonArgs;
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
    #[arg(long, value_name = "COLS", help_heading = "Input")]
    pub experts: Option<String>,

    /// The expert columns hold losses, not advice; there is no outcome (hedge, fpl).
    #[arg(long, help_heading = "Input", conflicts_with = "outcome")]
    pub losses: bool,

    /// Add every expert's weight to the per-round records.
    #[arg(long, help_heading = "Output")]
    pub weights: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--rule` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum Rule {
    /// Deterministic weighted majority (binary advice).
    Wm,
    /// Randomized weighted majority (binary advice).
    Rwm,
    /// Hedge: the mixture of the experts, paying the mixture loss.
    Hedge,
    /// The exponentially weighted average forecaster (real-valued advice).
    Ewa,
    /// Follow the perturbed leader.
    Fpl,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Wm => "wm",
            Rule::Rwm => "rwm",
            Rule::Hedge => "hedge",
            Rule::Ewa => "ewa",
            Rule::Fpl => "fpl",
        }
    }
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

/// The aggregator of a run, whatever its rule.
#[derive(Debug, Serialize, Deserialize)]
enum Aggregator {
    Wm(WeightedMajority),
    Rwm(RandomizedWeightedMajority),
    Hedge(Hedge),
    Ewa(Ewa),
    Fpl(FollowThePerturbedLeader),
}

impl Aggregator {
    fn ledger(&self) -> &ExpertLedger {
        match self {
            Aggregator::Wm(l) => l.ledger(),
            Aggregator::Rwm(l) => l.ledger(),
            Aggregator::Hedge(l) => l.ledger(),
            Aggregator::Ewa(l) => l.ledger(),
            Aggregator::Fpl(l) => l.ledger(),
        }
    }

    fn weights(&self) -> Vec<f64> {
        match self {
            Aggregator::Wm(l) => l.weights(),
            Aggregator::Rwm(l) => l.weights(),
            Aggregator::Hedge(l) => l.weights(),
            Aggregator::Ewa(l) => l.weights(),
            Aggregator::Fpl(l) => l.weights(),
        }
    }

    fn n_rounds(&self) -> u64 {
        match self {
            Aggregator::Wm(l) => l.n_rounds(),
            Aggregator::Rwm(l) => l.n_rounds(),
            Aggregator::Hedge(l) => l.n_rounds(),
            Aggregator::Ewa(l) => l.n_rounds(),
            Aggregator::Fpl(l) => l.n_rounds(),
        }
    }

    /// The rule's guarantee on the regret against the best expert, as the library states it.
    fn regret_bound(&self) -> Guarantee {
        match self {
            Aggregator::Wm(l) => l.regret_bound(),
            Aggregator::Rwm(l) => l.regret_bound(),
            Aggregator::Hedge(l) => l.regret_bound(),
            Aggregator::Ewa(l) => l.regret_bound(),
            Aggregator::Fpl(l) => l.regret_bound(),
        }
    }

    /// The same against `expert`.
    fn regret_bound_against(&self, expert: usize) -> Guarantee {
        match self {
            Aggregator::Wm(l) => l.regret_bound_against(expert),
            Aggregator::Rwm(l) => l.regret_bound_against(expert),
            Aggregator::Hedge(l) => l.regret_bound_against(expert),
            Aggregator::Ewa(l) => l.regret_bound_against(expert),
            Aggregator::Fpl(l) => l.regret_bound_against(expert),
        }
    }

    fn out_of_range_rounds(&self) -> u64 {
        match self {
            Aggregator::Hedge(l) => l.out_of_range_rounds(),
            Aggregator::Ewa(l) => l.out_of_range_rounds(),
            Aggregator::Fpl(l) => l.out_of_range_rounds(),
            Aggregator::Wm(_) | Aggregator::Rwm(_) => 0,
        }
    }
}

/// The settings of a run, resolved: what the bound needs besides the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Plan {
    rule: Rule,
    rate: LearningRate,
    /// β for the weighted-majority rules with a fixed rate.
    beta: Option<f64>,
    loss: Loss,
    loss_bound: Option<f64>,
    gradient: bool,
    n_experts: usize,
    losses_given: bool,
}

impl Plan {
    fn new(args: &ExpertsArgs, n_experts: usize) -> anyhow::Result<Self> {
        let rule = args.rule;
        let binary = matches!(rule, Rule::Wm | Rule::Rwm);
        let loss = args
            .loss
            .unwrap_or(if binary { Loss::ZeroOne } else { Loss::Square });
        if binary && loss != Loss::ZeroOne {
            return Err(bad_input(format!(
                "--rule {} predicts 0 or 1 and counts mistakes: it takes --loss zero-one",
                rule.name()
            )));
        }
        if args.losses && !matches!(rule, Rule::Hedge | Rule::Fpl) {
            return Err(bad_input(
                "--losses gives each expert's loss directly: it goes with --rule hedge or fpl",
            ));
        }
        if !args.losses && args.outcome.is_none() {
            return Err(bad_input(
                "name the outcome column with --outcome (or give losses with --losses)",
            ));
        }
        if args.gradient && rule != Rule::Ewa {
            return Err(bad_input("--gradient applies to --rule ewa"));
        }
        if args.sample && rule != Rule::Hedge {
            return Err(bad_input("--sample applies to --rule hedge"));
        }
        if args.prior.is_some() && !matches!(rule, Rule::Hedge | Rule::Ewa) {
            return Err(bad_input("--prior applies to --rule hedge or ewa"));
        }
        if args.beta.is_some() && !binary {
            return Err(bad_input(
                "--beta is weighted majority's parameter; the other rules take --eta",
            ));
        }
        let rate = if let Some(beta) = args.beta {
            LearningRate::beta(beta).map_err(|e| bad_input(format!("--beta: {e}")))?
        } else if let Some(eta) = args.eta {
            // Checked as the η given, before weighted majority turns it into β = e^{−η}.
            let rate = LearningRate::Fixed(eta);
            check_rate(rate).map_err(|e| library_error(&e))?;
            rate
        } else if let Some(horizon) = args.horizon {
            LearningRate::Horizon(horizon)
        } else if args.anytime {
            LearningRate::Anytime
        } else if args.doubling {
            LearningRate::Doubling
        } else if args.adahedge {
            LearningRate::AdaHedge
        } else {
            match rule {
                Rule::Wm => LearningRate::beta(0.5).map_err(|e| bad_input(e.to_string()))?,
                Rule::Rwm => LearningRate::Doubling,
                Rule::Hedge | Rule::Ewa => LearningRate::AdaHedge,
                Rule::Fpl => {
                    return Err(bad_input("--rule fpl needs a rate: --eta E or --horizon T"));
                }
            }
        };
        if rule == Rule::Wm && !matches!(rate, LearningRate::Fixed(_)) {
            return Err(bad_input("--rule wm takes a fixed --beta"));
        }
        let loss_bound = match (args.loss_bound, loss) {
            (Some(bound), _) => Some(bound),
            (None, Loss::ZeroOne) if !args.losses => Some(1.0),
            (None, _) => None,
        };
        let beta = match rate {
            LearningRate::Fixed(eta) if binary => Some((-eta).exp()),
            _ => None,
        };
        if beta == Some(0.0) {
            return Err(bad_input(format!(
                "invalid --eta: --rule {} uses β = e^(−η), which is 0 for η above about 745, \
                 got {}",
                rule.name(),
                args.eta.unwrap_or_default()
            )));
        }
        Ok(Self {
            rule,
            rate,
            beta,
            loss,
            loss_bound,
            gradient: args.gradient,
            n_experts,
            losses_given: args.losses,
        })
    }

    fn build(&self, args: &ExpertsArgs, seed: u64) -> anyhow::Result<Aggregator> {
        let n = self.n_experts;
        let error = |e: pacstream::Error| library_error(&e);
        Ok(match self.rule {
            Rule::Wm => Aggregator::Wm(
                WeightedMajorityParams::new(n)
                    .beta(self.beta.unwrap_or(0.5))
                    .check()
                    .map_err(error)?
                    .build(),
            ),
            Rule::Rwm => {
                let params = RandomizedWeightedMajorityParams::new(n).seed(seed);
                let params = match self.beta {
                    Some(beta) => params.beta(beta),
                    None => params.learning_rate(self.rate),
                };
                Aggregator::Rwm(params.check().map_err(error)?.build())
            }
            Rule::Hedge => {
                let mut params = HedgeParams::new(n)
                    .learning_rate(self.rate)
                    .sample(args.sample)
                    .seed(seed);
                if let Some(bound) = self.loss_bound {
                    params = params.loss_bound(bound);
                }
                if let Some(prior) = &args.prior {
                    params = params.prior(prior.clone());
                }
                Aggregator::Hedge(params.check().map_err(error)?.build())
            }
            Rule::Ewa => {
                let mut params = EwaParams::new(n)
                    .loss(self.loss)
                    .learning_rate(self.rate)
                    .gradient(self.gradient);
                if let Some(bound) = self.loss_bound {
                    params = params.loss_bound(bound);
                }
                if let Some(prior) = &args.prior {
                    params = params.prior(prior.clone());
                }
                Aggregator::Ewa(params.check().map_err(error)?.build())
            }
            Rule::Fpl => {
                let bound = self.loss_bound.ok_or_else(|| {
                    bad_input("--rule fpl needs the loss range --loss-bound B (losses in [0, B])")
                })?;
                let params = FplParams::new(n, bound)
                    .learning_rate(self.rate)
                    .expected_loss(true)
                    .seed(seed);
                Aggregator::Fpl(params.check().map_err(error)?.build())
            }
        })
    }

    fn settings(&self, args: &ExpertsArgs, reader: &RowReader, seed: u64) -> Value {
        json!({
            "rule": self.rule.name(),
            "rate": self.rate.name(),
            "eta": match self.rate { LearningRate::Fixed(eta) => Some(eta), _ => None },
            "horizon": match self.rate { LearningRate::Horizon(h) => Some(h), _ => None },
            "beta": self.beta,
            "loss": self.loss.name(),
            "loss_bound": self.loss_bound,
            "gradient": self.gradient,
            "prior": args.prior,
            "sample": args.sample,
            "losses": self.losses_given,
            "columns": reader.layout().features.iter().map(|i| i + 1).collect::<Vec<_>>(),
            "weights": args.weights,
            "seed": seed,
            "on_bad_row": args.common.input_options.on_bad_row,
        })
    }
}

fn library_error(error: &pacstream::Error) -> anyhow::Error {
    if let pacstream::Error::InvalidParameter { name, reason } = error {
        let option = match *name {
            "eta" => "--eta",
            "beta" => "--beta",
            "horizon" => "--horizon",
            "loss_bound" => "--loss-bound",
            "prior" => "--prior",
            "tau" => "--loss pinball:τ",
            "gradient" => "--gradient",
            "n_experts" => "--experts",
            _ => "a setting",
        };
        return bad_input(format!("invalid {option}: {reason}"));
    }
    bad_input(format!("experts: {error}"))
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

    fn keep(&mut self, step: &ExpertStep, aggregator: &Aggregator, bound: Option<f64>) {
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
    aggregator: Aggregator,
    history: Option<History>,
}

struct ExpertsTask {
    plan: Plan,
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
        let plan = &self.plan;
        match &mut self.state.aggregator {
            Aggregator::Wm(learner) => learner.learn_one(AdviceRound {
                advice: &self.advice,
                outcome,
                awake,
            }),
            Aggregator::Rwm(learner) => learner.learn_one(AdviceRound {
                advice: &self.advice,
                outcome,
                awake,
            }),
            Aggregator::Ewa(learner) => learner.learn_one(AdviceRound {
                advice: &self.advice,
                outcome,
                awake,
            }),
            Aggregator::Hedge(_) | Aggregator::Fpl(_) => {
                self.losses.clear();
                for (i, &value) in self.advice.iter().enumerate() {
                    let loss = if self.awake[i] {
                        if plan.losses_given {
                            value
                        } else {
                            plan.loss.value(value, outcome)
                        }
                    } else {
                        0.0
                    };
                    self.losses.push(loss);
                }
                let round = LossRound {
                    losses: &self.losses,
                    awake,
                };
                match &mut self.state.aggregator {
                    Aggregator::Hedge(learner) => learner.learn_one(round),
                    Aggregator::Fpl(learner) => learner.learn_one(round),
                    _ => unreachable!("matched above"),
                }
            }
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
        let kind = |a: &Aggregator| std::mem::discriminant(a);
        if kind(&state.aggregator) != kind(&self.state.aggregator)
            || state.aggregator.ledger().expert_losses().len() != self.columns.n_experts
        {
            return Err(inconsistent("its aggregator does not match the settings"));
        }
        if state.aggregator.n_rounds() != input.rows_consumed - input.bad_rows_skipped {
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
                library_error(&e)
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
    if args.common.input_options.columns.is_some() {
        return Err(bad_input(
            "pacstream experts chooses its columns with --outcome and --experts, not --columns",
        ));
    }
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
    let plan = Plan::new(args, n)?;
    let expert_names: Vec<String> = {
        let labels = &reader.layout().feature_labels;
        let start = usize::from(columns.has_outcome);
        labels[start..start + n].to_vec()
    };
    let mut record_names: Vec<String> = RECORD_FIELDS.iter().map(|s| s.to_string()).collect();
    if args.weights {
        record_names.extend(expert_names.iter().map(|name| format!("weight_{name}")));
    }
    let settings = plan.settings(args, &reader, options.seed);
    let mut task = ExpertsTask {
        state: ExpertsState {
            aggregator: plan.build(args, options.seed)?,
            history: options.plot.is_some().then(|| History::new(n)),
        },
        plan,
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
    if aggregator.n_rounds() == 0 {
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
        rounds: aggregator.n_rounds(),
        cumulative_loss: ledger.learner_loss(),
        best_expert: &expert_names[best],
        best_expert_loss: ledger.expert_losses()[best],
        regret,
        regret_bound: guarantee.value(),
        guarantee_bounded: guarantee.bounded(),
        guarantee: guarantee.clone(),
        out_of_range_rounds: aggregator.out_of_range_rounds(),
        loss_bound: task.plan.loss_bound,
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
        print_report(&mut out, &reader, &task.plan, &summary)?;
    }
    write_summary(&options, &summary)?;
    if let (Some(path), Some(history)) = (&options.plot, &task.state.history) {
        draw_figure(
            path,
            &reader,
            &task.plan,
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
    plan: &Plan,
    summary: &ExpertsSummary<'_>,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} on '{}': {} experts, {} rounds, rate {}",
        plan.rule.name(),
        reader.source_name(),
        plan.n_experts,
        summary.rounds,
        plan.rate.name()
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
    plan: &Plan,
    names: &[String],
    history: &History,
    guarantee: &Guarantee,
) -> anyhow::Result<()> {
    let n = names.len();
    let figure = ExpertsFigure {
        title: format!(
            "{} ({}) on {}",
            plan.rule.name(),
            plan.rate.name(),
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
