//! Parameters of batch and sequential k-means, and their validation.
//!
//! `XParams` builders hold raw values; `check()` turns them into a validated `XConfig` or an
//! error naming the bad value. Learners are built only from validated configs. Checks that
//! need data (n ≥ k, the dimension of given centres) run when the data arrives.

use serde::{Deserialize, Serialize};

use super::centres::Centres;
use crate::error::{Error, Result};

/// The documented upper bounds of the count parameters, checked by `check()` before anything
/// is allocated (and again when a snapshot is restored), so that no setting can exhaust
/// memory or run without end. The command line takes the same bounds.
pub mod limits {
    /// The largest number of clusters k: Hamerly's bounds keep k × k distances between
    /// centres, which stays under a gigabyte.
    pub const MAX_CLUSTERS: usize = 10_000;
    /// The largest number of restarts of batch k-means.
    pub const MAX_N_INIT: usize = 1_000;
    /// The largest number of Lloyd iterations per restart.
    pub const MAX_ITER: usize = 1_000_000;
    /// The largest number of candidates greedy k-means++ draws per step.
    pub const MAX_LOCAL_TRIALS: usize = 1_000;
    /// The largest warm-up of sequential k-means, in points (the buffer grows as they come).
    pub const MAX_INIT_SIZE: usize = 10_000_000;
}

use limits::{MAX_CLUSTERS, MAX_INIT_SIZE, MAX_ITER, MAX_LOCAL_TRIALS, MAX_N_INIT};

/// How the first centres are chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Init {
    /// Greedy k-means++ (scikit-learn's default): at each step draw `n_local_trials`
    /// candidates with probability ∝ w(x)·D(x)² and keep the one that lowers the potential
    /// most. `None` means 2 + ⌊ln k⌋ trials.
    GreedyKMeansPlusPlus {
        /// Candidates drawn per step (`None`: 2 + ⌊ln k⌋).
        n_local_trials: Option<usize>,
    },
    /// Vanilla k-means++ (Arthur & Vassilvitskii 2007): the first centre ∝ w(x), each next
    /// centre ∝ w(x)·D(x)². It carries the guarantee E\[φ\] ≤ 8(ln k + 2)·φ_OPT.
    KMeansPlusPlus,
    /// k distinct points drawn without replacement, with probability ∝ w(x).
    Random,
    /// These centres (their number must be k and their dimension that of the data).
    Given(Centres),
}

impl Default for Init {
    fn default() -> Self {
        Init::GreedyKMeansPlusPlus {
            n_local_trials: None,
        }
    }
}

