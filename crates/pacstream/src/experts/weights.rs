//! The exponential-weights engine shared by every rule of the family.
//!
//! Expert i carries a prior π_i and a *charged* cumulative loss C_i (what the rule decided to
//! charge it: every loss for Hedge, only the rounds where Weighted Majority erred, the
//! learner's own loss when the expert sleeps...). Its weight is
//!
//! p_i ∝ π_i · exp(−η · C_i),
//!
//! computed in log space: a_i = ln π_i − η C_i, normalised by log-sum-exp (subtract the
//! largest a_i before exponentiating). Only C_i is stored, never a linear weight, so an expert
//! whose weight would underflow to 0 (C_i − C_min ≳ 745/η) still has its exact C_i and
//! recovers as soon as the others catch up: nothing is ever lost to underflow.
//!
//! η = +∞ is Follow-the-Leader: the weight is spread (by the prior) over the experts of
//! smallest C_i. AdaHedge starts there.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::{
    self, ExpConstants, Kernel, Lanes, QUAD, Quad, QuadKernel, QuadV, Wide, WideKernel,
};

/// Priors and charged cumulative losses of N experts; see the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpWeights {
    /// ln π_i, normalised so that Σ π_i = 1; `None` for the uniform prior.
    log_prior: Option<Vec<f64>>,
    /// C_i, the loss charged to each expert since the last restart.
    charged: Vec<f64>,
    /// min_i C_i: with the uniform prior and every expert awake, the largest log-weight is
    /// −η·min C, so the weights need one pass instead of two.
    least: f64,
}

impl ExpWeights {
    /// N experts with the uniform prior, or with `prior` (positive and finite; normalised
    /// here).
    pub fn new(n_experts: usize, prior: Option<&[f64]>) -> Result<Self> {
        if n_experts == 0 {
            return Err(Error::invalid_parameter("n_experts", "must be >= 1, got 0"));
        }
        let log_prior = match prior {
            None => None,
            Some(prior) => {
                super::params::check_prior(Some(prior), n_experts)?;
                let total: f64 = prior.iter().sum();
                // ln(π_i / Σπ) directly unless the ratio underflows (a prior spanning more
                // than ~308 orders of magnitude), where ln π_i − ln Σπ keeps it finite.
                Some(
                    prior
                        .iter()
                        .map(|p| {
                            let ratio = p / total;
                            if ratio >= f64::MIN_POSITIVE {
                                ratio.ln()
                            } else {
                                p.ln() - total.ln()
                            }
                        })
                        .collect(),
                )
            }
        };
        Ok(Self {
            log_prior,
            charged: vec![0.0; n_experts],
            least: 0.0,
        })
    }

    /// The number of experts.
    #[inline]
    pub fn n_experts(&self) -> usize {
        self.charged.len()
    }

    /// ln π_i.
    #[inline]
    pub fn log_prior(&self, expert: usize) -> f64 {
        match &self.log_prior {
            Some(log_prior) => log_prior[expert],
            None => -(self.charged.len() as f64).ln(),
        }
    }

    /// The charged cumulative losses C_i.
    #[inline]
    pub fn charged(&self) -> &[f64] {
        &self.charged
    }

    /// Adds `losses[i]` to C_i for every expert.
    pub fn charge(&mut self, losses: &[f64]) {
        debug_assert_eq!(losses.len(), self.charged.len());
        self.least = kernels::dispatch(Charge {
            charged: &mut self.charged,
            losses,
        });
    }

    /// Adds `losses[i]` to C_i for every expert and tells whether some loss lies outside
    /// [lower, upper] (one pass).
    pub(crate) fn charge_checked(&mut self, losses: &[f64], lower: f64, upper: f64) -> bool {
        let outside = kernels::dispatch(OutsideRange {
            values: losses,
            lower,
            upper,
        });
        self.charge(losses);
        outside
    }

    /// The smallest charged loss min_i C_i.
    #[inline]
    pub(crate) fn least(&self) -> f64 {
        self.least
    }

    /// The shift that makes the largest canonical weight exactly 1 at rate `eta`: min C for
    /// the uniform prior; with a prior, the s with max_i (ln π_i − η (C_i − s)) = 0. Shifting
    /// to min C alone is not enough with a prior: when the experts that carry the prior's
    /// mass trail the leader by more than ~700/η while the leader's own prior weight is below
    /// e^−700, every weight would underflow and the round's normaliser would be 0.
    pub(crate) fn reshift(&self, eta: f64) -> f64 {
        let least = self.least;
        let Some(log_prior) = &self.log_prior else {
            return least;
        };
        let largest = log_prior
            .iter()
            .zip(&self.charged)
            .map(|(log_prior, charged)| log_prior - eta * (charged - least))
            .fold(f64::NEG_INFINITY, f64::max);
        // largest ≤ 0, so the shift is ≥ min C.
        let shift = least - largest / eta;
        if shift.is_finite() { shift } else { least }
    }

    /// The canonical weights of a round where every expert is awake and η is finite:
    /// w_i = π_i · exp(−η (C_i − shift)) (π_i dropped for the uniform prior, where it cancels),
    /// unnormalised, into `weights`; returns Σ_i w_i. `shift` ≤ min C keeps every exponent
    /// ≤ 0. The same kernel writes them in [`ExpWeights::charge_and_weigh`], so weights cached
    /// at the end of a round and weights recomputed after a snapshot are the same bits.
    pub(crate) fn canonical_weights(&self, eta: f64, shift: f64, weights: &mut [f64]) -> f64 {
        kernels::dispatch_quad(Weigh {
            charged: &self.charged,
            log_prior: self.log_prior.as_deref(),
            eta,
            shift,
            weights,
        })
    }

