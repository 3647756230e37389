//! One face for every aggregation rule: the [`Aggregator`] trait (ledger, weights, regret
//! bound, one round of advice or losses), the [`Rule`] names, the run-time choice of a rule
//! ([`AnyAggregator`]) and its settings ([`AggregatorParams`] → [`AggregatorConfig`]).
//!
//! A front-end (the command line, the Python package, the dataflow operators) drives every
//! rule through these, so that none of them matches over the rules, re-derives a default
//! or recomputes a tuning formula or a bound: the rule's own `regret_bound` is the only
//! source of a printed bound.
//!
//! ```
//! use pacstream::experts::{AdviceRound, Aggregator, AggregatorParams, Loss, Rule};
//!
//! let config = AggregatorParams::new(Rule::Hedge, 2).loss_bound(1.0).check().unwrap();
//! let mut hedge = config.build().unwrap();
//! // Hedge learns from losses: given advice, each expert pays the loss of its advice.
//! for outcome in [1.0, 1.0, 0.0, 1.0] {
//!     let round = AdviceRound::new(&[1.0, 0.0], outcome);
//!     hedge.learn_advice(round, Loss::Square).unwrap();
//! }
//! assert_eq!(hedge.rounds(), 4);
//! assert_eq!(hedge.ledger().best_expert().0, 0);
//! let bound = hedge.regret_bound().value().unwrap();
//! assert!(hedge.ledger().regret() <= bound);
//! ```

use serde::{Deserialize, Serialize};

use super::bernstein::{Boa, BoaParams};
use super::bounds::{Bounded, Guarantee};
use super::fixed_share::{FixedShare, FixedShareParams};
use super::fpl::FollowThePerturbedLeader;
use super::ftrl::{Ftrl, FtrlParams, Regulariser};
use super::hedge::{Ewa, Hedge};
use super::loss::Loss;
use super::majority::{RandomizedWeightedMajority, WeightedMajority};
use super::multi_rate_ewa::{MlEwa, MlEwaParams};
use super::ogd::{OnlineGradientDescent, OnlineGradientDescentParams};
use super::oracle::ExpertLedger;
use super::params::{
    EwaParams, FplParams, HedgeParams, RandomizedWeightedMajorityParams, WeightedMajorityParams,
    check_rate,
};
use super::polynomial::{MlPoly, MlPolyParams};
use super::prod::{MlProd, MlProdParams};
use super::ridge::{OnlineRidge, OnlineRidgeParams};
use super::round::{AdviceRound, ExpertStep, LossRound};
use super::schedule::LearningRate;
use crate::error::{Error, Result};
use crate::online::OnlineLearner;

/// What every aggregation rule offers a front-end: its ledger of losses, its weights, its
/// theorem's bound on the regret, and one round of play.
///
/// A rule learns either from advice and an outcome (weighted majority, randomized weighted
/// majority, EWA) or from the experts' losses (Hedge, FPL). [`Aggregator::learn_advice`]
/// serves both: a rule that learns from losses charges each awake expert
/// `loss(advice, outcome)`. [`Aggregator::learn_losses`] is for losses given directly.
/// Both are atomic: on error the rule is unchanged.
pub trait Aggregator {
    /// Which rule this is.
    fn rule(&self) -> Rule;

    /// Every expert's cumulative loss and the learner's.
    fn ledger(&self) -> &ExpertLedger;

    /// The normalised weights of the experts for the next round.
    fn weights(&self) -> Vec<f64>;

    /// The rounds played.
    fn rounds(&self) -> u64;

    /// The theorem's bound on the regret against `expert`, for exactly these settings (or
    /// why there is none).
    ///
    /// # Panics
    /// If `expert` is not an expert index.
    fn regret_bound_against(&self, expert: usize) -> Guarantee;

    /// The bound on the regret against the best expert in hindsight.
    fn regret_bound(&self) -> Guarantee {
        self.regret_bound_against(self.ledger().best_expert().0)
    }

    /// Rounds in which a loss fell outside the range the bound assumes (0 for the rules
    /// whose losses cannot).
    fn out_of_range_rounds(&self) -> u64 {
        0
    }

    /// Plays one round of advice and outcome. A rule that learns from losses charges each
    /// awake expert `loss.value(advice, outcome)`; a rule that learns from advice pays its
    /// own loss and ignores `loss`.
    fn learn_advice(&mut self, round: AdviceRound<'_>, loss: Loss) -> Result<ExpertStep>;

    /// Plays one round of losses given directly; an error for the rules that learn from
    /// advice.
    fn learn_losses(&mut self, round: LossRound<'_>) -> Result<ExpertStep> {
        let _ = round;
        Err(Error::invalid_parameter(
            "losses",
            format!(
                "rule {} learns from advice and an outcome, not from losses",
                self.rule().name()
            ),
        ))
    }
}

/// The aggregation rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Rule {
    /// Deterministic weighted majority (binary advice).
    Wm,
    /// Randomized weighted majority (binary advice).
    Rwm,
    /// Hedge: the mixture of the experts, paying the mixture loss.
    Hedge,
    /// The exponentially weighted average forecaster (real-valued advice).
    Ewa,
    /// Follow the perturbed leader.
    Fpl,
    /// Fixed share (Herbster & Warmuth 1998): EWA that gives back a share α each round, to
    /// follow the best expert of each period (takes --eta and --alpha).
    #[serde(rename = "fixed-share")]
    FixedShare,
    /// ML-Poly (Gaillard, Stoltz & van Erven 2014): polynomial weights with one rate per
    /// expert tuned on line; no parameter (opera's default rule).
    Mlpol,
    /// ML-Prod (Gaillard, Stoltz & van Erven 2014): Prod weights with one rate per expert
    /// tuned on line; with --loss-bound the paper's rates and bound, without it opera's.
    Mlprod,
    /// ML-EWA: exponential weights with one rate per expert tuned on line (opera's MLewa);
    /// no bound.
    Mlewa,
    /// BOA (Wintenberger 2017): exponential weights of a second-order regularised regret,
    /// one adaptive rate per expert (opera's rates); no bound.
    Boa,
    /// Follow the regularised leader over the simplex on the linearised losses (quadratic
    /// or entropic regulariser; takes --eta).
    Ftrl,
    /// Online gradient descent over the simplex on the linearised losses, step η/√t
    /// (Zinkevich 2003; takes --eta).
    Ogd,
    /// Online ridge regression on the experts' forecasts: the Vovk–Azoury–Warmuth
    /// forecaster, square loss (takes --lambda).
    Ridge,
}

