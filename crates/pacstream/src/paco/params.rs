//! Parameters of PACBO and their validation.
//!
//! [`PacoParams`] holds raw values; [`PacoParams::check`] turns them into a [`PacoConfig`] or
//! an error naming the bad value; only a config builds a learner ([`PacoConfig::build`]) or
//! runs the batch chain ([`PacoConfig::fit`]). Checks that need data (the dimension, a radius
//! large enough for the data's scale) run when the data arrives.

use serde::{Deserialize, Serialize};

use crate::data::MAX_COORDINATE;
use crate::error::{Error, Result};

/// The smallest radius: R² (and λ's R² in the denominator) must stay a normal number.
pub(crate) const MIN_RADIUS: f64 = 1e-150;

/// The documented upper bounds of PACBO's count parameters (and of η), checked by `check()`
/// before anything is allocated and again when a snapshot is restored. The command line
/// takes the same bounds.
pub mod limits {
    /// The largest p = K_max.
    pub const MAX_K: usize = 1_000;
    /// The largest p × d: a clustering of p centres in d dimensions, and the proposal means
    /// kept for each k ≤ p, stay within a few hundred megabytes. Checked when the dimension
    /// is known (the first point, or the batch).
    pub const MAX_MODEL_VALUES: usize = 10_000_000;
    /// The largest number of MCMC iterations per round.
    pub const MAX_ITERATIONS: usize = 1_000_000;
    /// The largest warm-up, in points.
    pub const MAX_WARMUP: usize = 1_000_000;
    /// The largest window W, in points.
    pub const MAX_WINDOW: usize = 100_000_000;
    /// The largest η: the prior's odds of one more cluster, e^{−η}, are below 10⁻⁴³ already
    /// at η = 100, and e^{−ηk} must not underflow for every k (the prior is normalised over
    /// k ≤ p).
    pub const MAX_ETA: f64 = 100.0;
}

use limits::{MAX_ETA, MAX_ITERATIONS, MAX_K, MAX_MODEL_VALUES, MAX_WARMUP, MAX_WINDOW};

/// The radius R that bounds the centred data, ‖x_t − μ_0‖ ≤ R: `Given` in the units of the
/// data (after [`PacoParams::scale`], which requires `Auto`), or `Auto`, 1.5 × the largest
/// ‖x − μ_0‖ among the warm-up points, which are buffered and not predicted (see
/// [`PacoParams::warmup`]).
pub use crate::data::Radius;

/// Which past points enter S_t, the proposal means and n_t.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Memory {
    /// Every past point: S_t is the paper's cumulative loss and the bound of its corollary
    /// applies (for the ideal sampler). The word of the principal curves' memory; written
    /// `Exact` in snapshots, its name before (both load).
    #[serde(rename = "Exact", alias = "All")]
    All,
    /// Only the last W points, and n_t = min(t, W) in λ_t and τ_t: the cost of a round is
    /// bounded and the model forgets. The regret guarantee is for `All` only.
    Window(usize),
}

/// How S_t and the proposal means are computed over the memory. Both ways compute the
/// same quantities; they differ in the order of the floating-point sums (so the chains
/// agree in law, not bit for bit) and in their cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Summation {
    /// On the spatial index (k-d trees with per-node moments, the filtering algorithm and
    /// per-round robust covers) when it pays: d ≤ 24 and enough points in memory (from
    /// 16,384 points at d ≤ 2, 4,096 at d ≤ 4, 2,048 beyond: see `docs/paco-calibration.md`),
    /// except for the rounds after one on which the index did more work than the scan
    /// would have (clusters a few standard deviations apart): those are summed point by
    /// point for 16 rounds, then the index is tried again, the fallback doubling each time
    /// it is confirmed, up to 1,024 rounds. Point by point otherwise. A function of the run
    /// only (no clock), so as deterministic as the other two.
    #[default]
    Auto,
    /// Point by point, always (the linear scan; the reference of the benchmarks).
    PointByPoint,
    /// On the index whenever d ≤ 24, however few the points (for measuring where the index
    /// starts to pay).
    Index,
}

/// The scale σ_j of the Student-t proposal of each centre.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ProposalScale {
    /// σ_j = b / √(2 λ_t max(n_j, 1)), n_j the number of points in memory assigned to the
    /// proposal mean m_j: the width of the quasi-posterior of one centre, so that moves on k
    /// are priced by the target's Occam factor rather than by the proposal's.
    #[default]
    Laplace,
    /// σ_j = √2 · τ_t, τ_t = b · R / √(p n_t): the τ = 1/√(pt) of Li, Guedj & Loustau (2018)
    /// in units of R (the density's (1 + ‖c − m‖²/(6τ²)) form). Much narrower than the
    /// quasi-posterior for large t, so that the number of clusters found is set mostly by b;
    /// kept for fidelity. (Named `Seed` before; snapshots with that name still load.)
    #[serde(alias = "Seed")]
    #[cfg_attr(feature = "clap", value(alias = "seed"))]
    Paper,
}

