//! Hedge (decision-theoretic) and the exponentially weighted average forecaster (EWA).
//!
//! Both play p_{t,i} ∝ π_i exp(−η_t C_{t−1,i}) over the awake experts.
//!
//! - **Hedge** is given every expert's loss ℓ_{t,i} ∈ [0, B]; its loss is the mixture loss
//!   Σ_i p_{t,i} ℓ_{t,i} (the expected loss of drawing an expert from p_t). Optionally it
//!   draws an expert from p_t (seeded) and reports that expert's realised loss beside.
//! - **EWA** is given real-valued advice ỹ_{t,i} and predicts ŷ_t = Σ_i p_{t,i} ỹ_{t,i}; its
//!   loss is ℓ(ŷ_t, y_t) for a convex ℓ (square, absolute, pinball), at most the mixture loss
//!   by Jensen. The experts are charged ℓ(ỹ_{t,i}, y_t), or, with the **gradient** option,
//!   the linearised losses ℓ'(ŷ_t, y_t)·ỹ_{t,i}, which competes with the best convex
//!   combination of the experts rather than the best expert.
//!
//! **Sleeping experts** (specialists, Freund, Schapire, Singer & Warmuth 1997): an asleep
//! expert gets no weight in the round and is charged the learner's own loss of the round
//! (Hedge: the mixture loss; EWA: ℓ(ŷ_t, y_t), or its linearisation ℓ'(ŷ_t, y_t)·ŷ_t with
//! the gradient option), so its regret relative to the learner does not move while it sleeps.
//! Regret is then reported against each expert on the rounds where it was awake.

use serde::{Deserialize, Serialize};

use super::bounds::{self, Bounded, Guarantee};
use super::core::{ChargeRange, Core, LossRange, core_learner};
use super::loss::{ABSOLUTE, Loss, PINBALL, SQUARE, ZERO_ONE, value_lanes};
use super::params::limits::{MAX_ADVICE, MAX_LOSS};
use super::params::{EwaConfig, EwaParams, HedgeConfig, HedgeParams};
use super::round::{AdviceRound, ExpertStep, LossRound};
use super::schedule::Tuning;
use super::weights::{Charging, OwnLoss, RecordedLosses, padded};
use crate::error::{Error, Result};
use crate::kernels::{self, Lanes, QUAD, Quad, Wide, WideKernel};
use crate::online::OnlineLearner;
use crate::rng::StreamRng;

core_learner! {
    /// Hedge; see the module documentation.
    ///
    /// ```
    /// use pacstream::experts::{HedgeParams, LearningRate, LossRound};
    /// use pacstream::OnlineLearner;
    ///
    /// let mut hedge = HedgeParams::new(3)
    ///     .learning_rate(LearningRate::Horizon(100))
    ///     .loss_bound(1.0)
    ///     .check()?
    ///     .build();
    /// for _ in 0..100 {
    ///     hedge.learn_one(LossRound::new(&[1.0, 0.0, 0.5]))?;
    /// }
    /// let regret = hedge.ledger().regret();
    /// assert!(regret <= pacstream::experts::bounds::hedge_tuned(100, 3, 1.0, 0.0));
    /// assert!(hedge.weights()[1] > 0.99);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    Hedge("hedge", HedgeConfig => HedgeParams, LossRound) {
        rng: StreamRng,
    }
    counts()
}

impl HedgeConfig {
    /// The learner.
    pub fn build(&self) -> Hedge {
        let core = Core::new(
            self.n_experts,
            self.prior.as_deref(),
            self.rate,
            Tuning::Hedge,
            LossRange::nonnegative(self.loss_bound),
        )
        .expect("invariant: checked parameters");
        Hedge {
            params: self.clone(),
            core,
            rng: StreamRng::seed_from(self.seed),
        }
    }
}

impl Hedge {
    /// Rounds where a loss fell outside [0, B] (the bounds then do not apply).
    pub fn out_of_range_rounds(&self) -> u64 {
        self.core.out_of_range_rounds
    }

    /// AdaHedge's cumulative mixability gap Δ_t (0 for the other schedules).
    pub fn mixability_gap(&self) -> f64 {
        self.core.schedule.gap
    }

