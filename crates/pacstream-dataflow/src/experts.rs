//! Sharded experts: one Hedge over N experts (up to 10⁸), each worker holding a slice.
//!
//! # What it computes
//!
//! Hedge with a fixed rate η and the uniform prior, on the losses of a family of experts
//! computed where the experts live ([`ExpertFamily`]: expert i's loss on a row). The
//! experts are cut into blocks of `block_size` consecutive indices; block b lives on worker
//! b mod W and holds the cumulative losses C_i of its experts. At round t, with m the
//! smallest C_i after round t − 1 (known to every worker), each block computes, in index
//! order,
//!
//! Σ_i w_i,  Σ_i w_i ℓ_i,  min_i (C_i + ℓ_i),  with w_i = exp(−η (C_i − m)),
//!
//! then charges C_i += ℓ_i. The per-block triples travel to every worker and are combined
//! **in block order**; the round's loss is the mixture Σ w_i ℓ_i / Σ w_i and the next m the
//! smallest of the minima. Blocks are positions, not workers, so every figure is the same
//! bit for bit for any number of workers and processes.
//!
//! Against the library's [`pacstream::experts::Hedge`] (one process, its sums taken in its
//! own vectorised order): the experts' cumulative losses are the same bits (each C_i is the
//! same sequence of additions); the mixture loss of a round differs only by the order of two
//! sums of N positive terms, a relative difference below 4 N ε (ε = 2⁻⁵²), which the tests
//! check.
//!
//! Memory: 8 bytes per expert (its C_i) plus one block of losses per worker.

use pacstream::experts::bounds::hedge_fixed;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::channel::Channel;
use crate::error::{Error, Result};

/// The largest number of experts (checked before anything is allocated).
pub const EXPERTS_LIMIT: u64 = 1_000_000_000;

/// Experts whose losses are computed where they live.
pub trait ExpertFamily {
    /// The number of experts N.
    fn n_experts(&self) -> u64;
    /// The losses ℓ_i of experts `first..first + out.len()` on `row`.
    fn losses(&self, first: u64, row: &[f64], out: &mut [f64]);
}

/// N constant forecasters on a grid of [low, high] (expert i predicts
/// low + (high − low)·i/(N − 1)), under the squared loss of the row's first value.
#[derive(Clone, Copy, Debug)]
pub struct ConstantGrid {
    /// The grid's lower end.
    pub low: f64,
    /// The grid's upper end.
    pub high: f64,
    /// N.
    pub n_experts: u64,
}

impl ConstantGrid {
    /// Expert i's forecast.
    pub fn forecast(&self, expert: u64) -> f64 {
        if self.n_experts == 1 {
            return self.low;
        }
        self.low + (self.high - self.low) * (expert as f64 / (self.n_experts - 1) as f64)
    }
}

impl ExpertFamily for ConstantGrid {
    fn n_experts(&self) -> u64 {
        self.n_experts
    }

    fn losses(&self, first: u64, row: &[f64], out: &mut [f64]) {
        let outcome = row.first().copied().unwrap_or(0.0);
        for (offset, loss) in out.iter_mut().enumerate() {
            let error = self.forecast(first + offset as u64) - outcome;
            *loss = error * error;
        }
    }
}

/// Settings of a sharded Hedge.
#[derive(Clone, Debug)]
pub struct ShardedHedge {
    /// The fixed rate η > 0.
    pub eta: f64,
    /// Experts per block (the unit of work; fixed whatever the number of workers).
    pub block_size: u64,
    /// The loss range B the library's bound assumes, if known.
    pub loss_bound: Option<f64>,
}

/// One round as written by worker 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardedRound {
    /// Round t (1-based).
    pub t: u64,
    /// The mixture loss Σ p_i ℓ_i.
    pub loss: f64,
    /// The cumulative mixture loss.
    pub cumulative_loss: f64,
}

/// What a run ends with (the same on every worker).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardedSummary {
    /// Rounds played.
    pub rounds: u64,
    /// The learner's cumulative mixture loss.
    pub cumulative_loss: f64,
    /// The best expert in hindsight (smallest index among ties).
    pub best_expert: u64,
    /// Its cumulative loss.
    pub best_expert_loss: f64,
    /// The regret against it.
    pub regret: f64,
    /// The library's bound on that regret for Hedge with this fixed η and the uniform prior
    /// on losses in [0, B] (`pacstream::experts::bounds::hedge_fixed`); none without B, or
    /// if some loss fell outside [0, B].
    pub regret_bound: Option<f64>,
    /// Every round's records (worker 0 only; empty elsewhere).
    #[serde(skip)]
    pub records: Vec<ShardedRound>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct BlockTotals {
    block: u64,
    weight: f64,
    weighted_loss: f64,
    least: f64,
    least_expert: u64,
    largest_loss: f64,
}

