//! The figures forecasters draw with R's opera (`plot.mixture`), beside `--plot`:
//! `--plot-loss`, the cumulative loss of every expert and of the hindsight oracles minus the
//! learner's, over time; `--plot-contributions`, the contribution weight × forecast of every
//! expert to the prediction, stacked, with the outcome. Kept in bounded memory across the
//! stream and its checkpoints (at most [`FigureHistory::LIMIT`] rounds, thinned by doubling
//! the stride).

use std::path::Path;

use pacstream::experts::{Aggregator, AnyAggregator, ConvexCombinationOracle, Loss};
use serde::{Deserialize, Serialize};

use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::plot::{
    ContributionsFigure, LineFigure, Series, SeriesStyle, draw_contributions, draw_lines,
};

/// The most experts these figures follow (N numbers per kept round, for each figure).
pub(super) const MAX_FIGURE_EXPERTS: usize = 1000;
/// The most experts for which the convex and linear oracles are solved at every kept round
/// (an N × N problem each time).
const MAX_ORACLE_EXPERTS: usize = 16;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FigureHistory {
    n_experts: usize,
    stride: u64,
    rounds: Vec<u64>,
    learner_loss: Vec<f64>,
    /// Row-major: every expert's cumulative loss (on its awake rounds).
    expert_losses: Vec<f64>,
    /// The best convex and linear combination in hindsight so far (square loss, every
    /// expert awake, N ≤ 16), two per kept round.
    oracle_losses: Vec<f64>,
    /// Row-major: weight × advice of every expert, with the weights the round was played
    /// with (0 for an asleep expert).
    contributions: Vec<f64>,
    outcomes: Vec<f64>,
    predictions: Vec<f64>,
    oracle: Option<ConvexCombinationOracle>,
    /// Why the oracles are not drawn, if they are not.
    no_oracle: Option<String>,
}

impl FigureHistory {
    const LIMIT: usize = 1000;

    pub(super) fn new(n_experts: usize, loss: Loss) -> anyhow::Result<Self> {
        if n_experts > MAX_FIGURE_EXPERTS {
            return Err(bad_input(format!(
                "--plot-loss and --plot-contributions follow at most {MAX_FIGURE_EXPERTS} \
                 experts, got {n_experts}"
            )));
        }
        let no_oracle = if loss != Loss::Square {
            Some("the oracles are solved for the square loss".to_string())
        } else if n_experts > MAX_ORACLE_EXPERTS {
            Some(format!(
                "the oracles are drawn for at most {MAX_ORACLE_EXPERTS} experts"
            ))
        } else {
            None
        };
        Ok(Self {
            n_experts,
            stride: 1,
            rounds: Vec::new(),
            learner_loss: Vec::new(),
            expert_losses: Vec::new(),
            oracle_losses: Vec::new(),
            contributions: Vec::new(),
            outcomes: Vec::new(),
            predictions: Vec::new(),
            oracle: no_oracle
                .is_none()
                .then(|| ConvexCombinationOracle::new(n_experts)),
            no_oracle,
        })
    }

    /// Whether the round about to be played is kept (its weights are then wanted).
    pub(super) fn keeps(&self, round: u64) -> bool {
        round.is_multiple_of(self.stride)
    }

    /// Records a round played with `weights` (taken before it): the oracles see every
    /// round, the curves only the kept ones.
    pub(super) fn record(
        &mut self,
        aggregator: &AnyAggregator,
        weights: Option<&[f64]>,
        advice: &[f64],
        awake: Option<&[bool]>,
        outcome: f64,
        prediction: Option<f64>,
    ) {
        if let Some(oracle) = &mut self.oracle {
            if awake.is_some_and(|a| a.iter().any(|x| !x)) {
                self.oracle = None;
                self.no_oracle = Some("the oracles need every expert awake".to_string());
                self.oracle_losses.clear();
            } else if oracle.observe(advice, outcome).is_err() {
                self.oracle = None;
                self.no_oracle = Some("the oracles could not take this advice".to_string());
                self.oracle_losses.clear();
            }
        }
        let ledger = aggregator.ledger();
        let round = ledger.rounds();
        let Some(weights) = weights else {
            return;
        };
        let n = self.n_experts;
        self.rounds.push(round);
        self.learner_loss.push(ledger.learner_loss());
        self.expert_losses.extend_from_slice(ledger.expert_losses());
        if let Some(oracle) = &self.oracle {
            self.oracle_losses.push(oracle.solve().1);
            self.oracle_losses.push(oracle.solve_linear().1);
        }
        let is_awake = |i: usize| awake.is_none_or(|a| a[i]);
        let total: f64 = (0..n).filter(|&i| is_awake(i)).map(|i| weights[i]).sum();
        // The weights of the awake experts, renormalised, as the rule mixes them; ridge's
        // weights are not a distribution and are used as they are.
        let scale = if awake.is_some() && total > 0.0 {
            1.0 / total
        } else {
            1.0
        };
        self.contributions.extend((0..n).map(|i| {
            if is_awake(i) {
                weights[i] * scale * advice[i]
            } else {
                0.0
            }
        }));
        self.outcomes.push(outcome);
        self.predictions.push(prediction.unwrap_or(f64::NAN));
        if self.rounds.len() > Self::LIMIT {
            self.thin();
        }
    }