impl ProposalScale {
    /// The name used in the command line and reports.
    pub fn name(self) -> &'static str {
        match self {
            ProposalScale::Laplace => "laplace",
            ProposalScale::Paper => "paper",
        }
    }
}

/// Parameters of PACBO (online) and of its batch chain.
///
/// ```
/// use pacstream::paco::PacoParams;
/// use pacstream::OnlineLearner;
///
/// // Two groups on a line. R is `auto`: the first 20 points are a warm-up.
/// let mut learner = PacoParams::new().warmup(20).iterations(200).seed(7).check()?.build();
/// for t in 0..300 {
///     let x = if t % 2 == 0 { -5.0 } else { 5.0 } + 0.1 * (t % 7) as f64;
///     learner.learn_one(&[x])?;
/// }
/// assert_eq!(learner.n_clusters(), Some(2));
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacoParams {
    max_k: usize,
    radius: Radius,
    center: Option<bool>,
    scale: bool,
    warmup: usize,
    eta: f64,
    coeff: f64,
    proposal: ProposalScale,
    proposal_scale: Option<f64>,
    iterations: usize,
    memory: Memory,
    restart: bool,
    seed: u64,
    summation: Summation,
}

impl Default for PacoParams {
    fn default() -> Self {
        Self::new()
    }
}

/// The calibrated default of the temperature multiplier a (`coeff`); see
/// `docs/paco-calibration.md`. Larger values find clusters sooner but make the variance term
/// of S_t anchor the model to its past losses (a point it predicted badly keeps penalising
/// clusterings that fit it), which slows the following of a stream whose clusters change.
pub const DEFAULT_COEFF: f64 = 20.0;

/// The calibrated default of the prior's price of one cluster η (q(k) ∝ e^{−ηk}).
pub const DEFAULT_ETA: f64 = 4.0;

/// The calibrated default of the proposal scale multiplier b for each rule.
pub fn default_proposal_scale(rule: ProposalScale) -> f64 {
    match rule {
        ProposalScale::Laplace => 1.0,
        ProposalScale::Paper => 4.0,
    }
}

impl PacoParams {
    /// The defaults: p = 50, R `auto` with centring and 50 warm-up points,
    /// η = [`DEFAULT_ETA`], a = [`DEFAULT_COEFF`], the Laplace proposal with
    /// b = [`default_proposal_scale`], N = 500 iterations per round, exact memory, warm start,
    /// seed 0. The spec's starting values were η = a = b = 1; the calibration on simulated
    /// mixtures (`docs/paco-calibration.md`) moved η and a.
    pub fn new() -> Self {
        Self {
            max_k: 50,
            radius: Radius::Auto,
            center: None,
            scale: false,
            warmup: 50,
            eta: DEFAULT_ETA,
            coeff: DEFAULT_COEFF,
            proposal: ProposalScale::Laplace,
            proposal_scale: None,
            iterations: 500,
            memory: Memory::All,
            restart: false,
            seed: 0,
            summation: Summation::Auto,
        }
    }