impl Rule {
    /// The rule's short name (`wm`, `rwm`, `hedge`, `ewa`, `fpl`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::Wm => "wm",
            Rule::Rwm => "rwm",
            Rule::Hedge => "hedge",
            Rule::Ewa => "ewa",
            Rule::Fpl => "fpl",
            Rule::FixedShare => "fixed-share",
            Rule::Mlpol => "mlpol",
            Rule::Mlprod => "mlprod",
            Rule::Mlewa => "mlewa",
            Rule::Boa => "boa",
            Rule::Ftrl => "ftrl",
            Rule::Ogd => "ogd",
            Rule::Ridge => "ridge",
        }
    }

    /// Whether the rule predicts 0 or 1 and counts mistakes (binary advice).
    pub fn is_binary(self) -> bool {
        matches!(self, Rule::Wm | Rule::Rwm)
    }

    /// Whether the rule learns from the experts' losses (which may be given directly).
    pub fn learns_from_losses(self) -> bool {
        matches!(self, Rule::Hedge | Rule::Fpl)
    }

    /// Whether the rule takes the gradient trick (real-valued advice, convex loss).
    pub fn takes_gradient(self) -> bool {
        matches!(
            self,
            Rule::Ewa | Rule::FixedShare | Rule::Mlpol | Rule::Mlprod | Rule::Mlewa | Rule::Boa
        )
    }

    /// Whether the rule always learns from the linearised losses (the gradient trick is its
    /// definition, not an option).
    pub fn always_linearised(self) -> bool {
        matches!(self, Rule::Ftrl | Rule::Ogd)
    }

    /// Whether the rule takes prior weights.
    pub fn takes_prior(self) -> bool {
        matches!(self, Rule::Hedge | Rule::Ewa)
    }
}

/// The experts' losses of a round of advice, 0 for a sleeping expert.
fn advice_losses(round: &AdviceRound<'_>, loss: Loss) -> Vec<f64> {
    round
        .advice
        .iter()
        .enumerate()
        .map(|(i, &advice)| {
            if round.awake.is_none_or(|awake| awake[i]) {
                loss.value(advice, round.outcome)
            } else {
                0.0
            }
        })
        .collect()
}

/// The trait's methods for one rule, from the rule's own: `advice` for a rule that learns
/// from advice and an outcome (`advice, out_of_range` if it counts the rounds whose loss
/// left the range its bound assumes), `losses` for one that learns from losses.
macro_rules! aggregator {
    ($learner:ty, $rule:expr, advice) => {
        aggregator!(@common $learner, $rule);
        fn learn_advice(&mut self, round: AdviceRound<'_>, _loss: Loss) -> Result<ExpertStep> {
            self.learn_one(round)
        }
    };
    ($learner:ty, $rule:expr, advice, out_of_range) => {
        aggregator!($learner, $rule, advice);
        fn out_of_range_rounds(&self) -> u64 {
            <$learner>::out_of_range_rounds(self)
        }
    };
    ($learner:ty, $rule:expr, losses) => {
        aggregator!(@common $learner, $rule);
        fn learn_advice(&mut self, round: AdviceRound<'_>, loss: Loss) -> Result<ExpertStep> {
            let losses = advice_losses(&round, loss);
            self.learn_one(LossRound {
                losses: &losses,
                awake: round.awake,
            })
        }
        fn learn_losses(&mut self, round: LossRound<'_>) -> Result<ExpertStep> {
            self.learn_one(round)
        }
        fn out_of_range_rounds(&self) -> u64 {
            <$learner>::out_of_range_rounds(self)
        }
    };
    (@common $learner:ty, $rule:expr) => {
        fn rule(&self) -> Rule {
            $rule
        }
        fn ledger(&self) -> &ExpertLedger {
            <$learner>::ledger(self)
        }
        fn weights(&self) -> Vec<f64> {
            <$learner>::weights(self)
        }
        fn rounds(&self) -> u64 {
            self.n_rounds()
        }
        fn regret_bound_against(&self, expert: usize) -> Guarantee {
            <$learner>::regret_bound_against(self, expert)
        }
        fn regret_bound(&self) -> Guarantee {
            <$learner>::regret_bound(self)
        }
    };
}