    fn thin(&mut self) {
        self.stride *= 2;
        let stride = self.stride;
        let keep: Vec<bool> = self.rounds.iter().map(|r| r % stride == 0).collect();
        let filter = |values: &mut Vec<f64>, width: usize| {
            if width == 0 || values.is_empty() {
                return;
            }
            *values = values
                .chunks_exact(width)
                .zip(&keep)
                .filter(|(_, k)| **k)
                .flat_map(|(chunk, _)| chunk.iter().copied())
                .collect();
        };
        let n = self.n_experts;
        filter(&mut self.learner_loss, 1);
        filter(&mut self.expert_losses, n);
        filter(&mut self.oracle_losses, 2);
        filter(&mut self.contributions, n);
        filter(&mut self.outcomes, 1);
        filter(&mut self.predictions, 1);
        self.rounds.retain(|r| r % stride == 0);
    }

    pub(super) fn validate(&self, n_experts: usize) -> Result<(), String> {
        let kept = self.rounds.len();
        let oracles = if self.oracle.is_some() { 2 * kept } else { 0 };
        if self.stride == 0
            || kept > Self::LIMIT
            || self.n_experts != n_experts
            || self.learner_loss.len() != kept
            || self.expert_losses.len() != kept * n_experts
            || self.oracle_losses.len() != oracles
            || self.contributions.len() != kept * n_experts
            || self.outcomes.len() != kept
            || self.predictions.len() != kept
            || self.oracle.is_some() == self.no_oracle.is_some()
        {
            return Err("its figure history is inconsistent".to_string());
        }
        Ok(())
    }

    /// Draws the figures asked for, titled `title`, the experts named `names`: `--plot-loss`
    /// into `losses`, `--plot-contributions` into `contributions`.
    pub(super) fn draw(
        &self,
        title: &str,
        names: &[String],
        losses: Option<&Path>,
        contributions: Option<&Path>,
    ) -> anyhow::Result<()> {
        if let Some(path) = losses {
            write_atomically(path, draw_lines(&self.losses(title, names))?.as_bytes())?;
        }
        if let Some(path) = contributions {
            let figure = self.contributions(title, names);
            write_atomically(path, draw_contributions(&figure)?.as_bytes())?;
        }
        Ok(())
    }

    /// `--plot-loss`: each expert's and each oracle's cumulative loss minus the learner's.
    fn losses(&self, title: &str, names: &[String]) -> LineFigure {
        let n = self.n_experts;
        let x = |k: usize| self.rounds[k] as f64;
        let mut series: Vec<Series> = (0..n)
            .map(|i| Series {
                name: names[i].clone(),
                points: (0..self.rounds.len())
                    .map(|k| (x(k), self.expert_losses[k * n + i] - self.learner_loss[k]))
                    .collect(),
                style: SeriesStyle::Line,
                colour: i,
            })
            .collect();
        series.push(Series {
            name: "best expert so far".to_string(),
            points: (0..self.rounds.len())
                .map(|k| {
                    let best = self.expert_losses[k * n..(k + 1) * n]
                        .iter()
                        .copied()
                        .fold(f64::INFINITY, f64::min);
                    (x(k), best - self.learner_loss[k])
                })
                .collect(),
            style: SeriesStyle::Dashed,
            colour: n,
        });
        if self.oracle.is_some() {
            for (j, name) in [
                "best convex combination so far",
                "best linear combination so far",
            ]
            .into_iter()
            .enumerate()
            {
                series.push(Series {
                    name: name.to_string(),
                    points: (0..self.rounds.len())
                        .map(|k| (x(k), self.oracle_losses[2 * k + j] - self.learner_loss[k]))
                        .collect(),
                    style: SeriesStyle::Dashed,
                    colour: n + 1 + j,
                });
            }
        }
        let note = match &self.no_oracle {
            Some(reason) => format!(" (no convex/linear oracle: {reason})"),
            None => String::new(),
        };
        LineFigure {
            title: format!("{title}: cumulative loss minus the learner's{note}"),
            x_label: "round".to_string(),
            y_label: "cumulative loss − learner's (above 0: the learner did better)".to_string(),
            series,
            log_y: false,
            integer_y: false,
        }
    }

    /// `--plot-contributions`: weight × forecast of every expert, stacked, with the
    /// outcome and the prediction.
    fn contributions(&self, title: &str, names: &[String]) -> ContributionsFigure {
        let n = self.n_experts;
        ContributionsFigure {
            title: format!("{title}: contribution of each expert (weight × forecast)"),
            names: names.to_vec(),
            rounds: self.rounds.iter().map(|&r| r as f64).collect(),
            contributions: self
                .contributions
                .chunks_exact(n)
                .map(<[f64]>::to_vec)
                .collect(),
            outcomes: self.outcomes.clone(),
            predictions: self.predictions.clone(),
        }
    }
}