    /// In one pass: C_i += `losses[i]`, counts the losses outside [lower, upper] (if given),
    /// and writes the canonical weights of the next round for `next_eta` and `shift` into
    /// `weights`. Returns (whether a loss was out of range, Σ_i w_i).
    pub(crate) fn charge_and_weigh(
        &mut self,
        losses: &[f64],
        range: Option<(f64, f64)>,
        next_eta: f64,
        shift: f64,
        weights: &mut [f64],
    ) -> (bool, f64) {
        let (least, outside, total) = kernels::dispatch(ChargeAndWeigh {
            charged: &mut self.charged,
            losses,
            log_prior: self.log_prior.as_deref(),
            range: range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY)),
            eta: next_eta,
            shift,
            weights,
        });
        self.least = least;
        (outside, total)
    }

    /// ln π_i for every expert, or `None` for the uniform prior.
    pub(crate) fn log_priors(&self) -> Option<&[f64]> {
        self.log_prior.as_deref()
    }

    /// Takes C' = `next` (written by a [`RoundPass`]), whose minimum is `least`; the old
    /// losses go to `next`, a buffer for the following round.
    pub(crate) fn swap_charged(&mut self, next: &mut Vec<f64>, least: f64) {
        std::mem::swap(&mut self.charged, next);
        self.least = least;
    }

    /// Forgets the charged losses (a new epoch of the doubling trick).
    pub fn restart(&mut self) {
        self.charged.iter_mut().for_each(|c| *c = 0.0);
        self.least = 0.0;
    }

    /// Writes p_i ∝ π_i exp(−η C_i) over the awake experts (all if `awake` is `None`) into
    /// `probabilities`, which sum to 1; asleep experts get 0. At least one expert must be awake
    /// (callers check). `eta` is ≥ 0 or +∞.
    pub fn probabilities(&self, eta: f64, awake: Option<&[bool]>, probabilities: &mut [f64]) {
        debug_assert_eq!(probabilities.len(), self.charged.len());
        let is_awake = |i: usize| awake.is_none_or(|a| a[i]);
        if eta.is_infinite() {
            // Follow the leader: the prior restricted to the awake experts of least C_i.
            let least = (0..self.charged.len())
                .filter(|&i| is_awake(i))
                .map(|i| self.charged[i])
                .fold(f64::INFINITY, f64::min);
            let leads = |i: usize| is_awake(i) && self.charged[i] == least;
            for (i, p) in probabilities.iter_mut().enumerate() {
                *p = if leads(i) {
                    self.log_prior(i).exp()
                } else {
                    0.0
                };
            }
            if !(1.0 / kernels::sum(probabilities)).is_finite() {
                // The leaders' prior mass is below ~1e−308 (their weights would normalise to
                // ∞ · 0): take their priors relative to the largest among them.
                let largest = (0..self.charged.len())
                    .filter(|&i| leads(i))
                    .map(|i| self.log_prior(i))
                    .fold(f64::NEG_INFINITY, f64::max);
                for (i, p) in probabilities.iter_mut().enumerate() {
                    if leads(i) {
                        *p = (self.log_prior(i) - largest).exp();
                    }
                }
            }
        } else if awake.is_none() && self.log_prior.is_none() {
            // The common case: one pass of exponentials, one of scaling.
            kernels::dispatch(UniformWeights {
                charged: &self.charged,
                eta,
                least: self.least,
                probabilities,
            });
            return;
        } else {
            // The exponents ln π_i − η C_i, centred on the largest. When η C_i overflows
            // (an AdaHedge rate of 1e306 after a gap of 1e−307), they are taken relative to
            // the least awake C instead, which is exact in exact arithmetic and finite; the
            // plain form is kept otherwise so that the weights keep their bits.
            let awake_experts = || (0..self.charged.len()).filter(|&i| is_awake(i));
            let exponent =
                |i: usize, origin: f64| self.log_prior(i) - eta * (self.charged[i] - origin);
            let plain = awake_experts()
                .map(|i| self.log_prior(i) - eta * self.charged[i])
                .fold(f64::NEG_INFINITY, f64::max);
            // `None`: the plain exponents; `Some(origin)`: centred on the least awake C.
            let (origin, largest) = if plain.is_finite() {
                (None, plain)
            } else {
                let origin = awake_experts()
                    .map(|i| self.charged[i])
                    .fold(f64::INFINITY, f64::min);
                let largest = awake_experts()
                    .map(|i| exponent(i, origin))
                    .fold(f64::NEG_INFINITY, f64::max);
                (Some(origin), largest)
            };
            for (i, p) in probabilities.iter_mut().enumerate() {
                *p = match (is_awake(i), origin) {
                    (false, _) => 0.0,
                    (true, None) => {
                        kernels::exp(self.log_prior(i) - eta * self.charged[i] - largest)
                    }
                    (true, Some(origin)) => kernels::exp(exponent(i, origin) - largest),
                };
            }
        }
        let scale = 1.0 / kernels::sum(probabilities);
        probabilities.iter_mut().for_each(|p| *p *= scale);
    }

    /// The mix loss of a round, −(1/η) ln Σ_i p_i exp(−η ℓ_i), for the weights
    /// p = `probabilities` × `scale` (computed with the same η) and the losses of the round; at η = +∞, min over the experts
    /// with positive weight of ℓ_i. Used by AdaHedge: the mixture loss Σ p_i ℓ_i minus the mix
    /// loss is the round's mixability gap, ≥ 0.
    pub fn mix_loss(eta: f64, probabilities: &[f64], scale: f64, losses: &[f64]) -> f64 {
        let supported = || {
            probabilities
                .iter()
                .zip(losses)
                .filter(|(p, _)| **p > 0.0)
                .map(|(_, l)| *l)
        };
        let least = supported().fold(f64::INFINITY, f64::min);
        if eta.is_infinite() {
            return least;
        }
        // Σ p_i e^{−η ℓ_i} = e^{−η ℓ_min} Σ p_i e^{−η (ℓ_i − ℓ_min)}: no overflow, and the
        // sum is ≥ the weight of the minimiser, so its logarithm is finite.
        let sum = kernels::dispatch(MixSum {
            probabilities,
            losses,
            eta,
            least,
        });
        least - (sum * scale).ln() / eta
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        let n = self.charged.len();
        if n == 0 || self.log_prior.as_ref().is_some_and(|p| p.len() != n) {
            return Err(Error::InvalidSnapshot(
                "exponential weights: prior and losses disagree".into(),
            ));
        }
        if self
            .charged
            .iter()
            .chain(self.log_prior.iter().flatten())
            .any(|v| !v.is_finite())
        {
            return Err(Error::InvalidSnapshot(
                "exponential weights: values must be finite".into(),
            ));
        }
        let least = self.charged.iter().copied().fold(f64::INFINITY, f64::min);
        if least != self.least {
            return Err(Error::InvalidSnapshot(
                "exponential weights: the cached least loss is wrong".into(),
            ));
        }
        Ok(())
    }
}

/// C_i += ℓ_i; returns min C.
struct Charge<'a> {
    charged: &'a mut [f64],
    losses: &'a [f64],
}

impl Kernel for Charge<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        kernels::add_and_min(self.charged, self.losses)
    }
}

/// Whether some value lies outside [lower, upper].
struct OutsideRange<'a> {
    values: &'a [f64],
    lower: f64,
    upper: f64,
}

impl Kernel for OutsideRange<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        // A count rather than `any`, whose early exit would keep the loop scalar.
        let outside: usize = self
            .values
            .iter()
            .map(|&v| usize::from(v < self.lower || v > self.upper))
            .sum();
        outside > 0
    }
}

/// w_i = π_i e^{−η(C_i − shift)}; returns Σ w_i, summed over the lanes of the fused pass
/// ([`RoundPass`]) so that weights recomputed here and weights left by that pass are the same
/// bits.
struct Weigh<'a> {
    charged: &'a [f64],
    log_prior: Option<&'a [f64]>,
    eta: f64,
    shift: f64,
    weights: &'a mut [f64],
}

