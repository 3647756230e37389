//! The round machinery every exponential-weights rule shares: restart (doubling trick),
//! weights of the round, charging (with the specialists' rule for sleeping experts),
//! AdaHedge's mixability gap, and the regret ledger.

use serde::{Deserialize, Serialize};

use super::oracle::ExpertLedger;
use super::round::ExpertStep;
use super::schedule::{LearningRate, Schedule, Tuning};
use super::weights::{
    Charging, ExpWeights, GivenCharges, RoundPass, RoundTotals, load_tail, quad, tail_chunk,
};
use crate::data::check_finite;
use crate::error::{Error, Result};
use crate::kernels::{self, QUAD, Quad, QuadKernel};

/// The range of charged losses the bounds assume; rounds outside it are counted, not refused.
/// Without a loss bound (AdaHedge needs none) nothing is counted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LossRange {
    /// The width B of the range, if known.
    bound: Option<f64>,
    /// [−B/2, B/2] (linearised losses) rather than [0, B].
    centred: bool,
}

impl LossRange {
    /// Charged losses in [0, B] (B unknown: no range is checked).
    pub(crate) fn nonnegative(bound: Option<f64>) -> Self {
        Self {
            bound,
            centred: false,
        }
    }

    /// Linearised losses in [−B/2, B/2] (the gradient option: width B = 2GY).
    pub(crate) fn centred(width: Option<f64>) -> Self {
        Self {
            bound: width,
            centred: true,
        }
    }

    /// The width B that the tuned rates divide by (1 when unknown: only AdaHedge, which does
    /// not use it, runs without B).
    pub(crate) fn width(&self) -> f64 {
        self.bound.unwrap_or(1.0)
    }

