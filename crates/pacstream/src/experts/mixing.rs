//! What the aggregation rules of forecasters (fixed share, ML-Poly, ML-Prod, ML-EWA, BOA,
//! FTRL, OGD, online ridge) share: one round of
//! advice played against a weight vector over the awake experts, with the experts' charges
//! (their own losses, or the linearised losses of the gradient trick) and the specialists'
//! rule for sleeping experts.
//!
//! An asleep expert is charged the learner's own charge of the round (ℓ(ŷ_t, y_t), or with
//! the gradient trick ℓ'(ŷ_t, y_t)·ŷ_t), so that its regret relative to the learner does not
//! move (Freund, Schapire, Singer & Warmuth 1997); its advice is never read.

use super::bounds::{Bounded, Guarantee, RegretBound};
use super::loss::Loss;
use super::oracle::ExpertLedger;
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};

/// One round played: the prediction, the losses the ledger records and the charges the rule
/// learns from. Computed into fresh buffers, so that a rule commits it only once nothing
/// can fail any more.
#[derive(Clone, Debug)]
pub(crate) struct Played {
    /// ŷ_t = Σ_awake p_i ỹ_i.
    pub prediction: f64,
    /// ℓ(ŷ_t, y_t).
    pub learner_loss: f64,
    /// The learner's charge ĉ_t: ℓ(ŷ_t, y_t), or ℓ'(ŷ_t, y_t)·ŷ_t with the gradient trick.
    pub learner_charge: f64,
    /// c_{t,i}: the expert's own or linearised loss when awake, ĉ_t when asleep.
    pub charges: Vec<f64>,
    /// ℓ(ỹ_i, y_t) when awake, 0 when asleep (what the ledger records).
    pub own_losses: Vec<f64>,
    /// max_i c_{t,i} − min_i c_{t,i}: the range Hoeffding's lemma needs.
    pub charge_range: f64,
}

/// Plays `round` (already checked) with the normalised weights `weights` of the awake
/// experts (0 for the asleep ones).
pub(crate) fn play(weights: &[f64], round: &AdviceRound<'_>, loss: Loss, gradient: bool) -> Played {
    let is_awake = |i: usize| round.awake.is_none_or(|awake| awake[i]);
    let prediction: f64 = (0..weights.len())
        .filter(|&i| is_awake(i))
        .map(|i| weights[i] * round.advice[i])
        .sum();
    let outcome = round.outcome;
    let learner_loss = loss.value(prediction, outcome);
    let slope = loss.gradient(prediction, outcome);
    let learner_charge = if gradient {
        slope * prediction
    } else {
        learner_loss
    };
    let mut charges = vec![learner_charge; weights.len()];
    let mut own_losses = vec![0.0; weights.len()];
    let (mut least, mut most) = (learner_charge, learner_charge);
    for i in (0..weights.len()).filter(|&i| is_awake(i)) {
        let advice = round.advice[i];
        own_losses[i] = loss.value(advice, outcome);
        charges[i] = if gradient {
            slope * advice
        } else {
            own_losses[i]
        };
        least = least.min(charges[i]);
        most = most.max(charges[i]);
    }
    Played {
        prediction,
        learner_loss,
        learner_charge,
        charges,
        own_losses,
        charge_range: most - least,
    }
}

/// Normalises `weights` over the awake experts (0 for the asleep ones); if they sum to 0,
/// the uniform weights over the awake experts.
pub(crate) fn normalise_awake(weights: &mut [f64], awake: Option<&[bool]>) {
    let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
    let mut total = 0.0;
    for (i, w) in weights.iter_mut().enumerate() {
        if is_awake(i) {
            total += *w;
        } else {
            *w = 0.0;
        }
    }
    if total > 0.0 && total.is_finite() {
        weights.iter_mut().for_each(|w| *w /= total);
    } else {
        let n_awake = (0..weights.len()).filter(|&i| is_awake(i)).count();
        for (i, w) in weights.iter_mut().enumerate() {
            *w = if is_awake(i) {
                1.0 / n_awake as f64
            } else {
                0.0
            };
        }
    }
}

/// r_{t,i} = ĉ_t − c_{t,i}: the instantaneous regret against each expert (exactly 0 for an
/// asleep expert, whose charge is the learner's).
pub(crate) fn instant_regrets(played: &Played) -> Vec<f64> {
    played
        .charges
        .iter()
        .map(|&c| played.learner_charge - c)
        .collect()
}

