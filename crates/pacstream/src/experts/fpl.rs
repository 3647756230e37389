//! Follow the perturbed leader with exponential perturbations, and the probability that each
//! expert wins the perturbed argmax.
//!
//! **FPL.** At round t draw z_i ~ Exp(1) afresh for every expert and choose
//! argmin_i (L_{t−1,i} − z_i/η) = argmax_i (−η L_{t−1,i} + z_i). For losses in [0, 1] and any
//! η > 0, E L_T ≤ (η L*_T + ln N) / (1 − e^{−η}) — Hedge's bound. With sleeping experts only
//! awake experts compete, and an asleep expert is charged the learner's expected loss of the
//! round Σ_i P(i) ℓ_i (never the loss of the expert actually drawn).
//!
//! **Win probabilities.** For scores a_j and z_j iid Exp(1), expert i wins argmax_j (a_j + z_j)
//! with probability ∫_0^∞ e^{−z} Π_{j≠i} F(z + a_i − a_j) dz, F(u) = max(0, 1 − e^{−u}).
//! Substituting y = e^{−(z − z_0)}, z_0 = max(0, max_{j≠i} (a_j − a_i)), gives the form of the
//! spec, P(i) = e^{−z_0} ∫_0^1 Π_{j≠i} (1 − b_j y) dy with b_j = e^{−(z_0 + a_i − a_j)}; and
//! because z_0 + a_i = max_j a_j =: M whichever i is considered, b_j = e^{a_j − M} is the same
//! for every i and e^{−z_0} = b_i:
//!
//! P(i) = b_i ∫_0^1 Π_{j≠i} (1 − b_j y) dy.
//!
//! So the log-product log Q(y) = Σ_j log1p(−b_j y) is computed once per quadrature node and
//! every P(i) follows from it in O(1) per node (divide out expert i's own factor). The
//! integrand is a polynomial of degree N − 1: Gauss–Legendre with ⌈N/2⌉ nodes is exact, and is
//! used up to N = 1024; beyond, an adaptive Gauss–Kronrod (7/15) rule on [0, 1] refines every
//! interval until the largest error estimate over the experts is below 1e-13 × its length.

use rand_distr::{Distribution, Exp1};
use serde::{Deserialize, Serialize};

use super::bounds::{self, Bounded, Guarantee, RegretBound};
use super::oracle::ExpertLedger;
use super::params::{FplConfig, FplParams};
use super::round::{ExpertStep, LossRound};
use super::schedule::{Schedule, Tuning};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;
use crate::rng::StreamRng;

/// The probability that each expert wins argmax_j (scores_j + z_j), z_j iid Exp(1).
///
/// Scores must be finite; the result sums to 1 (to rounding). Accuracy: 1e-12 or better in
/// absolute terms (checked against Monte Carlo and between the two quadratures in the tests).
///
/// ```
/// use pacstream::experts::win_probabilities;
///
/// let p = win_probabilities(&[0.0, 0.0])?;
/// assert!((p[0] - 0.5).abs() < 1e-15);
/// // Two experts, scores 0 and −1: P(second) = ½ e^{−1}.
/// let p = win_probabilities(&[0.0, -1.0])?;
/// assert!((p[1] - 0.5 * (-1.0f64).exp()).abs() < 1e-15);
/// # Ok::<(), pacstream::Error>(())
/// ```
pub fn win_probabilities(scores: &[f64]) -> Result<Vec<f64>> {
    let factors = factors(scores)?;
    let mut probabilities = vec![0.0; scores.len()];
    if factors.len() <= GAUSS_LEGENDRE_MAX {
        let (nodes, weights) = gauss_legendre_unit(factors.len().div_ceil(2).max(1));
        accumulate(&factors, &nodes, &weights, &mut probabilities);
    } else {
        adaptive_kronrod(&factors, &mut probabilities);
    }
    for (p, b) in probabilities.iter_mut().zip(&factors) {
        *p *= b;
    }
    Ok(probabilities)
}

