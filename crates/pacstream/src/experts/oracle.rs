//! Hindsight comparators: the best expert, and the best convex combination of experts for
//! the square loss.
//!
//! [`ExpertLedger`] keeps, in O(N) memory, every expert's cumulative loss and the learner's,
//! so that the regret against the best expert so far is known after every round:
//!
//! regret_t = L̂_t − min_i L_{t,i}.
//!
//! With sleeping experts the comparison is made on each expert's awake rounds only:
//! regret_t = max_i Σ_{s ≤ t, i awake at s} (ℓ̂_s − ℓ_{s,i}).
//!
//! [`ConvexCombinationOracle`] solves min_{q ∈ simplex} Σ_t (Σ_i q_i ỹ_{t,i} − y_t)², the
//! comparator of EWA with the gradient option, from O(N²) running sums (Gram matrix of the
//! advice, advice × outcome, Σ y²), by accelerated projected gradient.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::eval::CompensatedSum;
use crate::kernels::{self, Kernel};

/// Cumulative losses of the learner and of every expert, and the regret between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpertLedger {
    learner: CompensatedSum,
    /// L_i: each expert's cumulative loss on the rounds it was awake.
    experts: Vec<f64>,
    /// The learner's cumulative loss on each expert's awake rounds; `None` until a round
    /// with a sleeping expert (before that it equals the learner's total).
    learner_when_awake: Option<Vec<f64>>,
    rounds: u64,
    /// min_i L_i and the lowest index holding it, kept up to date after every round.
    least: f64,
    least_at: usize,
}

impl ExpertLedger {
    /// An empty ledger for `n_experts` experts.
    pub fn new(n_experts: usize) -> Self {
        Self {
            learner: CompensatedSum::default(),
            experts: vec![0.0; n_experts],
            learner_when_awake: None,
            rounds: 0,
            least: 0.0,
            least_at: 0,
        }
    }

    /// Records a round: the learner's loss and every expert's (the losses of asleep experts
    /// are ignored).
    pub fn record(&mut self, learner_loss: f64, expert_losses: &[f64], awake: Option<&[bool]>) {
        self.rounds += 1;
        let before = self.learner.value();
        self.learner.add(learner_loss);
        match awake {
            None => {
                let (least, least_at) = kernels::dispatch(AddAndArgmin {
                    totals: &mut self.experts,
                    losses: expert_losses,
                });
                self.least = least;
                self.least_at = least_at;
                if let Some(when_awake) = &mut self.learner_when_awake {
                    when_awake.iter_mut().for_each(|l| *l += learner_loss);
                }
            }
            Some(awake) => {
                let when_awake = self
                    .learner_when_awake
                    .get_or_insert_with(|| vec![before; expert_losses.len()]);
                for i in 0..self.experts.len() {
                    if awake[i] {
                        self.experts[i] += expert_losses[i];
                        when_awake[i] += learner_loss;
                    }
                }
                (self.least, self.least_at) = kernels::min_and_position(&self.experts);
            }
        }
    }

    /// Records a round whose every expert was awake, from a [`RoundPass`] that wrote the new
    /// cumulative losses into `next` (min `least` at `least_at`); the old ones go to `next`.
    ///
    /// [`RoundPass`]: super::weights::RoundPass
    pub(crate) fn record_totals(
        &mut self,
        learner_loss: f64,
        next: &mut Vec<f64>,
        least: f64,
        least_at: usize,
    ) {
        self.rounds += 1;
        self.learner.add(learner_loss);
        std::mem::swap(&mut self.experts, next);
        self.least = least;
        self.least_at = least_at;
        if let Some(when_awake) = &mut self.learner_when_awake {
            when_awake.iter_mut().for_each(|l| *l += learner_loss);
        }
    }

    /// The number of rounds recorded.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The learner's cumulative loss L̂_t.
    pub fn learner_loss(&self) -> f64 {
        self.learner.value()
    }

    /// Every expert's cumulative loss (on its awake rounds).
    pub fn expert_losses(&self) -> &[f64] {
        &self.experts
    }

