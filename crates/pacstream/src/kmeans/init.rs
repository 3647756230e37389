//! Seeding: k-means++ (vanilla and greedy), random, given.
//!
//! Minimal reference implementation; the full version replaces it.

use super::centres::Centres;
use super::params::Init;
use crate::data::{Points, Weights};
use crate::geometry::squared_distance;
use crate::rng::StreamRng;

/// Seeded centres and what happened.
pub(crate) struct Seeding {
    pub(crate) centres: Centres,
    pub(crate) duplicate_centres: bool,
}

/// Draws the initial centres.
pub(crate) fn seed_centres(
    points: &Points<'_>,
    weights: Weights<'_>,
    init: &Init,
    n_clusters: usize,
    rng: &mut StreamRng,
) -> Seeding {
    if let Init::Given(centres) = init {
        return Seeding {
            centres: centres.clone(),
            duplicate_centres: false,
        };
    }
    let n = points.n_points();
    let first = draw(rng, (0..n).map(|i| weights.get(i)));
    let mut centres = Centres::single(points.row(first));
    let mut d2: Vec<f64> = points
        .rows()
        .map(|p| squared_distance(p, points.row(first)))
        .collect();
    let mut duplicate_centres = false;
    while centres.n_centres() < n_clusters {
        let total: f64 = (0..n).map(|i| weights.get(i) * d2[i]).sum();
        let next = if total > 0.0 {
            draw(rng, (0..n).map(|i| weights.get(i) * d2[i]))
        } else {
            duplicate_centres = true;
            rng.index_below(n)
        };
        let centre = points.row(next).to_vec();
        for (i, p) in points.rows().enumerate() {
            d2[i] = d2[i].min(squared_distance(p, &centre));
        }
        centres.push(&centre);
    }
    Seeding {
        centres,
        duplicate_centres,
    }
}

/// Draws an index with probability proportional to `masses` (not all zero).
fn draw(rng: &mut StreamRng, masses: impl Iterator<Item = f64> + Clone) -> usize {
    let total: f64 = masses.clone().sum();
    let target = rng.next_f64() * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (i, m) in masses.enumerate() {
        if m > 0.0 {
            last_positive = i;
            acc += m;
            if acc > target {
                return i;
            }
        }
    }
    last_positive
}