/// The registration of every rule, once: its variant of [`Rule`] and of [`AnyAggregator`]
/// (the same name), its learner and what it learns from (see `aggregator!`). This gives
/// each learner its [`Aggregator`] implementation, and [`AnyAggregator`] its variants and
/// its trait objects, so that adding a rule is one line here.
macro_rules! rules {
    ($($(#[doc = $doc:literal])* $variant:ident($learner:ty): $($learns:ident),+;)*) => {
        $(impl Aggregator for $learner {
            aggregator!($learner, Rule::$variant, $($learns),+);
        })*

        /// A rule chosen at run time: what a front-end holds, snapshots and restores.
        #[derive(Clone, Debug, Serialize, Deserialize)]
        #[allow(
            clippy::large_enum_variant,
            reason = "one per run; boxing would only add an indirection per round"
        )]
        pub enum AnyAggregator {
            $($(#[doc = $doc])* $variant($learner),)*
        }

        impl AnyAggregator {
            /// The rule as a trait object.
            pub fn as_dyn(&self) -> &dyn Aggregator {
                match self {
                    $(AnyAggregator::$variant(rule) => rule,)*
                }
            }

            /// The rule as a mutable trait object.
            pub fn as_dyn_mut(&mut self) -> &mut dyn Aggregator {
                match self {
                    $(AnyAggregator::$variant(rule) => rule,)*
                }
            }
        }
    };
}

rules! {
    /// Weighted majority.
    Wm(WeightedMajority): advice;
    /// Randomized weighted majority.
    Rwm(RandomizedWeightedMajority): advice;
    /// Hedge.
    Hedge(Hedge): losses;
    /// EWA.
    Ewa(Ewa): advice, out_of_range;
    /// Follow the perturbed leader.
    Fpl(FollowThePerturbedLeader): losses;
    /// Fixed share.
    FixedShare(FixedShare): advice, out_of_range;
    /// ML-Poly.
    Mlpol(MlPoly): advice;
    /// ML-Prod.
    Mlprod(MlProd): advice, out_of_range;
    /// ML-EWA.
    Mlewa(MlEwa): advice;
    /// BOA.
    Boa(Boa): advice, out_of_range;
    /// Follow the regularised leader.
    Ftrl(Ftrl): advice;
    /// Online gradient descent.
    Ogd(OnlineGradientDescent): advice;
    /// Online ridge regression.
    Ridge(OnlineRidge): advice;
}

impl Aggregator for AnyAggregator {
    fn rule(&self) -> Rule {
        self.as_dyn().rule()
    }
    fn ledger(&self) -> &ExpertLedger {
        self.as_dyn().ledger()
    }
    fn weights(&self) -> Vec<f64> {
        self.as_dyn().weights()
    }
    fn rounds(&self) -> u64 {
        self.as_dyn().rounds()
    }
    fn regret_bound_against(&self, expert: usize) -> Guarantee {
        self.as_dyn().regret_bound_against(expert)
    }
    fn regret_bound(&self) -> Guarantee {
        self.as_dyn().regret_bound()
    }
    fn out_of_range_rounds(&self) -> u64 {
        self.as_dyn().out_of_range_rounds()
    }
    fn learn_advice(&mut self, round: AdviceRound<'_>, loss: Loss) -> Result<ExpertStep> {
        self.as_dyn_mut().learn_advice(round, loss)
    }
    fn learn_losses(&mut self, round: LossRound<'_>) -> Result<ExpertStep> {
        self.as_dyn_mut().learn_losses(round)
    }
}

/// The settings of an aggregation run, whatever its rule; [`AggregatorParams::check`]
/// resolves the rule's defaults and refuses the settings the rule does not take.
///
/// Defaults: the zero-one loss for the binary rules, the square loss otherwise; β = 0.5
/// for weighted majority, the doubling trick for randomized weighted majority, AdaHedge
/// for Hedge and EWA (FPL has no default rate); the loss range B = 1 for the zero-one loss
/// of advice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AggregatorParams {
    /// The rule.
    pub rule: Rule,
    /// The number of experts N.
    pub n_experts: usize,
    /// The learning rate (`None`: the rule's default). Weighted majority takes a fixed one,
    /// β = e^{−η}.
    pub rate: Option<LearningRate>,
    /// The loss (`None`: the rule's default).
    pub loss: Option<Loss>,
    /// The loss range B (every expert's loss in [0, B]).
    pub loss_bound: Option<f64>,
    /// EWA: charge the linearised losses (the gradient trick).
    pub gradient: bool,
    /// Hedge and EWA: prior weights, in the experts' order.
    pub prior: Option<Vec<f64>>,
    /// Hedge: draw an expert from the weights each round.
    pub sample: bool,
    /// The rounds give losses directly, not advice and an outcome (Hedge, FPL).
    pub losses_given: bool,
    /// The seed of the randomised rules.
    pub seed: u64,
    /// Fixed share: the share α ∈ [0, 1) given back to every expert each round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Ridge: the penalty λ > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// FTRL: the regulariser (default quadratic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regulariser: Option<Regulariser>,
}

impl AggregatorParams {
    /// The defaults of `rule` with `n_experts` experts.
    pub fn new(rule: Rule, n_experts: usize) -> Self {
        Self {
            rule,
            n_experts,
            rate: None,
            loss: None,
            loss_bound: None,
            gradient: false,
            prior: None,
            sample: false,
            losses_given: false,
            seed: 0,
            alpha: None,
            lambda: None,
            regulariser: None,
        }
    }

    /// Sets the learning rate.
    pub fn rate(mut self, rate: LearningRate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Sets the loss.
    pub fn loss(mut self, loss: Loss) -> Self {
        self.loss = Some(loss);
        self
    }

    /// Sets the loss range B.
    pub fn loss_bound(mut self, loss_bound: f64) -> Self {
        self.loss_bound = Some(loss_bound);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets fixed share's α.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = Some(alpha);
        self
    }

    /// Sets the gradient trick (EWA, fixed share, ML-Poly: charge the linearised losses).
    pub fn gradient(mut self, gradient: bool) -> Self {
        self.gradient = gradient;
        self
    }

    /// Sets the prior weights, in the experts' order (Hedge, EWA).
    pub fn prior(mut self, prior: Vec<f64>) -> Self {
        self.prior = Some(prior);
        self
    }

    /// Sets whether Hedge draws an expert from the weights each round.
    pub fn sample(mut self, sample: bool) -> Self {
        self.sample = sample;
        self
    }

    /// Sets whether the rounds give losses directly, not advice and an outcome (Hedge,
    /// FPL).
    pub fn losses_given(mut self, losses_given: bool) -> Self {
        self.losses_given = losses_given;
        self
    }

    /// Sets ridge's λ.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = Some(lambda);
        self
    }

    /// Sets FTRL's regulariser.
    pub fn regulariser(mut self, regulariser: Regulariser) -> Self {
        self.regulariser = Some(regulariser);
        self
    }

    /// Resolves the rule's defaults and checks that the rule takes every setting given.
    /// The rule's own parameters are checked again when it is built.
    pub fn check(self) -> Result<AggregatorConfig> {
        let rule = self.rule;
        let binary = rule.is_binary();
        let loss = self
            .loss
            .unwrap_or(if binary { Loss::ZeroOne } else { Loss::Square });
        loss.check()?;
        let refuse =
            |name: &'static str, reason: String| Err(Error::invalid_parameter(name, reason));
        if binary && loss != Loss::ZeroOne {
            return refuse(
                "loss",
                format!(
                    "rule {} predicts 0 or 1 and counts mistakes: it takes the zero-one loss",
                    rule.name()
                ),
            );
        }
        if self.losses_given && !rule.learns_from_losses() {
            return refuse(
                "losses",
                "losses given directly go with rule hedge or fpl".to_string(),
            );
        }
        if self.gradient && rule.always_linearised() {
            return refuse(
                "gradient",
                format!(
                    "rule {} always learns from the linearised losses: drop --gradient",
                    rule.name()
                ),
            );
        }
        if self.gradient && !rule.takes_gradient() {
            return refuse(
                "gradient",
                "the gradient trick applies to rules ewa, fixed-share, mlpol, mlprod, mlewa and \
                 boa"
                .into(),
            );
        }
        if self.alpha.is_some() != (rule == Rule::FixedShare) {
            return refuse(
                "alpha",
                if rule == Rule::FixedShare {
                    "rule fixed-share needs its share α ∈ [0, 1)".into()
                } else {
                    "the share α is a parameter of rule fixed-share".into()
                },
            );
        }
        if self.lambda.is_some() != (rule == Rule::Ridge) {
            return refuse(
                "lambda",
                if rule == Rule::Ridge {
                    "rule ridge needs its penalty λ > 0".into()
                } else {
                    "the penalty λ is a parameter of rule ridge".into()
                },
            );
        }
        if self.regulariser.is_some() && rule != Rule::Ftrl {
            return refuse(
                "regulariser",
                "the regulariser is a parameter of rule ftrl".into(),
            );
        }
        if rule == Rule::Ridge && self.rate.is_some() {
            return refuse(
                "eta",
                "rule ridge has no learning rate: its penalty is λ".into(),
            );
        }
        if rule == Rule::Ridge && loss != Loss::Square {
            return refuse(
                "loss",
                "rule ridge is a regression for the square loss".into(),
            );
        }
        if matches!(rule, Rule::Ftrl | Rule::Ogd | Rule::Ridge) && self.loss_bound.is_some() {
            return refuse(
                "loss_bound",
                format!(
                    "rule {} needs no loss range: its bound is computed from the run",
                    rule.name()
                ),
            );
        }
        if rule == Rule::Mlpol && self.rate.is_some() {
            return refuse(
                "eta",
                "rule mlpol tunes one rate per expert itself: it takes no rate option".into(),
            );
        }
        if rule == Rule::Mlpol && self.loss_bound.is_some() {
            return refuse(
                "loss_bound",
                "rule mlpol needs no loss range: its bound is computed from the run".into(),
            );
        }
        if matches!(rule, Rule::Mlprod | Rule::Mlewa | Rule::Boa) && self.rate.is_some() {
            return refuse(
                "eta",
                format!(
                    "rule {} tunes one rate per expert itself: it takes no rate option",
                    rule.name()
                ),
            );
        }
        if rule == Rule::Mlewa && self.loss_bound.is_some() {
            return refuse(
                "loss_bound",
                "rule mlewa runs opera's rates, which use no loss range (and has no bound)".into(),
            );
        }
        if matches!(
            rule,
            Rule::FixedShare
                | Rule::Mlpol
                | Rule::Mlprod
                | Rule::Mlewa
                | Rule::Boa
                | Rule::Ftrl
                | Rule::Ogd
        ) && !loss.is_convex()
        {
            return refuse(
                "loss",
                format!(
                    "rule {} averages real-valued advice: take a convex loss (square, \
                     absolute, pinball)",
                    rule.name()
                ),
            );
        }
        if self.sample && rule != Rule::Hedge {
            return refuse("sample", "sampling an expert applies to rule hedge".into());
        }
        if self.prior.is_some() && !rule.takes_prior() {
            return refuse("prior", "prior weights apply to rule hedge or ewa".into());
        }
        let rate = match self.rate {
            Some(rate) => {
                check_rate(rate)?;
                rate
            }
            None => match rule {
                Rule::Wm => LearningRate::beta(0.5)?,
                Rule::Rwm => LearningRate::Doubling,
                Rule::Hedge | Rule::Ewa => LearningRate::AdaHedge,
                Rule::Fpl => {
                    return refuse(
                        "eta",
                        "rule fpl needs a rate: a fixed η or a horizon T".into(),
                    );
                }
                Rule::FixedShare => {
                    return refuse("eta", "rule fixed-share needs a fixed rate η".into());
                }
                Rule::Mlpol | Rule::Mlprod | Rule::Mlewa | Rule::Boa => LearningRate::PerExpert,
                Rule::Ftrl | Rule::Ogd => {
                    return refuse("eta", format!("rule {} needs a fixed rate η", rule.name()));
                }
                Rule::Ridge => LearningRate::Penalty,
            },
        };
        if matches!(rule, Rule::Ftrl | Rule::Ogd) && !matches!(rate, LearningRate::Fixed(_)) {
            return refuse("eta", format!("rule {} takes a fixed rate η", rule.name()));
        }
        if rule == Rule::FixedShare && !matches!(rate, LearningRate::Fixed(_)) {
            return refuse("eta", "rule fixed-share takes a fixed rate η".into());
        }
        if rule == Rule::Wm && !matches!(rate, LearningRate::Fixed(_)) {
            return refuse("beta", "rule wm takes a fixed β".into());
        }
        let loss_bound = match (self.loss_bound, loss) {
            (Some(bound), _) => Some(bound),
            (None, Loss::ZeroOne) if !self.losses_given => Some(1.0),
            (None, _) => None,
        };
        let beta = match rate {
            LearningRate::Fixed(eta) if binary => Some((-eta).exp()),
            _ => None,
        };
        if let (Some(0.0), LearningRate::Fixed(eta)) = (beta, rate) {
            return refuse(
                "eta",
                format!(
                    "rule {} uses β = e^(−η), which is 0 for η above about 745, got {eta}",
                    rule.name()
                ),
            );
        }
        if rule == Rule::Fpl && loss_bound.is_none() {
            return refuse(
                "loss_bound",
                "rule fpl needs the loss range B (losses in [0, B])".into(),
            );
        }
        Ok(AggregatorConfig {
            rule,
            rate,
            beta,
            loss,
            loss_bound,
            gradient: self.gradient,
            prior: self.prior,
            sample: self.sample,
            losses_given: self.losses_given,
            n_experts: self.n_experts,
            seed: self.seed,
            alpha: self.alpha,
            lambda: self.lambda,
            regulariser: match rule {
                Rule::Ftrl => Some(self.regulariser.unwrap_or(Regulariser::Quadratic)),
                _ => None,
            },
        })
    }
}

/// Settings that passed [`AggregatorParams::check`], every default resolved: what a run
/// builds its rule from and records.
///
/// Its `Serialize` form is the settings by name, what must be equal for a snapshot to be
/// resumed: the rule's and the loss's names, the schedule's name with its η or horizon T,
/// and `losses` for losses given directly; the number of experts is not part of it (a
/// checkpoint checks it against its own ledger).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AggregatorConfig {
    /// The rule.
    pub rule: Rule,
    /// The learning rate (recorded as `rate`, the schedule's name, then `eta` and
    /// `horizon`).
    #[serde(flatten, serialize_with = "rate_by_name")]
    pub rate: LearningRate,
    /// β = e^{−η} of the binary rules with a fixed rate.
    pub beta: Option<f64>,
    /// The loss (recorded by its name).
    #[serde(serialize_with = "loss_by_name")]
    pub loss: Loss,
    /// The loss range B, if any.
    pub loss_bound: Option<f64>,
    /// EWA's gradient trick.
    pub gradient: bool,
    /// Prior weights.
    pub prior: Option<Vec<f64>>,
    /// Hedge's sampling.
    pub sample: bool,
    /// Losses given directly.
    #[serde(rename = "losses")]
    pub losses_given: bool,
    /// The number of experts.
    #[serde(skip_serializing)]
    pub n_experts: usize,
    /// The seed.
    pub seed: u64,
    /// Fixed share's α.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Ridge's λ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// FTRL's regulariser.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regulariser: Option<Regulariser>,
}