impl QuadKernel for Weigh<'_> {
    type Output = f64;

    #[inline(always)]
    fn run<Q: Quad>(self, q: Q) -> f64 {
        match self.log_prior {
            None => self.weigh::<Q, false>(q, &[]),
            Some(log_prior) => self.weigh::<Q, true>(q, log_prior),
        }
    }
}

impl Weigh<'_> {
    #[inline(always)]
    fn weigh<Q: Quad, const PRIOR: bool>(self, q: Q, log_prior: &[f64]) -> f64 {
        let n = self.charged.len();
        assert!(self.weights.len() == n && (!PRIOR || log_prior.len() == n));
        let (minus_eta, shift) = (q.splat(-self.eta), q.splat(self.shift));
        let constants = ExpConstants::new(q);
        let mut total = q.splat(0.0);
        let full = n - n % QUAD;
        for base in (0..full).step_by(QUAD) {
            let prior = if PRIOR {
                q.load(quad(log_prior, base))
            } else {
                q.splat(0.0)
            };
            let w = weight_lanes::<Q, PRIOR, true>(
                q,
                &constants,
                q.load(quad(self.charged, base)),
                prior,
                minus_eta,
                shift,
            );
            q.store(quad_mut(self.weights, base), w);
            total = q.add(total, w);
        }
        if full < n {
            // As in the fused pass: the last four experts, their new lanes summed.
            let (base, valid) = tail_chunk(q, n);
            let load = |values: &[f64]| load_tail(q, values, base, n);
            let prior = if PRIOR { load(log_prior) } else { q.splat(0.0) };
            let w = weight_lanes::<Q, PRIOR, true>(
                q,
                &constants,
                load(self.charged),
                prior,
                minus_eta,
                shift,
            );
            unpad(self.weights, base, q.to_array(w));
            total = q.select(valid, q.add(total, w), total);
        }
        kernels::sum_quad(q.to_array(total))
    }
}

/// The four values from `base` on.
#[inline(always)]
pub(crate) fn quad(values: &[f64], base: usize) -> &[f64; QUAD] {
    values[base..base + QUAD]
        .try_into()
        .expect("invariant: a whole chunk")
}

#[inline(always)]
fn quad_mut(values: &mut [f64], base: usize) -> &mut [f64; QUAD] {
    (&mut values[base..base + QUAD])
        .try_into()
        .expect("invariant: a whole chunk")
}

/// The fewer than four values from `base` on, padded with zeros.
#[inline(always)]
pub(crate) fn padded(values: &[f64], base: usize) -> [f64; QUAD] {
    let tail = &values[base..];
    // Element by element rather than a copy of a run-time length, which calls memcpy.
    std::array::from_fn(|i| tail.get(i).copied().unwrap_or(0.0))
}

/// Writes the first `values.len() - base` lanes of `chunk` to `values[base..]`.
#[inline(always)]
fn unpad(values: &mut [f64], base: usize, chunk: [f64; QUAD]) {
    for (value, lane) in values[base..].iter_mut().zip(chunk) {
        *value = lane;
    }
}

/// The first `count` lanes.
#[inline(always)]
pub(crate) fn tail_mask<Q: Quad>(q: Q, count: usize) -> Q::M {
    let lanes = q.load(&[0.0, 1.0, 2.0, 3.0]);
    q.lt(lanes, q.splat(count as f64))
}

/// The last, partial chunk of `n` values (n not a multiple of four): where it starts and
/// which of its lanes hold values no whole chunk held. With n ≥ 4 it is the last four values
/// (element n − 4 + l in lane l), whose first lanes repeat values of the chunk before: a
/// whole load, no copy, and the overlapped lanes left out; with n < 4, the values from 0 on,
/// padded. Every path (portable or AVX2) takes the same chunk, so the sums keep their bits.
#[inline(always)]
pub(crate) fn tail_chunk<Q: Quad>(q: Q, n: usize) -> (usize, Q::M) {
    let remainder = n % QUAD;
    if n >= QUAD {
        let lanes = q.load(&[0.0, 1.0, 2.0, 3.0]);
        (n - QUAD, q.ge(lanes, q.splat((QUAD - remainder) as f64)))
    } else {
        (0, tail_mask(q, n))
    }
}

/// The four values of `values` (n of them) from `base` on, the start of the tail chunk
/// ([`tail_chunk`]): a whole load with n ≥ 4, the padded values otherwise.
#[inline(always)]
pub(crate) fn load_tail<Q: Quad>(q: Q, values: &[f64], base: usize, n: usize) -> Q::V {
    if n >= QUAD {
        q.load(quad(values, base))
    } else {
        q.load(&padded(values, base))
    }
}

/// The canonical weight π_i e^{−η(C_i − shift)} (π_i dropped for the uniform prior); every
/// pass that writes weights uses this one expression, on four lanes or eight.
/// Without `CLAMP`, exponents above 709 give meaningless weights
/// ([`kernels::exp_lanes_below_ceiling`]): for the fused pass, whose weights are all
/// recomputed when some exponent exceeds 700 ([`RoundPass`]); the same bits otherwise.
#[inline(always)]
fn weight_lanes<L: Lanes, const PRIOR: bool, const CLAMP: bool>(
    l: L,
    constants: &ExpConstants<L::V>,
    charged: L::V,
    log_prior: L::V,
    minus_eta: L::V,
    shift: L::V,
) -> L::V {
    let centred = l.sub(charged, shift);
    let exponent = if PRIOR {
        l.mul_add(minus_eta, centred, log_prior)
    } else {
        l.mul(minus_eta, centred)
    };
    if CLAMP {
        kernels::exp_lanes(l, constants, exponent)
    } else {
        kernels::exp_lanes_below_ceiling(l, constants, exponent)
    }
}

/// How the round's value v_i of expert i (its loss for Hedge, its advice for EWA) and a
/// second value a_i become what the expert is charged and what the ledger records for it.
pub(crate) trait Charging: Copy {
    /// The charge is the ledger's entry, always: when C = L (bit for bit) before the round,
    /// C' = L' after it, and the pass computes it once ([`RoundPass::twin`]).
    const TWIN: bool;
    fn split<L: Lanes>(self, l: L, value: L::V, aux: L::V) -> (L::V, L::V);
    /// Whether some charge of a round lies outside [lower, upper], from the least and the
    /// largest of the round's finite values (a [`RoundPass`] tracks the values' range, not
    /// the charges'). Exact, not a bound: every charge here is, in floating point, a monotone
    /// function of its value (the value itself, or the value times the round's slope, a
    /// correctly rounded product) or first nonincreasing then nondecreasing (a loss
    /// ℓ(ỹ, y), convex in ỹ, whose every operation is monotone in its argument on either side
    /// of y), so the charges' extremes — the largest loss — are the charges of the values'
    /// extremes.
    fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool;
}

/// Hedge: the loss is both the charge and the ledger's entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnLoss;