/// The normalised weights p_i ∝ exp(log_weights_i) over the awake experts (0 for the asleep
/// ones), by log-sum-exp: a weight whose linear value would underflow still counts.
pub(crate) fn softmax_awake(log_weights: &[f64], awake: Option<&[bool]>) -> Vec<f64> {
    let is_awake = |i: usize| awake.is_none_or(|awake| awake[i]);
    let top = (0..log_weights.len())
        .filter(|&i| is_awake(i))
        .map(|i| log_weights[i])
        .fold(f64::NEG_INFINITY, f64::max);
    let mut weights: Vec<f64> = if top.is_finite() {
        log_weights.iter().map(|&l| (l - top).exp()).collect()
    } else {
        vec![0.0; log_weights.len()]
    };
    normalise_awake(&mut weights, awake);
    weights
}

/// Checks `round`, takes the rule's weights for its awake experts, plays it and refuses it
/// if its charges are not finite: the start of every forecaster's round, before anything
/// is committed.
pub(crate) fn play_round(
    n_experts: usize,
    round: &AdviceRound<'_>,
    loss: Loss,
    gradient: bool,
    weights: impl FnOnce(Option<&[bool]>) -> Vec<f64>,
) -> Result<Played> {
    round.check(n_experts)?;
    let weights = weights(round.awake);
    let played = play(&weights, round, loss, gradient);
    check_played(&played)?;
    Ok(played)
}

/// A round whose charges are not finite (advice and outcomes at the limits, squared) is
/// refused before anything changes.
pub(crate) fn check_played(played: &Played) -> Result<()> {
    if played.charges.iter().all(|c| c.is_finite())
        && played.learner_loss.is_finite()
        && played.charge_range.is_finite()
    {
        Ok(())
    } else {
        Err(Error::InconsistentInput(
            "the losses of this round are too large to be represented".into(),
        ))
    }
}

impl Played {
    /// Records the committed round in `ledger` and says what it was: the end of every
    /// forecaster's round.
    pub(crate) fn record(
        &self,
        ledger: &mut ExpertLedger,
        awake: Option<&[bool]>,
        learning_rate: Option<f64>,
    ) -> ExpertStep {
        record_step(
            ledger,
            self.prediction,
            self.learner_loss,
            &self.own_losses,
            awake,
            learning_rate,
        )
    }
}

/// Records a round's losses in `ledger` and the step that reports it.
pub(crate) fn record_step(
    ledger: &mut ExpertLedger,
    prediction: f64,
    learner_loss: f64,
    own_losses: &[f64],
    awake: Option<&[bool]>,
    learning_rate: Option<f64>,
) -> ExpertStep {
    ledger.record(learner_loss, own_losses, awake);
    let (best_expert, regret) = ledger.best_expert();
    ExpertStep {
        round: ledger.rounds(),
        prediction: Some(prediction),
        loss: learner_loss,
        realised_loss: None,
        chosen: None,
        learning_rate,
        best_expert,
        regret,
    }
}

/// The bound `value` on the regret against `expert` by `theorem`; none, with `too_large` as
/// the reason, if it is not finite.
pub(crate) fn regret_guarantee(
    value: f64,
    expert: usize,
    theorem: &'static str,
    too_large: &'static str,
) -> Guarantee {
    if !value.is_finite() {
        return Guarantee::none(Bounded::Regret, too_large);
    }
    Guarantee::Bound(RegretBound {
        value,
        expert,
        bounded: Bounded::Regret,
        theorem,
    })
}

/// `values` has `n` entries, all finite (a snapshot's vectors).
pub(crate) fn finite_of_len(values: &[f64], n: usize) -> bool {
    values.len() == n && values.iter().all(|v| v.is_finite())
}

/// The builder setters the forecasters' settings share (`loss`, `gradient`, `loss_bound`,
/// each if the settings have that field) and `check`, which gives the rule's config. With
/// `checked`, also their `CheckParams`: the common checks (N, the loss, and the loss range
/// if the settings have one), then each `with check(field)`.
macro_rules! forecaster_setters {
    ($params:ty => $config:ty { $($field:ident),* } checked $(with $check:ident($arg:ident))*) => {
        forecaster_setters!($params => $config { $($field),* });

        impl CheckParams for $params {
            fn check_params(self) -> Result<Checked<Self>> {
                check_common(
                    self.n_experts,
                    self.loss,
                    forecaster_setters!(@loss_bound self $($field)*),
                )?;
                $($check(self.$arg)?;)*
                Ok(Checked::validated(self))
            }
        }
    };
    (@loss_bound $self:ident loss_bound $($rest:ident)*) => {
        $self.loss_bound
    };
    (@loss_bound $self:ident $first:ident $($rest:ident)*) => {
        forecaster_setters!(@loss_bound $self $($rest)*)
    };
    (@loss_bound $self:ident) => {
        None
    };
    ($params:ty => $config:ty { $($field:ident),* }) => {
        impl $params {
            $(forecaster_setters!(@setter $field);)*

            /// Checks the settings.
            pub fn check(self) -> Result<$config> {
                self.check_params()
            }
        }
    };
    (@setter loss) => {
        /// Sets the loss.
        pub fn loss(mut self, loss: Loss) -> Self {
            self.loss = loss;
            self
        }
    };
    (@setter gradient) => {
        /// Charges the linearised losses.
        pub fn gradient(mut self, gradient: bool) -> Self {
            self.gradient = gradient;
            self
        }
    };
    (@setter loss_bound) => {
        /// Sets the range B of a round's charges.
        pub fn loss_bound(mut self, loss_bound: f64) -> Self {
            self.loss_bound = Some(loss_bound);
            self
        }
    };
}
pub(crate) use forecaster_setters;