impl Init {
    pub(crate) fn check(&self, n_clusters: usize) -> Result<()> {
        match self {
            Init::GreedyKMeansPlusPlus {
                n_local_trials: Some(trials),
            } => Error::check_count("n_local_trials", *trials, 1, MAX_LOCAL_TRIALS),
            Init::Given(centres) if centres.n_centres() != n_clusters => {
                Err(Error::invalid_parameter(
                    "init",
                    format!(
                        "{} given centres for n_clusters = {n_clusters}",
                        centres.n_centres()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The number of candidates greedy k-means++ draws per step for `n_clusters` clusters.
    pub fn local_trials(n_local_trials: Option<usize>, n_clusters: usize) -> usize {
        n_local_trials.unwrap_or(2 + (n_clusters as f64).ln().floor() as usize)
    }
}

/// How Lloyd's assignment step is computed. Every choice gives the run of plain Lloyd (the
/// same labels, centres and inertia: Hamerly's bounds are kept conservative in floating
/// point, so a point is skipped only when plain Lloyd would keep its label too); they
/// differ in speed only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Algorithm {
    /// Choose by the shape of the problem, from benchmarks: plain Lloyd for d ≤ 2 (where a
    /// full scan is as cheap as maintaining bounds), Hamerly's bounds otherwise.
    #[default]
    Auto,
    /// Plain Lloyd: every distance, every iteration.
    Lloyd,
    /// Hamerly's bounds: skips points whose nearest centre provably did not change.
    Hamerly,
}

/// When Lloyd's iterations stop (besides `max_iter`, and besides an assignment pass that
/// changes no label, which always stops them). Both rules read the tolerance `tol`.
///
/// The default is the rule of the k-means spec (kmeans.md §2), which is scikit-learn's, so
/// that a comparison with scikit-learn and its Intel build at the same `tol` compares the
/// same stopping point: the total squared centre shift against `tol` × the mean variance.
/// The two rules disagree where a centre sits between two groups of points and drifts
/// slowly towards one of them: each iteration moves the centres by a tiny fraction of the
/// spread of the data (the shift rule stops there) while thousands of points still change
/// cluster. On the 1,000,000 × 2 blobs of the k-means benchmark the shift rule at 1e-4
/// stops two seeds of five in such a drift, at an inertia up to 24 % above the optimum
/// (scikit-learn-intelex's seed 0 stops in the same kind of state); the label rule at 1e-4
/// follows the drift to its end, at five more iterations (10–14 instead of 5–9) on the
/// seeds without one. [`Refinement::Hartigan`], on by default, runs after either rule;
/// before it, the rule stops Lloyd's loop only once a pass also changes labels of at most
/// 10⁻⁵ of the total weight (the moves would otherwise follow such a drift one sequential
/// sweep at a time; `Refinement::None` keeps the rule alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stopping {
    /// Stop when the points whose label changed in the last assignment pass weigh at most
    /// `tol` × the total weight (with unit weights: at most tol·n points changed cluster).
    /// Scale-free; `tol` = 0 means "until the assignments are stable", a fixed point of
    /// Lloyd's iteration.
    ChangedLabels,
    /// The spec's rule, and scikit-learn's: stop when the total squared centre shift
    /// Σ_j ‖c_j' − c_j‖² of the last update is at most `tol` × the mean per-feature
    /// variance of the data (weighted population variance; with unit weights exactly
    /// scikit-learn's `np.var(X, axis=0).mean()`). Measures movement against the spread of
    /// the whole data set, so it can stop during a slow drift of a centre between two
    /// clusters.
    #[default]
    CentreShift,
}

/// What runs after Lloyd's iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Refinement {
    /// Nothing: the result is Lloyd's fixed point (or where its stopping rule left it).
    None,
    /// Hartigan's single-point moves (Hartigan & Wong 1979): move one point at a time to
    /// another cluster whenever that lowers the inertia, counting that the move shifts both
    /// centres, until no move does. Every such fixed point is a fixed point of Lloyd's
    /// iteration, not conversely (Telgarsky & Vattani 2010), so the inertia is never higher
    /// and often lower than Lloyd's; at most `max_iter` sweeps.
    #[default]
    Hartigan,
}

/// Parameters of batch k-means (seeding, then Lloyd's iterations).
///
/// ```
/// use ndarray::array;
/// use pacstream::kmeans::KMeansParams;
///
/// let data = array![[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]];
/// let fit = KMeansParams::new(2).seed(1).check()?.fit(data.view())?;
/// assert_eq!(fit.report().inertia, 1.0);
/// assert_ne!(fit.labels()[0], fit.labels()[2]);
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KMeansParams {
    n_clusters: usize,
    init: Init,
    n_init: Option<usize>,
    max_iter: usize,
    tol: f64,
    /// Absent from parameters saved before the rule could be chosen: they get the default.
    #[serde(default)]
    stopping: Stopping,
    algorithm: Algorithm,
    /// Absent from parameters saved before refinement existed: they get none, as then.
    #[serde(default = "Refinement::absent")]
    refinement: Refinement,
    seed: u64,
}

impl Refinement {
    /// The refinement of settings saved before it could be chosen.
    fn absent() -> Self {
        Refinement::None
    }
}

impl KMeansParams {
    /// Defaults for `n_clusters` clusters: greedy k-means++, `n_init` 1 (10 with random
    /// seeding), `max_iter` 300, `tol` 1e-4 with [`Stopping::CentreShift`], seed 0.
    pub fn new(n_clusters: usize) -> Self {
        Self {
            n_clusters,
            init: Init::default(),
            n_init: None,
            max_iter: 300,
            tol: 1e-4,
            stopping: Stopping::CentreShift,
            algorithm: Algorithm::Auto,
            refinement: Refinement::default(),
            seed: 0,
        }
    }

    setters! {
        /// The seeding method.
        init: Init;
        /// The number of restarts, each on its own child RNG stream; the lowest inertia wins.
        n_init: Option<usize>;
        /// The largest number of Lloyd iterations per restart.
        max_iter: usize;
        /// The tolerance of the stopping rule (see [`Stopping`]): by default Lloyd stops once
        /// the total squared centre shift of a pass is at most `tol` × the mean per-feature
        /// variance of the data.
        tol: f64;
        /// The stopping rule `tol` applies to.
        stopping: Stopping;
        /// How the assignment step is computed.
        algorithm: Algorithm;
        /// What runs after Lloyd's iterations.
        refinement: Refinement;
        /// The seed of the random number generator.
        seed: u64;
    }

    /// Validates the parameters (counts within [`limits`]).
    pub fn check(self) -> Result<KMeansConfig> {
        Error::check_count("n_clusters", self.n_clusters, 1, MAX_CLUSTERS)?;
        self.init.check(self.n_clusters)?;
        let n_init = match (self.n_init, &self.init) {
            (Some(n), _) => n,
            (None, Init::Random) => 10,
            (None, _) => 1,
        };
        Error::check_count("n_init", n_init, 1, MAX_N_INIT)?;
        Error::check_count("max_iter", self.max_iter, 1, MAX_ITER)?;
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid_parameter(
                "tol",
                format!("must be finite and >= 0, got {}", self.tol),
            ));
        }
        Ok(KMeansConfig {
            n_clusters: self.n_clusters,
            init: self.init,
            n_init,
            max_iter: self.max_iter,
            tol: self.tol,
            stopping: self.stopping,
            algorithm: self.algorithm,
            refinement: self.refinement,
            seed: self.seed,
        })
    }
}

/// Validated parameters of batch k-means; [`KMeansConfig::fit`] runs it. A config read from
/// JSON is checked again, like one made by [`KMeansParams::check`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct KMeansConfig {
    pub(crate) n_clusters: usize,
    pub(crate) init: Init,
    pub(crate) n_init: usize,
    pub(crate) max_iter: usize,
    pub(crate) tol: f64,
    #[serde(default)]
    pub(crate) stopping: Stopping,
    pub(crate) algorithm: Algorithm,
    #[serde(default = "Refinement::absent")]
    pub(crate) refinement: Refinement,
    pub(crate) seed: u64,
}

