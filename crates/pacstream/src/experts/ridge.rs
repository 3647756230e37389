//! Online ridge regression on the experts' forecasts: the Vovk–Azoury–Warmuth forecaster
//! (Vovk 2001, *Competitive on-line statistics*; Azoury & Warmuth 2001, *Relative loss
//! bounds for on-line density estimation with the exponential family of distributions*),
//! opera's "Ridge" rule with the current advice in the Gram matrix.
//!
//! The advice x_t = (ỹ_{t,1}, …, ỹ_{t,N}) is the feature vector; the forecaster competes
//! with every *linear* combination u·x_t (weights of any sign, not summing to 1). With the
//! centre w₀ = (1/N, …, 1/N) (the uniform average, as in opera), λ > 0 and
//!
//! A_t = λ I + Σ_{s≤t} x_s x_sᵀ,   b_{t−1} = Σ_{s<t} (y_s − w₀·x_s) x_s,
//!
//! it predicts ŷ_t = w₀·x_t + x_tᵀ A_t⁻¹ b_{t−1} (x_t enters A_t before y_t is known: this is
//! what distinguishes it from plain ridge, and what the bound needs). A_t⁻¹ is kept and
//! updated by Sherman–Morrison, A_t⁻¹ = A_{t−1}⁻¹ − v vᵀ / (1 + x_tᵀ v) with v = A_{t−1}⁻¹ x_t:
//! O(N²) time per round and N² numbers of memory, so N is limited to [`MAX_RIDGE_EXPERTS`]
//! (refused before anything is allocated). Then ŷ_t = w₀·x_t + vᵀb_{t−1} / (1 + x_tᵀ v).
//!
//! **Bound** ([`bounds::ridge`]; Cesa-Bianchi & Lugosi 2006, *Prediction, Learning, and
//! Games*, Theorem 11.8; Vovk 2001, Theorem 1): for the square loss and every sequence,
//!
//! Σ_t (ŷ_t − y_t)² ≤ inf_u ( Σ_t (u·x_t − y_t)² + λ ‖u − w₀‖² ) + Y² ln det(I + Σ_t x_t x_tᵀ / λ),
//!
//! Y = max_t |y_t − w₀·x_t| (the outcome less the centre's forecast). The run keeps
//! ln det(I + Σ x xᵀ/λ) = Σ_t ln(1 + x_tᵀ A_{t−1}⁻¹ x_t) (the matrix determinant lemma) and Y,
//! so it needs no range given in advance. Against expert k (u = e_k, ‖e_k − w₀‖² = 1 − 1/N)
//! the regret is at most λ (1 − 1/N) + Y² ln det(…); against the best linear combination u*
//! (the oracle `ConvexCombinationOracle::solve_linear`) it is at most λ‖u* − w₀‖² + the same.
//!
//! Only the square loss, and no sleeping experts: the regression needs every expert's
//! advice every round (a round with an asleep expert is refused, the learner unchanged).
//! With N = 1 it fits u·x, a multiple of the one expert, rather than copying it.
//!
//! ```
//! use pacstream::experts::{AdviceRound, OnlineRidgeParams};
//! use pacstream::OnlineLearner;
//!
//! let mut learner = OnlineRidgeParams::new(2, 1.0).check()?.build();
//! // The outcome is 2·(expert 0) − (expert 1): ridge finds weights outside the simplex.
//! for t in 0..200 {
//!     let (a, b) = ((t % 7) as f64, (t % 3) as f64);
//!     learner.learn_one(AdviceRound::new(&[a, b], 2.0 * a - b))?;
//! }
//! let w = learner.weights();
//! assert!((w[0] - 2.0).abs() < 0.05 && (w[1] + 1.0).abs() < 0.05);
//! let bound = learner.regret_bound().value().unwrap();
//! assert!(learner.ledger().regret() <= bound);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bounds::{self, Guarantee};
use super::fixed_share::check_common;
use super::loss::Loss;
use super::mixing::{forecaster_learner, forecaster_setters, record_step, regret_guarantee};
use super::oracle::ExpertLedger;
use super::params::{CheckParams, Checked};
use super::round::{AdviceRound, ExpertStep};
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// The largest N of [`OnlineRidge`]: it keeps an N × N matrix (32 MiB at this N) and spends
/// O(N²) per round.
pub const MAX_RIDGE_EXPERTS: usize = 2048;
/// The range of λ: below it A⁻¹ = I/λ is too large to update accurately, above it the
/// forecaster does not move from the centre.
pub const RIDGE_LAMBDA_RANGE: (f64, f64) = (1e-8, 1e100);