impl Charging for OwnLoss {
    const TWIN: bool = true;
    #[inline(always)]
    fn split<L: Lanes>(self, _l: L, value: L::V, _aux: L::V) -> (L::V, L::V) {
        (value, value)
    }
    #[inline(always)]
    fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool {
        lowest < lower || highest > upper
    }
}

/// Charges given beside the ledger's entries (v_i charged, a_i recorded).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GivenCharges;

impl Charging for GivenCharges {
    const TWIN: bool = false;
    #[inline(always)]
    fn split<L: Lanes>(self, _l: L, value: L::V, aux: L::V) -> (L::V, L::V) {
        (value, aux)
    }
    #[inline(always)]
    fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool {
        lowest < lower || highest > upper
    }
}

/// The fused pass of a round where every expert is awake: for each expert i, in one sweep,
///
/// - accumulates the mixture Σ_i p_i v_i under the current (unnormalised) weights p (it is
///   not finite if some v_i is not: the caller then checks the values);
/// - tracks the range of the values (if asked: a range to check the charges against, or
///   the magnitude of the values), from which the charges' range follows exactly
///   ([`Charging::outside`]);
/// - splits v_i into what the expert is charged and what the ledger records
///   ([`Charging`]: for EWA, its loss ℓ(ỹ_i, y) computed here, in the same sweep);
/// - writes C'_i = C_i + charge and L'_i = L_i + own, tracking min C' and min L' (the first
///   index of min L' is found afterwards);
/// - writes the next round's canonical weight over p_i, and sums it.
///
/// C' and L' go to separate buffers, so that a round with a non-finite value leaves the
/// learner as it was (the caller swaps the buffers in only on success; the weights written
/// over p are a cache, recomputed when needed). When `twin` (the caller knows that C = L bit
/// for bit, and the charge is the ledger's entry: [`Charging::TWIN`]), C' = L' is computed
/// once and written to both: the same bits, one load, one add and one minimum fewer.
///
/// The exponential is not clamped at its ceiling: an exponent above 709 gives a meaningless
/// weight (not even the same bits on every path: AVX-512 scales by 2^k with `vscalefpd`,
/// the others add k to the exponent field, which wraps), but the caller re-weighs every
/// expert whenever the largest exponent,
/// η (shift − min C'), exceeds 700, and that is the largest exponent of the pass bit for bit
/// (the same subtraction and product; with a prior, ln π_i ≤ 0 and rounding is monotone).
///
/// Element i goes to lane i mod 4 of every sum, in the order of the elements, whatever the
/// CPU; the lanes are combined in a fixed order ([`kernels::sum_quad`]): the result is the
/// same bits whether the lanes run as one AVX2 vector, one after another, or as eight lanes
/// of one AVX-512 vector holding two chunks of four ([`Wide`], [`kernels::dispatch_wide`]).
pub(crate) struct RoundPass<'a, F> {
    pub(crate) values: &'a [f64],
    pub(crate) aux: &'a [f64],
    pub(crate) charging: F,
    pub(crate) weights: &'a mut [f64],
    pub(crate) charged: &'a [f64],
    pub(crate) charged_next: &'a mut [f64],
    pub(crate) log_prior: Option<&'a [f64]>,
    pub(crate) totals: &'a [f64],
    pub(crate) totals_next: &'a mut [f64],
    /// The next round's learning rate (finite).
    pub(crate) eta: f64,
    pub(crate) shift: f64,
    /// The interval [lower, upper] the charges should lie in; `outside` tells whether one
    /// did not.
    pub(crate) range: Option<(f64, f64)>,
    /// Track the least and the largest value even without a range.
    pub(crate) track_range: bool,
    /// `charged` and `totals` hold the same bits (honoured only if [`Charging::TWIN`]).
    pub(crate) twin: bool,
}

/// What a [`RoundPass`] found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RoundTotals {
    /// Whether the mixture is finite (false if some value is not, or the sum overflowed).
    pub(crate) finite: bool,
    /// Whether some charge fell outside the loss range.
    pub(crate) outside: bool,
    /// The least and the largest value (NaN skipped; a zero as +0) when tracked; (+∞, −∞)
    /// otherwise.
    pub(crate) lowest_value: f64,
    pub(crate) highest_value: f64,
    /// Σ_i p_i v_i under the unnormalised current weights.
    pub(crate) mixture: f64,
    /// min_i C'_i.
    pub(crate) least_charged: f64,
    /// Σ_i of the next round's weights.
    pub(crate) weight_total: f64,
    /// min_i L'_i and the lowest index holding it.
    pub(crate) least_total: f64,
    pub(crate) least_total_at: usize,
}

/// The per-lane accumulators of a [`RoundPass`]: the sums on four lanes (`S`), the extremes
/// on the lanes of the sweep (`E`: four, or eight with AVX-512; see [`Wide`]).
#[derive(Clone, Copy)]
struct Accumulators<S, E> {
    mixture: S,
    total: S,
    lowest_value: E,
    highest_value: E,
    least_charged: E,
    least_total: E,
}

/// One chunk's inputs.
struct Chunk<V> {
    values: V,
    aux: V,
    weights: V,
    charged: V,
    prior: V,
    totals: V,
}

/// The kernel is handed over by reference: the dispatch copies it into the function compiled
/// for the CPU's instructions, and a reference is one word.
impl<F: Charging> WideKernel for &mut RoundPass<'_, F> {
    type Output = RoundTotals;

    #[inline(always)]
    fn run<W: Wide>(self, w: W) -> RoundTotals {
        let range = self.range.is_some() || self.track_range;
        self.sweeps(w, range)
    }
}

impl<F: Charging> RoundPass<'_, F> {
    /// The sweep compiled for the pass's prior, range and twin.
    #[inline(always)]
    fn sweeps<W: Wide>(&mut self, w: W, range: bool) -> RoundTotals {
        if F::TWIN && self.twin {
            match (self.log_prior, range) {
                (None, false) => self.sweep::<W, false, false, true>(w, &[]),
                (None, true) => self.sweep::<W, false, true, true>(w, &[]),
                (Some(prior), false) => self.sweep::<W, true, false, true>(w, prior),
                (Some(prior), true) => self.sweep::<W, true, true, true>(w, prior),
            }
        } else {
            match (self.log_prior, range) {
                (None, false) => self.sweep::<W, false, false, false>(w, &[]),
                (None, true) => self.sweep::<W, false, true, false>(w, &[]),
                (Some(prior), false) => self.sweep::<W, true, false, false>(w, prior),
                (Some(prior), true) => self.sweep::<W, true, true, false>(w, prior),
            }
        }
    }
}

/// What one chunk of a [`RoundPass`] leaves: the accumulators and the outputs (C', w, L').
type StepResult<L> = (
    Accumulators<QuadV<L>, <L as Lanes>::V>,
    [<L as Lanes>::V; 3],
);