/// The probability that expert `index` wins argmax_j (scores_j + z_j); see
/// [`win_probabilities`]. Costs the same order as computing all of them.
pub fn win_probability(scores: &[f64], index: usize) -> Result<f64> {
    if index >= scores.len() {
        return Err(Error::InconsistentInput(format!(
            "expert {index} of {}",
            scores.len()
        )));
    }
    Ok(win_probabilities(scores)?[index])
}

/// Above this many experts, adaptive Gauss–Kronrod replaces the exact Gauss–Legendre rule
/// (whose node count, and O(N²) cost, grow with N).
const GAUSS_LEGENDRE_MAX: usize = 1024;

/// b_j = e^{a_j − max a}, after validation.
fn factors(scores: &[f64]) -> Result<Vec<f64>> {
    if scores.is_empty() {
        return Err(Error::EmptyInput("no scores"));
    }
    crate::data::check_finite(scores)?;
    let largest = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(scores.iter().map(|a| (a - largest).exp()).collect())
}

/// Adds Σ_k w_k Π_{j≠i} (1 − b_j y_k) to `sums[i]` for every i.
fn accumulate(factors: &[f64], nodes: &[f64], weights: &[f64], sums: &mut [f64]) {
    for (&y, &w) in nodes.iter().zip(weights) {
        let log_product: f64 = factors.iter().map(|b| (-b * y).ln_1p()).sum();
        for (sum, b) in sums.iter_mut().zip(factors) {
            *sum += w * (log_product - (-b * y).ln_1p()).exp();
        }
    }
}

/// Gauss–Legendre nodes and weights on [0, 1] (Newton's method on P_n from the classical
/// initial guesses; nodes in increasing order).
pub(crate) fn gauss_legendre_unit(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut nodes = vec![0.0; n];
    let mut weights = vec![0.0; n];
    let nf = n as f64;
    for k in 0..n.div_ceil(2) {
        let mut x = (std::f64::consts::PI * (k as f64 + 0.75) / (nf + 0.5)).cos();
        let mut derivative = 0.0;
        for _ in 0..100 {
            // P_n(x) and P_n'(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for m in 2..=n {
                let mf = m as f64;
                let p2 = ((2.0 * mf - 1.0) * x * p1 - (mf - 1.0) * p0) / mf;
                p0 = p1;
                p1 = p2;
            }
            let pn = if n == 1 { x } else { p1 };
            let pn_minus_1 = if n == 1 { 1.0 } else { p0 };
            derivative = nf * (x * pn - pn_minus_1) / (x * x - 1.0);
            let step = pn / derivative;
            x -= step;
            if step.abs() < 1e-16 {
                break;
            }
        }
        let weight = 2.0 / ((1.0 - x * x) * derivative * derivative);
        // x_k > 0 decreasing in k: map ±x_k to [0, 1].
        nodes[n - 1 - k] = 0.5 * (1.0 + x);
        nodes[k] = 0.5 * (1.0 - x);
        weights[n - 1 - k] = 0.5 * weight;
        weights[k] = 0.5 * weight;
    }
    (nodes, weights)
}

