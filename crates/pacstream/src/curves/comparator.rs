//! The hindsight comparator (spec §7): a deterministic best-improvement local search,
//! offline, with full information and no perturbation.
//!
//! It minimises the unpenalised Σ_s Δ(f, x_s) over the stored points, subject to K ≤ p and
//! 𝓛 ≤ L: at every iteration it scores the candidates of every window along the curve (each
//! window with the full candidate budget, the local vertex sets drawn from a fixed seed) and
//! moves to the best, until no candidate lowers the sum by more than 1e-12 relatively. Its
//! curve f* is a *local* optimum, so the regret computed against it (cumulative loss minus
//! Σ_s Δ(f*, x_s)) is a lower estimate of the regret against the best curve in hindsight.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::candidates::{
    Candidate, Limits, Neighbourhood, fingerprint, local_vertices, window_candidates,
};
use super::evaluate::{Pieces, Pool, Scoring, Table, Window};
use super::lattice::Lattice;
use super::model::PrincipalCurve;
use super::params::PrincipalCurveConfig;
use super::partition::CurveState;
use crate::geometry::Polyline;
use crate::rng::StreamRng;

/// The search stops after this many moves even if it could still improve.
const MAX_ITERATIONS: usize = 10_000;

/// The child stream of the seed from which the comparator draws its local vertex sets.
const COMPARATOR_STREAM: u64 = 0x6869_6e64; // "hind"

/// The curve found in hindsight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HindsightCurve {
    /// f*, in user coordinates.
    pub curve: PrincipalCurve,
    /// Σ_s Δ(f*, x_s) over the points it was fitted on.
    pub loss: f64,
    /// The number of points it was fitted on.
    pub n_points: usize,
    /// The number of moves made.
    pub iterations: usize,
    /// Whether the search stopped because no candidate improved (rather than at the cap).
    pub converged: bool,
}

/// Fits f* on `points` (internal coordinates, row-major; the first of round `first_round`),
/// starting from the curve `start` (keys).
pub(crate) fn hindsight_fit(
    lattice: &Lattice,
    start: Vec<i64>,
    first_round: u64,
    points: Vec<f64>,
    config: &PrincipalCurveConfig,
) -> HindsightCurve {
    let dim = lattice.dim();
    let n_points = points.len() / dim;
    let mut state = CurveState::new(
        lattice.clone(),
        start,
        first_round.max(1),
        points,
        vec![true; n_points],
    );
    let scoring = Scoring {
        explored_only: false,
        weight: 1.0,
        loss_bound: lattice.loss_bound(),
    };
    let limits = Limits {
        max_segments: config.max_segments,
        max_length: config.max_length,
    };
    let root = StreamRng::seed_from(config.seed).child(COMPARATOR_STREAM);
    let mut iterations = 0;
    let mut converged = false;
    while iterations < MAX_ITERATIONS {
        let total = total_loss(&state);
        let windows = Window::all(state.n_segments());
        let mut seen: HashSet<u64> = HashSet::new();
        seen.insert(fingerprint(&state.keys));
        let mut pieces = Pieces::default();
        let mut best: Option<(f64, Pool, Candidate, Vec<i64>)> = None;
        for (index, &window) in windows.iter().enumerate() {
            let hood = Neighbourhood::new(&state, window);
            let mut rng = root.child(iterations as u64).child(index as u64);
            let local = local_vertices(&state, window, &hood, config.local_vertices, &mut rng);
            let mut candidates = Vec::new();
            window_candidates(
                &state,
                index,
                window,
                &hood,
                &local,
                config.max_candidates,
                limits,
                &mut rng,
                &mut seen,
                &mut candidates,
            );
            if candidates.is_empty() {
                continue;
            }
            let pool = Pool::new(&state, window, &local);
            let mut table = Table::new(&state, &pool, |_| true);
            let mut window_best: Option<(f64, usize)> = None;
            for (c, candidate) in candidates.iter().enumerate() {
                pool.pieces(candidate.order(), &mut pieces);
                let change = table.change(&pool, &pieces, scoring).loss;
                if window_best.is_none_or(|b| change < b.0) {
                    window_best = Some((change, c));
                }
            }
            if let Some((change, c)) = window_best {
                if best.as_ref().is_none_or(|b| change < b.0) {
                    best = Some((change, pool, candidates[c], local));
                }
            }
        }
        match best {
            Some((change, pool, candidate, local)) if change < -1e-12 * total => {
                let table = Table::new(&state, &pool, |_| true);
                pool.pieces(candidate.order(), &mut pieces);
                let changes = table.updates(&state, &pool, &pieces);
                let new_keys = candidate.new_keys(&local, dim);
                let window = pool.window();
                state.replace(window.first, window.last, &new_keys, &changes);
                iterations += 1;
            }
            _ => {
                converged = true;
                break;
            }
        }
    }
    let mut vertices = vec![0.0; state.vertices.len()];
    for (internal, user) in state
        .vertices
        .chunks_exact(dim)
        .zip(vertices.chunks_exact_mut(dim))
    {
        state.lattice.to_user(internal, user);
    }
    HindsightCurve {
        curve: PrincipalCurve::from_line(Polyline::new_unchecked(vertices, dim)),
        loss: total_loss(&state),
        n_points,
        iterations,
        converged,
    }
}

fn total_loss(state: &CurveState) -> f64 {
    let mut sum = crate::eval::CompensatedSum::default();
    for index in state.live() {
        sum.add(state.distance(index));
    }
    sum.value()
}
