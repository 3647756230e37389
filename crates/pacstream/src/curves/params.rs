//! Parameters of the sequential principal curve learner, and their validation.
//!
//! Every choice the spec makes where the paper is silent is a parameter here, with its
//! default; `docs/slpc-calibration.md` records the runs that chose the defaults.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The default of [`PrincipalCurveParams::bin_side`] (`docs/slpc-calibration.md`).
pub const DEFAULT_BIN_SIDE: f64 = 0.5;

/// The default of [`PrincipalCurveParams::max_atoms`] (`docs/slpc-calibration.md`).
pub const DEFAULT_MAX_ATOMS: usize = 1024;

/// The largest [`PrincipalCurveParams::bin_side`]: bins wider than two lattice steps would
/// blur the curve's own resolution.
pub const MAX_BIN_SIDE: f64 = 2.0;

/// The documented upper bounds of the count parameters and of the dimension, checked before
/// anything is allocated (the counts by `check()` and on restoring a snapshot, the dimension
/// when the first point arrives). The command line takes the same bounds.
pub mod limits {
    /// The largest p, the number of segments.
    pub const MAX_SEGMENTS: usize = 1_000;
    /// The largest M, the size of a window's local vertex set (the m = 2 candidates are the
    /// pairs of it: M² of them per window).
    pub const MAX_LOCAL_VERTICES: usize = 1_024;
    /// The largest number of candidates per round.
    pub const MAX_CANDIDATES: usize = 65_536;
    /// The largest warm-up t_0, in points.
    pub const MAX_WARMUP: usize = 1_000_000;
    /// The largest window W, in points.
    pub const MAX_WINDOW: usize = 100_000_000;
    /// The largest dimension d: each window's principal direction comes from a d × d
    /// covariance matrix (its cost per point grows like d², its eigenvectors like d³), so
    /// the learner is for low-dimensional data.
    pub const MAX_DIM: usize = 100;
}

use limits::{MAX_CANDIDATES, MAX_DIM, MAX_LOCAL_VERTICES, MAX_SEGMENTS, MAX_WARMUP, MAX_WINDOW};

/// R, the radius of the data: points are assumed in B(μ_0, √d R); `Auto` is
/// 1.5 · max ‖x − μ_0‖/√d over the warm-up points.
pub use crate::data::Radius;

/// What the learner observes after each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Feedback {
    /// The paper's Algorithm 3: exploration rounds (probability ε) observe the reward of
    /// every curve, exploitation rounds only that of the chosen curve.
    Bandit,
    /// Every round observes the reward of every candidate on every stored point.
    Full,
}

/// How `bandit` feedback estimates the cumulative reward of curves it did not observe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Estimator {
    /// r̂ = r · I/ε: the exploration rounds' rewards, scaled by 1/ε; unbiased for every
    /// curve, no probabilities needed.
    LabelEfficient,
    /// The paper's estimator: the chosen curve gets r/P(chosen) when P > β, every other
    /// curve α. Biased: with α near c_0 the incumbent is penalised and the curve wanders;
    /// with α = 0 the incumbent locks in.
    Paper,
}

impl Feedback {
    /// The name settings give it (`bandit`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Feedback::Bandit => "bandit",
            Feedback::Full => "full",
        }
    }
}

impl Estimator {
    /// The name settings give it (`label-efficient`, `paper`).
    pub fn name(self) -> &'static str {
        match self {
            Estimator::LabelEfficient => "label-efficient",
            Estimator::Paper => "paper",
        }
    }
}

/// Which past points the learner keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Memory {
    /// Every point of the stream.
    All,
    /// The last W points (W ≥ 2): constant memory and constant cost per point.
    Window(usize),
}

/// Parameters of [`super::PrincipalCurveLearner`].
///
/// ```
/// use pacstream::curves::{Feedback, Memory, PrincipalCurveParams};
///
/// let config = PrincipalCurveParams::new()
///     .feedback(Feedback::Full)
///     .memory(Memory::Window(500))
///     .seed(7)
///     .check()?;
/// assert_eq!(config.max_segments(), 50);
/// assert!(PrincipalCurveParams::new().explore(0.0).check().is_err());
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrincipalCurveParams {
    radius: Radius,
    delta: Option<f64>,
    max_segments: usize,
    max_length: f64,
    penalty: f64,
    eta_scale: f64,
    feedback: Feedback,
    estimator: Estimator,
    explore: f64,
    alpha: Option<f64>,
    local_vertices: usize,
    max_candidates: usize,
    warmup: usize,
    memory: Memory,
    bin_side: f64,
    max_atoms: usize,
    seed: u64,
}