/// Runs one sharded Hedge over `rows` (every worker reads all of them; each row is one
/// round). Every worker must call it with the same arguments.
pub fn run_sharded_hedge(
    worker: &mut Worker,
    settings: &ShardedHedge,
    family: &dyn ExpertFamily,
    rows: &[Vec<f64>],
) -> Result<ShardedSummary> {
    let n = family.n_experts();
    if n == 0 || n > EXPERTS_LIMIT {
        return Err(Error::Usage(format!(
            "the number of experts must be between 1 and {EXPERTS_LIMIT}, got {n}"
        )));
    }
    if !(settings.eta.is_finite() && settings.eta > 0.0) {
        return Err(Error::Usage(format!(
            "η must be finite and > 0, got {}",
            settings.eta
        )));
    }
    if settings.block_size == 0 || settings.block_size > (1 << 24) {
        return Err(Error::Usage(format!(
            "the block size must be between 1 and {}, got {}",
            1 << 24,
            settings.block_size
        )));
    }
    let index = worker.index() as u64;
    let peers = worker.peers() as u64;
    let n_blocks = n.div_ceil(settings.block_size);
    let mine: Vec<u64> = (index..n_blocks).step_by(peers as usize).collect();
    // C_i of this worker's experts, block after block.
    let mut charged: Vec<Vec<f64>> = mine
        .iter()
        .map(|&b| vec![0.0; block_len(b, settings.block_size, n)])
        .collect();
    let mut losses = vec![0.0; settings.block_size.min(n) as usize];
    let mut channel = Channel::<BlockTotals>::broadcast(worker);
    let mut least = 0.0;
    let mut least_expert = 0;
    let mut cumulative = 0.0;
    let mut largest_loss = 0.0f64;
    let mut records = Vec::new();
    for (round, row) in rows.iter().enumerate() {
        let mut totals = Vec::with_capacity(mine.len());
        for (&block, block_charged) in mine.iter().zip(&mut charged) {
            let first = block * settings.block_size;
            let losses = &mut losses[..block_charged.len()];
            family.losses(first, row, losses);
            let mut total = BlockTotals {
                block,
                weight: 0.0,
                weighted_loss: 0.0,
                least: f64::INFINITY,
                least_expert: first,
                largest_loss: 0.0,
            };
            for (offset, (c, &loss)) in block_charged.iter_mut().zip(losses.iter()).enumerate() {
                let weight = (-settings.eta * (*c - least)).exp();
                total.weight += weight;
                total.weighted_loss += weight * loss;
                *c += loss;
                if *c < total.least {
                    total.least = *c;
                    total.least_expert = first + offset as u64;
                }
                total.largest_loss = total.largest_loss.max(loss.abs());
            }
            totals.push(total);
        }
        let mut all = channel.round(worker, totals);
        all.sort_unstable_by_key(|t| t.block);
        let (mut weight, mut weighted_loss) = (0.0, 0.0);
        least = f64::INFINITY;
        for total in &all {
            weight += total.weight;
            weighted_loss += total.weighted_loss;
            if total.least < least {
                least = total.least;
                least_expert = total.least_expert;
            }
            largest_loss = largest_loss.max(total.largest_loss);
        }
        if !(least.is_finite() && weight > 0.0) {
            return Err(Error::Row {
                row: round as u64 + 1,
                message: "the experts' losses must be finite".into(),
            });
        }
        let loss = weighted_loss / weight;
        cumulative += loss;
        if index == 0 {
            records.push(ShardedRound {
                t: round as u64 + 1,
                loss,
                cumulative_loss: cumulative,
            });
        }
    }
    let rounds = rows.len() as u64;
    let regret_bound = settings
        .loss_bound
        .filter(|&bound| largest_loss <= bound && rounds > 0)
        .map(|bound| hedge_fixed(rounds, settings.eta, bound, 1.0 / n as f64, least) - least);
    Ok(ShardedSummary {
        rounds,
        cumulative_loss: cumulative,
        best_expert: least_expert,
        best_expert_loss: if rounds > 0 { least } else { 0.0 },
        regret: if rounds > 0 { cumulative - least } else { 0.0 },
        regret_bound,
        records,
    })
}

fn block_len(block: u64, block_size: u64, n: u64) -> usize {
    (block_size.min(n - block * block_size)) as usize
}
