//! The reversible-jump MCMC sampler of a round (Algorithm 3, PACO, of the slides on Li, Guedj &
//! Loustau 2018).
//!
//! Within round t + 1 the target is ρ̂_{t+1}(k, c) ∝ exp(−λ_t S_t(c)) π(c) on the union of the
//! spaces R^{dk}, k = 1..p. The state is (k, c).
//!
//! 1. **Start** from the previous round's final state (warm start), then relabel it against
//!    this round's means ([`super::relabel`]); with `restart`, from the means of the current
//!    k instead (surplus slots drawn from the prior).
//!
//!    **Labels.** The target is symmetric in the labels of the centres, and each k-level of
//!    it has k! mirror-image modes; a proposal that pairs slot j with its own mean m_j only
//!    ever visits one of them, so a chain on labelled vectors would miss the factor k! in
//!    the posterior of k (the statistical test against the exact posterior catches it). The
//!    chain therefore runs on a fundamental domain D_k: the labellings in which the
//!    optimal assignment of centres to the round's means is the identity (slot j holds the
//!    centre assigned to m_j), with the surplus centres in lexicographic order. Every
//!    clustering has exactly one such labelling (almost surely), so the target
//!    k!·ρ̂(c)·1_{D_k}(c) has the same law on clusterings as ρ̂. The relabelling of the start
//!    is the map into D_k; a proposal outside D_{k'} has target density 0 and is rejected
//!    (its draws are made all the same); and the ratio carries log k'! − log k!. Surplus
//!    centres are drawn from the prior and sorted, a proposal of density m!·Π U for m of
//!    them.
//! 2. **Proposal means** m^{(k')} fixed for the round ([`super::means`]).
//! 3. **Move on k**: k' uniform on {k−1, k, k+1} ∩ {1..p}, so j(k → k') = 1/3 inside and 1/2
//!    at a boundary (1 when p = 1); the exact j(k → k') and j(k' → k) enter the ratio.
//! 4. **Centres**: c'_j from the Student t around m^{(k')}_j ([`super::proposal`]), or from the
//!    prior for a surplus slot.
//! 5. **Accept** with probability min(1, e^{log α}), where
//!    log α = −λ [S(c') − S(c)] + log π(c') − log π(c) + log j(k' → k) − log j(k → k')
//!    \+ Σ_j log ρ(c_j; m^{(k)}_j) − Σ_j log ρ(c'_j; m^{(k')}_j), that is
//!    log α = −λ [S(c') − S(c)] − η (k' − k) + Σ_j g(c'_j) − Σ_j g(c_j)
//!    \+ log j(k' → k) − log j(k → k'),
//!    with g(c_j) = log U(c_j) − log ρ(c_j) per slot with a mean, plus log k! − log m! per
//!    state of m surplus centres (see **Labels** above). A proposed centre outside B_d(2R)
//!    has prior 0, and a proposal outside D_{k'} target density 0: the move is rejected
//!    without evaluating S.
//! 6. **One decision rule** (also with early rejection): with rest = log α + λ[S(c') − S(c)]
//!    and thr = S(c) + (rest − log u)/λ, accept iff S(c') < thr. S(c) of the current state is
//!    cached; S(c') is summed chunk by chunk and the move rejected as soon as the running sum
//!    reaches thr ([`super::evaluate`]), which decides exactly as the full sum would. A
//!    birth is first tested on the difference: a bound on what the newborn can take from
//!    S(c) (the round's cover of the current k as a partition of the memory, O(d²) per
//!    group) rejects it without a walk when S(c) less that bound already reaches thr, again
//!    only when the full sum would ([`super::birth`]). A jump from k to k + 1 is tested the
//!    same way, on its centres matched to the means of k, the one left over taken as the
//!    newborn ([`Chain::jump_up_rejected`]).
//! 7. **Draws, in this order, every iteration**: the index of k'; for each slot of c', its d
//!    normals then the three normals of its χ²_3 (a surplus slot: d normals then one uniform);
//!    then u = 1 − U[0, 1). Nothing the evaluation finds changes which draws are made.
//!    (Restart draws its surplus centres from the prior before the first iteration.)
//! 8. N iterations; the final state is the prediction of the next round.

use serde::{Deserialize, Serialize};

use super::birth::{
    birth_gain_bound, birth_rejected, loss_deciding_rejection, refined_birth_rejected,
};
use super::cover::{CoverCache, PlanScratch, RobustCover};
use super::evaluate::{Evaluation, PreparedCentres};
use super::means::{MeansSource, ProposalMeans};
use super::memory::PointMemory;
use super::params::ProposalScale;
use super::prior::{draw_in_ball, in_support};
use super::proposal::{
    DensityConstants, SlotDensity, defensive_term, draw_defensive, draw_student, proposal_sigma,
};
use super::relabel::{assignment, is_identity};
use crate::geometry::squared_distance;
use crate::rng::StreamRng;

/// What the chain of one round did (none of it is an error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerReport {
    /// The number of clusters of the final state (the next prediction's k̂).
    pub n_clusters: usize,
    /// N, the iterations run.
    pub iterations: usize,
    /// Moves accepted.
    pub accepted: usize,
    /// accepted / iterations.
    pub acceptance_rate: f64,
    /// Proposals with a centre outside B_d(2R), rejected without evaluating S.
    pub outside_prior: usize,
    /// Proposals whose centres were not paired with their own means (outside the
    /// fundamental domain, see the module docs), rejected without evaluating S.
    pub mislabelled: usize,
    /// Proposals rejected before every point in memory was summed.
    pub early_rejections: usize,
    /// The mean fraction of the points in memory that the early rejections summed (0 when
    /// there were none).
    pub early_rejection_fraction: f64,
    /// The mean fraction of the points in memory summed per iteration, over every iteration
    /// (proposals rejected outside the prior count as 0): the cost of the round relative to
    /// N full evaluations of S.
    pub data_fraction: f64,
    /// The mean fraction of the points in memory whose terms were summed one by one per
    /// iteration (the rest of the data summed was summed in closed form, per tree node).
    #[serde(default)]
    pub direct_fraction: f64,
    /// The mean number of tree nodes visited per evaluation of S_t (0 when S_t is summed
    /// point by point).
    #[serde(default)]
    pub nodes_per_evaluation: f64,
    /// k-means fits run for the round's proposal means.
    pub kmeans_runs: usize,
    /// n_t, the points in memory.
    pub n_points: usize,
    /// λ_t, the inverse temperature of the round's target.
    pub lambda: f64,
}