/// The settings of [`OnlineRidge`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OnlineRidgeParams {
    /// N.
    pub n_experts: usize,
    /// The ridge penalty λ > 0.
    pub lambda: f64,
}

/// Validated [`OnlineRidgeParams`]: what [`OnlineRidgeParams::check`] gives, and the only thing a
/// [`OnlineRidge`](OnlineRidge) is built from ([`OnlineRidgeConfig::build`]).
///
/// An alias of [`Checked`]: every expert rule's config shares its one validation path (the
/// parameters are checked again when read from a snapshot) and serialises as its parameters.
pub type OnlineRidgeConfig = Checked<OnlineRidgeParams>;

impl OnlineRidgeParams {
    /// N experts, penalty λ.
    pub fn new(n_experts: usize, lambda: f64) -> Self {
        Self { n_experts, lambda }
    }
}

forecaster_setters!(OnlineRidgeParams => OnlineRidgeConfig {});

impl CheckParams for OnlineRidgeParams {
    fn check_params(self) -> Result<Checked<Self>> {
        check_common(self.n_experts, Loss::Square, None)?;
        if self.n_experts > MAX_RIDGE_EXPERTS {
            return Err(Error::invalid_parameter(
                "n_experts",
                format!(
                    "rule ridge keeps an N × N matrix: N must be at most {MAX_RIDGE_EXPERTS}, \
                     got {}",
                    self.n_experts
                ),
            ));
        }
        let (low, high) = RIDGE_LAMBDA_RANGE;
        if !(low..=high).contains(&self.lambda) {
            return Err(Error::invalid_parameter(
                "lambda",
                format!("must be in [{low:e}, {high:e}], got {}", self.lambda),
            ));
        }
        Ok(Checked::validated(self))
    }
}

impl OnlineRidgeConfig {
    /// The learner: A₀⁻¹ = I/λ, no data.
    pub fn build(&self) -> OnlineRidge {
        let n = self.n_experts;
        let mut inverse = vec![0.0; n * n];
        for i in 0..n {
            inverse[i * n + i] = 1.0 / self.lambda;
        }
        OnlineRidge {
            params: self.clone(),
            inverse,
            targets: vec![0.0; n],
            log_det: 0.0,
            largest_residual: 0.0,
            ledger: ExpertLedger::new(n),
        }
    }
}

/// The Vovk–Azoury–Warmuth forecaster; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct OnlineRidge {
    params: OnlineRidgeConfig,
    /// A_t⁻¹, row-major, symmetric.
    inverse: Vec<f64>,
    /// b_t = Σ_{s≤t} (y_s − w₀·x_s) x_s.
    targets: Vec<f64>,
    /// ln det(I + Σ x xᵀ/λ).
    log_det: f64,
    /// Y² = max_t (y_t − w₀·x_t)².
    largest_residual: f64,
    ledger: ExpertLedger,
}

impl OnlineRidge {
    fn validate_snapshot(&self) -> Result<()> {
        let n = self.params.n_experts;
        let symmetric = self.inverse.len() == n * n
            && (0..n).all(|i| {
                self.inverse[i * n + i] > 0.0
                    && (0..i).all(|j| self.inverse[i * n + j] == self.inverse[j * n + i])
            });
        let consistent = symmetric
            && self.inverse.iter().all(|v| v.is_finite())
            && self.targets.len() == n
            && self.targets.iter().all(|v| v.is_finite())
            && self.ledger.expert_losses().len() == n
            && self.log_det >= 0.0
            && self.log_det.is_finite()
            && self.largest_residual >= 0.0
            && self.largest_residual.is_finite();
        if !consistent {
            return Err(Error::InvalidSnapshot("ridge: inconsistent".into()));
        }
        Ok(())
    }
}

validated_snapshot!(OnlineRidge);

impl OnlineRidge {
    /// The ridge weights w₀ + A_t⁻¹ b_t: any sign, not summing to 1 (the next round's
    /// prediction also counts its own advice in A, so it is not exactly w·x).
    pub fn weights(&self) -> Vec<f64> {
        let n = self.params.n_experts;
        let centre = 1.0 / n as f64;
        self.inverse
            .chunks_exact(n)
            .map(|row| centre + dot(row, &self.targets))
            .collect()
    }