    /// The expert the learner regrets most and that regret: without sleeping experts, the
    /// expert of least cumulative loss (lowest index on ties) and L̂ − L_i; with them, the
    /// expert maximising the regret on its awake rounds.
    pub fn best_expert(&self) -> (usize, f64) {
        match &self.learner_when_awake {
            None => (self.least_at, self.learner.value() - self.least),
            Some(when_awake) => when_awake.iter().zip(&self.experts).enumerate().fold(
                (0, f64::NEG_INFINITY),
                |best, (i, (learner, expert))| {
                    let regret = learner - expert;
                    if regret > best.1 { (i, regret) } else { best }
                },
            ),
        }
    }

    /// The regret against the best expert in hindsight (see [`ExpertLedger::best_expert`]).
    pub fn regret(&self) -> f64 {
        self.best_expert().1
    }

    /// Whether some round had a sleeping expert (the regrets are then on awake rounds).
    pub fn has_sleeping_rounds(&self) -> bool {
        self.learner_when_awake.is_some()
    }

    /// The regret against expert `index` on its awake rounds.
    pub fn regret_against(&self, index: usize) -> f64 {
        let learner = match &self.learner_when_awake {
            None => self.learner.value(),
            Some(when_awake) => when_awake[index],
        };
        learner - self.experts[index]
    }

    pub(crate) fn validate_snapshot(&self, n_experts: usize) -> Result<()> {
        if self.experts.len() != n_experts
            || kernels::min_and_position(&self.experts) != (self.least, self.least_at)
            || self
                .learner_when_awake
                .as_ref()
                .is_some_and(|l| l.len() != n_experts)
            || self
                .experts
                .iter()
                .chain(self.learner_when_awake.iter().flatten())
                .any(|v| !v.is_finite())
        {
            return Err(Error::InvalidSnapshot(
                "expert ledger: wrong number of experts or non-finite losses".into(),
            ));
        }
        Ok(())
    }
}

/// L_i += ℓ_i; returns (min L, its lowest index).
struct AddAndArgmin<'a> {
    totals: &'a mut [f64],
    losses: &'a [f64],
}

impl Kernel for AddAndArgmin<'_> {
    type Output = (f64, usize);

    #[inline(always)]
    fn run(self) -> (f64, usize) {
        let least = kernels::add_and_min(self.totals, self.losses);
        (least, kernels::first_position(self.totals, least))
    }
}

/// The best convex combination of the experts' advice for the square loss, in hindsight.
///
/// ```
/// use pacstream::experts::ConvexCombinationOracle;
///
/// // The outcome is the average of two experts: the best combination is (½, ½), loss 0.
/// let mut oracle = ConvexCombinationOracle::new(2);
/// for t in 0..50 {
///     let (a, b) = ((t as f64).sin(), (t as f64 * 0.7).cos());
///     oracle.observe(&[a, b], 0.5 * a + 0.5 * b)?;
/// }
/// let (weights, loss) = oracle.solve();
/// assert!((weights[0] - 0.5).abs() < 1e-6 && loss < 1e-9);
/// # Ok::<(), pacstream::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvexCombinationOracle {
    n_experts: usize,
    /// Σ_t ỹ_t ỹ_tᵀ (row-major N × N).
    gram: Vec<f64>,
    /// Σ_t y_t ỹ_t.
    cross: Vec<f64>,
    /// Σ_t y_t².
    outcome_energy: f64,
}

impl ConvexCombinationOracle {
    /// An oracle for `n_experts` experts (memory N², time N² per round: for moderate N).
    pub fn new(n_experts: usize) -> Self {
        Self {
            n_experts,
            gram: vec![0.0; n_experts * n_experts],
            cross: vec![0.0; n_experts],
            outcome_energy: 0.0,
        }
    }

    /// Adds a round.
    pub fn observe(&mut self, advice: &[f64], outcome: f64) -> Result<()> {
        if advice.len() != self.n_experts {
            return Err(Error::DimensionMismatch {
                row: None,
                expected: self.n_experts,
                found: advice.len(),
            });
        }
        crate::data::check_finite(advice)?;
        crate::data::check_finite(&[outcome])?;
        let n = self.n_experts;
        for i in 0..n {
            let row = &mut self.gram[i * n..(i + 1) * n];
            for (g, a) in row.iter_mut().zip(advice) {
                *g += advice[i] * a;
            }
            self.cross[i] += outcome * advice[i];
        }
        self.outcome_energy += outcome * outcome;
        Ok(())
    }