impl Default for PrincipalCurveParams {
    fn default() -> Self {
        Self::new()
    }
}

impl PrincipalCurveParams {
    /// The defaults: R auto, δ = 2√d R/100, p = 50, L = ∞, κ = 1, e_mult = 1000, bandit
    /// feedback with the label-efficient estimator, ε = 0.1, α = c_0/2, M = 16, 256
    /// candidates, t_0 = 20, all points kept in bins of side δ/2 with a budget of 1024
    /// atoms, seed 0. The feedback mode, the estimator, e_mult and the bins were chosen by
    /// the calibration of `docs/slpc-calibration.md` (κ = 1 with e_mult = 1000 acts as
    /// κ = 0.001 at the theory's learning rate).
    pub fn new() -> Self {
        Self {
            radius: Radius::Auto,
            delta: None,
            max_segments: 50,
            max_length: f64::INFINITY,
            penalty: 1.0,
            eta_scale: 1000.0,
            feedback: Feedback::Bandit,
            estimator: Estimator::LabelEfficient,
            explore: 0.1,
            alpha: None,
            local_vertices: 16,
            max_candidates: 256,
            warmup: 20,
            memory: Memory::All,
            bin_side: DEFAULT_BIN_SIDE,
            max_atoms: DEFAULT_MAX_ATOMS,
            seed: 0,
        }
    }

    setters! {
        /// R (`Radius::Auto` by default).
        radius: Radius;
        /// δ, the lattice spacing (default 2√d R/100); must not exceed R.
        delta: Option<f64>;
        /// p, the largest number of segments.
        max_segments: usize;
        /// L, the largest length of a curve (∞ by default).
        max_length: f64;
        /// κ ≥ 0, the multiplier of the penalty h(f) = κ c_1 K(f). Curves are ranked by
        /// η_t R̂_t(f) − h(f) + z_f, so a learning-rate multiplier e_mult ([`Self::eta_scale`])
        /// divides the penalty's weight at the theory's rate: with the default e_mult = 1000,
        /// κ = 1 acts as κ = 0.001 would at e_mult = 1.
        penalty: f64;
        /// e_mult > 0, the multiplier of the learning rate η_t (applied after the cap 1/c_0; see
        /// [`super::learning_rate`]). It scales the reward term against both the penalty and the
        /// perturbation: e_mult = 1000 with κ = 1 ranks curves as the theory's rate would with
        /// κ = 0.001 and perturbations 1000 times smaller.
        eta_scale: f64;
        /// The feedback mode.
        feedback: Feedback;
        /// The estimator of `bandit` feedback.
        estimator: Estimator;
        /// ε ∈ (0, 1], the probability of an exploration round.
        explore: f64;
        /// α ≥ 0, the reward the `paper` estimator gives unobserved curves (default c_0/2).
        alpha: Option<f64>;
        /// M ≥ 2, the size of the local vertex set of a window.
        local_vertices: usize;
        /// The largest number of new candidates per round (the current curve comes on top).
        max_candidates: usize;
        /// t_0 ≥ 2, the number of warm-up points, collected before the first curve.
        warmup: usize;
        /// Which past points are kept.
        memory: Memory;
        /// b ∈ [0, 2]: with every point kept, the points of one weight class in one cube of side
        /// b·δ are merged into one atom (count, mean, scatter matrix), so that the cost of a
        /// round stops growing with t once the data's region is covered; a candidate's score is
        /// then exact except for atoms that straddle the boundary between two parts of a curve
        /// (see the module documentation). 0 keeps every point apart (exact scores, cost growing
        /// with t). Window memory always keeps points apart. Default 1/2.
        bin_side: f64;
        /// The budget of atoms (0: none): with every point kept, whenever the atoms outnumber it
        /// the bins double in side and their atoms merge, so that the cost of a round stays
        /// bounded as t grows, the resolution coarsening instead (see the module
        /// documentation). Default 1024.
        max_atoms: usize;
        /// The seed of every random choice.
        seed: u64;
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<PrincipalCurveConfig> {
        let positive = |name: &'static str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(Error::invalid_parameter(
                    name,
                    format!("must be finite and > 0, got {value:?}"),
                ))
            }
        };
        if let Radius::Given(radius) = self.radius {
            positive("radius", radius)?;
            if radius > crate::data::MAX_COORDINATE {
                return Err(Error::invalid_parameter(
                    "radius",
                    format!(
                        "must be at most {:e}, so that losses stay finite, got {radius:?}",
                        crate::data::MAX_COORDINATE
                    ),
                ));
            }
        }
        if let Some(delta) = self.delta {
            positive("delta", delta)?;
            if let Radius::Given(radius) = self.radius {
                if delta > radius {
                    return Err(Error::invalid_parameter(
                        "delta",
                        format!("must not exceed the radius {radius:?}, got {delta:?}"),
                    ));
                }
            }
        }
        Error::check_count("max_segments", self.max_segments, 1, MAX_SEGMENTS)?;
        if self.max_length.is_nan() || self.max_length <= 0.0 {
            return Err(Error::invalid_parameter(
                "max_length",
                format!("must be > 0 (infinity allowed), got {:?}", self.max_length),
            ));
        }
        if !(self.penalty.is_finite() && self.penalty >= 0.0) {
            return Err(Error::invalid_parameter(
                "penalty",
                format!("must be finite and >= 0, got {:?}", self.penalty),
            ));
        }
        positive("eta_scale", self.eta_scale)?;
        if !(self.explore > 0.0 && self.explore <= 1.0) {
            return Err(Error::invalid_parameter(
                "explore",
                format!("must be in (0, 1], got {:?}", self.explore),
            ));
        }
        if let Some(alpha) = self.alpha {
            if !(alpha.is_finite() && alpha >= 0.0) {
                return Err(Error::invalid_parameter(
                    "alpha",
                    format!("must be finite and >= 0, got {alpha:?}"),
                ));
            }
        }
        Error::check_count("local_vertices", self.local_vertices, 2, MAX_LOCAL_VERTICES)?;
        Error::check_count("max_candidates", self.max_candidates, 1, MAX_CANDIDATES)?;
        Error::check_count("warmup", self.warmup, 2, MAX_WARMUP)?;
        if let Memory::Window(size) = self.memory {
            Error::check_count("window", size, 2, MAX_WINDOW)?;
        }
        if !(0.0..=MAX_BIN_SIDE).contains(&self.bin_side) {
            return Err(Error::invalid_parameter(
                "bin_side",
                format!(
                    "must be in [0, {MAX_BIN_SIDE}] (a fraction of the lattice spacing), got {:?}",
                    self.bin_side
                ),
            ));
        }
        Ok(PrincipalCurveConfig {
            radius: self.radius,
            delta: self.delta,
            max_segments: self.max_segments,
            max_length: self.max_length,
            penalty: self.penalty,
            eta_scale: self.eta_scale,
            feedback: self.feedback,
            estimator: self.estimator,
            explore: self.explore,
            alpha: self.alpha,
            local_vertices: self.local_vertices,
            max_candidates: self.max_candidates,
            warmup: self.warmup,
            memory: self.memory,
            bin_side: self.bin_side,
            max_atoms: self.max_atoms,
            seed: self.seed,
        })
    }
}