/// Kronrod 15-point abscissae on [−1, 1] (positive half, descending; the Gauss 7-point nodes
/// are the odd entries) and weights, from QUADPACK's qk15.
// The published digits are kept, beyond what an f64 holds.
#[allow(clippy::excessive_precision)]
const KRONROD_NODES: [f64; 8] = [
    0.991_455_371_120_812_639_206_854_697_526_329,
    0.949_107_912_342_758_524_526_189_684_047_851,
    0.864_864_423_359_769_072_789_712_788_640_926,
    0.741_531_185_599_394_439_863_864_773_280_788,
    0.586_087_235_467_691_130_294_144_845_693_013,
    0.405_845_151_377_397_166_906_606_412_076_961,
    0.207_784_955_007_898_467_600_689_403_773_245,
    0.0,
];
// The published digits are kept, beyond what an f64 holds.
#[allow(clippy::excessive_precision)]
const KRONROD_WEIGHTS: [f64; 8] = [
    0.022_935_322_010_529_224_963_732_008_058_970,
    0.063_092_092_629_978_553_290_700_663_189_204,
    0.104_790_010_322_250_183_839_876_322_541_518,
    0.140_653_259_715_525_918_745_189_590_510_238,
    0.169_004_726_639_267_902_826_583_426_598_550,
    0.190_350_578_064_785_409_913_256_402_421_014,
    0.204_432_940_075_298_892_414_161_999_234_649,
    0.209_482_141_084_727_828_012_999_174_891_714,
];
/// Gauss 7-point weights of the nodes KRONROD_NODES[1], [3], [5], [7].
// The published digits are kept, beyond what an f64 holds.
#[allow(clippy::excessive_precision)]
const GAUSS_WEIGHTS: [f64; 4] = [
    0.129_484_966_168_869_693_270_611_432_679_082,
    0.279_705_391_489_276_667_901_467_771_423_780,
    0.381_830_050_505_118_944_950_369_775_488_975,
    0.417_959_183_673_469_387_755_102_040_816_327,
];

/// Adaptive Gauss–Kronrod over [0, 1], shared by every expert; adds ∫ Π_{j≠i} to `sums[i]`.
fn adaptive_kronrod(factors: &[f64], sums: &mut [f64]) {
    let n = factors.len();
    let mut kronrod = vec![0.0; n];
    let mut gauss = vec![0.0; n];
    let mut pending = vec![(0.0f64, 1.0f64, 0u32)];
    while let Some((left, right, depth)) = pending.pop() {
        let half = 0.5 * (right - left);
        let centre = 0.5 * (right + left);
        kronrod.iter_mut().for_each(|v| *v = 0.0);
        gauss.iter_mut().for_each(|v| *v = 0.0);
        for (k, &x) in KRONROD_NODES.iter().enumerate() {
            let points: &[f64] = if x == 0.0 {
                &[centre]
            } else {
                &[centre - half * x, centre + half * x]
            };
            for &y in points {
                let log_product: f64 = factors.iter().map(|b| (-b * y).ln_1p()).sum();
                for i in 0..n {
                    let value = half * (log_product - (-factors[i] * y).ln_1p()).exp();
                    kronrod[i] += KRONROD_WEIGHTS[k] * value;
                    if k % 2 == 1 {
                        gauss[i] += GAUSS_WEIGHTS[k / 2] * value;
                    }
                }
            }
        }
        let error = kronrod
            .iter()
            .zip(&gauss)
            .map(|(k, g)| (k - g).abs())
            .fold(0.0, f64::max);
        if error <= 1e-13 * (right - left) || depth >= 40 {
            for (sum, k) in sums.iter_mut().zip(&kronrod) {
                *sum += k;
            }
        } else {
            pending.push((centre, right, depth + 1));
            pending.push((left, centre, depth + 1));
        }
    }
}

/// Follow the perturbed leader; see the module documentation.
///
/// ```
/// use pacstream::experts::{FplParams, LossRound};
/// use pacstream::OnlineLearner;
///
/// let mut fpl = FplParams::new(3, 1.0).expected_loss(true).seed(7).check()?.build();
/// for _ in 0..200 {
///     fpl.learn_one(LossRound::new(&[1.0, 0.0, 1.0]))?;
/// }
/// let (best, regret) = fpl.ledger().best_expert();
/// assert_eq!(best, 1);
/// assert!(regret <= pacstream::experts::bounds::fpl_expected(3, 1.0, 1.0, 0.0));
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct FollowThePerturbedLeader {
    params: FplConfig,
    schedule: Schedule,
    /// L_{t−1,i} as charged (own losses awake, the learner's expected loss asleep).
    charged: Vec<f64>,
    ledger: ExpertLedger,
    rng: StreamRng,
    n_rounds: u64,
    out_of_range_rounds: u64,
}