    setters! {
        /// p = K_max, the largest number of clusters.
        max_k: usize;
        /// The radius R (given or `auto`).
        radius: Radius;
        /// Whether the data are centred on the mean μ_0 of the warm-up points (default: on when
        /// R is `auto`, off when it is given). With R given and centring on, the warm-up points
        /// are buffered to compute μ_0.
        center: Option<bool>;
        /// Standardise the columns by their standard deviations over the warm-up points, then
        /// frozen (requires R `auto`: a given R would be in units the data do not have yet).
        /// Losses are then in standardised units; centres are reported in the data's units.
        scale: bool;
        /// The number of warm-up points buffered (not predicted) to fix μ_0, R and the scales,
        /// when any of them is taken from the data.
        warmup: usize;
        /// η ≥ 0 in the prior q(k) ∝ e^{−ηk}.
        eta: f64;
        /// The temperature multiplier a > 0: λ_t = a (d + 2) / (2 √n_t R²). The paper states its
        /// corollary for a = 1; its proof gives a bound for every a ([`super::bounds`]).
        coeff: f64;
        /// The proposal scale rule.
        proposal: ProposalScale;
        /// The multiplier b > 0 of the proposal scale (default: [`default_proposal_scale`] of
        /// the rule).
        proposal_scale: Option<f64>;
        /// N, the number of RJMCMC iterations per round.
        iterations: usize;
        /// Every point (`Memory::All`) or a window of the last W points.
        memory: Memory;
        /// Start each round's chain from the proposal means of the current number of clusters
        /// (the R package's behaviour) instead of the previous round's state.
        restart: bool;
        /// The seed of the random number generator.
        seed: u64;
        /// How S_t and the proposal means are computed (default [`Summation::Auto`]).
        summation: Summation;
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<PacoConfig> {
        Error::check_count("max_k", self.max_k, 1, MAX_K)?;
        if let Radius::Given(radius) = self.radius {
            // Centres live in the ball of radius 2R, and every centre must be a valid
            // coordinate vector (within ±MAX_COORDINATE); R² must stay a normal number.
            if !(radius.is_finite() && (MIN_RADIUS..=MAX_COORDINATE / 4.0).contains(&radius)) {
                return Err(Error::invalid_parameter(
                    "radius",
                    format!(
                        "must be in [{MIN_RADIUS:e}, {:e}], got {radius:?}",
                        MAX_COORDINATE / 4.0
                    ),
                ));
            }
        }
        let center = self.center.unwrap_or(self.radius == Radius::Auto);
        if self.scale && self.radius != Radius::Auto {
            return Err(Error::invalid_parameter(
                "scale",
                "standardising the columns needs radius `auto` (a given radius would be in \
                 units the data do not have until the warm-up is over)",
            ));
        }
        let needs_warmup = self.radius == Radius::Auto || center || self.scale;
        if needs_warmup && self.warmup == 0 {
            return Err(Error::invalid_parameter(
                "warmup",
                "must be >= 1 when the radius, the centre or the scales come from the data, got 0",
            ));
        }
        Error::check_count("warmup", self.warmup, 0, MAX_WARMUP)?;
        if !(self.eta.is_finite() && (0.0..=MAX_ETA).contains(&self.eta)) {
            return Err(Error::invalid_parameter(
                "eta",
                format!("must be in [0, {MAX_ETA}], got {:?}", self.eta),
            ));
        }
        let proposal_scale = self
            .proposal_scale
            .unwrap_or_else(|| default_proposal_scale(self.proposal));
        for (name, value) in [("coeff", self.coeff), ("proposal_scale", proposal_scale)] {
            // Bounded so that λ_t and σ_j stay far from overflow and underflow.
            if !(value.is_finite() && (1e-12..=1e12).contains(&value)) {
                return Err(Error::invalid_parameter(
                    name,
                    format!("must be in [1e-12, 1e12], got {value:?}"),
                ));
            }
        }
        Error::check_count("iterations", self.iterations, 1, MAX_ITERATIONS)?;
        if let Memory::Window(window) = self.memory {
            Error::check_count("window", window, 1, MAX_WINDOW)?;
        }
        Ok(PacoConfig {
            max_k: self.max_k,
            radius: self.radius,
            center,
            scale: self.scale,
            warmup: if needs_warmup { self.warmup } else { 0 },
            eta: self.eta,
            coeff: self.coeff,
            proposal: self.proposal,
            proposal_scale,
            iterations: self.iterations,
            memory: self.memory,
            restart: self.restart,
            seed: self.seed,
            summation: self.summation,
        })
    }
}

/// Validated parameters of PACBO: [`PacoConfig::build`] makes the online learner,
/// [`PacoConfig::fit`] runs the batch chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct PacoConfig {
    pub(crate) max_k: usize,
    pub(crate) radius: Radius,
    pub(crate) center: bool,
    pub(crate) scale: bool,
    /// The number of warm-up points, 0 when nothing is taken from the data.
    pub(crate) warmup: usize,
    pub(crate) eta: f64,
    pub(crate) coeff: f64,
    pub(crate) proposal: ProposalScale,
    pub(crate) proposal_scale: f64,
    pub(crate) iterations: usize,
    pub(crate) memory: Memory,
    pub(crate) restart: bool,
    pub(crate) seed: u64,
    #[serde(default)]
    pub(crate) summation: Summation,
}

// A config read from JSON is checked again, like one made by `PacoParams::check`.
validated_snapshot!(PacoConfig);