    /// The bound on the regret of the mixture loss against `expert` (on its awake rounds),
    /// for this schedule, prior and loss range; see [`bounds`](super::bounds).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        bounds::exponential_weights(
            &self.core,
            expert,
            self.core.range.width(),
            self.params.loss_bound.is_some(),
        )
    }

    fn learn_round(&mut self, round: LossRound<'_>) -> Result<ExpertStep> {
        if let (None, false, Some(next_eta)) = (
            round.awake,
            self.params.sample,
            self.core.single_pass_rate(),
        ) {
            // One pass over the experts: check, mix, charge, record, weigh the next round.
            // The pass finds the losses' range, for their magnitude and the loss bound; a
            // round it turns down is refused (or played) the general way below.
            round.check_sizes(self.core.n_experts())?;
            if let Some((eta, mixture, _)) = self.core.play(
                round.losses,
                round.losses,
                OwnLoss,
                next_eta,
                ChargeRange::Limited(MAX_LOSS),
                |mixture| mixture,
            )? {
                return Ok(self.core.step(eta, None, mixture, None, None));
            }
        }
        round.check(self.core.n_experts())?;
        let eta = self.core.begin(round.awake);
        let mixture = self.core.mixture(round.losses, round.awake);
        let chosen = self.params.sample.then(|| {
            // The weights are unnormalised: draw against their total.
            let target = self.rng.next_f64() / self.core.scale;
            let mut cumulative = 0.0;
            let mut chosen = 0;
            for (i, &p) in self.core.probabilities.iter().enumerate() {
                if p > 0.0 {
                    chosen = i;
                    cumulative += p;
                    if cumulative > target {
                        break;
                    }
                }
            }
            chosen
        });
        self.core.finish(
            eta,
            round.awake,
            round.losses,
            mixture,
            mixture,
            round.losses,
        );
        let realised_loss = chosen.map(|i| round.losses[i]);
        Ok(self.core.step(eta, None, mixture, realised_loss, chosen))
    }
}

core_learner! {
    /// The exponentially weighted average forecaster; see the module documentation.
    ///
    /// ```
    /// use pacstream::experts::{AdviceRound, EwaParams, Loss};
    /// use pacstream::OnlineLearner;
    ///
    /// let mut ewa = EwaParams::new(2).loss(Loss::Square).check()?.build(); // AdaHedge rates
    /// for t in 0..200 {
    ///     let y = (t as f64 * 0.1).sin();
    ///     // Expert 0 is right, expert 1 is off by one.
    ///     ewa.learn_one(AdviceRound::new(&[y, y + 1.0], y))?;
    /// }
    /// assert_eq!(ewa.ledger().best_expert().0, 0);
    /// assert!(ewa.ledger().regret() < 2.0);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    Ewa("EWA", EwaConfig => EwaParams, AdviceRound) {}
    counts()
}

impl EwaConfig {
    /// The learner.
    pub fn build(&self) -> Ewa {
        let range = if self.gradient {
            LossRange::centred(self.loss_bound)
        } else {
            LossRange::nonnegative(self.loss_bound)
        };
        let core = Core::new(
            self.n_experts,
            self.prior.as_deref(),
            self.rate,
            Tuning::Hedge,
            range,
        )
        .expect("invariant: checked parameters");
        Ewa {
            params: self.clone(),
            core,
        }
    }
}

impl Ewa {
    /// The loss function.
    pub fn loss(&self) -> Loss {
        self.params.loss
    }

    /// Rounds where a charged loss fell outside its range (the bounds then do not apply).
    pub fn out_of_range_rounds(&self) -> u64 {
        self.core.out_of_range_rounds
    }

