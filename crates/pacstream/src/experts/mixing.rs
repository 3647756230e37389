//! What the aggregation rules of forecasters (fixed share, ML-Poly) share: one round of
//! advice played against a weight vector over the awake experts, with the experts' charges
//! (their own losses, or the linearised losses of the gradient trick) and the specialists'
//! rule for sleeping experts.
//!
//! An asleep expert is charged the learner's own charge of the round (ℓ(ŷ_t, y_t), or with
//! the gradient trick ℓ'(ŷ_t, y_t)·ŷ_t), so that its regret relative to the learner does not
//! move (Freund, Schapire, Singer & Warmuth 1997); its advice is never read.

use super::loss::Loss;
use super::round::AdviceRound;

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