/// How the proposal scale is set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProposalRule {
    pub(crate) scale: ProposalScale,
    pub(crate) multiplier: f64,
}

/// The target of a round: exp(−λ S(c)) π(c) on the memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) memory: &'a PointMemory,
    pub(crate) lambda: f64,
    pub(crate) radius: f64,
    pub(crate) max_k: usize,
    pub(crate) eta: f64,
    /// n_t for the paper proposal's τ_t (the memory's length, except in tests).
    pub(crate) n_points: u64,
}

/// Deliberate defects, for showing that the statistical tests can fail.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "testing"),
    allow(dead_code, reason = "used by the entry points of the testing feature")
)]
pub enum Defect {
    /// The correct sampler.
    #[default]
    None,
    /// Leaves log j(k' → k) − log j(k → k') out of log α.
    NoMoveRatio,
    /// Leaves the proposal densities out of log α (keeps the prior's).
    NoProposalDensity,
    /// Runs on labelled vectors: no fundamental domain, no log k! (see the module docs).
    LabelledChain,
    /// Leaves log h(c) − log U(c) (the birth proposal over the prior) out of the ratio of
    /// births and deaths.
    NoBirthDensity,
    /// Leaves log d_{k+1} − log b_k (the probabilities of choosing a birth or a death) out
    /// of the ratio of births and deaths.
    NoBirthDeathChoice,
    /// Prices each slot of a jump by its t₃ density alone, while drawing it from the
    /// defensive mixture (1 − w)·t₃ + w·U.
    NoDefensiveDensity,
}

/// The moves of the chain and the probability of each at an iteration.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveMix {
    /// The jump of the paper's Algorithm 3: k' ∈ {k − 1, k, k + 1}, every centre redrawn
    /// around the proposal means of k'.
    pub jump: f64,
    /// The birth of one centre (drawn from a mixture around the proposal means of k + 1) or
    /// the death of one (chosen uniformly).
    pub birth_death: f64,
    /// One centre (chosen uniformly) moved by a Gaussian step.
    pub random_walk: f64,
}

impl MoveMix {
    /// The paper's jump alone (the sampler before the birth, death and random-walk moves).
    #[cfg_attr(
        not(feature = "testing"),
        allow(dead_code, reason = "used by the entry points of the testing feature")
    )]
    pub const JUMP_ONLY: MoveMix = MoveMix {
        jump: 1.0,
        birth_death: 0.0,
        random_walk: 0.0,
    };
}

/// The default mix of moves: half the iterations are the paper's jump, a quarter births or
/// deaths, a quarter random-walk steps (see `docs/paco-calibration.md`, "Mixing").
pub(crate) const DEFAULT_MOVES: MoveMix = MoveMix {
    jump: 0.5,
    birth_death: 0.25,
    random_walk: 0.25,
};

/// The weight w of the prior's uniform law in the defensive mixture of each slot of a
/// jump: log U − log q ≤ ln(1/w) = 4.6 for any centre.
pub(crate) const DEFENSIVE_WEIGHT: f64 = 0.01;

/// The weight of the prior's uniform law in the birth proposal h: the death of a centre
/// that holds no point is then accepted with probability min(1, e^η w) (e^4 · 0.05 ≈ 2.7).
pub(crate) const BIRTH_UNIFORM_WEIGHT: f64 = 0.05;

/// How a round's chain runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChainSettings {
    pub(crate) iterations: usize,
    /// Start from the means of the start's k (the `restart` option).
    pub(crate) restart: bool,
    /// Evaluate every S(c') in full before deciding (the reference for tests).
    pub(crate) full_evaluation: bool,
    pub(crate) defect: Defect,
    /// Keep the accept/reject decision of every iteration.
    pub(crate) record_decisions: bool,
    /// The moves and their probabilities.
    pub(crate) moves: MoveMix,
    /// The weight of the uniform law in each slot's proposal of a jump (0: the t₃ alone).
    pub(crate) defensive_weight: f64,
}

impl ChainSettings {
    /// The chain of a learner's round (or of the batch fit): the default moves.
    pub(crate) fn round(iterations: usize, restart: bool) -> Self {
        Self {
            iterations,
            restart,
            full_evaluation: false,
            defect: Defect::None,
            record_decisions: false,
            moves: DEFAULT_MOVES,
            defensive_weight: DEFENSIVE_WEIGHT,
        }
    }
}

/// The outcome of a round's chain.
#[derive(Debug)]
pub(crate) struct ChainOutcome {
    /// The final state, row-major k × d.
    pub(crate) centres: Vec<f64>,
    pub(crate) report: SamplerReport,
    /// S(c) of the final state.
    pub(crate) cumulative_loss: f64,
    /// Per iteration, whether the move was accepted (when recorded).
    #[cfg_attr(
        not(feature = "testing"),
        allow(dead_code, reason = "used by the entry points of the testing feature")
    )]
    pub(crate) decisions: Vec<bool>,
}

/// The slots of one k': means, scales and density constants.
struct Slots {
    n_clusters: usize,
    means: Vec<f64>,
    densities: Vec<SlotDensity>,
    /// The robust cover of the memory around these means (when S_t uses the index).
    cover: Option<RobustCover>,
    /// The scale of a random-walk step at this k: the geometric mean of the slots' σ_j.
    walk_scale: f64,
}

impl Slots {
    fn n_with_mean(&self) -> usize {
        self.densities.len()
    }
}

/// The round's chain and its caches.
struct Chain<'a, S: MeansSource> {
    target: Target<'a>,
    rule: ProposalRule,
    settings: ChainSettings,
    means: &'a mut S,
    constants: DensityConstants,
    slots: Vec<Option<Slots>>,
    dim: usize,
    covers: &'a mut CoverCache,
    /// Scratch of [`Chain::evaluate`]'s choice of a cover.
    choice: CoverChoice,
}