/// Validated parameters; [`PrincipalCurveConfig::build`] makes the learner. A config read
/// from JSON is checked again, like one made by [`PrincipalCurveParams::check`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct PrincipalCurveConfig {
    pub(crate) radius: Radius,
    pub(crate) delta: Option<f64>,
    pub(crate) max_segments: usize,
    // Infinity is written as null in JSON: the snapshot keeps `None` for "no limit".
    #[serde(with = "infinite_as_none")]
    pub(crate) max_length: f64,
    pub(crate) penalty: f64,
    pub(crate) eta_scale: f64,
    pub(crate) feedback: Feedback,
    pub(crate) estimator: Estimator,
    pub(crate) explore: f64,
    pub(crate) alpha: Option<f64>,
    pub(crate) local_vertices: usize,
    pub(crate) max_candidates: usize,
    pub(crate) warmup: usize,
    pub(crate) memory: Memory,
    pub(crate) bin_side: f64,
    pub(crate) max_atoms: usize,
    pub(crate) seed: u64,
}

validated_snapshot!(PrincipalCurveConfig);

impl PrincipalCurveConfig {
    /// Checks the dimension of the data against [`limits::MAX_DIM`]; run when the first
    /// point arrives, before anything of that size is allocated.
    pub fn check_dim(&self, dim: usize) -> Result<()> {
        if dim > MAX_DIM {
            return Err(Error::InconsistentInput(format!(
                "the principal curve learner takes points of at most {MAX_DIM} coordinates, \
                 got {dim}"
            )));
        }
        Ok(())
    }