impl PacoConfig {
    /// Checks that p clusters in `dim` dimensions fit [`limits::MAX_MODEL_VALUES`]; run when
    /// the dimension is known, before anything of that size is allocated.
    pub fn check_dim(&self, dim: usize) -> Result<()> {
        match self.max_k.checked_mul(dim) {
            Some(size) if size <= MAX_MODEL_VALUES => Ok(()),
            _ => {
                let largest = MAX_MODEL_VALUES / dim.max(1);
                let remedy = if largest >= 1 {
                    format!("lower p to at most {largest}, or use fewer columns")
                } else {
                    format!("use at most {MAX_MODEL_VALUES} columns")
                };
                Err(Error::invalid_parameter(
                    "max_k",
                    format!(
                        "p × d must be at most {MAX_MODEL_VALUES}: p = {} clusters in d = {dim} \
                         dimensions is too large ({remedy})",
                        self.max_k
                    ),
                ))
            }
        }
    }

    /// p = K_max.
    pub fn max_k(&self) -> usize {
        self.max_k
    }
    /// The radius setting.
    pub fn radius(&self) -> Radius {
        self.radius
    }
    /// Whether the data are centred on the warm-up mean.
    pub fn center(&self) -> bool {
        self.center
    }
    /// Whether the columns are standardised.
    pub fn scale(&self) -> bool {
        self.scale
    }
    /// The number of warm-up points buffered before the first prediction (0: none, round 1
    /// is predicted by a draw from the prior).
    pub fn warmup(&self) -> usize {
        self.warmup
    }
    /// η.
    pub fn eta(&self) -> f64 {
        self.eta
    }
    /// The temperature multiplier a.
    pub fn coeff(&self) -> f64 {
        self.coeff
    }
    /// The proposal scale rule.
    pub fn proposal(&self) -> ProposalScale {
        self.proposal
    }
    /// The proposal scale multiplier b.
    pub fn proposal_scale(&self) -> f64 {
        self.proposal_scale
    }
    /// N, iterations per round.
    pub fn iterations(&self) -> usize {
        self.iterations
    }
    /// The memory mode.
    pub fn memory(&self) -> Memory {
        self.memory
    }
    /// Whether each round restarts from the proposal means.
    pub fn restart(&self) -> bool {
        self.restart
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// How S_t and the proposal means are computed.
    pub fn summation(&self) -> Summation {
        self.summation
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        let mut params = PacoParams::new()
            .max_k(self.max_k)
            .radius(self.radius)
            .center(self.center)
            .scale(self.scale)
            .eta(self.eta)
            .coeff(self.coeff)
            .proposal(self.proposal)
            .proposal_scale(self.proposal_scale)
            .iterations(self.iterations)
            .memory(self.memory)
            .restart(self.restart)
            .seed(self.seed)
            .summation(self.summation);
        if self.warmup > 0 {
            params = params.warmup(self.warmup);
        }
        let checked = params.check()?;
        if checked.warmup != self.warmup {
            return Err(Error::InvalidSnapshot(
                "PACBO settings: the warm-up length contradicts the radius and centring".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_parameter() {
        for (params, name) in [
            (PacoParams::new().max_k(0), "max_k"),
            (PacoParams::new().radius(Radius::Given(-1.0)), "radius"),
            (PacoParams::new().radius(Radius::Given(f64::NAN)), "radius"),
            (
                PacoParams::new().radius(Radius::Given(1.0)).scale(true),
                "scale",
            ),
            (PacoParams::new().warmup(0), "warmup"),
            (PacoParams::new().eta(-0.5), "eta"),
            (PacoParams::new().coeff(0.0), "coeff"),
            (
                PacoParams::new().proposal_scale(f64::INFINITY),
                "proposal_scale",
            ),
            (PacoParams::new().iterations(0), "iterations"),
            (PacoParams::new().memory(Memory::Window(0)), "window"),
        ] {
            let err = params.check().unwrap_err();
            assert!(err.to_string().contains(name), "{name}: {err}");
        }
    }

    #[test]
    fn defaults_follow_the_spec() {
        let config = PacoParams::new().check().unwrap();
        assert_eq!(config.max_k(), 50);
        assert_eq!(config.radius(), Radius::Auto);
        assert!(config.center());
        assert_eq!(config.warmup(), 50);
        assert_eq!(config.iterations(), 500);
        assert_eq!(config.proposal(), ProposalScale::Laplace);
        assert_eq!(config.memory(), Memory::All);
        let given = PacoParams::new()
            .radius(Radius::Given(3.0))
            .check()
            .unwrap();
        assert!(!given.center());
        assert_eq!(given.warmup(), 0, "round 1 is drawn from the prior");
        let centred = PacoParams::new()
            .radius(Radius::Given(3.0))
            .center(true)
            .warmup(5)
            .check()
            .unwrap();
        assert_eq!(centred.warmup(), 5);
        centred.validate_snapshot().unwrap();
    }
}
