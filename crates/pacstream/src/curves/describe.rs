//! The principal curve learner as every front-end sees it ([`Describe`]): its settings by
//! name, the record of a round, and the summary of a run. The hindsight comparators are
//! local searches that cost a few exploration rounds each, so they are not part of the
//! summary: [`PrincipalCurveLearner::hindsight`] gives them, with the regret against them.
//! No bound is given: the bounds of Li & Guedj (2021) are for follow the perturbed leader
//! over every curve of the lattice, not for this local search.

use serde::Serialize;

use super::learner::Phase;
use super::{
    Memory, PrincipalCurveConfig, PrincipalCurveLearner, PrincipalCurveReport, PrincipalCurveStep,
    Radius,
};
use crate::describe::{Describe, StreamTotals};
use crate::eval::{Prequential, Totals};
use crate::online::OnlineLearner;

/// The settings of the principal curve learner, by name (what a snapshot must match).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrincipalCurveSettings {
    /// R: `"auto"` or the value.
    #[serde(serialize_with = "Radius::serialize_auto_or_number")]
    pub radius: Radius,
    /// δ, the lattice spacing, if given.
    pub delta: Option<f64>,
    /// p, the largest number of segments.
    pub max_segments: usize,
    /// L, the largest length (none: no limit).
    pub max_length: Option<f64>,
    /// κ, the multiplier of the penalty per segment.
    pub penalty: f64,
    /// The multiplier of the learning rate.
    pub eta_scale: f64,
    /// `bandit` or `full`.
    pub feedback: &'static str,
    /// `label-efficient` or `paper`.
    pub estimator: &'static str,
    /// ε, the probability of an exploration round.
    pub explore: f64,
    /// α, for the `paper` estimator, if given.
    pub alpha: Option<f64>,
    /// M, the size of a window's local vertex set.
    pub local_vertices: usize,
    /// The largest number of candidates per round.
    pub max_candidates: usize,
    /// t_0, the warm-up rows.
    pub warmup: usize,
    /// W, with window memory (none: every point).
    pub window: Option<usize>,
    /// The side of the bins that merge stored points, as a fraction of δ.
    pub bin_side: f64,
    /// The largest number of point summaries (0: no limit).
    pub max_atoms: usize,
    /// The seed.
    pub seed: u64,
}

impl PrincipalCurveConfig {
    /// The settings by name.
    pub fn settings(&self) -> PrincipalCurveSettings {
        PrincipalCurveSettings {
            radius: self.radius(),
            delta: self.delta(),
            max_segments: self.max_segments(),
            max_length: self.max_length().is_finite().then_some(self.max_length()),
            penalty: self.penalty(),
            eta_scale: self.eta_scale(),
            feedback: self.feedback().name(),
            estimator: self.estimator().name(),
            explore: self.explore(),
            alpha: self.alpha(),
            local_vertices: self.local_vertices(),
            max_candidates: self.max_candidates(),
            warmup: self.warmup(),
            window: match self.memory() {
                Memory::All => None,
                Memory::Window(w) => Some(w),
            },
            bin_side: self.bin_side(),
            max_atoms: self.max_atoms(),
            seed: self.seed(),
        }
    }
}

/// One round of the principal curve learner as written out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrincipalCurveRecord {
    /// The round t (1-based).
    pub t: u64,
    /// Δ(f̂_t, x_t), undefined during the warm-up.
    pub loss: Option<f64>,
    /// The sum of the losses so far.
    pub cumulative_loss: f64,
    /// K(f̂_t), undefined during the warm-up.
    pub segments: Option<usize>,
    /// The round's phase.
    pub phase: Phase,
    /// The number of curves the next one was chosen from.
    pub candidates: usize,
    /// Whether the next curve differs.
    pub changed: bool,
}

/// The lattice of vertices, as a summary reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatticeSummary<'a> {
    /// μ_0, its centre.
    pub origin: &'a [f64],
    /// R.
    pub radius: f64,
    /// δ.
    pub spacing: f64,
}

/// What a principal curve run ends with.
#[derive(Clone, Debug, Serialize)]
pub struct PrincipalCurveSummary<'a> {
    /// The final curve's vertices, one row each (none before the first curve).
    pub vertices: Option<Vec<Vec<f64>>>,
    /// K, its number of segments.
    pub segments: Option<usize>,
    /// Its length.
    pub length: Option<f64>,
    /// The lattice its vertices lie on.
    pub lattice: Option<LatticeSummary<'a>>,
    /// The cumulative loss and its rounds.
    pub totals: StreamTotals,
    /// What the learner did.
    pub report: &'a PrincipalCurveReport,
}

impl Describe for PrincipalCurveLearner {
    type Settings = PrincipalCurveSettings;
    type Record<'a> = PrincipalCurveRecord;
    type Summary<'a> = PrincipalCurveSummary<'a>;

    fn settings(&self) -> PrincipalCurveSettings {
        self.config().settings()
    }

    fn record<'a>(&'a self, step: &'a PrincipalCurveStep, totals: &Totals) -> PrincipalCurveRecord {
        PrincipalCurveRecord {
            t: step.round,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
            segments: step.segments,
            phase: step.phase,
            candidates: step.candidates,
            changed: step.changed,
        }
    }

    fn summary<'a>(
        &'a self,
        totals: &Prequential,
        last: Option<&Totals>,
    ) -> PrincipalCurveSummary<'a> {
        let curve = self.curve();
        PrincipalCurveSummary {
            vertices: curve.map(|c| c.vertex_rows().map(<[f64]>::to_vec).collect()),
            segments: curve.map(|c| c.n_segments()),
            length: curve.map(|c| c.length()),
            lattice: self.lattice().map(|l| LatticeSummary {
                origin: l.origin(),
                radius: l.radius(),
                spacing: l.spacing(),
            }),
            totals: StreamTotals::new(self.n_rounds(), totals, last),
            report: self.report(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curves::PrincipalCurveParams;

    /// A checkpoint is resumed only by a run whose settings read the same: the names and
    /// forms written before stay.
    #[test]
    fn settings_keep_the_form_checkpoints_recorded() {
        let given = PrincipalCurveParams::new()
            .radius(Radius::Given(2.5))
            .memory(Memory::Window(40))
            .check()
            .unwrap();
        let value = serde_json::to_value(given.settings()).unwrap();
        assert_eq!(value["radius"], 2.5);
        assert_eq!(value["window"], 40);
        let auto = PrincipalCurveParams::new().check().unwrap();
        let value = serde_json::to_value(auto.settings()).unwrap();
        assert_eq!(value["radius"], "auto");
        assert_eq!(value["window"], serde_json::Value::Null);
        assert_eq!(value["estimator"], "label-efficient");
    }
}