/// A learning rate by name: the schedule, η of a fixed rate, T of a rate tuned for a
/// horizon.
fn rate_by_name<S: serde::Serializer>(
    rate: &LearningRate,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct ByName {
        rate: &'static str,
        eta: Option<f64>,
        horizon: Option<u64>,
    }
    ByName {
        rate: rate.name(),
        eta: match *rate {
            LearningRate::Fixed(eta) => Some(eta),
            _ => None,
        },
        horizon: match *rate {
            LearningRate::Horizon(horizon) => Some(horizon),
            _ => None,
        },
    }
    .serialize(serializer)
}

fn loss_by_name<S: serde::Serializer>(
    loss: &Loss,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(&loss.name())
}

impl AggregatorConfig {
    /// Builds the rule (its own parameters checked).
    pub fn build(&self) -> Result<AnyAggregator> {
        let n = self.n_experts;
        Ok(match self.rule {
            Rule::Wm => AnyAggregator::Wm(
                WeightedMajorityParams::new(n)
                    .beta(self.beta.unwrap_or(0.5))
                    .check()?
                    .build(),
            ),
            Rule::Rwm => {
                let params = RandomizedWeightedMajorityParams::new(n).seed(self.seed);
                let params = match self.beta {
                    Some(beta) => params.beta(beta),
                    None => params.learning_rate(self.rate),
                };
                AnyAggregator::Rwm(params.check()?.build())
            }
            Rule::Hedge => {
                let params = HedgeParams {
                    loss_bound: self.loss_bound,
                    prior: self.prior.clone(),
                    ..HedgeParams::new(n)
                };
                let params = params
                    .learning_rate(self.rate)
                    .sample(self.sample)
                    .seed(self.seed);
                AnyAggregator::Hedge(params.check()?.build())
            }
            Rule::Ewa => {
                let params = EwaParams {
                    loss_bound: self.loss_bound,
                    prior: self.prior.clone(),
                    ..EwaParams::new(n)
                };
                let params = params
                    .loss(self.loss)
                    .learning_rate(self.rate)
                    .gradient(self.gradient);
                AnyAggregator::Ewa(params.check()?.build())
            }
            Rule::Fpl => {
                let bound = self.loss_bound.ok_or_else(|| {
                    Error::invalid_parameter("loss_bound", "rule fpl needs the loss range B")
                })?;
                let params = FplParams::new(n, bound)
                    .learning_rate(self.rate)
                    .expected_loss(true)
                    .seed(self.seed);
                AnyAggregator::Fpl(params.check()?.build())
            }
            Rule::FixedShare => {
                let LearningRate::Fixed(eta) = self.rate else {
                    return Err(Error::invalid_parameter(
                        "eta",
                        "rule fixed-share needs a fixed η",
                    ));
                };
                let mut params = FixedShareParams::new(n, eta, self.alpha.unwrap_or(0.0))
                    .loss(self.loss)
                    .gradient(self.gradient);
                params.loss_bound = self.loss_bound;
                AnyAggregator::FixedShare(params.check()?.build())
            }
            Rule::Mlpol => AnyAggregator::Mlpol(
                MlPolyParams::new(n)
                    .loss(self.loss)
                    .gradient(self.gradient)
                    .check()?
                    .build(),
            ),
            Rule::Mlprod => {
                let mut params = MlProdParams::new(n).loss(self.loss).gradient(self.gradient);
                params.loss_bound = self.loss_bound;
                AnyAggregator::Mlprod(params.check()?.build())
            }
            Rule::Mlewa => AnyAggregator::Mlewa(
                MlEwaParams::new(n)
                    .loss(self.loss)
                    .gradient(self.gradient)
                    .check()?
                    .build(),
            ),
            Rule::Boa => {
                let mut params = BoaParams::new(n).loss(self.loss).gradient(self.gradient);
                params.loss_bound = self.loss_bound;
                AnyAggregator::Boa(params.check()?.build())
            }
            Rule::Ftrl | Rule::Ogd => {
                let LearningRate::Fixed(eta) = self.rate else {
                    return Err(Error::invalid_parameter(
                        "eta",
                        format!("rule {} needs a fixed η", self.rule.name()),
                    ));
                };
                if self.rule == Rule::Ogd {
                    AnyAggregator::Ogd(
                        OnlineGradientDescentParams::new(n, eta)
                            .loss(self.loss)
                            .check()?
                            .build(),
                    )
                } else {
                    AnyAggregator::Ftrl(
                        FtrlParams::new(n, eta)
                            .regulariser(self.regulariser.unwrap_or(Regulariser::Quadratic))
                            .loss(self.loss)
                            .check()?
                            .build(),
                    )
                }
            }
            Rule::Ridge => {
                let lambda = self.lambda.ok_or_else(|| {
                    Error::invalid_parameter("lambda", "rule ridge needs its penalty λ")
                })?;
                AnyAggregator::Ridge(OnlineRidgeParams::new(n, lambda).check()?.build())
            }
        })
    }
}

