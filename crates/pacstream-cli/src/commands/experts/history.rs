//! What the figure of an experts run draws, kept in bounded memory across the stream (and
//! its checkpoints).

use pacstream::experts::{Aggregator, AnyAggregator, ExpertStep};
use serde::{Deserialize, Serialize};

/// The history kept for the figure, thinned to at most [`History::LIMIT`] rounds by
/// doubling the stride, so that memory stays bounded on any stream.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct History {
    pub(super) stride: u64,
    pub(super) rounds: Vec<u64>,
    /// Row-major: the weights after each kept round.
    pub(super) weights: Vec<f64>,
    pub(super) regret: Vec<f64>,
    pub(super) bound: Vec<Option<f64>>,
    pub(super) learner_mean: Vec<f64>,
    /// Row-major: every expert's running average loss (on its awake rounds).
    pub(super) expert_means: Vec<f64>,
    /// Rounds each expert was awake (for the running averages).
    pub(super) awake_rounds: Vec<u64>,
}

impl History {
    const LIMIT: usize = 1000;

    pub(super) fn new(n_experts: usize) -> Self {
        Self {
            stride: 1,
            awake_rounds: vec![0; n_experts],
            ..Self::default()
        }
    }

    pub(super) fn keep(
        &mut self,
        step: &ExpertStep,
        aggregator: &AnyAggregator,
        bound: Option<f64>,
    ) {
        let n = self.awake_rounds.len();
        if !step.round.is_multiple_of(self.stride) {
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

    pub(super) fn validate(&self, n_experts: usize) -> Result<(), String> {
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
