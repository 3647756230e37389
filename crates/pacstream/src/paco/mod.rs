//! PACBO: PAC-Bayesian online clustering with an unknown and changing number of clusters
//! (Li, Guedj & Loustau, "A quasi-Bayesian perspective to online clustering", Electronic
//! Journal of Statistics 12(2), 2018; the sampler is called PACO in the slides on the paper).
//!
//! # The model
//!
//! The stream x_1, x_2, … ∈ R^d is read in internal coordinates x − μ_0 (divided by column
//! scales with `scale`; see [`Frame`]), where R bounds it: ‖x_t − μ_0‖ ≤ R. A clustering is
//! c = (c_1..c_k), k ∈ {1..p}, and its loss on a point is ℓ(c, x) = min_j ‖c_j − x‖².
//!
//! - **Prior**: π(c) = q(k) Π_j U_{B_d(2R)}(c_j), with
//!   q(k) = e^{−ηk}/Σ_{i≤p} e^{−ηi} and U the uniform density on the ball of radius 2R.
//! - **Temperature**: λ_t = a (d + 2)/(2 √n_t R²), n_t = t (exact memory) or min(t, W)
//!   (window memory), λ_0 := λ_1 (scale-free, unlike the paper's λ_0 = 1).
//! - **Cumulative loss with the variance term** (the paper's adaptive algorithm):
//!   S_t(c) = Σ_{s≤t} [ℓ(c, x_s) + (λ_{s−1}/2)(ℓ(c, x_s) − ℓ(ĉ_s, x_s))²], where ĉ_s is
//!   what the learner predicted at round s.
//! - **Quasi-posterior**: ρ̂_{t+1}(c) ∝ exp(−λ_t S_t(c)) π(c).
//! - **Protocol**: at round t the learner announces ĉ_t, pays ℓ(ĉ_t, x_t), stores x_t with
//!   that loss, and draws ĉ_{t+1} approximately from ρ̂_{t+1} with the round's chain. With R
//!   given, ĉ_1 is a draw from the prior (made without looking at x_1). With R `auto` (the
//!   default) the first `warmup` points are buffered and not predicted; they fix μ_0, R and
//!   the scales, enter S with their loss term only (nothing was predicted for them, so their
//!   variance weight is 0), and the first prediction is drawn by the sampler.
//!
//! **The variance term anchors.** A point x_s that was predicted badly (large ℓ̂_s) adds
//! w_s (ℓ(c, x_s) − ℓ̂_s)² to S_t, which is smallest for clusterings that are *as bad* on x_s
//! as the prediction was (ℓ = ℓ̂_s − 1/λ_{s−1}, when that is positive). With λ_{s−1} ℓ̂_s ≫ 1 it
//! outweighs the loss itself, and the quasi-posterior keeps to the clusterings that made the
//! past mistakes. Two consequences: with R given, round 1's prior draw, far from the data,
//! can hold the learner where it is (use R `auto`, whose warm-up points carry no variance
//! term and whose first prediction comes from the sampler); and the larger the temperature
//! multiplier a, the slower a stream whose clusters change is followed, which is what bounds
//! the calibrated a ([`DEFAULT_COEFF`]).
//!
//! Mapping the data to a·x + b (a > 0) and R to a·R maps the predicted centres to a·c + b and
//! leaves every k̂_t unchanged. In floating point this holds bit for bit for a = 2^j (every
//! constant that carries the scale is computed in scale-free form, as d log(σ/(2R))).
//!
//! # The sampler
//!
//! Each round runs N iterations of a reversible-jump Metropolis–Hastings chain
//! ([`SamplerReport`] says what it did): moves k → k' ∈ {k−1, k, k+1}; the centres of a
//! proposal are drawn from multivariate Student t laws (3 degrees of freedom) around the
//! round's proposal means m^{(k')} (the k'-means centres of the memory, computed once per
//! round and warm-started from round to round), with scale [`ProposalScale::Laplace`] (the
//! width of the quasi-posterior of one centre) or [`ProposalScale::Paper`] (the paper's
//! τ = 1/√(pt), in units of R); the acceptance ratio is computed in log space. The chain
//! starts from the previous round's state, relabelled against the new means. See the
//! `sampler` module source for the exact ratio, the single decision rule and the fixed
//! order of the random draws that make snapshots resume bit for bit.
//!
//! **No guarantee for the chain itself**: the bound of the paper's corollary ([`bounds`], for
//! every temperature multiplier a) is on the expected cumulative loss of exact draws from
//! ρ̂_t, the ideal sampler; the N-step chain approximates them. After a run,
//! [`oracle::hindsight_report`] gives the regret against the best fixed clustering in
//! hindsight for every k, and that bound for the run's settings (or why there is none).
//!
//! # Cost
//!
//! Every proposal is a new clustering, so evaluating S_t(c') needs all the points in memory:
//! O(N t k d) per round in exact memory. The evaluation is made fast three ways: points are
//! stored in column chunks beside ‖x_s‖², ℓ̂_s and λ_{s−1}/2, and a vectorised kernel computes
//! 16 points at a time; large memories are split into fixed chunks summed in parallel and
//! combined in a fixed order (results do not depend on the number of threads); and a proposal
//! is rejected as soon as its running sum shows that it must be (exact early rejection, which
//! decides as the full sum would). Window memory bounds the cost of a round.
//!
//! # Example
//!
//! ```
//! use pacstream::paco::{Memory, PacoParams};
//! use pacstream::{OnlineLearner, StreamRng};
//!
//! // A stream of three groups in the plane.
//! let mut rng = StreamRng::seed_from(1);
//! let means = [[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]];
//! let mut learner = PacoParams::new()
//!     .iterations(200)
//!     .memory(Memory::Window(300))
//!     .seed(4)
//!     .check()?
//!     .build();
//! for _ in 0..400 {
//!     let m = means[rng.index_below(3)];
//!     let point = [m[0] + 0.5 * rng.standard_normal(), m[1] + 0.5 * rng.standard_normal()];
//!     learner.learn_one(&point)?;
//! }
//! assert_eq!(learner.n_clusters(), Some(3));
//! # Ok::<(), pacstream::Error>(())
//! ```

mod batch;
mod birth;
pub mod bounds;
mod cover;
mod describe;
mod evaluate;
mod filtering;
mod frame;
mod index;
mod learner;
mod means;
mod memory;
pub mod oracle;
mod params;
mod prior;
mod proposal;
mod relabel;
mod sampler;
mod temperature;
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod testing;

pub use batch::PacoFit;
pub use describe::{PacoRecord, PacoSettings, PacoSummary};
pub use frame::Frame;
pub use learner::{Paco, PacoReport, PacoStep};
#[doc(hidden)]
pub use means::ProposalMeans;
pub use params::{
    DEFAULT_COEFF, DEFAULT_ETA, Memory, PacoConfig, PacoParams, ProposalScale, Radius, Summation,
    default_proposal_scale, limits,
};
#[doc(hidden)]
pub use proposal::{student_draw, student_log_density};
pub use sampler::SamplerReport;