/// One round of an aggregation run as every front-end writes it: the step, with the
/// learner's cumulative loss, the best expert's loss and the rule's bound on the regret
/// against that expert after the round (the command line's `--output`, the dataflow
/// operators' keyed records).
///
/// ```
/// use pacstream::experts::{AdviceRound, Aggregator, AggregatorParams, AggregatorRecord, Rule};
///
/// let config = AggregatorParams::new(Rule::Ewa, 2).check().unwrap();
/// let mut ewa = config.build().unwrap();
/// let step = ewa.learn_advice(AdviceRound::new(&[0.0, 1.0], 1.0), config.loss).unwrap();
/// let record = AggregatorRecord::new(&ewa, &step);
/// assert_eq!(record.t, 1);
/// assert_eq!(record.cumulative_loss, ewa.ledger().learner_loss());
/// // FIELDS names every field, in the order they are written.
/// let json = serde_json::to_string(&record).unwrap();
/// let at: Vec<usize> = AggregatorRecord::FIELDS
///     .iter()
///     .map(|name| json.find(&format!("\"{name}\":")).unwrap())
///     .collect();
/// assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{json}");
/// assert_eq!(json.matches("\":").count(), AggregatorRecord::FIELDS.len());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AggregatorRecord {
    /// The round index (1-based).
    pub t: u64,
    /// The prediction (none for the rules that choose an expert).
    pub prediction: Option<f64>,
    /// The loss the regret bound is about (see [`ExpertStep::loss`]).
    pub loss: f64,
    /// The loss of the random draw, for the randomised rules.
    pub realised_loss: Option<f64>,
    /// The expert drawn or chosen.
    pub chosen: Option<usize>,
    /// The learner's cumulative loss after the round.
    pub cumulative_loss: f64,
    /// The best expert so far.
    pub best_expert: usize,
    /// Its cumulative loss.
    pub best_expert_loss: f64,
    /// The regret against it.
    pub regret: f64,
    /// The rule's bound on that regret for exactly these settings, if a theorem gives one.
    pub regret_bound: Option<f64>,
}