    /// The bound on the regret of ℓ(ŷ_t, y_t) against `expert` (on its awake rounds), for
    /// this loss, schedule, prior and loss range (ℓ convex: at most the mixture loss, by
    /// Jensen, or with the gradient option at most the linearised loss); see
    /// [`bounds`](super::bounds). None for the zero-one loss: a weighted average of
    /// real-valued advice can miss every round while one expert never does.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        if !self.params.loss.is_convex() && self.core.n_experts() > 1 {
            return Guarantee::none(
                Bounded::Regret,
                "the zero-one loss of a weighted average of real-valued advice is not bounded \
                 by the experts' losses (use the absolute loss, or randomized weighted majority \
                 for binary advice)",
            );
        }
        bounds::exponential_weights(
            &self.core,
            expert,
            self.core.range.width(),
            self.params.loss_bound.is_some() && !self.params.gradient,
        )
    }

    /// The prediction the learner would make on `advice` now (every expert awake).
    pub fn predict(&self, advice: &[f64]) -> Result<f64> {
        self.predict_among(advice, None)
    }

    /// The prediction the learner would make now when only the `awake` experts advise (the
    /// weights renormalised over them, as a round with these awake experts plays them; the advice of
    /// an asleep expert is ignored, NaN included).
    ///
    /// ```
    /// use pacstream::experts::{EwaParams, LearningRate};
    /// let ewa = EwaParams::new(2)
    ///     .learning_rate(LearningRate::Fixed(1.0))
    ///     .loss_bound(1.0)
    ///     .check()?
    ///     .build();
    /// assert_eq!(ewa.predict_among(&[3.0, f64::NAN], Some(&[true, false]))?, 3.0);
    /// assert_eq!(ewa.predict(&[3.0, 1.0])?, 2.0);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    pub fn predict_among(&self, advice: &[f64], awake: Option<&[bool]>) -> Result<f64> {
        let round = AdviceRound {
            advice,
            outcome: 0.0,
            awake,
        };
        round.check(self.core.n_experts())?;
        let weights = self.core.next_weights_among(awake);
        Ok((0..advice.len())
            .filter(|&i| awake.is_none_or(|a| a[i]))
            .map(|i| weights[i] * advice[i])
            .sum())
    }

    /// A round where every expert is awake and is charged its own loss: one pass over the
    /// experts ([`Core::play`]). Returns (η_t, ŷ_t, ℓ(ŷ_t, y_t)), or `None` if the round must
    /// be played the general way.
    fn learn_fused(
        &mut self,
        round: AdviceRound<'_>,
        next_eta: f64,
    ) -> Result<Option<(f64, f64, f64)>> {
        let (loss, outcome) = (self.params.loss, round.outcome);
        let (kind, tau) = loss.kind();
        let advice = round.advice;
        // The scratch buffer is taken out so that the pass can borrow the core.
        let mut losses = std::mem::take(&mut self.core.expert_losses);
        losses.resize(advice.len(), 0.0);
        macro_rules! own_losses {
            ($kind:expr) => {
                kernels::dispatch_wide(
                    OwnLosses::<{ $kind }> {
                        advice,
                        outcome,
                        tau,
                        losses: &mut losses,
                    },
                    advice.len(),
                )
            };
        }
        let (lowest, highest, largest_loss) = match kind {
            SQUARE => own_losses!(SQUARE),
            ABSOLUTE => own_losses!(ABSOLUTE),
            PINBALL => own_losses!(PINBALL),
            _ => own_losses!(ZERO_ONE),
        };
        let played = if lowest < -MAX_ADVICE || highest > MAX_ADVICE {
            // The general path refuses the round with its message.
            Ok(None)
        } else {
            self.core.play(
                advice,
                &losses,
                RecordedLosses,
                next_eta,
                // Every loss is ≥ 0.
                ChargeRange::Known(0.0, largest_loss),
                |prediction| loss.value(prediction, outcome),
            )
        };
        self.core.expert_losses = losses;
        played
    }

    /// A round where every expert is awake and is charged its linearised loss
    /// ℓ'(ŷ_t, y_t)·ỹ_{t,i}: one pass for ŷ_t, one for the rest. Returns (η_t, ŷ_t, ℓ(ŷ_t, y_t)).
    fn learn_linearised(
        &mut self,
        round: AdviceRound<'_>,
        next_eta: f64,
    ) -> Result<(f64, f64, f64)> {
        let (loss, outcome) = (self.params.loss, round.outcome);
        let (eta, prediction) = self.core.checked_mixture(round.advice)?;
        let learner_loss = loss.value(prediction, outcome);
        let slope = loss.gradient(prediction, outcome);
        let (kind, tau) = loss.kind();
        let (advice, core) = (round.advice, &mut self.core);
        macro_rules! settle {
            ($kind:ident) => {
                core.settle(
                    advice,
                    advice,
                    Linearised::<$kind> {
                        tau,
                        outcome,
                        slope,
                    },
                    next_eta,
                    learner_loss,
                )
            };
        }
        match kind {
            SQUARE => settle!(SQUARE),
            ABSOLUTE => settle!(ABSOLUTE),
            PINBALL => settle!(PINBALL),
            _ => settle!(ZERO_ONE),
        }
        Ok((eta, prediction, learner_loss))
    }

    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        if let (None, Some(next_eta)) = (round.awake, self.core.single_pass_rate()) {
            let played = if self.params.gradient {
                round.check_shape(self.core.n_experts())?;
                Some(self.learn_linearised(round, next_eta)?)
            } else {
                // The advice's magnitude is checked by the pass of the own losses.
                if round
                    .check_sizes_and_outcome(self.core.n_experts())
                    .is_err()
                {
                    round.check(self.core.n_experts())?;
                }
                self.learn_fused(round, next_eta)?
            };
            if let Some((eta, prediction, loss)) = played {
                return Ok(self.core.step(eta, Some(prediction), loss, None, None));
            }
        }
        round.check(self.core.n_experts())?;
        let loss = self.params.loss;
        let eta = self.core.begin(round.awake);
        let prediction = self.core.mixture(round.advice, round.awake);
        let learner_loss = loss.value(prediction, round.outcome);
        let slope = loss.gradient(prediction, round.outcome);
        let is_awake = |i: usize| round.awake.is_none_or(|a| a[i]);
        // Scratch buffers, taken out so that `finish` can borrow the core mutably.
        let mut own_losses = std::mem::take(&mut self.core.expert_losses);
        let mut charges = std::mem::take(&mut self.core.gradient_charges);
        charges.resize(own_losses.len(), 0.0);
        for i in 0..round.advice.len() {
            if is_awake(i) {
                own_losses[i] = loss.value(round.advice[i], round.outcome);
                charges[i] = slope * round.advice[i];
            }
        }
        let (charged, asleep_charge) = if self.params.gradient {
            (&charges, slope * prediction)
        } else {
            (&own_losses, learner_loss)
        };
        self.core.finish(
            eta,
            round.awake,
            charged,
            asleep_charge,
            learner_loss,
            &own_losses,
        );
        self.core.expert_losses = own_losses;
        self.core.gradient_charges = charges;
        Ok(self
            .core
            .step(eta, Some(prediction), learner_loss, None, None))
    }
}