validated_snapshot!(KMeansConfig);

impl KMeansConfig {
    fn validate_snapshot(&self) -> Result<()> {
        let checked = KMeansParams::new(self.n_clusters)
            .init(self.init.clone())
            .n_init(self.n_init)
            .max_iter(self.max_iter)
            .tol(self.tol)
            .stopping(self.stopping)
            .algorithm(self.algorithm)
            .refinement(self.refinement)
            .seed(self.seed)
            .check()?;
        debug_assert_eq!(&checked, self);
        Ok(())
    }

    /// The number of clusters k.
    pub fn n_clusters(&self) -> usize {
        self.n_clusters
    }
    /// The seeding method.
    pub fn init_method(&self) -> &Init {
        &self.init
    }
    /// The number of restarts.
    pub fn n_init(&self) -> usize {
        self.n_init
    }
    /// The largest number of Lloyd iterations per restart.
    pub fn max_iter(&self) -> usize {
        self.max_iter
    }
    /// The tolerance of the stopping rule.
    pub fn tol(&self) -> f64 {
        self.tol
    }
    /// The stopping rule.
    pub fn stopping(&self) -> Stopping {
        self.stopping
    }
    /// The assignment algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
    /// What runs after Lloyd's iterations.
    pub fn refinement(&self) -> Refinement {
        self.refinement
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

/// Parameters of sequential (online) k-means.
///
/// ```
/// use pacstream::kmeans::SequentialKMeansParams;
/// use pacstream::OnlineLearner;
///
/// let mut learner = SequentialKMeansParams::new(2).init_size(4).seed(3).check()?.build();
/// for point in [[0.0], [10.0], [0.5], [9.5], [0.2], [10.2]] {
///     learner.learn_one(&point)?;
/// }
/// let mut centres: Vec<f64> = learner.centres().unwrap().iter().map(|c| c[0]).collect();
/// centres.sort_by(f64::total_cmp);
/// assert!((centres[0] - 0.2333).abs() < 1e-3 && (centres[1] - 9.9).abs() < 1e-3);
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialKMeansParams {
    n_clusters: usize,
    init_size: Option<usize>,
    init: Init,
    decay_half_life: Option<f64>,
    reassignment_ratio: f64,
    seed: u64,
}

impl SequentialKMeansParams {
    /// Defaults for `n_clusters` clusters: warm-up on 10·k points with greedy k-means++ and
    /// Lloyd, no decay, no reassignment, seed 0.
    pub fn new(n_clusters: usize) -> Self {
        Self {
            n_clusters,
            init_size: None,
            init: Init::default(),
            decay_half_life: None,
            reassignment_ratio: 0.0,
            seed: 0,
        }
    }

    setters! {
        /// The number of points buffered before the first k-means fit (default 10·k).
        init_size: Option<usize>;
        /// The seeding of the warm-up fit.
        init: Init;
        /// Forget old points: after `decay_half_life` points, a point's weight in its centre
        /// has halved (Spark's semantics: every centre's count is multiplied by
        /// a = exp(ln ½ / half_life) per point).
        decay_half_life: Option<f64>;
        /// Move a centre whose count falls below `reassignment_ratio` × the largest count to a
        /// recent point drawn with probability ∝ its loss (0 = never).
        reassignment_ratio: f64;
        /// The seed of the random number generator.
        seed: u64;
    }

    /// Validates the parameters (counts within [`limits`]).
    pub fn check(self) -> Result<SequentialKMeansConfig> {
        Error::check_count("n_clusters", self.n_clusters, 1, MAX_CLUSTERS)?;
        self.init.check(self.n_clusters)?;
        // 10·k ≤ 10·MAX_CLUSTERS cannot overflow once k is checked.
        let init_size = self.init_size.unwrap_or(10 * self.n_clusters);
        if init_size < self.n_clusters {
            return Err(Error::invalid_parameter(
                "init_size",
                format!(
                    "must be >= n_clusters = {}, got {init_size}",
                    self.n_clusters
                ),
            ));
        }
        Error::check_count("init_size", init_size, 1, MAX_INIT_SIZE)?;
        let decay = match self.decay_half_life {
            None => None,
            Some(h) if h.is_finite() && h > 0.0 => Some((0.5f64.ln() / h).exp()),
            Some(h) => {
                return Err(Error::invalid_parameter(
                    "decay_half_life",
                    format!("must be finite and > 0, got {h}"),
                ));
            }
        };
        if !(self.reassignment_ratio.is_finite() && (0.0..1.0).contains(&self.reassignment_ratio)) {
            return Err(Error::invalid_parameter(
                "reassignment_ratio",
                format!("must be in [0, 1), got {}", self.reassignment_ratio),
            ));
        }
        Ok(SequentialKMeansConfig {
            n_clusters: self.n_clusters,
            init_size,
            init: self.init,
            decay_half_life: self.decay_half_life,
            decay,
            reassignment_ratio: self.reassignment_ratio,
            seed: self.seed,
        })
    }
}

/// Validated parameters of sequential k-means; [`SequentialKMeansConfig::build`] makes the
/// learner. A config read from JSON is checked again, like one made by
/// [`SequentialKMeansParams::check`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SequentialKMeansConfig {
    pub(crate) n_clusters: usize,
    pub(crate) init_size: usize,
    pub(crate) init: Init,
    pub(crate) decay_half_life: Option<f64>,
    /// The per-point decay factor a = exp(ln ½ / h), derived from the half-life.
    pub(crate) decay: Option<f64>,
    pub(crate) reassignment_ratio: f64,
    pub(crate) seed: u64,
}

validated_snapshot!(SequentialKMeansConfig);

impl SequentialKMeansConfig {
    /// Checks the counts of a config against [`limits`] (a config made by `check()` always
    /// passes).
    pub(crate) fn check_limits(&self) -> Result<()> {
        Error::check_count("n_clusters", self.n_clusters, 1, MAX_CLUSTERS)?;
        self.init.check(self.n_clusters)?;
        Error::check_count("init_size", self.init_size, self.n_clusters, MAX_INIT_SIZE)
    }