/// The buffers of [`Chain::evaluate`]'s choice between two covers.
#[derive(Default)]
struct CoverChoice {
    plan: PlanScratch,
    cost: Vec<f64>,
    relabelled: Vec<f64>,
}

impl<S: MeansSource> Chain<'_, S> {
    /// S(c) of a state of k centres (labelled for the slots of k), stopping as soon as it
    /// reaches `threshold` ([`PointMemory::evaluate`]).
    ///
    /// On the index, the sum runs on the round's cover of k, unless the plan of that cover
    /// has a far slot (a centre more than [`super::cover::MARGIN_CAP`]·σ_j from its mean) and
    /// the cover of k − 1, with the centres matched to its slots (the one left over is a
    /// surplus centre, which the plan treats as far), sums more of the memory in closed form
    /// — when the cover of k − 1 is already prepared in the round (preparing it only for this
    /// would cost more than it saves).
    /// The common case is a state with an empty centre out in the prior's ball: the
    /// labelling of k pairs it with one of the means of k (which split a cluster in two),
    /// so that the real centre of that cluster sits between two means and the units of the
    /// split cluster go to the walk one by one (350 nodes an evaluation at t = 9,000,
    /// d = 5), while on the cover of k − 1 every real centre sits on its own cluster's mean.
    /// S is symmetric in the centres, and a cover's plan is exact for any labelling, so both
    /// covers sum the same function, to a different rounding. The choice depends on the state
    /// and on the covers prepared so far in the round, which the moves drawn decide: the
    /// reference chain that sums every proposal in full prepares the same ones at the same
    /// iterations, so early rejection decides as the full sum of the same choice does.
    fn evaluate(
        &mut self,
        k: usize,
        centres: &[f64],
        prepared: &mut PreparedCentres,
        threshold: f64,
    ) -> Evaluation {
        let mut choice = std::mem::take(&mut self.choice);
        let evaluation = self.evaluate_with(&mut choice, k, centres, prepared, threshold);
        self.choice = choice;
        evaluation
    }

    /// Whether a jump from k to k + 1 centres is certain to be rejected at `threshold`, by
    /// the birth bound ([`super::birth`]): the proposal's k + 1 centres are matched to the k
    /// means of the round's cover of k, the one left over is taken as a newborn b of the
    /// other k, c₋, and S(c') = S(c₋ ∪ {b}) ≥ S(c₋) − G, G the bound on what b can take.
    /// S(c₋) is summed on the index only as far as needed to know that it reaches the S at
    /// which S(c₋) − G decides ([`loss_deciding_rejection`]). The jumps to k + 1 are drawn
    /// around the means of k + 1, which split one of k clusters in two: summing them on
    /// their own cover walks the nodes along that split, 95 nodes and 626 points one by one
    /// an evaluation at t = 30,000, d = 5, against a threshold that they miss by 15–50 % of
    /// S; c₋ keeps one centre per cluster, so that its sum is mostly closed forms, and G is
    /// about the gain of that split. This test only rejects, and only what the full sum
    /// would (the argument of the birth test, [`super::birth`]).
    fn jump_up_rejected(
        &mut self,
        k: usize,
        proposal: &[f64],
        threshold: f64,
        prepared: &mut PreparedCentres,
    ) -> bool {
        let dim = self.dim;
        // The cost buffer of the cover choice serves the matching (it is free until the
        // evaluation below).
        let mut cost = std::mem::take(&mut self.choice.cost);
        let slots = self.get(k);
        let matched = slots
            .cover
            .as_ref()
            .filter(|_| slots.n_with_mean() == k)
            .map(|cover| {
                let (rows, r) = self.assignment_cost(slots, proposal, &mut cost);
                let mut reduced = vec![0.0; k * dim];
                let mut newborn = vec![0.0; dim];
                for (i, slot) in assignment(&cost, rows, r).iter().enumerate() {
                    let centre = &proposal[i * dim..(i + 1) * dim];
                    match slot {
                        Some(j) => reduced[j * dim..(j + 1) * dim].copy_from_slice(centre),
                        None => newborn.copy_from_slice(centre),
                    }
                }
                let gain = birth_gain_bound(cover, &reduced, &newborn);
                (reduced, newborn, gain)
            });
        self.choice.cost = cost;
        let Some((reduced, newborn_of, gain)) = matched else {
            return false;
        };
        let needed = loss_deciding_rejection(gain, threshold, self.target.memory.len(), k);
        if !needed.is_finite() {
            return false;
        }
        let evaluation = self.evaluate(k, &reduced, prepared, needed);
        if !evaluation.complete || evaluation.value >= needed {
            return true;
        }
        // S(c₋) is known: the bound refined on the index may still decide.
        refined_birth_rejected(
            self.target.memory.index(),
            &reduced,
            &newborn_of,
            evaluation.value,
            threshold,
            self.target.memory.len(),
            &mut prepared.refine,
        )
    }

    /// [`Chain::evaluate`] with its scratch.
    fn evaluate_with(
        &self,
        choice: &mut CoverChoice,
        k: usize,
        centres: &[f64],
        prepared: &mut PreparedCentres,
        threshold: f64,
    ) -> Evaluation {
        let memory = self.target.memory;
        prepared.set(centres);
        let own = match self.get(k).cover.as_ref() {
            Some(own) if memory.uses_index() => own,
            _ => return memory.evaluate(prepared, threshold, None),
        };
        let plan = prepared.plan_on(own);
        // The cover of k − 1 is tried only when it is already prepared (the chain comes
        // from k − 1, or has proposed it, in the common case): preparing it for this would
        // cost more than it saves.
        let other = self.slots[k.saturating_sub(2)]
            .as_ref()
            .filter(|_| k >= 2 && own.has_far_slot(plan));
        if let Some((other, cover)) = other.and_then(|o| o.cover.as_ref().map(|c| (o, c))) {
            let own_points = own.aggregated_points(plan);
            let dim = self.dim;
            let (rows, r) = self.assignment_cost(other, centres, &mut choice.cost);
            let slot_of = assignment(&choice.cost, rows, r);
            choice.relabelled.clear();
            choice.relabelled.resize(centres.len(), 0.0);
            let mut surplus = r;
            for (i, slot) in slot_of.iter().enumerate() {
                let to = slot.unwrap_or_else(|| {
                    surplus += 1;
                    surplus - 1
                });
                choice.relabelled[to * dim..(to + 1) * dim]
                    .copy_from_slice(&centres[i * dim..(i + 1) * dim]);
            }
            cover.plan(&choice.relabelled, &mut choice.plan);
            if cover.aggregated_points(&choice.plan) > own_points {
                prepared.set(&choice.relabelled);
                return memory.evaluate(prepared, threshold, Some(cover));
            }
        }
        // The own plan is still in the prepared centres' scratch.
        memory.evaluate_planned(prepared, threshold, own)
    }

    /// Prepares the slots of k' (once per round).
    fn prepare(&mut self, n_clusters: usize) {
        let index = n_clusters - 1;
        if self.slots[index].is_none() {
            let proposal: &ProposalMeans = self.means.means(n_clusters);
            let densities: Vec<SlotDensity> = proposal
                .counts
                .iter()
                .map(|&count| {
                    let sigma = proposal_sigma(
                        self.rule.scale,
                        self.rule.multiplier,
                        self.target.lambda,
                        count,
                        self.target.radius,
                        self.target.max_k,
                        self.target.n_points,
                    );
                    self.constants.slot(sigma, self.target.radius)
                })
                .collect();
            let memory = self.target.memory;
            let covers = &mut *self.covers;
            let cover = memory.uses_index().then(|| {
                let scales: Vec<f64> = densities.iter().map(|d: &SlotDensity| d.sigma).collect();
                RobustCover::build(
                    memory.index(),
                    self.dim,
                    &proposal.means,
                    &scales,
                    n_clusters,
                    covers,
                )
            });
            let walk_scale = if densities.is_empty() {
                proposal_sigma(
                    self.rule.scale,
                    self.rule.multiplier,
                    self.target.lambda,
                    1.0,
                    self.target.radius,
                    self.target.max_k,
                    self.target.n_points,
                )
            } else {
                // σ_0 · (Π σ_j/σ_0)^{1/k}: the ratios carry no scale, so the step scales
                // with the data bit for bit when the data are scaled by a power of two (the
                // plain exp(mean ln σ_j) rounds ln a into the result).
                let first = densities[0].sigma;
                let mean_log = densities
                    .iter()
                    .map(|d| (d.sigma / first).ln())
                    .sum::<f64>()
                    / densities.len() as f64;
                first * mean_log.exp()
            };
            self.slots[index] = Some(Slots {
                n_clusters,
                means: proposal.means.clone(),
                densities,
                cover,
                walk_scale,
            });
        }
    }

    /// The slots of k', once prepared.
    fn get(&self, n_clusters: usize) -> &Slots {
        self.slots[n_clusters - 1]
            .as_ref()
            .expect("invariant: the slots of k' are prepared before use")
    }

    /// The part of log α that belongs to one state (−∞ outside the ball):
    /// log k! + Σ_{j<r} g(c_j) − log m!, with r slots with a mean and m = k − r surplus ones.
    fn state_log_weight(&self, slots: &Slots, centres: &[f64]) -> f64 {
        let dim = self.dim;
        let radius = self.target.radius;
        let k = centres.len() / dim;
        let r = slots.n_with_mean().min(k);
        let mut total = match self.settings.defect {
            Defect::LabelledChain => 0.0,
            Defect::NoProposalDensity => ln_factorial(k),
            _ => ln_factorial(k) - ln_factorial(k - r),
        };
        for (j, centre) in centres.chunks_exact(dim).enumerate() {
            if !in_support(centre, radius) {
                return f64::NEG_INFINITY;
            }
            if j < r {
                total += self.slot_term(slots, j, centre);
            }
        }
        total
    }

    /// The k × r matrix of squared distances from the centres to the means.
    fn assignment_cost(
        &self,
        slots: &Slots,
        centres: &[f64],
        cost: &mut Vec<f64>,
    ) -> (usize, usize) {
        let dim = self.dim;
        let k = centres.len() / dim;
        let r = slots.n_with_mean().min(k);
        cost.clear();
        for centre in centres.chunks_exact(dim) {
            for mean in slots.means.chunks_exact(dim).take(r) {
                cost.push(squared_distance(centre, mean));
            }
        }
        (k, r)
    }

    /// The labelling of `centres` in the fundamental domain: assigned centres in their
    /// slots, the others in the surplus slots in lexicographic order.
    fn canonical(&self, slots: &Slots, centres: &[f64]) -> Vec<f64> {
        let mut cost = Vec::new();
        self.canonical_with(slots, centres, &mut cost)
    }

    /// [`Chain::canonical`] with a reusable buffer for the costs.
    fn canonical_with(&self, slots: &Slots, centres: &[f64], cost: &mut Vec<f64>) -> Vec<f64> {
        let mut labelled = centres.to_vec();
        self.label_in_place(slots, &mut labelled, cost, &mut Vec::new());
        labelled
    }

    /// Puts `centres` in the fundamental domain ([`Chain::canonical`]) in place, with
    /// reusable buffers for the costs and the relabelled copy: in the common case (every
    /// centre strictly nearest its own slot's mean) nothing is copied or allocated.
    fn label_in_place(
        &self,
        slots: &Slots,
        centres: &mut Vec<f64>,
        cost: &mut Vec<f64>,
        labelled: &mut Vec<f64>,
    ) {
        let dim = self.dim;
        let (k, r) = self.assignment_cost(slots, centres, cost);
        let cost: &[f64] = cost;
        // When every centre is strictly nearest its own slot's mean, the identity is the
        // unique optimal assignment (the case of most moves): nothing to reorder.
        if r == k
            && (0..k).all(|i| {
                let own = cost[i * r + i];
                (0..r).all(|j| j == i || own < cost[i * r + j])
            })
        {
            return;
        }
        let slot_of = assignment(cost, k, r);
        labelled.clear();
        labelled.resize(k * dim, 0.0);
        let mut surplus = Vec::new();
        for (i, slot) in slot_of.iter().enumerate() {
            let centre = &centres[i * dim..(i + 1) * dim];
            match slot {
                Some(j) => labelled[j * dim..(j + 1) * dim].copy_from_slice(centre),
                None => surplus.push(centre),
            }
        }
        surplus.sort_by(|a, b| lexicographic(a, b));
        for (offset, centre) in surplus.iter().enumerate() {
            let j = r + offset;
            labelled[j * dim..(j + 1) * dim].copy_from_slice(centre);
        }
        std::mem::swap(centres, labelled);
    }

    #[inline]
    fn slot_term(&self, slots: &Slots, j: usize, centre: &[f64]) -> f64 {
        let dim = self.dim;
        let mean = &slots.means[j * dim..(j + 1) * dim];
        let density = &slots.densities[j];
        match self.settings.defect {
            Defect::NoProposalDensity => {
                super::prior::log_unit_ball_density(dim)
                    - dim as f64 * (2.0 * self.target.radius).ln()
            }
            Defect::NoDefensiveDensity => self
                .constants
                .log_prior_over_proposal(density, centre, mean),
            _ => defensive_term(
                self.constants
                    .log_prior_over_proposal(density, centre, mean),
                self.settings.defensive_weight,
            ),
        }
    }

    /// log h_k(c) − log U(c) for the birth proposal from k centres (c inside the ball):
    /// h_k = (1 − w)·(1/r) Σ_i t₃(·; m_i, σ_i) + w·U over the r slots with a mean of k + 1
    /// (h_k = U when there are none).
    fn birth_log_density(&self, k: usize, centre: &[f64]) -> f64 {
        let slots = self.get(k + 1);
        let r = slots.n_with_mean();
        if r == 0 {
            return 0.0;
        }
        let dim = self.dim;
        // log Σ_i e^{−g_i}, with g_i = log U − log t₃_i.
        let exponent = |i: usize| {
            let mean = &slots.means[i * dim..(i + 1) * dim];
            -self
                .constants
                .log_prior_over_proposal(&slots.densities[i], centre, mean)
        };
        let mut buffer = [0.0f64; 64];
        let mut spill = Vec::new();
        let exponents: &mut [f64] = if r <= buffer.len() {
            &mut buffer[..r]
        } else {
            spill.resize(r, 0.0);
            &mut spill
        };
        for (i, e) in exponents.iter_mut().enumerate() {
            *e = exponent(i);
        }
        let top = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = exponents.iter().map(|e| (e - top).exp()).sum();
        let mixture = (1.0 - BIRTH_UNIFORM_WEIGHT).ln() - (r as f64).ln() + top + sum.ln();
        let uniform = BIRTH_UNIFORM_WEIGHT.ln();
        let (high, low) = if mixture > uniform {
            (mixture, uniform)
        } else {
            (uniform, mixture)
        };
        high + (low - high).exp().ln_1p()
    }
}