/// One chunk of a [`RoundPass`] on the lanes of `L` (four or eight): the accumulators after
/// it (its sums taken four lanes at a time, the low chunk first: [`Wide::add_into`]), and
/// its outputs (C', w, L'). With `TWIN`, L' is C' (the chunk's `totals` are not read).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn round_step<L: Wide, F: Charging, const PRIOR: bool, const RANGE: bool, const TWIN: bool>(
    l: L,
    constants: &ExpConstants<L::V>,
    charging: F,
    lanes: Accumulators<QuadV<L>, L::V>,
    chunk: Chunk<L::V>,
    minus_eta: L::V,
    shift: L::V,
) -> StepResult<L> {
    let mixture = l.mul_add_into(chunk.weights, chunk.values, lanes.mixture);
    let (lowest_value, highest_value) = if RANGE {
        (
            l.min(chunk.values, lanes.lowest_value),
            l.max(chunk.values, lanes.highest_value),
        )
    } else {
        (lanes.lowest_value, lanes.highest_value)
    };
    let (charge, own) = charging.split(l, chunk.values, chunk.aux);
    let charged = l.add(chunk.charged, charge);
    let least_charged = l.min(charged, lanes.least_charged);
    let w = weight_lanes::<L, PRIOR, false>(l, constants, charged, chunk.prior, minus_eta, shift);
    let total = l.add_into(lanes.total, w);
    let (totals, least_total) = if TWIN {
        (charged, least_charged)
    } else {
        let totals = l.add(chunk.totals, own);
        (totals, l.min(totals, lanes.least_total))
    };
    let lanes = Accumulators {
        mixture,
        total,
        lowest_value,
        highest_value,
        least_charged,
        least_total,
    };
    (lanes, [charged, w, totals])
}

/// The least lane (the lanes hold no NaN that matters: a round with one is refused).
#[inline(always)]
fn least_lane(lanes: [f64; QUAD]) -> f64 {
    lanes
        .iter()
        .fold(f64::INFINITY, |least, &l| if l < least { l } else { least })
}

impl<F: Charging> RoundPass<'_, F> {
    #[inline(always)]
    fn sweep<W: Wide, const PRIOR: bool, const RANGE: bool, const TWIN: bool>(
        &mut self,
        w: W,
        log_prior: &[f64],
    ) -> RoundTotals {
        let q = w.quad();
        // Locals, so that the slices are not re-read through `self` in the loop.
        let (values, aux, charged, totals) = (self.values, self.aux, self.charged, self.totals);
        let weights = &mut *self.weights;
        let charged_next = &mut *self.charged_next;
        let totals_next = &mut *self.totals_next;
        let charging = self.charging;
        let n = values.len();
        assert!(
            aux.len() == n
                && weights.len() == n
                && charged.len() == n
                && charged_next.len() == n
                && totals.len() == n
                && totals_next.len() == n
                && (!PRIOR || log_prior.len() == n)
        );
        debug_assert!(
            !TWIN
                || charged
                    .iter()
                    .zip(totals)
                    .all(|(c, t)| c.to_bits() == t.to_bits())
        );
        let (minus_eta, shift) = (w.splat(-self.eta), w.splat(self.shift));
        let mut wide = Accumulators {
            mixture: q.splat(0.0),
            total: q.splat(0.0),
            lowest_value: w.splat(f64::INFINITY),
            highest_value: w.splat(f64::NEG_INFINITY),
            least_charged: w.splat(f64::INFINITY),
            least_total: w.splat(f64::INFINITY),
        };
        let constants = ExpConstants::new(w);
        // Whole chunks of the sweep's width (two chunks of four each with eight lanes).
        let wide_full = n - n % W::WIDTH;
        // Without a prior, the prior's chunks are read from `charged` and ignored; in a twin
        // pass, so are the ledger's.
        let priors = if PRIOR { log_prior } else { charged };
        let ledger = if TWIN { charged } else { totals };
        // Chunk iterators rather than indices: no bounds check per chunk.
        let inputs = values[..wide_full]
            .chunks_exact(W::WIDTH)
            .zip(aux[..wide_full].chunks_exact(W::WIDTH))
            .zip(charged[..wide_full].chunks_exact(W::WIDTH))
            .zip(priors[..wide_full].chunks_exact(W::WIDTH))
            .zip(ledger[..wide_full].chunks_exact(W::WIDTH));
        let outputs = weights[..wide_full]
            .chunks_exact_mut(W::WIDTH)
            .zip(charged_next[..wide_full].chunks_exact_mut(W::WIDTH))
            .zip(totals_next[..wide_full].chunks_exact_mut(W::WIDTH));
        for (((((v, a), c), p), t), ((wt, c_next), t_next)) in inputs.zip(outputs) {
            let chunk = Chunk {
                values: w.load_wide(v),
                aux: w.load_wide(a),
                weights: w.load_wide(wt),
                charged: w.load_wide(c),
                prior: if PRIOR { w.load_wide(p) } else { w.splat(0.0) },
                totals: if TWIN { w.splat(0.0) } else { w.load_wide(t) },
            };
            let written;
            (wide, written) = round_step::<W, F, PRIOR, RANGE, TWIN>(
                w, &constants, charging, wide, chunk, minus_eta, shift,
            );
            w.store_wide(c_next, written[0]);
            w.store_wide(wt, written[1]);
            w.store_wide(t_next, written[2]);
        }
        // The extremes folded to four lanes (nothing to do with four), the least C' and L'
        // bit for bit as four lanes would have left them (from what the sweep wrote).
        let least_charged = w.fold_first_least(wide.least_charged, &charged_next[..wide_full]);
        let mut lanes = Accumulators {
            mixture: wide.mixture,
            total: wide.total,
            lowest_value: if RANGE {
                w.fold_min(wide.lowest_value)
            } else {
                q.splat(f64::INFINITY)
            },
            highest_value: if RANGE {
                w.fold_max(wide.highest_value)
            } else {
                q.splat(f64::NEG_INFINITY)
            },
            least_charged,
            least_total: if TWIN {
                least_charged
            } else {
                w.fold_first_least(wide.least_total, &totals_next[..wide_full])
            },
        };
        // With eight lanes, a last whole chunk of four (none with four lanes), then the last,
        // partial chunk, on four lanes: the four-lane pass's chunks, in its order.
        let constants = constants.narrow(w);
        let (minus_eta, shift) = (w.narrow(minus_eta), w.narrow(shift));
        let full = n - n % QUAD;
        for base in (wide_full..full).step_by(QUAD) {
            let chunk = Chunk {
                values: q.load(quad(values, base)),
                aux: q.load(quad(aux, base)),
                weights: q.load(quad(weights, base)),
                charged: q.load(quad(charged, base)),
                prior: if PRIOR {
                    q.load(quad(log_prior, base))
                } else {
                    q.splat(0.0)
                },
                totals: if TWIN {
                    q.splat(0.0)
                } else {
                    q.load(quad(totals, base))
                },
            };
            let written;
            (lanes, written) = round_step::<W::Quad, F, PRIOR, RANGE, TWIN>(
                q, &constants, charging, lanes, chunk, minus_eta, shift,
            );
            q.store(quad_mut(charged_next, base), written[0]);
            q.store(quad_mut(weights, base), written[1]);
            q.store(quad_mut(totals_next, base), written[2]);
        }
        if full < n {
            // The last, partial chunk: the last four experts (overlapping the chunk before,
            // whose lanes are left out of the sums), or padded inputs when there are fewer
            // than four experts; only the lanes of new experts move the sums.
            let (base, valid) = tail_chunk(q, n);
            let load = |values: &[f64]| load_tail(q, values, base, n);
            // The weights of the overlapped experts were overwritten by the chunk before
            // (with the next round's), but their lanes are left out of the mixture.
            let chunk = Chunk {
                values: load(values),
                aux: load(aux),
                weights: load(weights),
                charged: load(charged),
                prior: if PRIOR { load(log_prior) } else { q.splat(0.0) },
                totals: if TWIN { q.splat(0.0) } else { load(totals) },
            };
            let (moved, outputs) = round_step::<W::Quad, F, PRIOR, RANGE, TWIN>(
                q, &constants, charging, lanes, chunk, minus_eta, shift,
            );
            let keep = |new, old| q.select(valid, new, old);
            lanes = Accumulators {
                mixture: keep(moved.mixture, lanes.mixture),
                total: keep(moved.total, lanes.total),
                lowest_value: keep(moved.lowest_value, lanes.lowest_value),
                highest_value: keep(moved.highest_value, lanes.highest_value),
                least_charged: keep(moved.least_charged, lanes.least_charged),
                least_total: keep(moved.least_total, lanes.least_total),
            };
            // The overlapped experts' outputs are written again with the same bits (the same
            // operations on the same inputs).
            unpad(charged_next, base, q.to_array(outputs[0]));
            unpad(weights, base, q.to_array(outputs[1]));
            unpad(totals_next, base, q.to_array(outputs[2]));
        }
        // The least L' by lanes, then its first position by a search of what the pass
        // wrote (a branch-free test of sixteen values at a time, from the start): cheaper
        // than carrying the index of each lane's least through the pass.
        let least_total = least_lane(q.to_array(lanes.least_total));
        let least_total_at = w.first_position(totals_next, least_total);
        let (lowest_value, highest_value) = if RANGE {
            let highest =
                q.to_array(lanes.highest_value)
                    .iter()
                    .fold(
                        f64::NEG_INFINITY,
                        |high, &h| if h > high { h } else { high },
                    );
            let lowest = least_lane(q.to_array(lanes.lowest_value));
            // A zero as +0: which zero a lane kept depends on the order of its values,
            // which eight lanes do not keep (the values are only compared).
            (lowest + 0.0, highest + 0.0)
        } else {
            (f64::INFINITY, f64::NEG_INFINITY)
        };
        let outside = RANGE
            && self.range.is_some_and(|(lower, upper)| {
                charging.outside(lowest_value, highest_value, lower, upper)
            });
        let mixture = kernels::sum_quad(q.to_array(lanes.mixture));
        RoundTotals {
            finite: mixture.is_finite(),
            outside,
            lowest_value,
            highest_value,
            mixture,
            least_charged: least_lane(q.to_array(lanes.least_charged)),
            weight_total: kernels::sum_quad(q.to_array(lanes.total)),
            least_total,
            least_total_at,
        }
    }
}

