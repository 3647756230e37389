//! The round machinery every exponential-weights rule shares: restart (doubling trick),
//! weights of the round, charging (with the specialists' rule for sleeping experts),
//! AdaHedge's mixability gap, and the regret ledger.

use serde::{Deserialize, Serialize};

use super::oracle::ExpertLedger;
use super::schedule::{LearningRate, Schedule, Tuning};
use super::weights::ExpWeights;
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};

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
    /// The experts' own losses this round (scratch).
    #[serde(skip)]
    pub(crate) expert_losses: Vec<f64>,
    /// EWA's linearised losses this round (scratch).
    #[serde(skip)]
    pub(crate) gradient_charges: Vec<f64>,
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
        for buffer in [
            &mut self.probabilities,
            &mut self.charges,
            &mut self.expert_losses,
        ] {
            buffer.resize(n, 0.0);
        }
        let round = self.n_rounds + 1;
        if self.schedule.restarts_at(round) {
            self.weights.restart();
            self.shift = 0.0;
            self.ready = None;
        }
        let eta = self.schedule.eta(round);
        let cached = self.ready.take();
        match awake {
            None if eta.is_finite() => {
                if cached != Some(eta) {
                    let total =
                        self.weights
                            .canonical_weights(eta, self.shift, &mut self.probabilities);
                    self.scale = 1.0 / total;
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

    /// Σ_i p_i v_i over the awake experts (asleep values may be anything, even NaN).
    pub(crate) fn mixture(&self, values: &[f64], awake: Option<&[bool]>) -> f64 {
        let unscaled = match awake {
            None => kernels::dispatch(Dot(&self.probabilities, values)),
            Some(awake) => (0..values.len())
                .filter(|&i| awake[i])
                .map(|i| self.probabilities[i] * values[i])
                .sum(),
        };
        unscaled * self.scale
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
        let charges = match awake {
            None => charges,
            Some(awake) => {
                for ((slot, &charge), &is_awake) in self.charges.iter_mut().zip(charges).zip(awake)
                {
                    *slot = if is_awake { charge } else { asleep_charge };
                }
                &self.charges
            }
        };
        if matches!(self.schedule.rate, LearningRate::AdaHedge) {
            // δ_t = h_t − m_t: the mixture loss of the charged losses minus their mix loss,
            // both under p_t (asleep experts have weight 0).
            let mixture = kernels::dispatch(Dot(&self.probabilities, charges)) * self.scale;
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
        } else {
            // Charge, check and weigh the next round in one pass over the experts.
            let (outside, mut total) = self.weights.charge_and_weigh(
                charges,
                range,
                next_eta,
                before,
                &mut self.probabilities,
            );
            self.shift = before;
            // Re-shift to the new least, so that the largest exponent is ≤ 0, if every weight
            // underflowed (the losses moved by more than ~700/η), or if some exponent is
            // above 700 (negative linearised losses pulled C below the shift), where exp
            // would saturate.
            let largest_exponent = next_eta * (before - self.weights.least());
            if largest_exponent > 700.0 || total <= 1e-250 {
                self.shift = self.weights.least();
                total =
                    self.weights
                        .canonical_weights(next_eta, self.shift, &mut self.probabilities);
            }
            self.scale = 1.0 / total;
            self.ready = Some(next_eta);
            outside
        };
        self.out_of_range_rounds += u64::from(outside);
        self.ledger.record(learner_loss, expert_losses, awake);
        self.n_rounds += 1;
    }

    /// The weights the next round would use with every expert awake.
    pub(crate) fn next_weights(&self) -> Vec<f64> {
        let round = self.n_rounds + 1;
        let mut weights = self.weights.clone();
        if self.schedule.restarts_at(round) {
            weights.restart();
        }
        let mut probabilities = vec![0.0; self.n_experts()];
        weights.probabilities(self.schedule.eta(round), None, &mut probabilities);
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

/// Σ_i a_i b_i.
struct Dot<'a>(&'a [f64], &'a [f64]);

impl Kernel for Dot<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        kernels::dot(self.0, self.1)
    }
}

/// `Some(η)`, or `None` for an infinite rate.
pub(crate) fn finite_rate(eta: f64) -> Option<f64> {
    eta.is_finite().then_some(eta)
}