validated_snapshot!(FollowThePerturbedLeader);

impl FplConfig {
    /// The learner.
    pub fn build(&self) -> FollowThePerturbedLeader {
        let bound = self.loss_bound.unwrap_or(1.0);
        FollowThePerturbedLeader {
            params: self.clone(),
            schedule: Schedule::new(self.rate, Tuning::Perturbed, bound, self.n_experts),
            charged: vec![0.0; self.n_experts],
            ledger: ExpertLedger::new(self.n_experts),
            rng: StreamRng::seed_from(self.seed),
            n_rounds: 0,
            out_of_range_rounds: 0,
        }
    }
}

impl FollowThePerturbedLeader {
    /// The learner's and every expert's cumulative losses, and the regret.
    pub fn ledger(&self) -> &ExpertLedger {
        &self.ledger
    }

    /// The probability that each expert is chosen next round (every expert awake).
    pub fn weights(&self) -> Vec<f64> {
        let eta = self.schedule.eta(self.n_rounds + 1);
        let scores: Vec<f64> = self.charged.iter().map(|l| -eta * l).collect();
        win_probabilities(&scores).expect("invariant: finite charged losses")
    }

    /// The parameters.
    pub fn params(&self) -> &FplParams {
        &self.params
    }

    /// Rounds where a loss fell outside [0, B] (the bound then does not apply).
    pub fn out_of_range_rounds(&self) -> u64 {
        self.out_of_range_rounds
    }

    /// The bound on the expected regret against the best expert in hindsight:
    /// (η' L_i + B ln N)/(1 − e^{−η'}) − L_i, η' = ηB. It needs the expected loss tracked
    /// ([`FplParams::expected_loss`]; otherwise the ledger holds realised losses, which one
    /// run can push beyond it), every expert awake, and every loss in [0, B].
    pub fn regret_bound(&self) -> Guarantee {
        self.regret_bound_against(self.ledger.best_expert().0)
    }

    /// The same bound against `expert`.
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        let n = self.params.n_experts;
        let loss = self.ledger.expert_losses()[expert];
        if n <= 1 {
            return Guarantee::Bound(RegretBound {
                value: 0.0,
                expert,
                bounded: Bounded::ExpectedRegret,
                theorem: "one expert: the learner copies it",
            });
        }
        if self.out_of_range_rounds > 0 {
            return Guarantee::none(Bounded::ExpectedRegret, bounds::OUT_OF_RANGE);
        }
        if self.ledger.has_sleeping_rounds() {
            return Guarantee::none(
                Bounded::ExpectedRegret,
                "follow the perturbed leader's bound does not cover sleeping experts",
            );
        }
        if !self.params.expected_loss {
            return Guarantee::none(
                Bounded::ExpectedRegret,
                "the bound is on the expected loss, and the ledger holds realised losses (track \
                 the expected loss)",
            );
        }
        let bound = bounds::fpl_expected(n, self.schedule.eta(1), self.schedule.loss_range, loss);
        Guarantee::Bound(RegretBound {
            value: (bound - loss).max(0.0),
            expert,
            bounded: Bounded::ExpectedRegret,
            theorem: "follow the perturbed leader, exponential perturbations: (η'L_i + B ln N)/(1 − e^{−η'}), η' = ηB",
        })
    }

    fn validate_snapshot(&self) -> Result<()> {
        self.ledger.validate_snapshot(self.params.n_experts)?;
        if self.charged.len() != self.params.n_experts
            || self.charged.iter().any(|c| !c.is_finite())
            || self.ledger.rounds() != self.n_rounds
        {
            return Err(Error::InvalidSnapshot(
                "follow the perturbed leader: inconsistent".into(),
            ));
        }
        Ok(())
    }
}