    fn validate_snapshot(&self) -> Result<()> {
        let mut params = SequentialKMeansParams::new(self.n_clusters)
            .init_size(self.init_size)
            .init(self.init.clone())
            .reassignment_ratio(self.reassignment_ratio)
            .seed(self.seed);
        if let Some(half_life) = self.decay_half_life {
            params = params.decay_half_life(half_life);
        }
        if params.check()? != *self {
            return Err(Error::InvalidSnapshot(
                "sequential k-means settings: the decay factor contradicts the half-life".into(),
            ));
        }
        Ok(())
    }

    /// The number of clusters k.
    pub fn n_clusters(&self) -> usize {
        self.n_clusters
    }
    /// The number of warm-up points.
    pub fn init_size(&self) -> usize {
        self.init_size
    }
    /// The decay half-life in points, if any.
    pub fn decay_half_life(&self) -> Option<f64> {
        self.decay_half_life
    }
    /// The reassignment ratio.
    pub fn reassignment_ratio(&self) -> f64 {
        self.reassignment_ratio
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_parameter() {
        let err = KMeansParams::new(0).check().unwrap_err();
        assert!(err.to_string().contains("n_clusters"));
        let err = KMeansParams::new(2).tol(f64::NAN).check().unwrap_err();
        assert!(err.to_string().contains("tol"));
        let err = SequentialKMeansParams::new(3)
            .init_size(2)
            .check()
            .unwrap_err();
        assert!(err.to_string().contains("init_size"));
        let err = SequentialKMeansParams::new(3)
            .decay_half_life(-1.0)
            .check()
            .unwrap_err();
        assert!(err.to_string().contains("decay_half_life"));
    }

    #[test]
    fn defaults_follow_the_spec() {
        let config = KMeansParams::new(8).check().unwrap();
        assert_eq!(config.n_init(), 1);
        assert_eq!(
            KMeansParams::new(8)
                .init(Init::Random)
                .check()
                .unwrap()
                .n_init(),
            10
        );
        assert_eq!(Init::local_trials(None, 8), 4);
        let config = SequentialKMeansParams::new(8)
            .decay_half_life(10.0)
            .check()
            .unwrap();
        assert_eq!(config.init_size(), 80);
        let a = config.decay.unwrap();
        assert!((a.powi(10) - 0.5).abs() < 1e-12);
    }
}