    /// R.
    pub fn radius(&self) -> Radius {
        self.radius
    }
    /// δ, if given.
    pub fn delta(&self) -> Option<f64> {
        self.delta
    }
    /// p.
    pub fn max_segments(&self) -> usize {
        self.max_segments
    }
    /// L (∞ when unbounded).
    pub fn max_length(&self) -> f64 {
        self.max_length
    }
    /// κ.
    pub fn penalty(&self) -> f64 {
        self.penalty
    }
    /// e_mult.
    pub fn eta_scale(&self) -> f64 {
        self.eta_scale
    }
    /// The feedback mode.
    pub fn feedback(&self) -> Feedback {
        self.feedback
    }
    /// The estimator of bandit feedback.
    pub fn estimator(&self) -> Estimator {
        self.estimator
    }
    /// ε.
    pub fn explore(&self) -> f64 {
        self.explore
    }
    /// α, if given (default c_0/2 once c_0 is known).
    pub fn alpha(&self) -> Option<f64> {
        self.alpha
    }
    /// M.
    pub fn local_vertices(&self) -> usize {
        self.local_vertices
    }
    /// The largest number of new candidates per round.
    pub fn max_candidates(&self) -> usize {
        self.max_candidates
    }
    /// t_0.
    pub fn warmup(&self) -> usize {
        self.warmup
    }
    /// The memory.
    pub fn memory(&self) -> Memory {
        self.memory
    }
    /// b, the side of the bins that merge stored points, as a fraction of δ (0: none).
    pub fn bin_side(&self) -> f64 {
        self.bin_side
    }
    /// The budget of atoms (0: none).
    pub fn max_atoms(&self) -> usize {
        self.max_atoms
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn validate_snapshot(&self) -> Result<()> {
        self.validate()
    }

    /// Re-checks a config read from a snapshot.
    pub(crate) fn validate(&self) -> Result<()> {
        let mut params = PrincipalCurveParams::new()
            .radius(self.radius)
            .max_segments(self.max_segments)
            .max_length(self.max_length)
            .penalty(self.penalty)
            .eta_scale(self.eta_scale)
            .feedback(self.feedback)
            .estimator(self.estimator)
            .explore(self.explore)
            .local_vertices(self.local_vertices)
            .max_candidates(self.max_candidates)
            .warmup(self.warmup)
            .memory(self.memory)
            .bin_side(self.bin_side)
            .max_atoms(self.max_atoms)
            .seed(self.seed);
        if let Some(delta) = self.delta {
            params = params.delta(delta);
        }
        if let Some(alpha) = self.alpha {
            params = params.alpha(alpha);
        }
        params.check().map(|_| ())
    }
}

mod infinite_as_none {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            serializer.serialize_some(value)
        } else {
            serializer.serialize_none()
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_parameter() {
        let cases: Vec<(PrincipalCurveParams, &str)> = vec![
            (
                PrincipalCurveParams::new().radius(Radius::Given(0.0)),
                "radius",
            ),
            (PrincipalCurveParams::new().delta(-1.0), "delta"),
            (
                PrincipalCurveParams::new()
                    .radius(Radius::Given(1.0))
                    .delta(2.0),
                "delta",
            ),
            (PrincipalCurveParams::new().max_segments(0), "max_segments"),
            (PrincipalCurveParams::new().max_length(0.0), "max_length"),
            (PrincipalCurveParams::new().penalty(-1.0), "penalty"),
            (PrincipalCurveParams::new().eta_scale(0.0), "eta_scale"),
            (PrincipalCurveParams::new().explore(1.5), "explore"),
            (PrincipalCurveParams::new().alpha(f64::NAN), "alpha"),
            (
                PrincipalCurveParams::new().local_vertices(1),
                "local_vertices",
            ),
            (
                PrincipalCurveParams::new().max_candidates(0),
                "max_candidates",
            ),
            (PrincipalCurveParams::new().warmup(1), "warmup"),
            (PrincipalCurveParams::new().bin_side(-0.5), "bin_side"),
            (PrincipalCurveParams::new().bin_side(f64::NAN), "bin_side"),
            (
                PrincipalCurveParams::new().memory(Memory::Window(1)),
                "window",
            ),
        ];
        for (params, name) in cases {
            let error = params.check().unwrap_err();
            assert!(error.to_string().contains(name), "{error}");
        }
        assert!(PrincipalCurveParams::new().penalty(0.0).check().is_ok());
    }

    #[test]
    fn an_unbounded_length_survives_json() {
        let config = PrincipalCurveParams::new().check().unwrap();
        let text = serde_json::to_string(&config).unwrap();
        let back: PrincipalCurveConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(back, config);
        assert!(back.validate().is_ok());
    }
}