/// The settings of a forecaster that runs with the range B of a round's charges or without
/// it (BOA, ML-Prod): N, the loss, the gradient trick and B, with `new` (N experts, the
/// square loss, no gradient trick, no range: opera's form), the setters and the checks of
/// `forecaster_setters!`. The attributes after the config's name are B's serde attributes
/// (a rule's snapshots keep the form they were first written in).
macro_rules! ranged_forecaster_params {
    ($(#[$meta:meta])* $params:ident => $config:ident, $(#[$bound_meta:meta])*) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub struct $params {
            /// N.
            pub n_experts: usize,
            /// The loss ℓ (convex).
            pub loss: Loss,
            /// Charge the linearised losses (the gradient trick).
            pub gradient: bool,
            /// The range B of a round's charges: the paper's rates and its bound; without it,
            /// opera's rates and no bound.
            $(#[$bound_meta])*
            pub loss_bound: Option<f64>,
        }

        impl $params {
            /// N experts, the square loss, no gradient trick, no loss range (opera's form).
            pub fn new(n_experts: usize) -> Self {
                Self {
                    n_experts,
                    loss: Loss::Square,
                    gradient: false,
                    loss_bound: None,
                }
            }
        }

        forecaster_setters!($params => $config { loss, gradient, loss_bound } checked);
    };
}
pub(crate) use ranged_forecaster_params;

/// What every forecaster exposes the same way: its settings, its ledger, the bound against
/// the best expert so far (from its `regret_bound_against`), and the online protocol over
/// its inherent `learn_round`.
macro_rules! forecaster_learner {
    (@play $learner:ty) => {
        impl $learner {
            /// Checks the round and plays it with the awake experts' weights.
            fn play_awake(&self, round: &AdviceRound<'_>) -> Result<super::mixing::Played> {
                super::mixing::play_round(
                    self.params.n_experts,
                    round,
                    self.params.loss,
                    self.linearises(),
                    |awake| self.awake_weights(awake),
                )
            }
        }
    };
    ($learner:ty, $params:ty) => {
        impl $learner {
            /// The settings.
            pub fn params(&self) -> &$params {
                &self.params
            }

            /// Every expert's cumulative loss and the learner's.
            pub fn ledger(&self) -> &ExpertLedger {
                &self.ledger
            }

            /// The bound (or why there is none) on the regret against the best expert in
            /// hindsight so far; see `regret_bound_against`.
            pub fn regret_bound(&self) -> Guarantee {
                self.regret_bound_against(self.ledger.best_expert().0)
            }
        }

        impl OnlineLearner for $learner {
            type Input<'a> = AdviceRound<'a>;
            type Step = ExpertStep;

            fn learn_one(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
                self.learn_round(round)
            }

            fn n_rounds(&self) -> u64 {
                self.ledger.rounds()
            }
        }
    };
    // A forecaster that plays the awake experts' share of its own weights
    // (`awake_weights`), on the losses or, with `gradient`, their linearisation.
    ($learner:ty, $params:ty, plays_awake_weights) => {
        forecaster_learner!($learner, $params);
        forecaster_learner!(@play $learner);

        impl $learner {
            /// Whether the experts are charged the linearised losses.
            fn linearises(&self) -> bool {
                self.params.gradient
            }
        }
    };
    // A forecaster on the simplex that plays its weights renormalised over the awake
    // experts, always on the linearised losses.
    ($learner:ty, $params:ty, plays_linearised_weights) => {
        forecaster_learner!($learner, $params);
        forecaster_learner!(@play $learner);

        impl $learner {
            /// Always the linearised losses.
            fn linearises(&self) -> bool {
                true
            }

            /// The weights renormalised over the awake experts.
            fn awake_weights(&self, awake: Option<&[bool]>) -> Vec<f64> {
                let mut weights = self.weights();
                super::mixing::normalise_awake(&mut weights, awake);
                weights
            }
        }
    };
}
pub(crate) use forecaster_learner;