/// C_i += ℓ_i, the range check, and the next round's weights; returns
/// (min C, any loss out of range, Σ w).
struct ChargeAndWeigh<'a> {
    charged: &'a mut [f64],
    losses: &'a [f64],
    log_prior: Option<&'a [f64]>,
    range: (f64, f64),
    eta: f64,
    shift: f64,
    weights: &'a mut [f64],
}

impl Kernel for ChargeAndWeigh<'_> {
    type Output = (f64, bool, f64);

    #[inline(always)]
    fn run(self) -> (f64, bool, f64) {
        let (lower, upper) = self.range;
        // A count rather than `any`, whose early exit would keep the loop scalar.
        let outside: usize = self
            .losses
            .iter()
            .map(|&l| usize::from(l < lower || l > upper))
            .sum();
        let least = kernels::add_and_min(self.charged, self.losses);
        let total = kernels::dispatch_quad(Weigh {
            charged: self.charged,
            log_prior: self.log_prior,
            eta: self.eta,
            shift: self.shift,
            weights: self.weights,
        });
        (least, outside > 0, total)
    }
}

/// p_i = e^{−η(C_i − min C)} / Σ_j e^{−η(C_j − min C)}.
struct UniformWeights<'a> {
    charged: &'a [f64],
    eta: f64,
    least: f64,
    probabilities: &'a mut [f64],
}

impl Kernel for UniformWeights<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let minus_eta = -self.eta;
        for (p, c) in self.probabilities.iter_mut().zip(self.charged) {
            *p = kernels::exp(minus_eta * (c - self.least));
        }
        let scale = 1.0 / kernels::sum(self.probabilities);
        for p in self.probabilities.iter_mut() {
            *p *= scale;
        }
    }
}

/// Σ_i p_i e^{−η(ℓ_i − ℓ_min)}.
struct MixSum<'a> {
    probabilities: &'a [f64],
    losses: &'a [f64],
    eta: f64,
    least: f64,
}