    /// The loss Σ_t (q·ỹ_t − y_t)² of the combination q.
    pub fn loss_of(&self, weights: &[f64]) -> f64 {
        let n = self.n_experts;
        let mut quadratic = 0.0;
        for i in 0..n {
            let row = &self.gram[i * n..(i + 1) * n];
            let gq: f64 = row.iter().zip(weights).map(|(g, q)| g * q).sum();
            quadratic += weights[i] * gq;
        }
        let linear: f64 = self.cross.iter().zip(weights).map(|(c, q)| c * q).sum();
        (quadratic - 2.0 * linear + self.outcome_energy).max(0.0)
    }

    /// The best combination and its loss, by accelerated projected gradient (FISTA) with
    /// step 1/L, L = 2·trace(Gram) ≥ the gradient's Lipschitz constant, until the iterates
    /// move by less than 1e-13 or 100,000 iterations.
    pub fn solve(&self) -> (Vec<f64>, f64) {
        let n = self.n_experts;
        let uniform = vec![1.0 / n as f64; n];
        let trace: f64 = (0..n).map(|i| self.gram[i * n + i]).sum();
        if trace <= 0.0 {
            return (uniform.clone(), self.loss_of(&uniform));
        }
        let step = 1.0 / (2.0 * trace);
        let mut current = uniform.clone();
        let mut momentum = uniform;
        let mut gradient = vec![0.0; n];
        let mut next = vec![0.0; n];
        let mut t = 1.0f64;
        for _ in 0..100_000 {
            for i in 0..n {
                let row = &self.gram[i * n..(i + 1) * n];
                let gq: f64 = row.iter().zip(&momentum).map(|(g, q)| g * q).sum();
                gradient[i] = 2.0 * (gq - self.cross[i]);
            }
            for i in 0..n {
                next[i] = momentum[i] - step * gradient[i];
            }
            project_on_simplex(&mut next);
            let t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t).sqrt());
            let mut moved = 0.0f64;
            for i in 0..n {
                let delta = next[i] - current[i];
                moved = moved.max(delta.abs());
                momentum[i] = next[i] + (t - 1.0) / t_next * delta;
            }
            current.copy_from_slice(&next);
            t = t_next;
            if moved < 1e-13 {
                break;
            }
        }
        let loss = self.loss_of(&current);
        (current, loss)
    }
}

impl ConvexCombinationOracle {
    /// The best **linear** combination in hindsight, min_{w ∈ ℝᴺ} Σ_t (w·ỹ_t − y_t)² (least
    /// squares, no constraint), and its loss: the comparator of the rules that may put
    /// negative weights or weights summing to more than 1 on the experts (ridge; ML-Poly and
    /// EWA compete with the convex one). Solved by Cholesky on the Gram matrix plus λI,
    /// λ = 1e-12 · trace/N (raised a hundredfold until the factorisation succeeds), so that
    /// collinear experts (moving averages of one series) still give an answer; its loss is at
    /// most the convex combination's up to that λ.
    ///
    /// ```
    /// use pacstream::experts::ConvexCombinationOracle;
    /// let mut oracle = ConvexCombinationOracle::new(2);
    /// for t in 0..30 {
    ///     let (a, b) = ((t as f64).sin(), (t as f64 * 0.3).cos());
    ///     oracle.observe(&[a, b], 2.0 * a - b)?; // outside the simplex
    /// }
    /// let (weights, loss) = oracle.solve_linear();
    /// assert!((weights[0] - 2.0).abs() < 1e-6 && (weights[1] + 1.0).abs() < 1e-6);
    /// assert!(loss < 1e-9 && loss < oracle.solve().1);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    pub fn solve_linear(&self) -> (Vec<f64>, f64) {
        let n = self.n_experts;
        let trace: f64 = (0..n).map(|i| self.gram[i * n + i]).sum();
        if !(trace > 0.0 && trace.is_finite()) {
            let zero = vec![0.0; n];
            let loss = self.loss_of(&zero);
            return (zero, loss);
        }
        let mut ridge = 1e-12 * trace / n as f64;
        for _ in 0..12 {
            if let Some(weights) = cholesky_solve(&self.gram, &self.cross, n, ridge) {
                let loss = self.loss_of(&weights);
                return (weights, loss);
            }
            ridge *= 100.0;
        }
        let zero = vec![0.0; n];
        let loss = self.loss_of(&zero);
        (zero, loss)
    }
}

