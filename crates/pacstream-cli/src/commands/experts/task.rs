//! The streaming task of `pacstream experts`: one row is one round of the aggregator, its
//! record written, and what the figures draw kept; the checkpoint holds the aggregator and
//! those histories.

use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorConfig, AggregatorRecord, AnyAggregator, ExpertStep,
    LossRound,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::columns::Columns;
use super::figures::FigureHistory;
use super::history::History;
use super::library_error;
use crate::io::reader::{InputProgress, Row};
use crate::io::records::{Cell, RecordSink};
use crate::options::BadRowPolicy;
use crate::stream::{StreamTask, inconsistent, point_fault};

/// The settings a checkpoint must match: the rule's, and how the input is read.
#[derive(Serialize)]
pub(super) struct Settings<'a> {
    #[serde(flatten)]
    pub(super) rule: &'a AggregatorConfig,
    /// 1-based input columns read (outcome, experts, masks).
    pub(super) columns: Vec<usize>,
    /// Whether the records hold the weights.
    pub(super) weights: bool,
    pub(super) on_bad_row: BadRowPolicy,
}

/// What a checkpoint holds.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ExpertsState {
    pub(super) aggregator: AnyAggregator,
    pub(super) history: Option<History>,
    /// What `--plot-loss` and `--plot-contributions` draw (absent from the checkpoint
    /// without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) figures: Option<FigureHistory>,
}

pub(super) struct ExpertsTask {
    pub(super) config: AggregatorConfig,
    pub(super) columns: Columns,
    pub(super) settings: Value,
    pub(super) state: ExpertsState,
    pub(super) write_weights: bool,
    pub(super) record_names: Vec<String>,
    /// Scratch buffers of a round.
    pub(super) advice: Vec<f64>,
    pub(super) losses: Vec<f64>,
    pub(super) awake: Vec<bool>,
    pub(super) cells: Vec<Cell>,
}

impl ExpertsTask {
    /// Splits a row into advice (or losses), outcome and awake flags.
    fn read_row(&mut self, row: &Row<'_>) -> anyhow::Result<(f64, bool)> {
        self.columns.split(row, &mut self.advice, &mut self.awake)
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
        match (&self.state.figures, &state.figures) {
            (None, None) => {}
            (Some(_), Some(figures)) => figures
                .validate(self.columns.n_experts)
                .map_err(|what| inconsistent(&what))?,
            _ => {
                return Err(inconsistent(
                    "its figure history does not match --plot-loss and --plot-contributions",
                ));
            }
        }
        self.state = state;
        Ok(())
    }

    fn learn(&mut self, row: &Row<'_>, sink: &mut RecordSink) -> anyhow::Result<()> {
        let (outcome, sleeping) = self.read_row(row)?;
        let next_round = self.state.aggregator.rounds() + 1;
        let played_with = self
            .state
            .figures
            .as_ref()
            .is_some_and(|f| f.keeps(next_round))
            .then(|| self.state.aggregator.weights());
        let step = self.step(outcome, sleeping).map_err(|e| {
            point_fault(e, usize::from(self.columns.has_outcome), |e| {
                library_error(e)
            })
        })?;
        // The library's record of the round: the same fields the keyed run writes.
        let record = AggregatorRecord::new(&self.state.aggregator, &step);
        let bound = record.regret_bound;
        if sink.is_enabled() {
            self.cells.clear();
            self.cells.extend([
                Cell::Integer(record.t),
                Cell::from_option(record.prediction),
                Cell::Number(record.loss),
                Cell::from_option(record.realised_loss),
                record
                    .chosen
                    .map_or(Cell::Missing, |c| Cell::Integer(c as u64)),
                Cell::Number(record.cumulative_loss),
                Cell::Integer(record.best_expert as u64),
                Cell::Number(record.best_expert_loss),
                Cell::Number(record.regret),
                Cell::from_option(record.regret_bound),
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
        if let Some(figures) = &mut self.state.figures {
            figures.record(
                &self.state.aggregator,
                played_with.as_deref(),
                &self.advice,
                sleeping.then_some(self.awake.as_slice()),
                outcome,
                step.prediction,
            );
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