impl AggregatorRecord {
    /// The fields' names, in the order they are serialised.
    pub const FIELDS: [&'static str; 10] = [
        "t",
        "prediction",
        "loss",
        "realised_loss",
        "chosen",
        "cumulative_loss",
        "best_expert",
        "best_expert_loss",
        "regret",
        "regret_bound",
    ];

    /// The record of `step`, which `aggregator` has just played.
    pub fn new(aggregator: &(impl Aggregator + ?Sized), step: &ExpertStep) -> Self {
        let ledger = aggregator.ledger();
        Self {
            t: step.round,
            prediction: step.prediction,
            loss: step.loss,
            realised_loss: step.realised_loss,
            chosen: step.chosen,
            cumulative_loss: ledger.learner_loss(),
            best_expert: step.best_expert,
            best_expert_loss: ledger.expert_losses()[step.best_expert],
            regret: step.regret,
            regret_bound: aggregator.regret_bound_against(step.best_expert).value(),
        }
    }
}

/// What one expert ends a run with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExpertSummary<'a> {
    /// The expert's name.
    pub name: &'a str,
    /// Its cumulative loss (on its awake rounds).
    pub cumulative_loss: f64,
    /// The learner's regret against it.
    pub regret_against: f64,
    /// The rule's bound on the regret against this expert, if a theorem gives one.
    pub regret_bound: Option<f64>,
    /// Its weight for the next round.
    pub final_weight: f64,
}

/// What an aggregation run ends with: the totals, the regret against the best expert and
/// its bound (labelled with what it bounds, under which theorem, or why there is none), and
/// every expert's loss, regret, bound and weight.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AggregatorSummary<'a> {
    /// Rounds played.
    pub rounds: u64,
    /// The learner's cumulative loss.
    pub cumulative_loss: f64,
    /// The best expert in hindsight.
    pub best_expert: &'a str,
    /// Its cumulative loss.
    pub best_expert_loss: f64,
    /// The regret against it.
    pub regret: f64,
    /// The rule's bound on that regret (for FPL and RWM, on the expected regret), or none.
    pub regret_bound: Option<f64>,
    /// What the regret is: the regret of the learner's loss, or its expected regret
    /// (randomised rules).
    #[serde(rename = "regret_is")]
    pub guarantee_bounded: Bounded,
    /// What the bound bounds and under which theorem, or why there is none.
    pub guarantee: Guarantee,
    /// Rounds where a loss fell outside the range the bound assumes.
    pub out_of_range_rounds: u64,
    /// The loss range the bound assumes (1 for the zero-one loss), if any.
    pub loss_bound: Option<f64>,
    /// Every expert, in order.
    pub experts: Vec<ExpertSummary<'a>>,
}