/// EWA's own losses ℓ(ỹ_i, y) (ℓ of kind `KIND`) into `losses`, before the fused pass that
/// charges and records them ([`RecordedLosses`]); returns the least and the largest advice
/// (NaN skipped), for their magnitude, and the largest loss, for the loss range (a zero as
/// +0: they are only compared). Losses are computed by the same operations on every path
/// (four lanes or eight), so they are the same bits.
struct OwnLosses<'a, const KIND: u8> {
    advice: &'a [f64],
    outcome: f64,
    tau: f64,
    losses: &'a mut [f64],
}

impl<const KIND: u8> WideKernel for OwnLosses<'_, KIND> {
    type Output = (f64, f64, f64);

    #[inline(always)]
    fn run<W: Wide>(self, w: W) -> (f64, f64, f64) {
        let q = w.quad();
        let n = self.advice.len();
        assert_eq!(self.losses.len(), n);
        let outcome = w.splat(self.outcome);
        // `min(v, low)` is `v < low ? v : low`: a NaN keeps `low` (the fused pass refuses
        // the round: its mixture is NaN).
        let (mut low, mut high) = (w.splat(f64::INFINITY), w.splat(f64::NEG_INFINITY));
        let mut largest = w.splat(f64::NEG_INFINITY);
        let wide_full = n - n % W::WIDTH;
        for (a, l) in self.advice[..wide_full]
            .chunks_exact(W::WIDTH)
            .zip(self.losses[..wide_full].chunks_exact_mut(W::WIDTH))
        {
            let a = w.load_wide(a);
            let own = value_lanes::<KIND, W>(w, self.tau, a, outcome);
            w.store_wide(l, own);
            low = w.min(a, low);
            high = w.max(a, high);
            largest = w.max(own, largest);
        }
        // With eight lanes, the extremes on four and a last whole chunk of four.
        let (mut low, mut high, mut largest) =
            (w.fold_min(low), w.fold_max(high), w.fold_max(largest));
        let outcome = w.narrow(outcome);
        let full = n - n % QUAD;
        for (a, l) in self.advice[wide_full..full]
            .chunks_exact(QUAD)
            .zip(self.losses[wide_full..full].chunks_exact_mut(QUAD))
        {
            let a = q.load(a.try_into().expect("invariant: chunks_exact(QUAD)"));
            let own = value_lanes::<KIND, W::Quad>(q, self.tau, a, outcome);
            q.store(l.try_into().expect("invariant: chunks_exact(QUAD)"), own);
            low = q.min(a, low);
            high = q.max(a, high);
            largest = q.max(own, largest);
        }
        let (mut low, mut high, mut largest) = (
            fold_lanes(q.to_array(low), f64::min),
            fold_lanes(q.to_array(high), f64::max),
            fold_lanes(q.to_array(largest), f64::max),
        );
        if full < n {
            let a = padded(self.advice, full);
            let own = q.to_array(value_lanes::<KIND, W::Quad>(
                q,
                self.tau,
                q.load(&a),
                outcome,
            ));
            for (i, slot) in self.losses[full..].iter_mut().enumerate() {
                *slot = own[i];
                low = low.min(a[i]);
                high = high.max(a[i]);
                largest = largest.max(own[i]);
            }
        }
        (low + 0.0, high + 0.0, largest + 0.0)
    }
}