impl Kernel for MixSum<'_> {
    type Output = f64;

    #[inline(always)]
    fn run(self) -> f64 {
        let mut total = 0.0;
        for (p, l) in self.probabilities.iter().zip(self.losses) {
            // Experts without weight contribute nothing (their loss may be anything).
            if *p > 0.0 {
                total += p * kernels::exp(-self.eta * (l - self.least));
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Losses that drive linear weights to exactly 0 do not lose the expert: once the others
    /// catch up, its weight comes back.
    #[test]
    fn weights_recover_from_what_would_underflow() {
        let mut weights = ExpWeights::new(2, None).unwrap();
        let mut p = [0.0; 2];
        weights.charge(&[0.0, 2000.0]);
        weights.probabilities(1.0, None, &mut p);
        assert_eq!(p, [1.0, 0.0]); // e^{-2000} underflows in linear space
        assert!((-2000.0f64).exp() == 0.0);
        weights.charge(&[2001.0, 0.0]); // now expert 1 leads by 1
        weights.probabilities(1.0, None, &mut p);
        let expected = 1.0 / (1.0 + (-1.0f64).exp());
        // p = 1/(1 + e^{−1}) moves by at most p(1 − p) ≤ ¼ times the relative error of the
        // exponential (≤ 1e−13), plus rounding.
        assert!((p[1] - expected).abs() < 0.25e-13 + 1e-15, "{p:?}");
    }

    /// A prior whose ratio underflows (1e−315 against 1e167) keeps a finite log prior.
    #[test]
    fn a_prior_spanning_many_orders_of_magnitude_stays_finite() {
        let weights = ExpWeights::new(2, Some(&[2.7e-315, 2.3e167])).unwrap();
        let expected = 2.7e-315f64.ln() - 2.3e167f64.ln();
        assert!(
            (weights.log_prior(0) - expected).abs() < 1e-9,
            "{}",
            weights.log_prior(0)
        );
        assert_eq!(weights.log_prior(1), 0.0);
    }

    /// Random inputs for a fused pass over `n` experts.
    fn pass_inputs(n: usize, seed: u64) -> [Vec<f64>; 5] {
        let mut rng = crate::rng::StreamRng::seed_from(seed);
        let mut draw =
            |scale: f64| -> Vec<f64> { (0..n).map(|_| scale * (rng.next_f64() - 0.3)).collect() };
        let (values, weights, charged, totals, prior) =
            (draw(2.0), draw(1.0), draw(900.0), draw(50.0), draw(3.0));
        let weights = weights.iter().map(|w| w.abs()).collect();
        let prior = prior.iter().map(|p| -p.abs()).collect();
        [values, weights, charged, totals, prior]
    }

    /// Everything a pass returns and writes, as bits.
    fn run_pass<F: Charging>(
        inputs: &[Vec<f64>; 5],
        charging: F,
        prior: bool,
        range: Option<(f64, f64)>,
        eta: f64,
        twin: bool,
    ) -> Vec<Vec<u64>> {
        let [values, weights, charged, totals, log_prior] = inputs;
        let n = values.len();
        let results = kernels::run_on_every_path(|| RoundPassOwned {
            values: values.clone(),
            weights: weights.clone(),
            charged: charged.clone(),
            totals: totals.clone(),
            log_prior: prior.then(|| log_prior.clone()),
            charging,
            range,
            eta,
            shift: -40.0,
            twin,
            outputs: [vec![0.0; n], vec![0.0; n]],
        });
        let paths: Vec<Vec<u64>> = results
            .into_iter()
            .map(|(totals, written)| {
                let mut bits = vec![
                    u64::from(totals.finite),
                    u64::from(totals.outside),
                    totals.mixture.to_bits(),
                    totals.least_charged.to_bits(),
                    totals.weight_total.to_bits(),
                    totals.least_total.to_bits(),
                    totals.least_total_at as u64,
                    totals.lowest_value.to_bits(),
                    totals.highest_value.to_bits(),
                ];
                bits.extend(written.iter().map(|v| v.to_bits()));
                bits
            })
            .collect();
        paths
    }

    /// A [`RoundPass`] with owned buffers, so that each path starts from the same state.
    struct RoundPassOwned<F> {
        values: Vec<f64>,
        weights: Vec<f64>,
        charged: Vec<f64>,
        totals: Vec<f64>,
        log_prior: Option<Vec<f64>>,
        charging: F,
        range: Option<(f64, f64)>,
        eta: f64,
        shift: f64,
        twin: bool,
        outputs: [Vec<f64>; 2],
    }

    impl<F: Charging> WideKernel for RoundPassOwned<F> {
        type Output = (RoundTotals, Vec<f64>);
        fn run<W: Wide>(mut self, w: W) -> (RoundTotals, Vec<f64>) {
            let [charged_next, totals_next] = &mut self.outputs;
            let totals = (&mut RoundPass {
                values: &self.values,
                aux: &self.values,
                charging: self.charging,
                weights: &mut self.weights,
                charged: &self.charged,
                charged_next,
                log_prior: self.log_prior.as_deref(),
                totals: &self.totals,
                totals_next,
                eta: self.eta,
                shift: self.shift,
                range: self.range,
                track_range: false,
                twin: self.twin,
            })
                .run(w);
            let mut written = self.weights;
            written.extend(&self.outputs[0]);
            written.extend(&self.outputs[1]);
            (totals, written)
        }
    }

    /// The sizes the bit-identity tests sweep: every length of the last chunks of four and
    /// of eight (n = 1..40), and longer rounds.
    fn sizes() -> impl Iterator<Item = usize> {
        (1..=40).chain([63, 64, 65, 127, 1000, 1003])
    }

    /// The fused pass gives the same bits on the portable path, the AVX2 path and the
    /// AVX-512 path (where the CPU has them), for every size (whole chunks and every tail
    /// length), prior or not, range or not, and every way of charging; and what it writes is
    /// what its definition says.
    #[test]
    fn fused_pass_has_the_same_bits_on_every_path() {
        for n in sizes() {
            for prior in [false, true] {
                for range in [None, Some((-0.2, 1.0))] {
                    let inputs = pass_inputs(n, n as u64);
                    let own = run_pass(&inputs, OwnLoss, prior, range, 0.7, false);
                    let given = run_pass(&inputs, GivenCharges, prior, range, 0.7, false);
                    for paths in [&own, &given] {
                        assert_eq!(paths.len(), kernels::Path::available().len());
                        for (path, bits) in kernels::Path::available().iter().zip(paths) {
                            assert_eq!(bits, &paths[0], "n = {n}, {path:?}");
                        }
                    }
                    // The definition, element by element, in scalar arithmetic.
                    let [values, weights, charged, totals, log_prior] = &inputs;
                    let bits = &own[0];
                    let mixture = f64::from_bits(bits[2]);
                    let direct: f64 = weights.iter().zip(values).map(|(w, v)| w * v).sum();
                    assert!((mixture - direct).abs() <= 1e-12 * (1.0 + direct.abs()));
                    let outside =
                        range.is_some_and(|(lo, hi)| values.iter().any(|v| !(lo..=hi).contains(v)));
                    assert_eq!(bits[1], u64::from(outside));
                    for i in 0..n {
                        let c = charged[i] + values[i];
                        let argument = if prior {
                            (-0.7f64).mul_add(c + 40.0, log_prior[i])
                        } else {
                            -0.7 * (c + 40.0)
                        };
                        let w = argument.exp();
                        let w_bits = f64::from_bits(bits[9 + i]);
                        assert_eq!(f64::from_bits(bits[9 + n + i]), c);
                        assert_eq!(f64::from_bits(bits[9 + 2 * n + i]), totals[i] + values[i]);
                        assert!((w_bits - w).abs() <= 1e-13 * w, "{w_bits} vs {w}");
                    }
                    let least = (0..n)
                        .map(|i| totals[i] + values[i])
                        .fold(f64::INFINITY, f64::min);
                    let at = (0..n).position(|i| totals[i] + values[i] == least).unwrap();
                    assert_eq!((f64::from_bits(bits[5]), bits[6] as usize), (least, at));
                }
            }
        }
    }

    /// v² charged and recorded (C = L kept): its range checked from the values' extremes.
    #[derive(Clone, Copy)]
    struct Squared;

    impl Charging for Squared {
        const TWIN: bool = true;
        fn split<L: Lanes>(self, l: L, value: L::V, _aux: L::V) -> (L::V, L::V) {
            let square = l.mul(value, value);
            (square, square)
        }
        fn outside(self, lowest: f64, highest: f64, lower: f64, upper: f64) -> bool {
            let largest = (lowest * lowest).max(highest * highest);
            lower > 0.0 || largest > upper
        }
    }

    /// A twin pass (C = L bit for bit, the charge recorded) computes C' once and writes it
    /// to both buffers: every output and every total is the bits of the full pass, on every
    /// path; the pass reports the least and the largest value, and a charge that is not the
    /// value (v²) is found out of range exactly when one is.
    #[test]
    fn twin_passes_keep_the_bits_and_the_range_of_the_values() {
        for n in sizes() {
            for prior in [false, true] {
                for range in [None, Some((-0.2, 1.0)), Some((0.0, 0.5)), Some((0.0, 4.0))] {
                    let mut inputs = pass_inputs(n, 3 * n as u64);
                    inputs[3] = inputs[2].clone();
                    let full = run_pass(&inputs, OwnLoss, prior, range, 0.7, false);
                    let twin = run_pass(&inputs, OwnLoss, prior, range, 0.7, true);
                    assert!(twin.windows(2).all(|w| w[0] == w[1]), "n = {n}");
                    assert_eq!(full[0], twin[0], "n = {n}");
                    // The range: the least and the largest value.
                    let values = &inputs[0];
                    if range.is_some() {
                        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
                        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        assert_eq!(f64::from_bits(twin[0][7]), low);
                        assert_eq!(f64::from_bits(twin[0][8]), high);
                    }
                    let squared = run_pass(&inputs, Squared, prior, range, 0.7, true);
                    assert!(squared.windows(2).all(|w| w[0] == w[1]), "n = {n}");
                    let outside = range.is_some_and(|(lo, hi)| {
                        values.iter().any(|v| !(lo..=hi).contains(&(v * v)))
                    });
                    assert_eq!(squared[0][1], u64::from(outside), "n = {n}, {range:?}");
                }
            }
        }
    }

    /// Zeros of both signs: charged losses and ledger entries of ±0 charged −0 keep their
    /// signs (−0 + −0 = −0, +0 + −0 = +0), so the least C' and L' are zeros whose sign is
    /// that of the first zero of their lane; eight lanes hold the zeros of a lane in two
    /// halves and must find which came first. Charges of ±0 and ±1 make the least and
    /// largest charge zeros too. Every path gives the same bits, for every size.
    #[test]
    fn zeros_of_both_signs_keep_their_bits_on_every_path() {
        let mut rng = crate::rng::StreamRng::seed_from(17);
        let mut pick =
            |pool: &[f64]| pool[(rng.next_f64() * pool.len() as f64) as usize % pool.len()];
        for n in sizes().filter(|&n| n <= 128) {
            for trial in 0..8 {
                let mut inputs = pass_inputs(n, (n * 8 + trial) as u64);
                for i in 0..n {
                    inputs[2][i] = pick(&[0.0, -0.0, 0.0, -0.0, 1.0]);
                    inputs[3][i] = pick(&[0.0, -0.0, 2.0]);
                    // Charges: all −0; ±0 and ±1; ±0 and 1 (the least charge a zero);
                    // ±0 and −1 (the largest a zero).
                    inputs[0][i] = match trial % 4 {
                        0 => -0.0,
                        1 => pick(&[-0.0, 0.0, 1.0, -1.0]),
                        2 => pick(&[-0.0, 0.0, 1.0]),
                        _ => pick(&[-0.0, 0.0, -1.0]),
                    };
                }
                for (prior, range) in [
                    (false, None),
                    (true, Some((-0.5, 1.0))),
                    (false, Some((0.0, 0.5))),
                ] {
                    for paths in [
                        run_pass(&inputs, OwnLoss, prior, range, 0.7, false),
                        run_pass(&inputs, GivenCharges, prior, range, 0.7, false),
                    ] {
                        for (path, bits) in kernels::Path::available().iter().zip(&paths) {
                            assert_eq!(bits, &paths[0], "n = {n}, trial {trial}, {path:?}");
                        }
                    }
                    // Twin: C = L.
                    let mut twin = inputs.clone();
                    twin[3] = twin[2].clone();
                    let paths = run_pass(&twin, OwnLoss, prior, range, 0.7, true);
                    for (path, bits) in kernels::Path::available().iter().zip(&paths) {
                        assert_eq!(bits, &paths[0], "n = {n}, trial {trial}, twin, {path:?}");
                    }
                }
            }
        }
    }

    /// A non-finite value makes the mixture non-finite, whatever its weight (0 × ∞ is NaN).
    #[test]
    fn fused_pass_sees_non_finite_values() {
        for n in [3, 4, 9] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                for at in 0..n {
                    let mut inputs = pass_inputs(n, 7);
                    inputs[0][at] = bad;
                    inputs[1][at] = 0.0;
                    for path in run_pass(&inputs, OwnLoss, false, None, 0.5, false) {
                        assert_eq!(path[0], 0, "n = {n}, {bad} at {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn prior_and_awake_mask() {
        let weights = ExpWeights::new(3, Some(&[1.0, 2.0, 1.0])).unwrap();
        let mut p = [0.0; 3];
        weights.probabilities(0.5, None, &mut p);
        assert!((p[1] - 0.5).abs() < 1e-15);
        weights.probabilities(0.5, Some(&[true, false, true]), &mut p);
        assert_eq!(p, [0.5, 0.0, 0.5]);
        assert!(ExpWeights::new(2, Some(&[1.0, 0.0])).is_err());
    }

    #[test]
    fn infinite_rate_follows_the_leader() {
        let mut weights = ExpWeights::new(3, None).unwrap();
        weights.charge(&[1.0, 0.5, 0.5]);
        let mut p = [0.0; 3];
        weights.probabilities(f64::INFINITY, None, &mut p);
        assert_eq!(p, [0.0, 0.5, 0.5]);
    }

    #[test]
    fn mix_loss_is_between_min_and_mixture() {
        let p = [0.2, 0.5, 0.3];
        let losses = [1.0, 0.0, 3.0];
        let mixture: f64 = p.iter().zip(&losses).map(|(p, l)| p * l).sum();
        for eta in [1e-6, 0.1, 1.0, 10.0, 1e6] {
            let mix = ExpWeights::mix_loss(eta, &p, 1.0, &losses);
            assert!(mix >= 0.0 - 1e-12 && mix <= mixture + 1e-12, "{eta}: {mix}");
        }
        // η → 0: the mix loss tends to the mixture loss; η → ∞: to the least loss.
        assert!((ExpWeights::mix_loss(1e-9, &p, 1.0, &losses) - mixture).abs() < 1e-6);
        assert_eq!(ExpWeights::mix_loss(f64::INFINITY, &p, 1.0, &losses), 0.0);
    }
}
