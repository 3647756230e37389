//! Entry points for the statistical tests of the sampler (hidden from the documentation):
//! one round's chain on a target built by hand, with given or computed proposal means, the
//! reference full evaluation, and deliberate defects that the tests must catch.

use super::cover::CoverCache;
use super::means::{FixedMeans, KMeansSource, MeansHistory, MeansSource, ProposalMeans};
use super::memory::PointMemory;
use super::params::{Memory, ProposalScale};
use super::sampler::{ChainSettings, ProposalRule, SamplerReport, Target, run_chain};
use crate::rng::StreamRng;

pub use super::sampler::{Defect, MoveMix};

/// A round's target built by hand: the points in memory with their ℓ̂_s and w_s, λ, R, p, η.
#[derive(Clone, Debug)]
pub struct ToyTarget {
    /// Row-major points.
    pub points: Vec<f64>,
    /// d.
    pub dim: usize,
    /// ℓ̂_s per point.
    pub predicted_losses: Vec<f64>,
    /// w_s = λ_{s−1}/2 per point.
    pub variance_weights: Vec<f64>,
    /// λ.
    pub lambda: f64,
    /// R.
    pub radius: f64,
    /// p.
    pub max_k: usize,
    /// η.
    pub eta: f64,
}

impl ToyTarget {
    /// The target of a learner's next round, and its current state (row-major, internal
    /// coordinates); `None` before the warm-up ends.
    pub fn of_learner(learner: &super::Paco) -> Option<(ToyTarget, Vec<f64>)> {
        let (points, predicted_losses, variance_weights, lambda, radius, max_k, eta, centres) =
            learner.round_target()?;
        let dim = learner.frame()?.dim();
        Some((
            ToyTarget {
                points,
                dim,
                predicted_losses,
                variance_weights,
                lambda,
                radius,
                max_k,
                eta,
            },
            centres,
        ))
    }
}

/// Where the chain's proposal means come from.
#[derive(Clone, Debug)]
pub enum ToyMeans {
    /// k-means on the points, as the learner computes them (keyed by this round number).
    KMeans {
        /// The round t of the child streams `rng.child(t).child(k')`.
        round: u64,
    },
    /// These means, index k' − 1.
    Fixed(Vec<ProposalMeans>),
}

/// What one chain did.
#[derive(Clone, Debug)]
pub struct ChainRun {
    /// The final state, row-major.
    pub centres: Vec<f64>,
    /// Its number of clusters.
    pub n_clusters: usize,
    /// S(c) of the final state.
    pub cumulative_loss: f64,
    /// Accepted or not, per iteration.
    pub decisions: Vec<bool>,
    /// The round's report.
    pub report: SamplerReport,
}

/// How a toy chain runs.
#[derive(Clone, Copy, Debug)]
pub struct ToyChain {
    /// The proposal scale rule.
    pub proposal: ProposalScale,
    /// b.
    pub multiplier: f64,
    /// N.
    pub iterations: usize,
    /// Evaluate every S(c') in full (the reference).
    pub full_evaluation: bool,
    /// A deliberate defect.
    pub defect: Defect,
}

/// Which moves a toy chain makes (the learner's by default).
#[derive(Clone, Copy, Debug)]
pub struct ToyMoves {
    /// The moves and their probabilities.
    pub moves: MoveMix,
    /// The weight of the uniform law in each slot's proposal of a jump.
    pub defensive_weight: f64,
}

impl ToyMoves {
    /// The learner's moves.
    pub fn learner() -> Self {
        let settings = ChainSettings::round(1, false);
        Self {
            moves: settings.moves,
            defensive_weight: settings.defensive_weight,
        }
    }

    /// The sampler before the birth, death and random-walk moves and the defensive mixture:
    /// the paper's jump alone, with t₃ proposals.
    pub fn jump_only() -> Self {
        Self {
            moves: MoveMix::JUMP_ONLY,
            defensive_weight: 0.0,
        }
    }
}

/// Runs one round's chain from `start` (row-major) on `target`, with the paper's jump alone
/// ([`ToyMoves::jump_only`]; [`run_toy_chain_with`] takes the moves).
pub fn run_toy_chain(
    target: &ToyTarget,
    chain: ToyChain,
    means: &ToyMeans,
    start: Vec<f64>,
    rng: &mut StreamRng,
) -> ChainRun {
    run_toy_chain_with(target, chain, ToyMoves::jump_only(), means, start, rng)
}

/// Runs one round's chain from `start` (row-major) on `target`, with the given moves.
pub fn run_toy_chain_with(
    target: &ToyTarget,
    chain: ToyChain,
    moves: ToyMoves,
    means: &ToyMeans,
    start: Vec<f64>,
    rng: &mut StreamRng,
) -> ChainRun {
    let mut memory = PointMemory::new(target.dim, Memory::All);
    for (s, point) in target.points.chunks_exact(target.dim).enumerate() {
        memory.push(
            point,
            target.predicted_losses[s],
            target.variance_weights[s],
        );
    }
    let round_target = Target {
        memory: &memory,
        lambda: target.lambda,
        radius: target.radius,
        max_k: target.max_k,
        eta: target.eta,
        n_points: memory.len() as u64,
    };
    let rule = ProposalRule {
        scale: chain.proposal,
        multiplier: chain.multiplier,
    };
    let settings = ChainSettings {
        iterations: chain.iterations,
        restart: false,
        full_evaluation: chain.full_evaluation,
        defect: chain.defect,
        record_decisions: true,
        moves: moves.moves,
        defensive_weight: moves.defensive_weight,
    };
    let mut history = MeansHistory::default();
    let mut kmeans_means;
    let mut fixed_means;
    let mut source: &mut dyn MeansSource = match means {
        ToyMeans::KMeans { round } => {
            kmeans_means = KMeansSource::new(&memory, &mut history, *round, rng, target.max_k);
            &mut kmeans_means
        }
        ToyMeans::Fixed(by_k) => {
            fixed_means = FixedMeans { by_k: by_k.clone() };
            &mut fixed_means
        }
    };
    let outcome = run_chain(
        round_target,
        rule,
        &mut source,
        &mut CoverCache::default(),
        start,
        rng,
        settings,
    );
    ChainRun {
        n_clusters: outcome.centres.len() / target.dim,
        centres: outcome.centres,
        cumulative_loss: outcome.cumulative_loss,
        decisions: outcome.decisions,
        report: outcome.report,
    }
}

/// σ_j of the proposal rule (for building deliberately shifted means).
pub use super::proposal::proposal_sigma;