/// The lanes folded by `f`, in lane order.
#[inline(always)]
fn fold_lanes(lanes: [f64; QUAD], f: fn(f64, f64) -> f64) -> f64 {
    lanes[1..].iter().fold(lanes[0], |acc, &v| f(acc, v))
}

/// EWA's linearised charges ℓ'(ŷ, y)·ỹ_i; the ledger records the own losses ℓ(ỹ_i, y).
#[derive(Clone, Copy, Debug)]
struct Linearised<const KIND: u8> {
    tau: f64,
    outcome: f64,
    slope: f64,
}

impl<const KIND: u8> Charging for Linearised<KIND> {
    const TWIN: bool = false;
    const NONNEGATIVE: bool = false;
    #[inline(always)]
    fn split<L: Lanes>(self, q: L, advice: L::V, _aux: L::V) -> (L::V, L::V) {
        let own = value_lanes::<KIND, L>(q, self.tau, advice, q.splat(self.outcome));
        (q.mul(q.splat(self.slope), advice), own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experts::LearningRate;

    fn bits(values: &[f64]) -> Vec<u64> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    /// A Hedge of `n` experts with losses in [0, 1], sampling an expert or not.
    fn unit_hedge(n: usize, rate: LearningRate, sample: bool) -> Hedge {
        HedgeParams::new(n)
            .learning_rate(rate)
            .loss_bound(1.0)
            .sample(sample)
            .check()
            .unwrap()
            .build()
    }

    /// Rounds played by the fused pass leave the experts' cumulative losses, the best expert
    /// and the next weights exactly where the general path leaves them (a sampling Hedge
    /// plays every round the general way): with a fixed rate, where the charged losses are
    /// the ledger's until a round with a sleeping expert (charged the learner's loss, which
    /// the ledger does not record) parts them; through restarts of the doubling trick (after
    /// which they differ); and across a snapshot taken in between (the pass then finds out
    /// again whether the two agree).
    #[test]
    fn fused_rounds_keep_the_ledger_of_the_general_path() {
        for (n, rate) in [
            (3, LearningRate::Fixed(0.5)),
            (10, LearningRate::Fixed(0.5)),
            (3, LearningRate::Doubling),
            (10, LearningRate::Doubling),
        ] {
            let build = |sample| unit_hedge(n, rate, sample);
            let (mut fused, mut general) = (build(false), build(true));
            let mut rng = StreamRng::seed_from(11);
            for t in 0..300 {
                let losses: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
                let mask: Vec<bool> = (0..n).map(|i| i != 1).collect();
                let awake = (t % 37 == 20).then_some(mask.as_slice());
                if t == 150 {
                    let text = serde_json::to_string(&fused).unwrap();
                    fused = serde_json::from_str(&text).unwrap();
                }
                let round = LossRound {
                    losses: &losses,
                    awake,
                };
                fused.learn_one(round).unwrap();
                general.learn_one(round).unwrap();
                let (f, g) = (fused.ledger(), general.ledger());
                assert_eq!(bits(f.expert_losses()), bits(g.expert_losses()), "t = {t}");
                assert_eq!(f.best_expert().0, g.best_expert().0, "t = {t}");
                assert_eq!(bits(&fused.weights()), bits(&general.weights()), "t = {t}");
            }
        }
    }

    /// EWA's own losses, computed in a pass of their own before the fused pass, are the
    /// general path's bit for bit (a round with an explicit all-awake mask is played the
    /// general way), for every kind of loss and every length of the last chunk; a loss above
    /// the range counts its round on both; advice beyond the limit is refused with the
    /// general path's error and leaves the learner as it was.
    #[test]
    fn ewa_losses_are_those_of_the_general_path() {
        for loss in [
            Loss::Square,
            Loss::Absolute,
            Loss::Pinball { tau: 0.3 },
            Loss::ZeroOne,
        ] {
            for n in [1, 2, 3, 4, 5, 7, 9, 70] {
                let build = || {
                    EwaParams::new(n)
                        .loss(loss)
                        .learning_rate(LearningRate::Fixed(0.5))
                        .loss_bound(1.0)
                        .check()
                        .unwrap()
                        .build()
                };
                let (mut fused, mut general) = (build(), build());
                let mut rng = StreamRng::seed_from(n as u64);
                let everyone = vec![true; n];
                for t in 0..40 {
                    // Some rounds put one expert (the last, in the last chunk) far off.
                    let advice: Vec<f64> = (0..n)
                        .map(|i| {
                            let far = if t % 5 == 3 && i == n - 1 { 3.0 } else { 0.0 };
                            rng.next_f64() + far
                        })
                        .collect();
                    let outcome = if t % 7 == 0 { advice[0] } else { 0.5 };
                    fused.learn_one(AdviceRound::new(&advice, outcome)).unwrap();
                    general
                        .learn_one(AdviceRound {
                            advice: &advice,
                            outcome,
                            awake: Some(&everyone),
                        })
                        .unwrap();
                    let (f, g) = (fused.ledger(), general.ledger());
                    let context = format!("{loss:?}, n = {n}, t = {t}");
                    assert_eq!(
                        bits(f.expert_losses()),
                        bits(g.expert_losses()),
                        "{context}"
                    );
                    assert_eq!(
                        bits(&fused.weights()),
                        bits(&general.weights()),
                        "{context}"
                    );
                    assert_eq!(
                        fused.out_of_range_rounds(),
                        general.out_of_range_rounds(),
                        "{context}"
                    );
                }
                // Eight far rounds (seven with one expert, whose round 28 has the outcome it
                // advised); a zero-one loss never leaves [0, 1].
                if !matches!(loss, Loss::ZeroOne) {
                    assert!(fused.out_of_range_rounds() >= 7, "{loss:?}, n = {n}");
                }
                let before = serde_json::to_string(&fused).unwrap();
                let mut advice = vec![0.5; n];
                advice[n - 1] = 2.0 * MAX_ADVICE;
                let refused = fused.learn_one(AdviceRound::new(&advice, 0.0)).unwrap_err();
                let expected = general
                    .learn_one(AdviceRound {
                        advice: &advice,
                        outcome: 0.0,
                        awake: Some(&everyone),
                    })
                    .unwrap_err();
                assert_eq!(refused.to_string(), expected.to_string());
                assert_eq!(serde_json::to_string(&fused).unwrap(), before);
            }
        }
    }

    /// The fused path takes the losses' range from the pass (Hedge's charges are its losses;
    /// no separate check goes over them): a loss outside [0, B], below or above, counts its
    /// round, the ends of the range do not, and the count is the general path's (a sampling
    /// Hedge plays every round the general way); a loss beyond the limit is refused with the
    /// general path's error and leaves the learner as it was. Short rounds and long ones.
    #[test]
    fn losses_outside_the_range_are_counted_on_every_path() {
        for n in [3, 100] {
            let build = |sample| unit_hedge(n, LearningRate::Fixed(0.5), sample);
            let (mut fused, mut general) = (build(false), build(true));
            let round = |at: usize, value: f64| -> Vec<f64> {
                (0..n)
                    .map(|i| if i == at { value } else { (i % 3) as f64 * 0.5 })
                    .collect()
            };
            let rounds = [
                (round(0, 0.0), 0),
                (round(n - 1, 1.0), 0),
                (round(n - 1, 1.5), 1),
                (round(1, -0.25), 2),
                (round(n / 2, 0.75), 2),
            ];
            for (losses, expected) in &rounds {
                for learner in [&mut fused, &mut general] {
                    learner.learn_one(LossRound::new(losses)).unwrap();
                    assert_eq!(learner.out_of_range_rounds(), *expected, "n = {n}");
                }
            }
            // A refused round counts nothing.
            let bad = round(n - 1, f64::NAN);
            assert!(fused.learn_one(LossRound::new(&bad)).is_err());
            assert_eq!(fused.out_of_range_rounds(), 2);
            let before = serde_json::to_string(&fused).unwrap();
            for huge in [-2.0 * MAX_LOSS, 2.0 * MAX_LOSS] {
                let bad = round(n / 2, huge);
                let refused = fused.learn_one(LossRound::new(&bad)).unwrap_err();
                let expected = general.learn_one(LossRound::new(&bad)).unwrap_err();
                assert_eq!(refused.to_string(), expected.to_string());
                assert_eq!(serde_json::to_string(&fused).unwrap(), before);
            }
        }
    }

    /// Everything a round reports and the learner's state after it, as text that tells every
    /// bit apart (Rust's shortest round-trip form; the snapshot is serialised the same way).
    fn record(step: &ExpertStep, snapshot: Option<String>) -> String {
        format!("{step:?} {}", snapshot.unwrap_or_default())
    }

    /// One stream of `rounds` rounds at N = `n` for the learner `variant`: Hedge (fixed rate,
    /// losses now and then outside [0, 1] and of both zeros, sleeping experts; with a prior
    /// and the doubling trick's restarts), and EWA (square loss with a prior, the absolute
    /// loss's linearised charges at anytime rates with sleeping experts, the pinball loss
    /// with advice beyond the range), with a snapshot restored half-way; the records of every
    /// round and the snapshot at the end.
    fn stream(n: usize, variant: usize, rounds: usize) -> Vec<String> {
        let mut rng = StreamRng::seed_from((n * 10 + variant) as u64);
        let prior: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
        let mut records = Vec::new();
        let snapshot_every = |t: usize| (n <= 8 || t % 16 == 15).then_some(());
        if variant < 2 {
            let params = HedgeParams::new(n).loss_bound(1.0);
            let params = if variant == 0 {
                params.learning_rate(LearningRate::Fixed(0.7))
            } else {
                params.learning_rate(LearningRate::Doubling).prior(prior)
            };
            let mut hedge = params.check().unwrap().build();
            for t in 0..rounds {
                let losses: Vec<f64> = (0..n)
                    .map(|i| match (t + i) % 11 {
                        0 => 0.0,
                        1 => -0.0,
                        2 if t % 3 == 0 => 1.5,
                        _ => rng.next_f64(),
                    })
                    .collect();
                let mask: Vec<bool> = (0..n).map(|i| i % 3 != t % 3).collect();
                let awake = (t % 9 == 4 && n > 1).then_some(mask.as_slice());
                if t == rounds / 2 {
                    hedge = serde_json::from_str(&serde_json::to_string(&hedge).unwrap()).unwrap();
                }
                let step = hedge
                    .learn_one(LossRound {
                        losses: &losses,
                        awake,
                    })
                    .unwrap();
                let snapshot = snapshot_every(t).map(|()| serde_json::to_string(&hedge).unwrap());
                records.push(record(&step, snapshot));
            }
            records.push(serde_json::to_string(&hedge).unwrap());
        } else {
            let (loss, rate, gradient) = match variant {
                2 => (Loss::Square, LearningRate::Fixed(0.3), false),
                3 => (Loss::Absolute, LearningRate::Anytime, true),
                _ => (Loss::Pinball { tau: 0.3 }, LearningRate::Fixed(0.9), false),
            };
            let params = EwaParams::new(n)
                .loss(loss)
                .learning_rate(rate)
                .gradient(gradient)
                .loss_bound(1.0);
            let params = if variant == 2 {
                params.prior(prior)
            } else {
                params
            };
            let mut ewa = params.check().unwrap().build();
            for t in 0..rounds {
                let advice: Vec<f64> = (0..n)
                    .map(|i| match (t + 2 * i) % 13 {
                        0 => -0.0,
                        1 if variant == 4 => 2.5,
                        _ => 2.0 * rng.next_f64() - 0.5,
                    })
                    .collect();
                let outcome = if t % 5 == 0 { 0.0 } else { rng.next_f64() };
                let mask: Vec<bool> = (0..n).map(|i| i % 4 != t % 4).collect();
                let awake = (variant == 3 && t % 7 == 2 && n > 1).then_some(mask.as_slice());
                if t == rounds / 2 {
                    ewa = serde_json::from_str(&serde_json::to_string(&ewa).unwrap()).unwrap();
                }
                let step = ewa
                    .learn_one(AdviceRound {
                        advice: &advice,
                        outcome,
                        awake,
                    })
                    .unwrap();
                let snapshot = snapshot_every(t).map(|()| serde_json::to_string(&ewa).unwrap());
                records.push(record(&step, snapshot));
            }
            records.push(serde_json::to_string(&ewa).unwrap());
        }
        records
    }

    /// Whole streams of Hedge and EWA (priors, sleeping experts, losses out of range, zeros
    /// of both signs, restarts, a snapshot restored half-way) give the same records and the
    /// same snapshots, bit for bit, on every path this CPU offers: portable, AVX2, and
    /// AVX-512 (the fused passes on eight lanes), for every N from 1 to 40 (every length of
    /// the last chunks of four and eight) and longer rounds.
    #[test]
    fn whole_streams_have_the_same_bits_on_every_path() {
        let paths = kernels::Path::available();
        for n in (1..=40).chain([64, 65, 203, 1000]) {
            let rounds = if n >= 200 { 40 } else { 60 };
            for variant in 0..5 {
                let reference = kernels::on_path(paths[0], || stream(n, variant, rounds));
                for &path in &paths[1..] {
                    let other = kernels::on_path(path, || stream(n, variant, rounds));
                    for (t, (a, b)) in reference.iter().zip(&other).enumerate() {
                        assert_eq!(a, b, "n = {n}, variant {variant}, {path:?}, round {t}");
                    }
                }
            }
        }
    }

    /// Everything EWA's loss pass returns and writes, as bits, on every path.
    fn own_losses_on_every_path<const KIND: u8>(advice: &[f64], outcome: f64) -> Vec<Vec<u64>> {
        struct Owned<const KIND: u8>(Vec<f64>, f64);
        impl<const KIND: u8> WideKernel for Owned<KIND> {
            type Output = Vec<u64>;
            fn run<W: Wide>(self, w: W) -> Vec<u64> {
                let mut losses = vec![0.0; self.0.len()];
                let (low, high, largest) = OwnLosses::<KIND> {
                    advice: &self.0,
                    outcome: self.1,
                    tau: 0.3,
                    losses: &mut losses,
                }
                .run(w);
                [low, high, largest]
                    .iter()
                    .chain(&losses)
                    .map(|v| v.to_bits())
                    .collect()
            }
        }
        kernels::run_on_every_path(|| Owned::<KIND>(advice.to_vec(), outcome))
    }

    /// EWA's loss pass gives the same bits on every path (portable, AVX2, AVX-512), for
    /// every loss, every size from 1 to 40 and longer, advice with zeros of both signs, NaN
    /// and extremes in every position; and returns the least and largest advice and the
    /// largest loss.
    #[test]
    fn own_losses_have_the_same_bits_on_every_path() {
        let mut rng = StreamRng::seed_from(3);
        for n in (1..=40).chain([63, 64, 65, 1000, 1003]) {
            for trial in 0..11 {
                // Trials 6 to 8: the least advice, the largest, and the largest (pinball)
                // loss are zeros, of both signs in the lanes; 9 and 10: the least (largest)
                // advice is −0 in the second chunk of four and +0 in the third, so that
                // eight lanes meet the +0 first.
                let advice: Vec<f64> = (0..n)
                    .map(|i| match ((i + trial) % 7, trial) {
                        (_, 9 | 10) if i == 4 || i == 8 => [-0.0, 0.0][i / 8],
                        (_, 9) => 1.0 + rng.next_f64(),
                        (_, 10) => -1.0 - rng.next_f64(),
                        (0, _) => 0.0,
                        (1, _) => -0.0,
                        (2, 3) if i % 5 == 0 => f64::NAN,
                        (3, 4) => 1e6 * (rng.next_f64() - 0.5),
                        (_, 6) => rng.next_f64(),
                        (_, 7) => -rng.next_f64(),
                        (_, 8) => [0.0, -0.0][i % 2],
                        _ => 4.0 * rng.next_f64() - 2.0,
                    })
                    .collect();
                let outcome = match trial {
                    5 | 8 => -0.0,
                    6 => -1.0,
                    7 => 1.0,
                    _ => 0.25,
                };
                for paths in [
                    own_losses_on_every_path::<SQUARE>(&advice, outcome),
                    own_losses_on_every_path::<ABSOLUTE>(&advice, outcome),
                    own_losses_on_every_path::<PINBALL>(&advice, outcome),
                    own_losses_on_every_path::<ZERO_ONE>(&advice, outcome),
                ] {
                    assert_eq!(paths.len(), kernels::Path::available().len());
                    for (path, bits) in kernels::Path::available().iter().zip(&paths) {
                        assert_eq!(bits, &paths[0], "n = {n}, trial {trial}, {path:?}");
                    }
                    let finite = advice.iter().filter(|a| !a.is_nan());
                    let low = finite.clone().copied().fold(f64::INFINITY, f64::min);
                    let high = finite.copied().fold(f64::NEG_INFINITY, f64::max);
                    assert_eq!(f64::from_bits(paths[0][0]), low);
                    assert_eq!(f64::from_bits(paths[0][1]), high);
                }
            }
        }
    }
}
