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
use super::core::{Core, LossRange, core_learner};
use super::loss::{ABSOLUTE, Loss, PINBALL, SQUARE, ZERO_ONE, value_lanes};
use super::params::limits::{MAX_ADVICE, MAX_LOSS};
use super::params::{EwaConfig, EwaParams, HedgeConfig, HedgeParams};
use super::round::{AdviceRound, ExpertStep, LossRound};
use super::schedule::Tuning;
use super::weights::{Charging, OwnLoss};
use crate::error::{Error, Result};
use crate::kernels::Lanes;
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
                MAX_LOSS,
                |mixture| mixture,
            ) {
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

    /// A round where every expert is awake and is charged its own loss ℓ(ỹ_i, y): one pass
    /// over the experts ([`Core::play`]), which computes the losses ([`AdviceLoss`]) and
    /// checks the advice (finite, within ±[`MAX_ADVICE`]) as it goes. Returns
    /// (η_t, ŷ_t, ℓ(ŷ_t, y_t)), or `None` if the round must be played the general way
    /// (which refuses bad advice with its message).
    fn learn_fused(&mut self, round: AdviceRound<'_>, next_eta: f64) -> Option<(f64, f64, f64)> {
        let (loss, outcome) = (self.params.loss, round.outcome);
        let (kind, tau) = loss.kind();
        let (advice, core) = (round.advice, &mut self.core);
        macro_rules! play {
            ($kind:ident) => {
                core.play(
                    advice,
                    advice,
                    AdviceLoss::<$kind> { loss, tau, outcome },
                    next_eta,
                    MAX_ADVICE,
                    |prediction| loss.value(prediction, outcome),
                )
            };
        }
        match kind {
            SQUARE => play!(SQUARE),
            ABSOLUTE => play!(ABSOLUTE),
            PINBALL => play!(PINBALL),
            _ => play!(ZERO_ONE),
        }
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
                // The advice is checked by the fused pass.
                if round
                    .check_sizes_and_outcome(self.core.n_experts())
                    .is_err()
                {
                    round.check(self.core.n_experts())?;
                }
                self.learn_fused(round, next_eta)
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

/// EWA's own losses ℓ(ỹ_i, y) (ℓ of kind `KIND`, level τ for the pinball loss), computed in
/// the fused pass from the advice ỹ_i, each charged and recorded: the same operations on
/// every path (four lanes or eight, [`value_lanes`]) as [`Loss::value`], so the same bits as
/// the general path's.
#[derive(Clone, Copy, Debug)]
struct AdviceLoss<const KIND: u8> {
    loss: Loss,
    tau: f64,
    outcome: f64,
}

impl<const KIND: u8> Charging for AdviceLoss<KIND> {
    const TWIN: bool = true;
    #[inline(always)]
    fn split<L: Lanes>(self, l: L, advice: L::V, _aux: L::V) -> (L::V, L::V) {
        let own = value_lanes::<KIND, L>(l, self.tau, advice, l.splat(self.outcome));
        (own, own)
    }
    /// The losses are ≥ 0 (a zero may be −0, which is not below 0), and ℓ(·, y) is
    /// nonincreasing, then nondecreasing, in floating point too (see [`Charging::outside`]):
    /// the largest loss is that of the least or of the largest advice.
    #[inline]
    fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool {
        debug_assert!(lower <= 0.0, "EWA's losses are checked against [0, B]");
        let largest = self
            .loss
            .value(lowest, self.outcome)
            .max(self.loss.value(highest, self.outcome));
        largest > upper
    }
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
    #[inline(always)]
    fn split<L: Lanes>(self, q: L, advice: L::V, _aux: L::V) -> (L::V, L::V) {
        let own = value_lanes::<KIND, L>(q, self.tau, advice, q.splat(self.outcome));
        (q.mul(q.splat(self.slope), advice), own)
    }
    /// The charges slope·ỹ_i are correctly rounded products by one factor: monotone in ỹ_i
    /// (reversed for a negative slope), so their extremes are those of the extreme advice.
    #[inline]
    fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool {
        let (a, b) = (self.slope * lowest, self.slope * highest);
        a.min(b) < lower || a.max(b) > upper
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experts::LearningRate;
    use crate::experts::weights::RoundPass;
    use crate::kernels::{self, Wide, WideKernel};

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

    /// A round whose unnormalised mixture overflows to +∞ on one expert and −∞ on another
    /// sums to NaN, not ±∞; the mixture Σ_i p_i ℓ_i, a convex combination of finite losses, is
    /// finite all the same and is what the round reports (found by the fuzzer: losses far
    /// outside [0, B], which the learner takes and counts, withdrawing its bound). The rounds
    /// are played the general way (the doubling trick's first epochs).
    #[test]
    fn a_mixture_overflowing_to_nan_is_rescued() {
        let mut hedge = unit_hedge(3, LearningRate::Doubling, false);
        let rounds = [
            [0.0, 0.0, 0.0],
            [-300.0, 353.63, -251.17],
            [
                -3.533694129556769e72,
                6.675221575521604e-308,
                3.8369386969062456e117,
            ],
        ];
        for losses in &rounds[..2] {
            hedge.learn_one(LossRound::new(losses)).unwrap();
        }
        // The third round's mixture, from the weights it plays.
        let expected: f64 = hedge
            .weights()
            .iter()
            .zip(&rounds[2])
            .map(|(p, l)| p * l)
            .sum();
        let step = &hedge.learn_one(LossRound::new(&rounds[2])).unwrap();
        assert!(step.loss.is_finite() && step.regret.is_finite(), "{step:?}");
        assert!(
            (step.loss - expected).abs() <= 1e-12 * expected.abs(),
            "{} vs {expected}",
            step.loss
        );
        assert!(hedge.ledger().learner_loss().is_finite());
        assert_eq!(hedge.out_of_range_rounds(), 2);
        assert!(hedge.regret_bound().value().is_none());
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

    /// The losses EWA computes inside its fused pass are the general path's bit for bit (a
    /// round with an explicit all-awake mask is played the general way), on every path
    /// (portable, AVX2, AVX-512), for every loss, every N from 1 to 40 and longer, with and
    /// without a prior: the experts' cumulative losses and the weights; a round whose largest
    /// loss is just above the range counts on both, one whose largest loss is the bound
    /// exactly does not, whether the far advice is the least or the largest (the pass finds
    /// the largest loss from the advice's extremes); advice beyond the limit, either side,
    /// or not finite, is refused with the general path's error and leaves the learner as it
    /// was.
    #[test]
    fn ewa_losses_are_those_of_the_general_path() {
        let losses = [
            Loss::Square,
            Loss::Absolute,
            Loss::Pinball { tau: 0.3 },
            Loss::ZeroOne,
        ];
        for path in kernels::Path::available() {
            for n in (1..=40).chain([64, 203, 1000]) {
                for (loss, prior) in losses.iter().flat_map(|&l| [(l, false), (l, true)]) {
                    kernels::on_path(path, || fused_and_general_agree(loss, n, prior));
                }
            }
        }
    }

    /// One stream of [`ewa_losses_are_those_of_the_general_path`].
    fn fused_and_general_agree(loss: Loss, n: usize, prior: bool) {
        let build = || {
            let params = EwaParams::new(n)
                .loss(loss)
                .learning_rate(LearningRate::Fixed(0.5))
                .loss_bound(1.0);
            let params = if prior {
                params.prior((0..n).map(|i| 1.0 + (i % 7) as f64).collect())
            } else {
                params
            };
            params.check().unwrap().build()
        };
        let (mut fused, mut general) = (build(), build());
        let mut rng = StreamRng::seed_from(n as u64);
        let everyone = vec![true; n];
        let context = |t: usize| format!("{loss:?}, n = {n}, prior {prior}, t = {t}");
        // Rounds with a loss above the bound, by the definition, element by element.
        let mut outside = 0;
        for t in 0..48 {
            // Rounds 3, 11, 19... put one expert (first, middle or last) far off, below or
            // above; rounds 5, 13... one at exactly 1 from the outcome (a square or absolute
            // loss of exactly the bound 1), or just beyond it.
            let far_at = [0, n / 2, n - 1][t % 3];
            let outcome = if t % 7 == 0 { 0.0 } else { 0.5 };
            let advice: Vec<f64> = (0..n)
                .map(|i| match (t % 8, i == far_at) {
                    (3, true) => outcome + [3.0, -3.0][t / 8 % 2],
                    (5, true) if t / 8 % 2 == 0 => outcome + [1.0, -1.0][t / 16 % 2],
                    (5, true) => 1.5f64.next_up(),
                    (_, _) if t % 7 == 0 && i % 3 == 0 => -0.0,
                    _ => rng.next_f64(),
                })
                .collect();
            outside += u64::from(advice.iter().any(|&a| loss.value(a, outcome) > 1.0));
            // (The predictions may differ in their last bits: the general path mixes the
            // awake experts one after the other, the fused pass on four lanes.)
            fused.learn_one(AdviceRound::new(&advice, outcome)).unwrap();
            general
                .learn_one(AdviceRound {
                    advice: &advice,
                    outcome,
                    awake: Some(&everyone),
                })
                .unwrap();
            let (f, g) = (fused.ledger(), general.ledger());
            assert_eq!(
                bits(f.expert_losses()),
                bits(g.expert_losses()),
                "{}",
                context(t)
            );
            assert_eq!(
                bits(&fused.weights()),
                bits(&general.weights()),
                "{}",
                context(t)
            );
            assert_eq!(
                fused.out_of_range_rounds(),
                general.out_of_range_rounds(),
                "{}",
                context(t)
            );
        }
        // Far below: the least advice gives the largest loss, far above: the largest
        // (the pinball's τ = 0.3 leaves 0.9 below, 2.1 above); at the bound exactly, none.
        assert_eq!(fused.out_of_range_rounds(), outside, "{loss:?}, n = {n}");
        let expected = match loss {
            Loss::ZeroOne => 0,
            Loss::Pinball { .. } => 3,
            _ => 9,
        };
        assert_eq!(outside, expected, "{loss:?}, n = {n}");
        let before = serde_json::to_string(&fused).unwrap();
        for bad in [2.0 * MAX_ADVICE, -2.0 * MAX_ADVICE, f64::NAN, f64::INFINITY] {
            for at in [0, n / 2, n - 1] {
                let mut advice = vec![0.5; n];
                advice[at] = bad;
                let refused = fused.learn_one(AdviceRound::new(&advice, 0.0)).unwrap_err();
                // A non-finite value is named by its column (with a mask, by its expert).
                let expected = if bad.is_finite() {
                    general
                        .learn_one(AdviceRound {
                            advice: &advice,
                            outcome: 0.0,
                            awake: Some(&everyone),
                        })
                        .unwrap_err()
                } else {
                    Error::NonFinite {
                        row: None,
                        column: at,
                        value: bad,
                    }
                };
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
    /// and the doubling trick's restarts), and EWA with every loss (square with a prior; the
    /// absolute loss's linearised charges at anytime rates with sleeping experts; pinball
    /// with advice beyond the range; zero-one with a prior, sleeping experts and advice that
    /// is sometimes the outcome; absolute with sleeping experts and advice beyond the range;
    /// the square loss's linearised charges with a prior; the pinball loss's, with the
    /// doubling trick's restarts and sleeping experts), with a snapshot restored half-way;
    /// the records of every round and the snapshot at the end.
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
                4 => (Loss::Pinball { tau: 0.3 }, LearningRate::Fixed(0.9), false),
                5 => (Loss::ZeroOne, LearningRate::Fixed(0.6), false),
                6 => (Loss::Absolute, LearningRate::Fixed(0.4), false),
                7 => (Loss::Square, LearningRate::Fixed(0.2), true),
                _ => (Loss::Pinball { tau: 0.8 }, LearningRate::Doubling, true),
            };
            let params = EwaParams::new(n)
                .loss(loss)
                .learning_rate(rate)
                .gradient(gradient)
                .loss_bound(1.0);
            let params = if matches!(variant, 2 | 5 | 7) {
                params.prior(prior)
            } else {
                params
            };
            let mut ewa = params.check().unwrap().build();
            // Some advice of the zero-one variant is the outcome (a loss of 0).
            let outcome_of = |t: usize| {
                if t % 5 == 0 {
                    0.0
                } else {
                    ((t * 37) % 101) as f64 / 101.0
                }
            };
            for t in 0..rounds {
                let advice: Vec<f64> = (0..n)
                    .map(|i| match (t + 2 * i) % 13 {
                        0 => -0.0,
                        1 if matches!(variant, 4 | 6 | 8) => 2.5,
                        2 if variant == 5 => outcome_of(t),
                        _ => 2.0 * rng.next_f64() - 0.5,
                    })
                    .collect();
                let outcome = outcome_of(t);
                let mask: Vec<bool> = (0..n).map(|i| i % 4 != t % 4).collect();
                let sleeps = matches!(variant, 3 | 5 | 6 | 8) && t % 7 == 2 && n > 1;
                let awake = sleeps.then_some(mask.as_slice());
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
            for variant in 0..9 {
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

    /// A fused pass ([`RoundPass`]) with owned buffers, so that each path starts from the
    /// same state: charged losses and ledger of −0 (C' = −0 + charge is the charge, bit for
    /// bit), given weights and priors.
    struct PassOwned<F> {
        advice: Vec<f64>,
        weights: Vec<f64>,
        log_prior: Option<Vec<f64>>,
        charging: F,
        range: Option<(f64, f64)>,
        shift: f64,
    }

    impl<F: Charging> WideKernel for PassOwned<F> {
        type Output = Vec<u64>;
        fn run<W: Wide>(mut self, w: W) -> Vec<u64> {
            let n = self.advice.len();
            let (zeros, mut charged_next, mut totals_next) =
                (vec![-0.0; n], vec![0.0; n], vec![0.0; n]);
            let totals = (&mut RoundPass {
                values: &self.advice,
                aux: &self.advice,
                charging: self.charging,
                weights: &mut self.weights,
                charged: &zeros,
                charged_next: &mut charged_next,
                log_prior: self.log_prior.as_deref(),
                totals: &zeros,
                totals_next: &mut totals_next,
                eta: 0.7,
                shift: self.shift,
                range: self.range,
                track_range: true,
                twin: true,
            })
                .run(w);
            let mut bits = vec![
                u64::from(totals.finite),
                u64::from(totals.outside),
                totals.lowest_value.to_bits(),
                totals.highest_value.to_bits(),
                totals.mixture.to_bits(),
                totals.least_charged.to_bits(),
                totals.weight_total.to_bits(),
                totals.least_total.to_bits(),
                totals.least_total_at as u64,
            ];
            for written in [&charged_next, &self.weights, &totals_next] {
                bits.extend(written.iter().map(|v| v.to_bits()));
            }
            // A pass over a NaN is refused and its outputs are never read: their NaNs'
            // signs and payloads are left out.
            if !totals.finite {
                let nan = f64::NAN.to_bits();
                for bit in bits.iter_mut().skip(4) {
                    *bit = if f64::from_bits(*bit).is_nan() {
                        nan
                    } else {
                        *bit
                    };
                }
            }
            bits
        }
    }

    /// The pass with `charging` over `advice` on every path this CPU offers, the weights
    /// shifted by `shift` (at most the least charge, so that no exponent exceeds the
    /// ceiling: the weights of a round where one does are recomputed, and are not the same
    /// bits on every path).
    fn pass_on_every_path<F: Charging>(
        advice: &[f64],
        charging: F,
        prior: bool,
        range: Option<(f64, f64)>,
        shift: f64,
    ) -> Vec<Vec<u64>> {
        let n = advice.len();
        let weights: Vec<f64> = (0..n).map(|i| 0.25 + (i % 9) as f64 * 0.125).collect();
        let log_prior: Vec<f64> = (0..n).map(|i| -((i % 5) as f64) * 0.75).collect();
        kernels::run_on_every_path(|| PassOwned {
            advice: advice.to_vec(),
            weights: weights.clone(),
            log_prior: prior.then(|| log_prior.clone()),
            charging,
            range,
            shift,
        })
    }

    /// Advice that reaches every branch: zeros of both signs, NaN, extremes; `trial` picks
    /// the kind (see [`advice_losses_have_the_same_bits_on_every_path`]).
    fn trial_advice(n: usize, trial: usize, rng: &mut StreamRng) -> (Vec<f64>, f64) {
        // Trials 6 to 8: the least advice, the largest, and the largest (pinball) loss are
        // zeros, of both signs in the lanes; 9 and 10: the least (largest) advice is −0 in
        // the second chunk of four and +0 in the third, so that eight lanes meet the +0
        // first.
        let advice = (0..n)
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
        (advice, outcome)
    }

    /// Checks the pass of [`AdviceLoss`] of kind `KIND` over `advice` on every path: the
    /// same bits everywhere; each loss written (C' = −0 + ℓ) is [`Loss::value`]'s bits; the
    /// least and largest advice (NaN skipped, a zero as +0); and whether a loss lies above
    /// `upper` for bounds at the largest loss, just below it and in between, as the losses
    /// themselves say.
    fn check_advice_losses<const KIND: u8>(loss: Loss, advice: &[f64], outcome: f64) {
        let n = advice.len();
        let charging = AdviceLoss::<KIND> {
            loss,
            tau: loss.kind().1,
            outcome,
        };
        let values: Vec<f64> = advice.iter().map(|&a| loss.value(a, outcome)).collect();
        let largest = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let finite = advice.iter().all(|a| a.is_finite());
        for prior in [false, true] {
            for upper in [largest, largest.next_down(), 0.5 * largest, 1.0] {
                let context = format!("{loss:?}, n = {n}, prior {prior}, upper {upper}");
                let paths = pass_on_every_path(advice, charging, prior, Some((0.0, upper)), -40.0);
                assert_eq!(paths.len(), kernels::Path::available().len());
                for (path, bits) in kernels::Path::available().iter().zip(&paths) {
                    assert_eq!(bits, &paths[0], "{context}, {path:?}");
                }
                let bits = &paths[0];
                for (i, value) in values.iter().enumerate() {
                    if !advice[i].is_nan() {
                        assert_eq!(bits[9 + i], value.to_bits(), "{context}, expert {i}");
                    }
                }
                let known = advice.iter().filter(|a| !a.is_nan());
                let low = known.clone().fold(f64::INFINITY, |l, &a| l.min(a)) + 0.0;
                let high = known.fold(f64::NEG_INFINITY, |h, &a| h.max(a)) + 0.0;
                assert_eq!(bits[2], low.to_bits(), "{context}");
                assert_eq!(bits[3], high.to_bits(), "{context}");
                assert_eq!(bits[0], u64::from(finite), "{context}");
                if finite {
                    let outside = values.iter().any(|&v| v > upper);
                    assert_eq!(bits[1], u64::from(outside), "{context}");
                }
            }
        }
    }

    /// EWA's losses, computed in the fused pass from the advice, are the same bits on every
    /// path (portable, AVX2, AVX-512), for every loss, every size from 1 to 40 and longer,
    /// advice with zeros of both signs, NaN and extremes in every position, with and without
    /// a prior; they are [`Loss::value`]'s bits; and the pass tells a round whose largest
    /// loss is above the bound, from the advice's extremes, exactly as the losses do.
    #[test]
    fn advice_losses_have_the_same_bits_on_every_path() {
        let mut rng = StreamRng::seed_from(3);
        for n in (1..=40).chain([63, 64, 65, 1000, 1003]) {
            for trial in 0..11 {
                let (advice, outcome) = trial_advice(n, trial, &mut rng);
                check_advice_losses::<SQUARE>(Loss::Square, &advice, outcome);
                check_advice_losses::<ABSOLUTE>(Loss::Absolute, &advice, outcome);
                for tau in [0.3, 0.9] {
                    check_advice_losses::<PINBALL>(Loss::Pinball { tau }, &advice, outcome);
                }
                check_advice_losses::<ZERO_ONE>(Loss::ZeroOne, &advice, outcome);
            }
        }
    }

    /// EWA's linearised charges slope·ỹ_i (the gradient option's second pass) are checked
    /// against the range from the advice's extremes: for slopes of both signs and zeros of
    /// both signs, bounds at the least and the largest charge exactly and one step inside,
    /// the pass tells a charge outside exactly when one is, on every path.
    #[test]
    fn linearised_charges_are_checked_from_the_advice_range() {
        let mut rng = StreamRng::seed_from(5);
        for n in (1..=40).chain([64, 65, 1000]) {
            for trial in [0, 1, 2, 4, 5, 6, 7, 8, 9, 10] {
                let (advice, outcome) = trial_advice(n, trial, &mut rng);
                for slope in [0.7, -1.3, 0.0, -0.0, 1e-300] {
                    let charging = Linearised::<SQUARE> {
                        tau: 0.0,
                        outcome,
                        slope,
                    };
                    let charges: Vec<f64> = advice.iter().map(|a| slope * a).collect();
                    let low = charges.iter().copied().fold(f64::INFINITY, f64::min);
                    let high = charges.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    for (lower, upper) in [
                        (low, high),
                        (low.next_up(), high),
                        (low, high.next_down()),
                        (low - 1.0, high + 1.0),
                    ] {
                        let paths = pass_on_every_path(
                            &advice,
                            charging,
                            false,
                            Some((lower, upper)),
                            low - 1.0,
                        );
                        let context = format!("n = {n}, trial {trial}, slope {slope}");
                        for bits in &paths {
                            assert_eq!(bits, &paths[0], "{context}");
                        }
                        let outside = charges.iter().any(|&c| c < lower || c > upper);
                        assert_eq!(
                            paths[0][1],
                            u64::from(outside),
                            "{context}, [{lower}, {upper}]"
                        );
                        for (i, charge) in charges.iter().enumerate() {
                            assert_eq!(paths[0][9 + i], charge.to_bits(), "{context}");
                        }
                    }
                }
            }
        }
    }
}