    /// ln det(I + Σ_t x_t x_tᵀ / λ).
    pub fn log_det(&self) -> f64 {
        self.log_det
    }

    /// The bound on the regret against `expert`: λ (1 − 1/N) + Y² ln det(I + Σ x xᵀ/λ).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    pub fn regret_bound_against(&self, expert: usize) -> Guarantee {
        assert!(expert < self.params.n_experts, "no expert {expert}");
        let n = self.params.n_experts as f64;
        let value = bounds::ridge(
            self.params.lambda * (1.0 - 1.0 / n),
            self.largest_residual,
            self.log_det,
        );
        regret_guarantee(
            value,
            expert,
            "Vovk–Azoury–Warmuth forecaster: λ‖e_k − w₀‖² + Y² ln det(I + Σ x xᵀ/λ) \
                      (Cesa-Bianchi & Lugosi 2006, Theorem 11.8)",
            "the outcomes of this run are too large for the bound to be represented",
        )
    }

    /// The bound on the regret against the linear combination `weights`:
    /// λ‖u − w₀‖² + Y² ln det(I + Σ x xᵀ/λ).
    pub fn regret_bound_linear(&self, weights: &[f64]) -> f64 {
        let centre = 1.0 / self.params.n_experts as f64;
        let distance: f64 = weights.iter().map(|w| (w - centre) * (w - centre)).sum();
        bounds::ridge(
            self.params.lambda * distance,
            self.largest_residual,
            self.log_det,
        )
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl OnlineRidge {
    fn learn_round(&mut self, round: AdviceRound<'_>) -> Result<ExpertStep> {
        let n = self.params.n_experts;
        round.check(n)?;
        if round.awake.is_some_and(|awake| awake.iter().any(|a| !a)) {
            return Err(Error::InconsistentInput(
                "rule ridge regresses on every expert's advice: it does not take sleeping \
                 experts (give every expert's advice, or use ftrl, ogd, mlpol)"
                    .into(),
            ));
        }
        let x = round.advice;
        let centre = 1.0 / n as f64;
        let v: Vec<f64> = self
            .inverse
            .chunks_exact(n)
            .map(|row| dot(row, x))
            .collect();
        let leverage = dot(x, &v);
        let denominator = 1.0 + leverage;
        let baseline = centre * x.iter().sum::<f64>();
        let prediction = baseline + dot(&v, &self.targets) / denominator;
        let residual = round.outcome - baseline;
        let largest_v = v.iter().fold(0.0_f64, |m, &a| m.max(a.abs()));
        let log_det = self.log_det + leverage.ln_1p();
        let learner_loss = Loss::Square.value(prediction, round.outcome);
        let own_losses: Vec<f64> = x
            .iter()
            .map(|&a| Loss::Square.value(a, round.outcome))
            .collect();
        if !(v.iter().all(|a| a.is_finite())
            && leverage >= 0.0
            && (largest_v * largest_v / denominator).is_finite()
            && prediction.is_finite()
            && learner_loss.is_finite()
            && log_det.is_finite()
            && (residual * residual).is_finite()
            && x.iter().all(|a| (residual * a).is_finite()))
        {
            return Err(Error::InconsistentInput(
                "the advice of this round is too large for the ridge update to be represented"
                    .into(),
            ));
        }
        let mut targets = self.targets.clone();
        targets
            .iter_mut()
            .zip(x)
            .for_each(|(b, &a)| *b += residual * a);
        if !targets.iter().all(|b| b.is_finite()) {
            return Err(Error::InconsistentInput(
                "the ridge sums would overflow".into(),
            ));
        }
        // Sherman–Morrison, written row by row from v so that the matrix stays exactly
        // symmetric (v_i v_j = v_j v_i in floating point).
        let inverse_denominator = 1.0 / denominator;
        for (i, row) in self.inverse.chunks_exact_mut(n).enumerate() {
            let vi = v[i];
            row.iter_mut()
                .zip(&v)
                .for_each(|(a, &vj)| *a -= (vi * vj) * inverse_denominator);
        }
        self.targets = targets;
        self.log_det = log_det;
        self.largest_residual = self.largest_residual.max(residual * residual);
        Ok(record_step(
            &mut self.ledger,
            prediction,
            learner_loss,
            &own_losses,
            None,
            None,
        ))
    }
}

forecaster_learner!(OnlineRidge, OnlineRidgeParams);