/// The probability b_k of choosing a birth at k when a birth or death is drawn (d_k =
/// 1 − b_k the death's): 1/2 inside, 1 at k = 1, 0 at k = p (with p = 1, neither).
fn birth_probability(k: usize, max_k: usize) -> f64 {
    if max_k == 1 {
        0.0
    } else if k == 1 {
        1.0
    } else if k == max_k {
        0.0
    } else {
        0.5
    }
}

/// ln k!.
fn ln_factorial(k: usize) -> f64 {
    (2..=k).map(|i| (i as f64).ln()).sum()
}

/// A total order on centres: by coordinates, in turn.
fn lexicographic(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.total_cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Sorts the centres of `centres` (row-major) from slot `from` on, lexicographically.
fn sort_surplus(centres: &mut [f64], dim: usize, from: usize) {
    let tail = &mut centres[from * dim..];
    if tail.len() <= dim {
        return;
    }
    let mut rows: Vec<Vec<f64>> = tail.chunks_exact(dim).map(<[f64]>::to_vec).collect();
    rows.sort_by(|a, b| lexicographic(a, b));
    for (row, out) in rows.iter().zip(tail.chunks_exact_mut(dim)) {
        out.copy_from_slice(row);
    }
}

/// The values of k' reachable from k: {k−1, k, k+1} ∩ {1..p}.
fn moves(k: usize, max_k: usize) -> ([usize; 3], usize) {
    let mut values = [0; 3];
    let mut n = 0;
    for candidate in [k.wrapping_sub(1), k, k + 1] {
        if (1..=max_k).contains(&candidate) {
            values[n] = candidate;
            n += 1;
        }
    }
    (values, n)
}

/// Runs a round's chain from `start` (row-major, k × d, k ≥ 1).
pub(crate) fn run_chain<S: MeansSource>(
    target: Target<'_>,
    rule: ProposalRule,
    means: &mut S,
    covers: &mut CoverCache,
    start: Vec<f64>,
    rng: &mut StreamRng,
    settings: ChainSettings,
) -> ChainOutcome {
    let dim = target.memory.dim();
    let mut chain = Chain {
        target,
        rule,
        settings,
        means,
        constants: DensityConstants::new(dim),
        slots: (0..target.max_k).map(|_| None).collect(),
        dim,
        covers,
        choice: CoverChoice::default(),
    };
    let n_points = target.memory.len();
    let mut k = start.len() / dim;
    let mut centres = start;

    // 1. Start: restart from the means, or map the warm start into the round's
    //    fundamental domain (the relabelling).
    chain.prepare(k);
    let slots = chain.get(k);
    let with_mean = slots.n_with_mean().min(k);
    if settings.restart {
        centres[..with_mean * dim].copy_from_slice(&slots.means[..with_mean * dim]);
        for centre in centres[with_mean * dim..].chunks_exact_mut(dim) {
            draw_in_ball(centre, 2.0 * target.radius, rng);
        }
        sort_surplus(&mut centres, dim, with_mean);
    } else {
        centres = chain.canonical(slots, &centres);
    }

    let mut prepared = PreparedCentres::new(dim);
    let mut current_loss = chain
        .evaluate(k, &centres, &mut prepared, f64::INFINITY)
        .value;
    let mut current_weight = chain.state_log_weight(chain.get(k), &centres);

    let mut proposal = Vec::with_capacity(target.max_k * dim);
    let mut decisions = Vec::new();
    let mut accepted = 0;
    let mut outside_prior = 0;
    let mut mislabelled = 0;
    let mut cost = Vec::new();
    let mut labelled = Vec::new();
    let mut early_rejections = 0;
    let mut early_fraction_sum = 0.0;
    let mut fraction_sum = 0.0;
    let mut direct_sum = 0.0;
    let mut nodes_sum = 0.0;
    let mut evaluations = 0usize;
    let denominator = n_points.max(1) as f64;

    let radius = target.radius;
    let max_k = target.max_k;
    for _ in 0..settings.iterations {
        // 3. The move: its kind, then its draws (the same draws whatever the evaluation
        //    finds), ending with the proposed state, its k, and the part of log α that is
        //    not −λ[S(c') − S(c)] (`rest`).
        let kind = rng.next_f64();
        let mixed = settings.moves;
        let mut is_birth = false;
        let total = mixed.jump + mixed.birth_death + mixed.random_walk;
        let (new_k, rest, new_weight) = if kind * total < mixed.jump {
            // The paper's jump.
            let (choices, n_choices) = moves(k, max_k);
            let new_k = choices[rng.index_below(n_choices)];
            let log_forward = -(n_choices as f64).ln();
            let log_backward = -(moves(new_k, max_k).1 as f64).ln();
            chain.prepare(new_k);
            let slots = chain.get(new_k);
            debug_assert_eq!(slots.n_clusters, new_k);
            proposal.clear();
            proposal.resize(new_k * dim, 0.0);
            for (j, centre) in proposal.chunks_exact_mut(dim).enumerate() {
                if j < slots.n_with_mean() {
                    let mean = &slots.means[j * dim..(j + 1) * dim];
                    let sigma = slots.densities[j].sigma;
                    if settings.defensive_weight > 0.0 {
                        draw_defensive(
                            centre,
                            mean,
                            sigma,
                            2.0 * radius,
                            settings.defensive_weight,
                            rng,
                        );
                    } else {
                        draw_student(centre, mean, sigma, rng);
                    }
                } else {
                    draw_in_ball(centre, 2.0 * radius, rng);
                }
            }
            let with_mean = slots.n_with_mean().min(new_k);
            sort_surplus(&mut proposal, dim, with_mean);
            let new_weight = chain.state_log_weight(slots, &proposal);
            if new_weight == f64::NEG_INFINITY {
                rng.next_f64_nonzero();
                outside_prior += 1;
                if settings.record_decisions {
                    decisions.push(false);
                }
                continue;
            }
            if new_k > 1 && settings.defect != Defect::LabelledChain {
                let (rows, columns) = chain.assignment_cost(slots, &proposal, &mut cost);
                if !is_identity(&cost, rows, columns) {
                    rng.next_f64_nonzero();
                    mislabelled += 1;
                    if settings.record_decisions {
                        decisions.push(false);
                    }
                    continue;
                }
            }
            let move_ratio = match settings.defect {
                Defect::NoMoveRatio => 0.0,
                _ => log_backward - log_forward,
            };
            let rest =
                -target.eta * (new_k as f64 - k as f64) + new_weight - current_weight + move_ratio;
            (new_k, rest, Some(new_weight))
        } else if kind * total < mixed.jump + mixed.birth_death {
            // A birth or a death (module docs, "Births and deaths").
            let choice = rng.next_f64();
            let birth_k = birth_probability(k, max_k);
            let choice_ratio = |birth_from: usize| {
                let birth = birth_probability(birth_from, max_k);
                let death = 1.0 - birth_probability(birth_from + 1, max_k);
                match settings.defect {
                    Defect::NoBirthDeathChoice => 0.0,
                    _ => death.ln() - birth.ln(),
                }
            };
            if max_k == 1 {
                rng.next_f64_nonzero();
                if settings.record_decisions {
                    decisions.push(false);
                }
                continue;
            }
            if choice < birth_k {
                chain.prepare(k + 1);
                let slots = chain.get(k + 1);
                let r = slots.n_with_mean();
                let i = rng.index_below(r.max(1));
                proposal.clear();
                proposal.extend_from_slice(&centres);
                proposal.resize((k + 1) * dim, 0.0);
                let origin;
                let (mean, sigma, weight) = if r == 0 {
                    origin = vec![0.0; dim];
                    (origin.as_slice(), 1.0, 1.0)
                } else {
                    (
                        &slots.means[i * dim..(i + 1) * dim],
                        slots.densities[i].sigma,
                        BIRTH_UNIFORM_WEIGHT,
                    )
                };
                let newborn = &mut proposal[k * dim..];
                draw_defensive(newborn, mean, sigma, 2.0 * radius, weight, rng);
                if !in_support(&proposal[k * dim..], radius) {
                    rng.next_f64_nonzero();
                    outside_prior += 1;
                    if settings.record_decisions {
                        decisions.push(false);
                    }
                    continue;
                }
                let density = match settings.defect {
                    Defect::NoBirthDensity => 0.0,
                    _ => chain.birth_log_density(k, &proposal[k * dim..]),
                };
                let rest = -target.eta - density + choice_ratio(k);
                is_birth = true;
                (k + 1, rest, None)
            } else {
                let x = rng.index_below(k);
                let dead = &centres[x * dim..(x + 1) * dim];
                proposal.clear();
                for (j, centre) in centres.chunks_exact(dim).enumerate() {
                    if j != x {
                        proposal.extend_from_slice(centre);
                    }
                }
                chain.prepare(k - 1);
                let density = match settings.defect {
                    Defect::NoBirthDensity => 0.0,
                    _ => chain.birth_log_density(k - 1, dead),
                };
                let rest = target.eta + density - choice_ratio(k - 1);
                (k - 1, rest, None)
            }
        } else {
            // A random-walk step of one centre: symmetric, so only the target counts.
            let j = rng.index_below(k);
            let scale = chain.get(k).walk_scale;
            proposal.clear();
            proposal.extend_from_slice(&centres);
            for value in &mut proposal[j * dim..(j + 1) * dim] {
                *value += scale * rng.standard_normal();
            }
            if !in_support(&proposal[j * dim..(j + 1) * dim], radius) {
                rng.next_f64_nonzero();
                outside_prior += 1;
                if settings.record_decisions {
                    decisions.push(false);
                }
                continue;
            }
            (k, 0.0, None)
        };
        let u = rng.next_f64_nonzero();
        // 5–6. One decision rule.
        let threshold = current_loss + (rest - u.ln()) / target.lambda;
        // A birth only adds a centre: a bound on what the newborn can take from S(c) decides
        // most of them without a walk, as the full sum would (`super::birth`).
        if is_birth && !settings.full_evaluation {
            let newborn = &proposal[k * dim..(k + 1) * dim];
            let decided = chain.get(k).cover.as_ref().is_some_and(|cover| {
                birth_rejected(cover, &centres, newborn, current_loss, threshold, n_points)
                    || refined_birth_rejected(
                        target.memory.index(),
                        &centres,
                        newborn,
                        current_loss,
                        threshold,
                        n_points,
                        &mut prepared.refine,
                    )
            });
            if decided {
                evaluations += 1;
                early_rejections += 1;
                if settings.record_decisions {
                    decisions.push(false);
                }
                continue;
            }
        }
        // A jump to k + 1, decided on the difference from k of its centres (the birth
        // bound), as the full sum would decide it.
        if new_weight.is_some()
            && new_k == k + 1
            && !settings.full_evaluation
            && chain.jump_up_rejected(k, &proposal, threshold, &mut prepared)
        {
            evaluations += 1;
            early_rejections += 1;
            if settings.record_decisions {
                decisions.push(false);
            }
            continue;
        }
        if new_weight.is_none() {
            // A move on clusterings: label the proposal in its fundamental domain (the
            // labelling the jumps use, and the one the cover pairs with its means).
            chain.prepare(new_k);
            chain.label_in_place(chain.get(new_k), &mut proposal, &mut cost, &mut labelled);
        }

        let evaluation = chain.evaluate(
            new_k,
            &proposal,
            &mut prepared,
            if settings.full_evaluation {
                f64::INFINITY
            } else {
                threshold
            },
        );
        let accept = evaluation.complete && evaluation.value < threshold;
        let touched = evaluation.points as f64;
        let fraction = if settings.full_evaluation {
            1.0
        } else {
            touched / denominator
        };
        fraction_sum += fraction;
        direct_sum += evaluation.direct_points as f64 / denominator;
        nodes_sum += evaluation.nodes as f64;
        evaluations += 1;
        if !accept && evaluation.points < n_points {
            early_rejections += 1;
            early_fraction_sum += fraction;
        }
        if accept {
            accepted += 1;
            k = new_k;
            std::mem::swap(&mut centres, &mut proposal);
            current_loss = evaluation.value;
            current_weight = match new_weight {
                Some(weight) => weight,
                None => chain.state_log_weight(chain.get(k), &centres),
            };
        }
        if settings.record_decisions {
            decisions.push(accept);
        }
    }

    let iterations = settings.iterations;
    ChainOutcome {
        report: SamplerReport {
            n_clusters: k,
            iterations,
            accepted,
            acceptance_rate: accepted as f64 / iterations.max(1) as f64,
            outside_prior,
            mislabelled,
            early_rejections,
            early_rejection_fraction: if early_rejections > 0 {
                early_fraction_sum / early_rejections as f64
            } else {
                0.0
            },
            data_fraction: fraction_sum / iterations.max(1) as f64,
            direct_fraction: direct_sum / iterations.max(1) as f64,
            nodes_per_evaluation: nodes_sum / evaluations.max(1) as f64,
            kmeans_runs: chain.means.kmeans_runs(),
            n_points,
            lambda: target.lambda,
        },
        centres,
        cumulative_loss: current_loss,
        decisions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::evaluate::index_tests::{clustered, reference};
    use crate::paco::means::FixedMeans;

    /// Four well-separated clusters of 1,500 points in d = 5 on the index, the means of
    /// one to four clusters (the first clusters' means) and of five (cluster 0 split along
    /// its first axis, as k-means splits it).
    struct FourClusters {
        memory: PointMemory,
        four: Vec<f64>,
        five: Vec<f64>,
        source: FixedMeans,
    }

    fn four_clusters() -> FourClusters {
        let cluster_means = [
            [0.0, 0.0, 0.0, 0.0, 0.0],
            [12.0, 0.0, 3.0, -2.0, 1.0],
            [-4.0, 11.0, 0.0, 5.0, -3.0],
            [3.0, -9.0, 8.0, 0.0, 4.0],
        ];
        let dim = 5;
        let means: Vec<Vec<f64>> = cluster_means.iter().map(|m| m.to_vec()).collect();
        let memory = clustered(&means, 1500, 1.0, 11);
        let n = memory.len() as f64;
        let four: Vec<f64> = means.iter().flatten().copied().collect();
        let mut five = four.clone();
        five[0] = -0.8;
        five.extend([0.8, 0.0, 0.0, 0.0, 0.0]);
        let of = |means: &[f64]| ProposalMeans {
            n_clusters: means.len() / dim,
            means: means.to_vec(),
            counts: vec![n / (means.len() / dim) as f64; means.len() / dim],
        };
        let source = FixedMeans {
            by_k: vec![
                of(&four[..5]),
                of(&four[..10]),
                of(&four[..15]),
                of(&four),
                of(&five),
            ],
        };
        FourClusters {
            memory,
            four,
            five,
            source,
        }
    }

    /// The chain of a round on `memory` with the given means (λ = 10⁻³, R = 30, p = 5).
    fn chain_on<'a>(
        memory: &'a PointMemory,
        source: &'a mut FixedMeans,
        covers: &'a mut CoverCache,
    ) -> Chain<'a, FixedMeans> {
        let dim = memory.dim();
        Chain {
            target: Target {
                memory,
                lambda: 1e-3,
                radius: 30.0,
                max_k: 5,
                eta: 4.0,
                n_points: memory.len() as u64,
            },
            rule: ProposalRule {
                scale: ProposalScale::Laplace,
                multiplier: 1.0,
            },
            settings: ChainSettings::round(1, false),
            means: source,
            constants: DensityConstants::new(dim),
            slots: (0..5).map(|_| None).collect(),
            dim,
            covers,
            choice: CoverChoice::default(),
        }
    }

    /// A state of k + 1 centres, one of them empty out in the prior's ball, is summed on the
    /// cover of k (where every real centre sits on its cluster's mean), once that cover is
    /// prepared, when the cover of k + 1, whose means split a cluster in two, has a far slot:
    /// the same S as the direct sum, far fewer nodes than on its own cover, and early
    /// rejection exact at the threshold. A state without a far slot is summed on its own
    /// cover, bit for bit.
    #[test]
    fn a_state_with_an_empty_centre_is_summed_on_the_cover_of_one_fewer() {
        let FourClusters {
            memory,
            four,
            five,
            mut source,
        } = four_clusters();
        let dim = 5;
        let mut covers = CoverCache::default();
        let mut chain = chain_on(&memory, &mut source, &mut covers);
        chain.prepare(5);
        let mut rng = StreamRng::seed_from(5);
        let mut prepared = PreparedCentres::new(dim);
        // Before the cover of four is prepared, the own cover sums every state.
        let mut state = four.clone();
        state.extend([40.0, 0.0, 0.0, 0.0, 0.0]);
        let state = chain.canonical(chain.get(5), &state);
        prepared.set(&state);
        let own = memory.evaluate(&mut prepared, f64::INFINITY, chain.get(5).cover.as_ref());
        assert_eq!(chain.evaluate(5, &state, &mut prepared, f64::INFINITY), own);
        chain.prepare(4);
        let mut fewer_nodes = 0;
        let trials = 30;
        for trial in 0..trials {
            let mut state: Vec<f64> = four
                .iter()
                .map(|m| m + 0.05 * rng.standard_normal())
                .collect();
            // The empty centre: 40 out, inside the ball of radius 2R.
            let far: Vec<f64> = (0..dim).map(|_| rng.standard_normal()).collect();
            let norm = far.iter().map(|v| v * v).sum::<f64>().sqrt();
            state.extend(far.iter().map(|v| 40.0 * v / norm));
            let state = chain.canonical(chain.get(5), &state);
            let exact = reference(&memory, &state);
            prepared.set(&state);
            let own = memory.evaluate(&mut prepared, f64::INFINITY, chain.get(5).cover.as_ref());
            let chosen = chain.evaluate(5, &state, &mut prepared, f64::INFINITY);
            for value in [own.value, chosen.value] {
                assert!(
                    (value - exact).abs() <= 1e-12 * exact,
                    "trial {trial}: {value} against {exact}"
                );
            }
            assert!(chosen.complete && chosen.points == memory.len());
            if 4 * chosen.nodes < own.nodes {
                fewer_nodes += 1;
            }
            for fraction in [0.5, 0.99, 0.999_999] {
                let early = chain.evaluate(5, &state, &mut prepared, fraction * exact);
                assert!(!early.complete, "trial {trial}, {fraction}");
            }
            // S(c') < thr: rejected at the value itself, accepted just above it.
            let at = chain.evaluate(5, &state, &mut prepared, chosen.value);
            assert!(!(at.complete && at.value < chosen.value), "trial {trial}");
            let above = chain.evaluate(5, &state, &mut prepared, chosen.value.next_up());
            assert!(
                above.complete && above.value == chosen.value,
                "trial {trial}"
            );
            // Without a far slot: the own cover, the same bits.
            let near: Vec<f64> = five
                .iter()
                .map(|m| m + 0.05 * rng.standard_normal())
                .collect();
            prepared.set(&near);
            let own = memory.evaluate(&mut prepared, f64::INFINITY, chain.get(5).cover.as_ref());
            let chosen = chain.evaluate(5, &near, &mut prepared, f64::INFINITY);
            assert_eq!(own, chosen, "trial {trial}");
        }
        assert_eq!(
            fewer_nodes, trials,
            "the cover of four was chosen in {fewer_nodes} trials"
        );
    }

    /// A jump from four to five centres is rejected by the birth bound on the difference
    /// only when the full sum would reject it: never at a threshold above S(c'), and for
    /// most proposals drawn around the means of five at thresholds a tenth of S below it
    /// (what the jumps of a learner miss it by is 15–50 %).
    #[test]
    fn jumps_up_are_rejected_on_the_difference_only_as_the_full_sum_rejects_them() {
        let FourClusters {
            memory,
            five,
            mut source,
            ..
        } = four_clusters();
        let dim = 5;
        let mut covers = CoverCache::default();
        let mut chain = chain_on(&memory, &mut source, &mut covers);
        chain.prepare(4);
        chain.prepare(5);
        let mut rng = StreamRng::seed_from(8);
        let mut prepared = PreparedCentres::new(dim);
        let mut decided_below = 0;
        let trials = 40;
        for trial in 0..trials {
            // The spread of the t₃ draws of a jump: up to about 2 around each mean.
            let scale = 0.1 + 0.05 * trial as f64;
            let proposal: Vec<f64> = five
                .iter()
                .map(|m| m + scale * rng.standard_normal())
                .collect();
            let full = chain.evaluate(5, &proposal, &mut prepared, f64::INFINITY);
            assert!(full.complete);
            let exact = reference(&memory, &proposal);
            assert!((full.value - exact).abs() <= 1e-12 * exact, "trial {trial}");
            for threshold in [
                full.value.next_up(),
                full.value * (1.0 + 1e-9),
                2.0 * full.value,
            ] {
                assert!(
                    !chain.jump_up_rejected(4, &proposal, threshold, &mut prepared),
                    "trial {trial}: rejected at {threshold}, S(c') = {}",
                    full.value
                );
            }
            if chain.jump_up_rejected(4, &proposal, 0.9 * full.value, &mut prepared) {
                decided_below += 1;
            }
        }
        assert!(
            decided_below >= trials / 2,
            "{decided_below} of {trials} rejected 10 % below S(c')"
        );
    }

    #[test]
    fn moves_respect_the_boundaries() {
        assert_eq!(moves(1, 1), ([1, 0, 0], 1));
        assert_eq!(moves(1, 5), ([1, 2, 0], 2));
        assert_eq!(moves(3, 5), ([2, 3, 4], 3));
        assert_eq!(moves(5, 5), ([4, 5, 0], 2));
    }
}