impl OnlineLearner for FollowThePerturbedLeader {
    type Input<'a> = LossRound<'a>;
    type Step = ExpertStep;

    fn learn_one(&mut self, round: LossRound<'_>) -> Result<ExpertStep> {
        let n = self.params.n_experts;
        round.check(n)?;
        let eta = self.schedule.eta(self.n_rounds + 1);
        let is_awake = |i: usize| round.awake.is_none_or(|a| a[i]);
        // One draw per expert, asleep or not, so the stream of draws does not depend on masks.
        let mut chosen = 0;
        let mut best_score = f64::NEG_INFINITY;
        for i in 0..n {
            let z: f64 = Exp1.sample(&mut self.rng);
            let score = z - eta * self.charged[i];
            if is_awake(i) && score > best_score {
                best_score = score;
                chosen = i;
            }
        }
        let realised = round.losses[chosen];
        let expected = if self.params.expected_loss || round.awake.is_some() {
            let awake: Vec<usize> = (0..n).filter(|&i| is_awake(i)).collect();
            let scores: Vec<f64> = awake.iter().map(|&i| -eta * self.charged[i]).collect();
            let probabilities = win_probabilities(&scores)?;
            Some(
                awake
                    .iter()
                    .zip(&probabilities)
                    .map(|(&i, p)| p * round.losses[i])
                    .sum::<f64>(),
            )
        } else {
            None
        };
        let loss = expected.unwrap_or(realised);
        let bound = self.schedule.loss_range;
        let mut out_of_range = false;
        for i in 0..n {
            let charge = if is_awake(i) {
                round.losses[i]
            } else {
                expected.unwrap_or(realised)
            };
            out_of_range |= !(0.0..=bound).contains(&charge);
            self.charged[i] += charge;
        }
        self.out_of_range_rounds += u64::from(out_of_range);
        self.ledger.record(loss, round.losses, round.awake);
        self.n_rounds += 1;
        let (best_expert, regret) = self.ledger.best_expert();
        Ok(ExpertStep {
            round: self.n_rounds,
            prediction: None,
            loss,
            realised_loss: Some(realised),
            chosen: Some(chosen),
            learning_rate: Some(eta),
            best_expert,
            regret,
        })
    }

    fn n_rounds(&self) -> u64 {
        self.n_rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_legendre_integrates_polynomials_exactly() {
        for n in [1, 2, 3, 7, 20, 100] {
            let (nodes, weights) = gauss_legendre_unit(n);
            assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-14);
            // ∫_0^1 y^m dy = 1/(m+1) for m ≤ 2n − 1.
            for m in [0, n, 2 * n - 1] {
                let integral: f64 = nodes
                    .iter()
                    .zip(&weights)
                    .map(|(y, w)| w * y.powi(m as i32))
                    .sum();
                assert!(
                    (integral - 1.0 / (m as f64 + 1.0)).abs() < 1e-13,
                    "n {n} m {m}"
                );
            }
        }
    }

    #[test]
    fn kronrod_agrees_with_exact_gauss_legendre() {
        let scores: Vec<f64> = (0..300).map(|i| -((i * 37 % 101) as f64) * 0.05).collect();
        let factors = factors(&scores).unwrap();
        let mut exact = vec![0.0; scores.len()];
        let (nodes, weights) = gauss_legendre_unit(scores.len().div_ceil(2));
        accumulate(&factors, &nodes, &weights, &mut exact);
        let mut adaptive = vec![0.0; scores.len()];
        adaptive_kronrod(&factors, &mut adaptive);
        for (e, a) in exact.iter().zip(&adaptive) {
            assert!((e - a).abs() < 1e-12, "{e} vs {a}");
        }
    }

    #[test]
    fn probabilities_sum_to_one_for_large_n() {
        let scores: Vec<f64> = (0..3000)
            .map(|i| ((i * 7919) % 1000) as f64 * -0.01)
            .collect();
        let p = win_probabilities(&scores).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-10);
    }
}