impl AggregatorConfig {
    /// The summary of `aggregator`, built from these settings, its experts called `names`
    /// (one per expert).
    ///
    /// # Panics
    /// If `names` does not name every expert.
    pub fn summary<'a>(
        &self,
        aggregator: &dyn Aggregator,
        names: &'a [String],
    ) -> AggregatorSummary<'a> {
        let ledger = aggregator.ledger();
        let (best, regret) = ledger.best_expert();
        let weights = aggregator.weights();
        let guarantee = aggregator.regret_bound();
        AggregatorSummary {
            rounds: aggregator.rounds(),
            cumulative_loss: ledger.learner_loss(),
            best_expert: &names[best],
            best_expert_loss: ledger.expert_losses()[best],
            regret,
            regret_bound: guarantee.value(),
            guarantee_bounded: guarantee.bounded(),
            guarantee,
            out_of_range_rounds: aggregator.out_of_range_rounds(),
            loss_bound: self.loss_bound,
            experts: names
                .iter()
                .enumerate()
                .map(|(i, name)| ExpertSummary {
                    name,
                    cumulative_loss: ledger.expert_losses()[i],
                    regret_against: ledger.regret_against(i),
                    regret_bound: aggregator.regret_bound_against(i).value(),
                    final_weight: weights[i],
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule through the trait gives what the rule itself gives, round by round.
    #[test]
    fn the_trait_plays_as_the_rule_does() {
        let rounds: [(&[f64], f64); 4] = [
            (&[1.0, 0.0, 1.0], 1.0),
            (&[0.0, 0.0, 1.0], 0.0),
            (&[1.0, 1.0, 0.0], 1.0),
            (&[0.0, 1.0, 1.0], 1.0),
        ];
        for rule in [
            Rule::Wm,
            Rule::Rwm,
            Rule::Hedge,
            Rule::Ewa,
            Rule::Fpl,
            Rule::FixedShare,
            Rule::Mlpol,
            Rule::Mlprod,
            Rule::Mlewa,
            Rule::Boa,
            Rule::Ftrl,
            Rule::Ogd,
            Rule::Ridge,
        ] {
            let mut params = AggregatorParams::new(rule, 3).seed(3);
            if matches!(rule, Rule::Ftrl | Rule::Ogd) {
                params = params.rate(LearningRate::Fixed(0.5));
            }
            if rule == Rule::Ridge {
                params = params.lambda(1.0);
            }
            if rule == Rule::Fpl {
                params = params.rate(LearningRate::Fixed(0.5)).loss_bound(1.0);
            }
            if rule == Rule::FixedShare {
                params = params.rate(LearningRate::Fixed(0.5)).alpha(0.1);
            }
            let config = params.check().unwrap();
            let mut any = config.build().unwrap();
            let mut direct = config.build().unwrap();
            for (advice, outcome) in rounds {
                let round = AdviceRound::new(advice, outcome);
                let step = any.learn_advice(round, config.loss).unwrap();
                let losses: Vec<f64> = advice
                    .iter()
                    .map(|&a| config.loss.value(a, outcome))
                    .collect();
                let expected = match &mut direct {
                    AnyAggregator::Wm(r) => r.learn_one(round),
                    AnyAggregator::Rwm(r) => r.learn_one(round),
                    AnyAggregator::Ewa(r) => r.learn_one(round),
                    AnyAggregator::FixedShare(r) => r.learn_one(round),
                    AnyAggregator::Mlpol(r) => r.learn_one(round),
                    AnyAggregator::Mlprod(r) => r.learn_one(round),
                    AnyAggregator::Mlewa(r) => r.learn_one(round),
                    AnyAggregator::Boa(r) => r.learn_one(round),
                    AnyAggregator::Ftrl(r) => r.learn_one(round),
                    AnyAggregator::Ogd(r) => r.learn_one(round),
                    AnyAggregator::Ridge(r) => r.learn_one(round),
                    AnyAggregator::Hedge(r) => r.learn_one(LossRound::new(&losses)),
                    AnyAggregator::Fpl(r) => r.learn_one(LossRound::new(&losses)),
                }
                .unwrap();
                assert_eq!(step, expected, "{rule:?}");
            }
            assert_eq!(any.rule(), rule);
            assert_eq!(any.rounds(), 4);
            assert_eq!(any.weights(), direct.as_dyn().weights());
            assert_eq!(any.regret_bound(), direct.as_dyn().regret_bound());
        }
    }

    /// A sleeping expert's advice is not read (an empty cell is NaN): the round is played
    /// as the losses of the awake experts, whatever the sleeper's advice.
    #[test]
    fn sleeping_experts_advice_is_not_read() {
        let config = AggregatorParams::new(Rule::Hedge, 2)
            .loss_bound(10.0)
            .check()
            .unwrap();
        let mut from_advice = config.build().unwrap();
        let mut from_losses = config.build().unwrap();
        let awake = [true, false];
        let round = AdviceRound {
            advice: &[3.0, f64::NAN],
            outcome: 1.0,
            awake: Some(&awake),
        };
        let step = from_advice.learn_advice(round, Loss::Square).unwrap();
        let expected = from_losses
            .learn_losses(LossRound {
                losses: &[4.0, 0.0],
                awake: Some(&awake),
            })
            .unwrap();
        assert_eq!(step, expected);
        assert_eq!(from_advice.weights(), from_losses.weights());
        assert_eq!(from_advice.ledger().expert_losses(), &[4.0, 0.0]);
    }

    /// The rules that learn from advice refuse losses; the settings a rule does not take
    /// are refused by name.
    #[test]
    fn settings_a_rule_does_not_take_are_refused() {
        let mut wm = AggregatorParams::new(Rule::Wm, 2)
            .check()
            .unwrap()
            .build()
            .unwrap();
        let error = wm.learn_losses(LossRound::new(&[0.0, 1.0])).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidParameter { name: "losses", .. }
        ));
        assert_eq!(wm.rounds(), 0);
        let refused = |params: AggregatorParams, name: &str| match params.check() {
            Err(Error::InvalidParameter { name: found, .. }) => assert_eq!(found, name),
            other => panic!("{other:?}"),
        };
        refused(
            AggregatorParams::new(Rule::Wm, 2).loss(Loss::Square),
            "loss",
        );
        refused(AggregatorParams::new(Rule::Fpl, 2), "eta");
        refused(
            AggregatorParams::new(Rule::Fpl, 2)
                .rate(LearningRate::Fixed(1.0))
                .loss(Loss::Square),
            "loss_bound",
        );
        refused(
            AggregatorParams::new(Rule::Wm, 2).rate(LearningRate::Doubling),
            "beta",
        );
        refused(
            AggregatorParams::new(Rule::Ewa, 2).losses_given(true),
            "losses",
        );
        refused(
            AggregatorParams::new(Rule::Fpl, 2).gradient(true),
            "gradient",
        );
        refused(
            AggregatorParams::new(Rule::Wm, 2).prior(vec![1.0, 1.0]),
            "prior",
        );
        refused(AggregatorParams::new(Rule::Ewa, 2).sample(true), "sample");
        refused(AggregatorParams::new(Rule::FixedShare, 2).alpha(0.1), "eta");
        refused(
            AggregatorParams::new(Rule::FixedShare, 2).rate(LearningRate::Fixed(1.0)),
            "alpha",
        );
        refused(AggregatorParams::new(Rule::Ewa, 2).alpha(0.1), "alpha");
        refused(
            AggregatorParams::new(Rule::Mlpol, 2).rate(LearningRate::Anytime),
            "eta",
        );
        refused(
            AggregatorParams::new(Rule::Mlpol, 2).loss_bound(1.0),
            "loss_bound",
        );
        refused(
            AggregatorParams::new(Rule::Mlpol, 2).loss(Loss::ZeroOne),
            "loss",
        );
        refused(AggregatorParams::new(Rule::Ogd, 2), "eta");
        refused(AggregatorParams::new(Rule::Ftrl, 2), "eta");
        refused(AggregatorParams::new(Rule::Ridge, 2), "lambda");
        refused(
            AggregatorParams::new(Rule::Ridge, 2)
                .lambda(1.0)
                .loss(Loss::Absolute),
            "loss",
        );
        refused(
            AggregatorParams::new(Rule::Ridge, 2)
                .lambda(1.0)
                .rate(LearningRate::Fixed(1.0)),
            "eta",
        );
        refused(AggregatorParams::new(Rule::Ewa, 2).lambda(1.0), "lambda");
        refused(
            AggregatorParams::new(Rule::Ogd, 2)
                .rate(LearningRate::Fixed(1.0))
                .regulariser(Regulariser::Entropic),
            "regulariser",
        );
        refused(
            AggregatorParams::new(Rule::Ogd, 2)
                .rate(LearningRate::Fixed(1.0))
                .loss_bound(1.0),
            "loss_bound",
        );
        let mut ogd = AggregatorParams::new(Rule::Ogd, 2).rate(LearningRate::Fixed(1.0));
        ogd.gradient = true;
        refused(ogd, "gradient");
        for rule in [Rule::Mlprod, Rule::Mlewa, Rule::Boa] {
            refused(
                AggregatorParams::new(rule, 2).rate(LearningRate::Fixed(1.0)),
                "eta",
            );
            refused(AggregatorParams::new(rule, 2).loss(Loss::ZeroOne), "loss");
            refused(AggregatorParams::new(rule, 2).alpha(0.1), "alpha");
        }
        refused(
            AggregatorParams::new(Rule::Mlewa, 2).loss_bound(1.0),
            "loss_bound",
        );
        for rule in [Rule::Mlprod, Rule::Boa] {
            assert!(
                AggregatorParams::new(rule, 2)
                    .loss_bound(1.0)
                    .check()
                    .is_ok()
            );
        }
    }

    /// A config serialises as the settings by name, in the order and with the names a
    /// checkpoint has recorded since before `AggregatorSettings` was folded into it: a
    /// checkpoint written then must resume, so these bytes must not change.
    #[test]
    fn the_settings_a_checkpoint_records_keep_their_bytes() {
        let json =
            |params: AggregatorParams| serde_json::to_string(&params.check().unwrap()).unwrap();
        assert_eq!(
            json(AggregatorParams::new(Rule::Wm, 9).rate(LearningRate::beta(0.8).unwrap())),
            r#"{"rule":"wm","rate":"fixed","eta":0.2231435513142097,"horizon":null,"beta":0.8,"loss":"zero-one","loss_bound":1.0,"gradient":false,"prior":null,"sample":false,"losses":false,"seed":0}"#
        );
        assert_eq!(
            json(
                AggregatorParams::new(Rule::Ewa, 6)
                    .rate(LearningRate::Horizon(1839))
                    .loss(Loss::Absolute)
                    .loss_bound(400.0)
                    .gradient(true)
                    .prior(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
            ),
            r#"{"rule":"ewa","rate":"horizon","eta":null,"horizon":1839,"beta":null,"loss":"absolute","loss_bound":400.0,"gradient":true,"prior":[1.0,2.0,3.0,4.0,5.0,6.0],"sample":false,"losses":false,"seed":0}"#
        );
        assert_eq!(
            json(
                AggregatorParams::new(Rule::Hedge, 3)
                    .rate(LearningRate::Anytime)
                    .loss(Loss::Pinball { tau: 0.3 })
                    .loss_bound(200.0)
                    .sample(true)
                    .seed(5)
            ),
            r#"{"rule":"hedge","rate":"anytime","eta":null,"horizon":null,"beta":null,"loss":"pinball:0.3","loss_bound":200.0,"gradient":false,"prior":null,"sample":true,"losses":false,"seed":5}"#
        );
        assert_eq!(
            json(
                AggregatorParams::new(Rule::Fpl, 2)
                    .rate(LearningRate::Fixed(0.5))
                    .loss_bound(1.0)
                    .losses_given(true)
            ),
            r#"{"rule":"fpl","rate":"fixed","eta":0.5,"horizon":null,"beta":null,"loss":"square","loss_bound":1.0,"gradient":false,"prior":null,"sample":false,"losses":true,"seed":0}"#
        );
        assert_eq!(
            json(
                AggregatorParams::new(Rule::FixedShare, 7)
                    .rate(LearningRate::Fixed(0.0001))
                    .alpha(0.01)
            ),
            r#"{"rule":"fixed-share","rate":"fixed","eta":0.0001,"horizon":null,"beta":null,"loss":"square","loss_bound":null,"gradient":false,"prior":null,"sample":false,"losses":false,"seed":0,"alpha":0.01}"#
        );
    }

    /// The defaults are those the rules' theorems are stated with.
    #[test]
    fn defaults_per_rule() {
        let config = |rule| AggregatorParams::new(rule, 2).check().unwrap();
        let eta = -(0.5_f64.ln());
        assert_eq!(config(Rule::Wm).rate, LearningRate::Fixed(eta));
        assert_eq!(config(Rule::Wm).beta, Some((-eta).exp()));
        assert_eq!(config(Rule::Wm).loss_bound, Some(1.0));
        assert_eq!(config(Rule::Rwm).rate, LearningRate::Doubling);
        assert_eq!(config(Rule::Hedge).rate, LearningRate::AdaHedge);
        assert_eq!(config(Rule::Ewa).loss, Loss::Square);
        assert_eq!(config(Rule::Ewa).loss_bound, None);
    }
}
