//! Prediction with expert advice: weighted majority, randomized weighted majority, Hedge and
//! EWA, follow the perturbed leader; learning-rate schedules for unknown horizons; sleeping
//! experts; hindsight oracles; and every regret bound as a function.
//!
//! N experts give advice (or suffer losses) at rounds t = 1..T; the learner combines them and
//! is compared with the best expert in hindsight: regret_T = L̂_T − min_i L_{T,i}. Every rule
//! keeps its weights in log space ([`ExpWeights`]), so a weight that would underflow to 0 in
//! linear space recovers exactly when the other experts catch up.
//!
//! | rule | input | learner's loss | bound ([`bounds`]) |
//! |---|---|---|---|
//! | [`WeightedMajority`] | binary advice | mistakes | (ln(1/β) m* + ln N) / ln(2/(1+β)) |
//! | [`RandomizedWeightedMajority`] | binary advice | expected mistakes | (ln(1/β) m* + ln N) / (1 − β) |
//! | [`Hedge`] | losses in [0, B] | mixture loss | L* + B√(T ln N / 2) (tuned) |
//! | [`Ewa`] | real advice, convex ℓ | ℓ(ŷ, y) | as Hedge |
//! | [`FollowThePerturbedLeader`] | losses in [0, B] | chosen expert's loss | (η L* + ln N)/(1 − e^{−η}) |
//! | [`FixedShare`] | real advice, convex ℓ | ℓ(ŷ, y) | against m switches: ((m+1) ln N + m ln(1/α) + T ln(1/(1−α)))/η + η B² T/8 |
//! | [`MlPoly`] | real advice, convex ℓ | ℓ(ŷ, y) | √((E_T + V_{T,k}) S_T), no parameter |
//! | [`MlProd`] | real advice, convex ℓ | ℓ(ŷ, y) | with a range B: ln N/η_{0,k} + Σ_t η_{t−1,k} r²_{t,k} + ln(1 + D_T/e)/η_{T,k} |
//! | [`MlEwa`] | real advice, convex ℓ | ℓ(ŷ, y) | none (no theorem for its rates) |
//! | [`Boa`] | real advice, convex ℓ | ℓ(ŷ, y) | with a range B: Σ_t η_{t−1,k} r²_{t,k} + (ln N + ln(1 + D_T/e))/η_{T,k}; none with opera's rates |
//! | [`OnlineGradientDescent`] | real advice, convex ℓ (linearised) | ℓ(ŷ, y) | √T/η + ½ Σ_t η_t ‖g_t − ḡ_t‖² |
//! | [`Ftrl`] | real advice, convex ℓ (linearised) | ℓ(ŷ, y) | (1 − 1/N)/(2η) + η Σ_t ‖g_t − ḡ_t‖² (quadratic) |
//! | [`OnlineRidge`] | real advice, square loss | (ŷ − y)² | λ‖u − w₀‖² + Y² ln det(I + Σ x xᵀ/λ) against any linear u |
//!
//! The learning rate follows a [`LearningRate`] schedule: fixed, tuned for a horizon, anytime,
//! the doubling trick, or AdaHedge (no horizon, no loss range).

mod aggregator;
mod bernstein;
pub mod bounds;
mod core;
mod fixed_share;
mod fpl;
mod ftrl;
mod hedge;
mod loss;
mod majority;
mod mixing;
mod multi_rate_ewa;
mod ogd;
mod oracle;
mod params;
mod polynomial;
mod prod;
mod ridge;
mod round;
mod schedule;
mod shifting;
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod testing;
mod weights;

pub use aggregator::{
    Aggregator, AggregatorConfig, AggregatorParams, AggregatorRecord, AggregatorSummary,
    AnyAggregator, ExpertSummary, Rule,
};
pub use bernstein::{Boa, BoaConfig, BoaParams};
pub use fixed_share::{FixedShare, FixedShareConfig, FixedShareParams};
pub use fpl::{FollowThePerturbedLeader, win_probabilities, win_probability};
pub use ftrl::{Ftrl, FtrlConfig, FtrlParams, Regulariser};
pub use hedge::{Ewa, Hedge};
pub use loss::Loss;
pub use majority::{RandomizedWeightedMajority, WeightedMajority};
pub use multi_rate_ewa::{MlEwa, MlEwaConfig, MlEwaParams};
pub use ogd::{OnlineGradientDescent, OnlineGradientDescentConfig, OnlineGradientDescentParams};
pub use oracle::{ConvexCombinationOracle, ExpertLedger};
pub use params::{
    CheckParams, Checked, EwaConfig, EwaParams, FplConfig, FplParams, HedgeConfig, HedgeParams,
    RandomizedWeightedMajorityConfig, RandomizedWeightedMajorityParams, WeightedMajorityConfig,
    WeightedMajorityParams, check_rate, limits,
};
pub use polynomial::{MlPoly, MlPolyConfig, MlPolyParams};
pub use prod::{MlProd, MlProdConfig, MlProdParams};
pub use ridge::{
    MAX_RIDGE_EXPERTS, OnlineRidge, OnlineRidgeConfig, OnlineRidgeParams, RIDGE_LAMBDA_RANGE,
};
pub use round::{AdviceRound, AdviceRoundBuf, ExpertStep, LossRound, LossRoundBuf};
pub use schedule::LearningRate;
pub use shifting::{MAX_SHIFTING_CELLS, ShiftingOracle};
pub use weights::ExpWeights;