/// Solves (G + λI) w = b by Cholesky; `None` if a pivot is not positive.
fn cholesky_solve(gram: &[f64], rhs: &[f64], n: usize, ridge: f64) -> Option<Vec<f64>> {
    let mut lower = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut sum = gram[i * n + j] + if i == j { ridge } else { 0.0 };
            for k in 0..j {
                sum -= lower[i * n + k] * lower[j * n + k];
            }
            if i == j {
                if !(sum > 0.0 && sum.is_finite()) {
                    return None;
                }
                lower[i * n + i] = sum.sqrt();
            } else {
                lower[i * n + j] = sum / lower[j * n + j];
            }
        }
    }
    let mut z = vec![0.0; n];
    for i in 0..n {
        let mut sum = rhs[i];
        for k in 0..i {
            sum -= lower[i * n + k] * z[k];
        }
        z[i] = sum / lower[i * n + i];
    }
    let mut w = vec![0.0; n];
    for i in (0..n).rev() {
        let mut sum = z[i];
        for k in i + 1..n {
            sum -= lower[k * n + i] * w[k];
        }
        w[i] = sum / lower[i * n + i];
    }
    w.iter().all(|x| x.is_finite()).then_some(w)
}

/// Euclidean projection onto the probability simplex (sort-based, Duchi et al. 2008).
pub(crate) fn project_on_simplex(values: &mut [f64]) {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut cumulative = 0.0;
    let mut threshold = 0.0;
    for (k, &v) in sorted.iter().enumerate() {
        cumulative += v;
        let candidate = (cumulative - 1.0) / (k + 1) as f64;
        if v - candidate > 0.0 {
            threshold = candidate;
        }
    }
    values
        .iter_mut()
        .for_each(|v| *v = (*v - threshold).max(0.0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_lands_on_the_simplex() {
        let mut v = [0.5, 2.0, -1.0, 0.1];
        project_on_simplex(&mut v);
        assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!(v.iter().all(|x| *x >= 0.0));
        assert_eq!(v, [0.0, 1.0, 0.0, 0.0]);
        let mut inside = [0.2, 0.3, 0.5];
        project_on_simplex(&mut inside);
        assert!((inside[0] - 0.2).abs() < 1e-15 && (inside[2] - 0.5).abs() < 1e-15);
    }

    #[test]
    fn ledger_regret_with_and_without_sleep() {
        let mut ledger = ExpertLedger::new(2);
        ledger.record(1.0, &[2.0, 0.5], None);
        assert_eq!(ledger.best_expert(), (1, 0.5));
        // Expert 1 sleeps; only expert 0 is compared on this round.
        ledger.record(1.0, &[0.0, 99.0], Some(&[true, false]));
        assert_eq!(ledger.expert_losses(), &[2.0, 0.5]);
        assert_eq!(ledger.regret_against(0), 0.0);
        assert_eq!(ledger.regret_against(1), 0.5);
        assert_eq!(ledger.regret(), 0.5);
    }

    #[test]
    fn oracle_matches_a_brute_force_grid() {
        let mut oracle = ConvexCombinationOracle::new(3);
        for t in 0..40 {
            let x = t as f64 * 0.1;
            oracle
                .observe(&[x.sin(), x.cos(), 1.0], 0.3 * x.sin() + 0.1 + 0.05 * x)
                .unwrap();
        }
        let (weights, loss) = oracle.solve();
        let mut best = f64::INFINITY;
        for a in 0..=200 {
            for b in 0..=(200 - a) {
                let q = [
                    a as f64 / 200.0,
                    b as f64 / 200.0,
                    (200 - a - b) as f64 / 200.0,
                ];
                best = best.min(oracle.loss_of(&q));
            }
        }
        assert!(loss <= best + 1e-9, "{loss} vs grid {best}");
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