    /// The interval [lower, upper] checked, if any.
    fn interval(&self) -> Option<(f64, f64)> {
        self.bound.map(|b| {
            if self.centred {
                (-0.5 * b, 0.5 * b)
            } else {
                (0.0, b)
            }
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Core {
    pub(crate) weights: ExpWeights,
    pub(crate) schedule: Schedule,
    pub(crate) ledger: ExpertLedger,
    pub(crate) range: LossRange,
    pub(crate) n_rounds: u64,
    /// Rounds where some charged loss fell outside `range` (the bounds then do not apply).
    pub(crate) out_of_range_rounds: u64,
    /// The shift of the canonical weights (see [`ExpWeights::canonical_weights`]): min C
    /// before the last charge, 0 after a restart. Part of the state, so that weights
    /// recomputed after a snapshot are the bits the uninterrupted run used.
    shift: f64,
    /// The weights of the current round, unnormalised: p_t = `probabilities` × `scale`
    /// (cache, recomputed when missing).
    #[serde(skip)]
    pub(crate) probabilities: Vec<f64>,
    /// 1 / Σ `probabilities`.
    #[serde(skip)]
    pub(crate) scale: f64,
    /// `Some(η)` when `probabilities` already holds the canonical weights of the next round
    /// for that η (written by the fused pass at the end of the previous round).
    #[serde(skip)]
    ready: Option<f64>,
    /// The losses charged this round (scratch).
    #[serde(skip)]
    pub(crate) charges: Vec<f64>,
    /// The experts' own losses this round (scratch, for rounds played the general way: the
    /// fused pass computes EWA's in its sweep).
    #[serde(skip)]
    pub(crate) expert_losses: Vec<f64>,
    /// EWA's linearised losses this round (scratch).
    #[serde(skip)]
    pub(crate) gradient_charges: Vec<f64>,
    /// Where the fused pass writes the experts' next charged losses C' (scratch, swapped in
    /// on success).
    #[serde(skip)]
    spare_charged: Vec<f64>,
    /// Where the fused pass writes the ledger's next cumulative losses (scratch).
    #[serde(skip)]
    spare_totals: Vec<f64>,
    /// `Some(true)` when the charged losses C and the ledger's cumulative losses L are known
    /// to hold the same bits (no restart, no sleeping expert, every charge the expert's own
    /// loss since the start: Hedge, and EWA without the gradient option): a fused pass then
    /// computes C' = L' once ([`RoundPass::twin`]). `None`: unknown, found by comparing them
    /// before the next fused pass (after a snapshot, a restart, or a round played the
    /// general way).
    #[serde(skip)]
    twins: Option<bool>,
}

impl Core {
    pub(crate) fn new(
        n_experts: usize,
        prior: Option<&[f64]>,
        rate: LearningRate,
        tuning: Tuning,
        range: LossRange,
    ) -> Result<Self> {
        Ok(Self {
            weights: ExpWeights::new(n_experts, prior)?,
            schedule: Schedule::new(rate, tuning, range.width(), n_experts),
            ledger: ExpertLedger::new(n_experts),
            range,
            n_rounds: 0,
            out_of_range_rounds: 0,
            shift: 0.0,
            probabilities: vec![0.0; n_experts],
            scale: 1.0,
            ready: None,
            charges: vec![0.0; n_experts],
            expert_losses: vec![0.0; n_experts],
            gradient_charges: vec![0.0; n_experts],
            spare_charged: vec![0.0; n_experts],
            spare_totals: vec![0.0; n_experts],
            twins: Some(true),
        })
    }

    pub(crate) fn n_experts(&self) -> usize {
        self.weights.n_experts()
    }

    /// Starts round t = n_rounds + 1: restarts the weights at a new doubling epoch and
    /// computes the weights p_t of the awake experts (`probabilities` × `scale`). Returns η_t.
    /// Call only after validating the round.
    pub(crate) fn begin(&mut self, awake: Option<&[bool]>) -> f64 {
        let n = self.n_experts();
        // Scratch buffers are not part of snapshots: size them after a restore.
        if self.spare_totals.len() != n {
            for buffer in [
                &mut self.probabilities,
                &mut self.charges,
                &mut self.expert_losses,
                &mut self.spare_charged,
                &mut self.spare_totals,
            ] {
                buffer.resize(n, 0.0);
            }
        }
        let round = self.n_rounds + 1;
        if self.schedule.restarts_at(round) {
            self.weights.restart();
            self.shift = 0.0;
            self.ready = None;
            self.twins = None;
        }
        let eta = self.schedule.eta(round);
        let cached = self.ready.take();
        match awake {
            None if eta.is_finite() => {
                if cached != Some(eta) {
                    self.weigh(eta);
                }
            }
            _ => {
                self.weights
                    .probabilities(eta, awake, &mut self.probabilities);
                self.scale = 1.0;
            }
        }
        eta
    }

    /// The learning rate of round t + 1 if round t = n_rounds + 1 can be played by one fused
    /// pass ([`Core::play`]): no restart at t or t + 1, and η_t, η_{t+1} finite and known
    /// before round t is played (not AdaHedge, whose next rate depends on this round's gap).
    pub(crate) fn single_pass_rate(&self) -> Option<f64> {
        if matches!(self.schedule.rate, LearningRate::AdaHedge) {
            return None;
        }
        let round = self.n_rounds + 1;
        if self.schedule.restarts_at(round) || self.schedule.restarts_at(round + 1) {
            return None;
        }
        let next = self.schedule.eta(round + 1);
        (self.schedule.eta(round).is_finite() && next.is_finite()).then_some(next)
    }

    /// Plays round t = n_rounds + 1, every expert awake, in one pass over the experts
    /// ([`RoundPass`]): checks `values` (finite, within ±`limit`), mixes them by p_t,
    /// charges expert i what `charging` makes of (`values[i]`, `aux[i]`) and records its own
    /// loss, counts the round if a charge lies outside the loss range (from the values'
    /// range: [`Charging::outside`]), and prepares the weights of round t + 1 (rate
    /// `next_eta`, from [`Core::single_pass_rate`]). `learner_loss` maps the mixture
    /// Σ_i p_{t,i} v_i to the learner's loss. Returns `Some((η_t, mixture, learner's loss))`,
    /// or `None` if a value is not finite or beyond ±`limit`, or the mixture overflowed with
    /// finite values: the caller then plays the round the general way, which refuses it with
    /// its message or plays it. Unless it returns `Some`, the learner is as it was (no
    /// separate pass checks the values).
    pub(crate) fn play<F: Charging>(
        &mut self,
        values: &[f64],
        aux: &[f64],
        charging: F,
        next_eta: f64,
        limit: f64,
        learner_loss: impl FnOnce(f64) -> f64,
    ) -> Option<(f64, f64, f64)> {
        let eta = self.begin(None);
        let totals = self.pass(values, aux, charging, next_eta, true, true);
        let beyond = totals.lowest_value < -limit || totals.highest_value > limit;
        if !totals.finite || beyond {
            // The pass wrote over the cached weights; nothing else was touched.
            self.ready = None;
            return None;
        }
        let mixture = totals.mixture * self.scale;
        let loss = learner_loss(mixture);
        self.commit(&totals, next_eta, loss);
        Some((eta, mixture, loss))
    }

    /// Round t = n_rounds + 1 with every expert awake, for a rule whose charges depend on the
    /// mixture (EWA's linearised losses): first η_t and Σ_i p_{t,i} v_i, checking the values
    /// (an error leaves the learner as it was); then [`Core::settle`]. Call only when
    /// [`Core::single_pass_rate`] is `Some`.
    pub(crate) fn checked_mixture(&mut self, values: &[f64]) -> Result<(f64, f64)> {
        let eta = self.begin(None);
        let unscaled = kernels::dispatch_quad(Dot(&self.probabilities, values));
        if !unscaled.is_finite() {
            check_finite(values)?;
        }
        Ok((eta, self.rescued(unscaled, values, None)))
    }

    /// The second pass of [`Core::checked_mixture`]: charges, ledger and next weights, as in
    /// [`Core::play`].
    pub(crate) fn settle<F: Charging>(
        &mut self,
        values: &[f64],
        aux: &[f64],
        charging: F,
        next_eta: f64,
        learner_loss: f64,
    ) {
        let totals = self.pass(values, aux, charging, next_eta, true, false);
        self.commit(&totals, next_eta, learner_loss);
    }

    /// The [`RoundPass`] of the round; it checks the charges against the loss range only if
    /// `check_range`, and reports the values' range if `track_range`.
    fn pass<F: Charging>(
        &mut self,
        values: &[f64],
        aux: &[f64],
        charging: F,
        next_eta: f64,
        check_range: bool,
        track_range: bool,
    ) -> RoundTotals {
        let twin = F::TWIN && self.twins();
        if !F::TWIN {
            // Charges that are not the ledger's entries may part C from L.
            self.twins = None;
        }
        kernels::dispatch_wide(
            &mut RoundPass {
                values,
                aux,
                charging,
                weights: &mut self.probabilities,
                charged: self.weights.charged(),
                charged_next: &mut self.spare_charged,
                log_prior: self.weights.log_priors(),
                totals: self.ledger.expert_losses(),
                totals_next: &mut self.spare_totals,
                eta: next_eta,
                shift: self.weights.least(),
                range: if check_range {
                    self.range.interval()
                } else {
                    None
                },
                track_range,
                twin,
            },
            values.len(),
        )
    }

    /// Whether C and L hold the same bits (see `twins`), compared once when unknown.
    fn twins(&mut self) -> bool {
        let (charged, totals) = (self.weights.charged(), self.ledger.expert_losses());
        *self.twins.get_or_insert_with(|| {
            charged.len() == totals.len()
                && charged
                    .iter()
                    .zip(totals)
                    .all(|(c, l)| c.to_bits() == l.to_bits())
        })
    }

    /// Takes the results of a [`RoundPass`] into the state and ends the round.
    fn commit(&mut self, totals: &RoundTotals, next_eta: f64, learner_loss: f64) {
        let before = self.weights.least();
        self.weights
            .swap_charged(&mut self.spare_charged, totals.least_charged);
        self.ledger.record_totals(
            learner_loss,
            &mut self.spare_totals,
            totals.least_total,
            totals.least_total_at,
        );
        self.shift = before;
        self.prepare(next_eta, totals.weight_total);
        self.out_of_range_rounds += u64::from(totals.outside);
        self.n_rounds += 1;
    }

    /// Keeps the canonical weights of the next round just written with the shift
    /// `self.shift` (their sum `total`), unless they must be re-shifted (to the new least
    /// loss, or with a prior to where the largest weight is 1): when every weight underflowed (the losses moved by more than ~700/η), or some
    /// exponent is above 700 (negative linearised losses pulled C below the shift), where
    /// the exponential would saturate.
    fn prepare(&mut self, next_eta: f64, total: f64) {
        let largest_exponent = next_eta * (self.shift - self.weights.least());
        if largest_exponent > 700.0 || total <= 1e-250 || !total.is_finite() {
            self.shift = self.weights.reshift(next_eta);
            self.weigh(next_eta);
        } else {
            self.scale = 1.0 / total;
        }
        self.ready = Some(next_eta);
    }

    /// The canonical weights at `eta` with the shift `self.shift`, unless their sum is not a
    /// safe normaliser even so: when the charged losses are so large (|C| ~ 1e37) that the
    /// prior's offset ln π/η is lost to rounding in C − shift. The normalised weights of the
    /// log-space path are used then (scale 1). A function of the state alone, so that weights
    /// recomputed after a snapshot are the same bits.
    fn weigh(&mut self, eta: f64) {
        let total = self
            .weights
            .canonical_weights(eta, self.shift, &mut self.probabilities);
        if total > 1e-250 && total.is_finite() {
            self.scale = 1.0 / total;
        } else {
            self.weights
                .probabilities(eta, None, &mut self.probabilities);
            self.scale = 1.0;
        }
    }

    /// Σ_i p_i v_i over the awake experts (asleep values may be anything, even NaN).
    pub(crate) fn mixture(&self, values: &[f64], awake: Option<&[bool]>) -> f64 {
        let unscaled = match awake {
            None => kernels::dispatch_quad(Dot(&self.probabilities, values)),
            Some(awake) => (0..values.len())
                .filter(|&i| awake[i])
                .map(|i| self.probabilities[i] * values[i])
                .sum(),
        };
        self.rescued(unscaled, values, awake)
    }

    /// `scale` × `unscaled` (= Σ_i w_i v_i over the awake experts), the mixture of every
    /// round. The canonical weights w_i are unnormalised, up to e^700, so Σ_i w_i v_i can
    /// overflow while the mixture Σ_i p_i v_i, a convex combination of finite values, is
    /// finite. Only then is it recomputed as m Σ_i (scale·w_i)(v_i/m), with m the largest
    /// |v_i|, which cannot overflow: every other round keeps the bits it always had. The
    /// overflow may show as NaN rather than ±∞ (+∞ from one expert, −∞ from another: losses
    /// of both signs, as charged linearised losses or a loss outside its range can be), so a
    /// NaN sum is rescued too; a NaN among the values stays NaN (the rescued sum has it).
    fn rescued(&self, unscaled: f64, values: &[f64], awake: Option<&[bool]>) -> f64 {
        let mixture = unscaled * self.scale;
        if mixture.is_finite() {
            return mixture;
        }
        let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
        let largest = (0..values.len())
            .filter(|&i| is_awake(i))
            .fold(0.0_f64, |m, i| m.max(values[i].abs()));
        if !largest.is_finite() || largest == 0.0 {
            return mixture;
        }
        largest
            * (0..values.len())
                .filter(|&i| is_awake(i))
                .map(|i| (self.probabilities[i] * self.scale) * (values[i] / largest))
                .sum::<f64>()
    }

    /// Ends the round. `charges[i]` is what awake expert i is charged; asleep experts are
    /// charged `asleep_charge` (the learner's loss of the round, so that their regret relative
    /// to the learner does not move). The ledger gets the learner's loss and every awake
    /// expert's own loss `expert_losses[i]`.
    pub(crate) fn finish(
        &mut self,
        eta: f64,
        awake: Option<&[bool]>,
        charges: &[f64],
        asleep_charge: f64,
        learner_loss: f64,
        expert_losses: &[f64],
    ) {
        // Charged the general way (sleeping experts, restarts): C and L may part.
        self.twins = None;
        // The scratch buffer is taken out so that the charges do not borrow the core.
        let mut masked = std::mem::take(&mut self.charges);
        let charges = match awake {
            None => charges,
            Some(awake) => {
                for ((slot, &charge), &is_awake) in masked.iter_mut().zip(charges).zip(awake) {
                    *slot = if is_awake { charge } else { asleep_charge };
                }
                &masked
            }
        };
        if matches!(self.schedule.rate, LearningRate::AdaHedge) {
            // δ_t = h_t − m_t: the mixture loss of the charged losses minus their mix loss,
            // both under p_t (asleep experts have weight 0).
            let unscaled = kernels::dispatch_quad(Dot(&self.probabilities, charges));
            let mixture = self.rescued(unscaled, charges, None);
            let mix = ExpWeights::mix_loss(eta, &self.probabilities, self.scale, charges);
            // The range of the round's charges, which AdaHedge's bound needs (it has no B).
            let (low, high) = charges
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &c| {
                    (low.min(c), high.max(c))
                });
            self.schedule.add_round(mixture - mix, high - low);
        }
        let before = self.weights.least();
        let next_round = self.n_rounds + 2;
        let next_eta = self.schedule.eta(next_round);
        let range = self.range.interval();
        let outside = if self.schedule.restarts_at(next_round) || !next_eta.is_finite() {
            // The next round starts afresh or follows the leader: no canonical weights to
            // prepare.
            self.shift = before;
            match range {
                Some((lower, upper)) => self.weights.charge_checked(charges, lower, upper),
                None => {
                    self.weights.charge(charges);
                    false
                }
            }
        } else if awake.is_none() {
            // Charge, check, record and weigh the next round in one pass over the experts.
            let totals = self.pass(charges, expert_losses, GivenCharges, next_eta, true, false);
            self.commit(&totals, next_eta, learner_loss);
            self.charges = masked;
            return;
        } else {
            // Charge, check and weigh the next round in one pass over the experts.
            let (outside, total) = self.weights.charge_and_weigh(
                charges,
                range,
                next_eta,
                before,
                &mut self.probabilities,
            );
            self.shift = before;
            self.prepare(next_eta, total);
            outside
        };
        self.out_of_range_rounds += u64::from(outside);
        self.ledger.record(learner_loss, expert_losses, awake);
        self.n_rounds += 1;
        self.charges = masked;
    }

    /// The weights the next round would use with every expert awake.
    pub(crate) fn next_weights(&self) -> Vec<f64> {
        self.next_weights_among(None)
    }

    /// The weights of the next round over the `awake` experts (0 for the others), as the
    /// round itself would compute them.
    pub(crate) fn next_weights_among(&self, awake: Option<&[bool]>) -> Vec<f64> {
        let round = self.n_rounds + 1;
        let mut weights = self.weights.clone();
        if self.schedule.restarts_at(round) {
            weights.restart();
        }
        let mut probabilities = vec![0.0; self.n_experts()];
        weights.probabilities(self.schedule.eta(round), awake, &mut probabilities);
        probabilities
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        self.weights.validate_snapshot()?;
        self.ledger.validate_snapshot(self.n_experts())?;
        let width = self.range.width();
        let gap = self.schedule.gap;
        let in_range = gap.is_finite()
            && gap >= 0.0
            && width.is_finite()
            && width > 0.0
            && self.schedule.ranges.is_valid();
        let schedule_width = self.schedule.loss_range;
        if !in_range
            || schedule_width != width
            || self.schedule.rate.check().is_err()
            || self.ledger.rounds() != self.n_rounds
        {
            return Err(Error::InvalidSnapshot(
                "expert aggregator: schedule or counters out of range".into(),
            ));
        }
        Ok(())
    }
}

/// Σ_i a_i b_i, over the lanes of the fused pass (so that every path mixes the same way).
struct Dot<'a>(&'a [f64], &'a [f64]);

impl QuadKernel for Dot<'_> {
    type Output = f64;

    #[inline(always)]
    fn run<Q: Quad>(self, q: Q) -> f64 {
        let (weights, values) = (self.0, self.1);
        let n = values.len();
        assert_eq!(weights.len(), n);
        let mut dot = q.splat(0.0);
        let full = n - n % QUAD;
        for base in (0..full).step_by(QUAD) {
            dot = q.mul_add(q.load(quad(weights, base)), q.load(quad(values, base)), dot);
        }
        if full < n {
            // The fused pass's last chunk (see `tail_chunk`).
            let (base, valid) = tail_chunk(q, n);
            let load = |values: &[f64]| load_tail(q, values, base, n);
            let product = q.mul_add(load(weights), load(values), dot);
            dot = q.select(valid, product, dot);
        }
        kernels::sum_quad(q.to_array(dot))
    }
}

/// `Some(η)`, or `None` for an infinite rate.
fn finite_rate(eta: f64) -> Option<f64> {
    eta.is_finite().then_some(eta)
}

impl Core {
    /// The record of the round that [`Core::finish`] (or [`Core::play`]) has just recorded,
    /// played at rate `eta` (reported as none when infinite: AdaHedge's follow the leader):
    /// the learner's prediction and loss, the loss of its draw and the expert drawn (for the
    /// randomised rules), and the regret against the best expert so far.
    pub(crate) fn step(
        &self,
        eta: f64,
        prediction: Option<f64>,
        loss: f64,
        realised_loss: Option<f64>,
        chosen: Option<usize>,
    ) -> ExpertStep {
        let (best_expert, regret) = self.ledger.best_expert();
        ExpertStep {
            round: self.n_rounds,
            prediction,
            loss,
            realised_loss,
            chosen,
            learning_rate: finite_rate(eta),
            best_expert,
            regret,
        }
    }
}

/// Declares a rule on the shared round machinery (Hedge, EWA, weighted majority and its
/// randomised form) and what every such rule has alike, as `forecaster_learner!` does for
/// the forecasters: its state (its settings, its [`Core`], then its own fields, in that order
/// in its snapshots), read back through its snapshot check (the core's own, the core weighing
/// the settings' N, and each of the `counts` fields, which count rounds, at most the rounds
/// played; `name` names the rule in the error), its ledger, the weights of the next round,
/// its settings, the bound against the best expert so far (from its
/// `regret_bound_against`), and the online protocol over its inherent `learn_round`.
macro_rules! core_learner {
    (
        $(#[$meta:meta])*
        $learner:ident($name:literal, $config:ty => $params:ty, $input:ident) {
            $($(#[$field_meta:meta])* $field:ident: $type:ty,)*
        }
        counts($($count:ident),*)
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(remote = "Self")]
        pub struct $learner {
            params: $config,
            core: Core,
            $($(#[$field_meta])* $field: $type,)*
        }

        validated_snapshot!($learner);

        impl $learner {
            /// The learner's and every expert's cumulative losses (the majority rules':
            /// mistakes; the randomised one's, expected mistakes), and the regret.
            pub fn ledger(&self) -> &super::ExpertLedger {
                &self.core.ledger
            }

            /// The normalised weights p_{t+1} of the next round (every expert awake).
            pub fn weights(&self) -> Vec<f64> {
                self.core.next_weights()
            }

            /// The parameters.
            pub fn params(&self) -> &$params {
                &self.params
            }

            /// The bound (or why there is none) on the regret against the best expert in
            /// hindsight so far (the expert
            /// [`ExpertLedger::best_expert`](super::ExpertLedger::best_expert) names); see
            /// `regret_bound_against`.
            pub fn regret_bound(&self) -> Guarantee {
                self.regret_bound_against(self.core.ledger.best_expert().0)
            }

            fn validate_snapshot(&self) -> Result<()> {
                self.core.validate_snapshot()?;
                if self.core.n_experts() != self.params.n_experts
                    $(|| self.$count > self.core.n_rounds)*
                {
                    return Err(Error::InvalidSnapshot(concat!($name, ": inconsistent").into()));
                }
                Ok(())
            }
        }

        impl OnlineLearner for $learner {
            type Input<'a> = $input<'a>;
            type Step = ExpertStep;

            fn learn_one(&mut self, round: $input<'_>) -> Result<ExpertStep> {
                self.learn_round(round)
            }

            fn n_rounds(&self) -> u64 {
                self.core.n_rounds
            }
        }
    };
}
pub(crate) use core_learner;

#[cfg(test)]
mod tests {
    use super::super::weights::OwnLoss;
    use super::*;

    /// Checks the cached weights of the round about to be played against the definition
    /// p_i ∝ exp(−η (C_i − shift)) evaluated with the standard library's exponential: each
    /// within the exponential's stated relative error 1e−13, exactly 0 where the argument is
    /// below −708 (the true value is below 3.3e−308); and against weights recomputed from the
    /// serialised state (what a restored snapshot uses), bit for bit.
    fn check_round(core: &mut Core, eta: f64) {
        let scale = core.scale;
        let cached = core.probabilities.clone();
        for (i, &w) in cached.iter().enumerate() {
            let argument = -eta * (core.weights.charged()[i] - core.shift);
            // The engine's invariant: no exponent above 700 (the exponential's domain ends
            // at 709, and the sum must not overflow).
            assert!(argument <= 700.0, "expert {i}: exponent {argument}");
            let exact = argument.exp();
            if argument < -708.0 {
                assert_eq!(w, 0.0, "expert {i}: argument {argument}");
            } else {
                assert!(
                    (w - exact).abs() <= 1e-13 * exact,
                    "expert {i}: {w} vs {exact}"
                );
            }
        }
        let mut restored: Core =
            serde_json::from_str(&serde_json::to_string(core).unwrap()).unwrap();
        assert_eq!(restored.begin(None), eta);
        assert_eq!(restored.scale.to_bits(), scale.to_bits());
        let recomputed: Vec<u64> = restored.probabilities.iter().map(|p| p.to_bits()).collect();
        let kept: Vec<u64> = cached.iter().map(|p| p.to_bits()).collect();
        assert_eq!(recomputed, kept);
    }

    /// A Hedge core of `n` experts at the fixed rate `eta`, losses in [0, ∞).
    fn hedge_core(n: usize, eta: f64) -> Core {
        Core::new(
            n,
            None,
            LearningRate::Fixed(eta),
            Tuning::Hedge,
            LossRange::nonnegative(None),
        )
        .unwrap()
    }

    /// The fused pass over the whole range of arguments: weights from 1 down to underflow,
    /// a round where every weight underflows (re-shift to the new least loss), negative
    /// losses that push exponents above 700 (re-shift the other way), and an expert whose
    /// weight underflowed becoming the leader again.
    #[test]
    fn weights_are_accurate_through_underflow_and_reshifts() {
        let eta = 1.0;
        let mut core = hedge_core(6, eta);
        let rounds: [[f64; 6]; 6] = [
            // Arguments 0 down to −712: every branch of the exponential, and underflow.
            [0.0, 100.0, 300.0, 600.0, 705.0, 712.0],
            // Every weight underflows (C − shift ≥ 800): re-shift to the new least.
            [900.0, 850.0, 900.0, 900.0, 900.0, 900.0],
            // Negative losses pull C far below the shift: exponents above 700, re-shift.
            [-2000.0, -1500.0, -1000.0, -900.0, -800.0, -2500.0],
            [3.0, 1.0, 4.0, 1.0, 5.0, 9.0],
            // Expert 5, whose weight underflowed in the first round, leads again.
            [5000.0, 5000.0, 5000.0, 5000.0, 5000.0, 0.0],
            [0.5, 0.25, 0.125, 0.0, 1.0, 0.0],
        ];
        let mut reshifts = 0;
        for losses in &rounds {
            let shift_before = core.shift;
            let next = core.single_pass_rate().expect("a fixed rate is one pass");
            core.begin(None);
            check_round(&mut core, eta);
            let played = core.play(losses, losses, OwnLoss, next, f64::MAX, |mixture| mixture);
            assert!(played.is_some());
            reshifts +=
                usize::from(core.shift != shift_before && core.shift == core.weights.least());
        }
        core.begin(None);
        check_round(&mut core, eta);
        let p: Vec<f64> = core.probabilities.iter().map(|w| w * core.scale).collect();
        // Expert 5 leads by 4,782 (C = −879 against 3,903.5 for the next): all the weight.
        assert_eq!(p, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        assert!(reshifts >= 2, "the re-shift paths were not exercised");
    }

    /// The fused pass's exponential has no clamp at its ceiling (709): a round whose largest
    /// exponent lies above the re-weighing threshold (700), below the ceiling or beyond it,
    /// keeps no weight computed from it. Negative losses put one expert's exponent at 705,
    /// 709.5, 750 and 1,000 in turn.
    #[test]
    fn exponents_past_the_ceiling_are_reweighed() {
        for pull in [705.0, 709.5, 750.0, 1000.0] {
            let eta = 1.0;
            let mut core = hedge_core(3, eta);
            for losses in [[0.0, 0.0, 0.0], [-pull, 0.0, 0.0], [0.5, 0.25, 0.0]] {
                let next = core.single_pass_rate().expect("a fixed rate is one pass");
                core.begin(None);
                check_round(&mut core, eta);
                let played =
                    core.play(&losses, &losses, OwnLoss, next, f64::MAX, |mixture| mixture);
                assert!(played.is_some(), "{pull}");
            }
            core.begin(None);
            check_round(&mut core, eta);
        }
    }

    /// Found by fuzzing `learn_one`: negative losses pull the charged losses 122 below the
    /// shift, so the canonical weights reach e^{3.3·122} ≈ 1e175, and a round with a loss of
    /// 9.2e165 overflowed Σ_i w_i ℓ_i although the mixture, a convex combination of finite
    /// losses, is about 3e165. Every rule and path that mixes (Hedge's fused and general
    /// passes, AdaHedge's gap, EWA's prediction) reports the finite mixture.
    #[test]
    fn the_mixture_of_huge_losses_is_finite_under_large_weights() {
        use crate::OnlineLearner;
        use crate::experts::{AdviceRound, EwaParams, HedgeParams, Loss, LossRound};
        let pull = [-122.67, -121.67, -122.67];
        let huge = [-48.14, -255.5, 9.213_775_451_224_466e165];
        let expected =
            |weights: &[f64]| -> f64 { weights.iter().zip(&huge).map(|(w, l)| w * l).sum() };
        for (rate, sample) in [
            (LearningRate::Fixed(3.3), false),
            (LearningRate::Fixed(3.3), true),
            (LearningRate::AdaHedge, true),
        ] {
            let mut hedge = HedgeParams::new(3)
                .learning_rate(rate)
                .sample(sample)
                .loss_bound(1.0)
                .check()
                .unwrap()
                .build();
            for _ in 0..4 {
                let round = LossRound {
                    losses: &pull,
                    awake: None,
                };
                hedge.learn_one(round).unwrap();
            }
            let want = expected(&hedge.weights());
            let round = LossRound {
                losses: &huge,
                awake: None,
            };
            let step = hedge.learn_one(round).unwrap();
            assert!(
                (step.loss - want).abs() <= 1e-12 * want,
                "{rate:?}, sample {sample}: {} against {want}",
                step.loss
            );
            assert!(step.regret.is_finite());
        }
        // EWA's advice is bounded by 1e100, so its weights must be larger: the absolute loss's
        // linearised charges sign(ŷ − y)·ỹ_i are the advice itself when y is below it, and a
        // pull of 200 makes the canonical weights e^{3.3·200} ≈ 1e286.
        let pull = [-200.0, -199.0, -200.0];
        let huge = [-48.14, -255.5, 1e99];
        let mut ewa = EwaParams::new(3)
            .loss(Loss::Absolute)
            .learning_rate(LearningRate::Fixed(3.3))
            .gradient(true)
            .loss_bound(1.0)
            .check()
            .unwrap()
            .build();
        for _ in 0..4 {
            let round = AdviceRound {
                advice: &pull,
                outcome: -1000.0,
                awake: None,
            };
            ewa.learn_one(round).unwrap();
        }
        let want: f64 = ewa.weights().iter().zip(&huge).map(|(w, a)| w * a).sum();
        let round = AdviceRound {
            advice: &huge,
            outcome: 0.0,
            awake: None,
        };
        let step = ewa.learn_one(round).unwrap();
        let prediction = step.prediction.unwrap();
        assert!(
            (prediction - want).abs() <= 1e-12 * want,
            "EWA: {prediction} against {want}"
        );
    }
}
