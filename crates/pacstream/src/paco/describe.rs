//! PACBO as every front-end sees it ([`Describe`]): its settings by name, the record of a
//! round, and the summary of a run. The comparison with the best fixed clusterings in
//! hindsight and the bound of Li, Guedj & Loustau (2018) cost k-means fits, so they are not
//! part of the summary: [`super::oracle::hindsight_report`] gives them, labelled.

use serde::Serialize;

use super::{Memory, Paco, PacoConfig, PacoReport, PacoStep, Radius, SamplerReport};
use crate::describe::{Describe, StreamTotals};
use crate::eval::{Prequential, Totals};
use crate::kmeans::centre_rows;
use crate::online::OnlineLearner;

/// The settings of PACBO, by name (what a snapshot must match).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PacoSettings {
    /// p, the largest number of clusters.
    pub max_k: usize,
    /// R: `"auto"` or the value as text in scientific notation.
    #[serde(serialize_with = "Radius::serialize_auto_or_text")]
    pub radius: Radius,
    /// Whether the data are centred on the warm-up mean.
    pub center: bool,
    /// Whether the columns are standardised on the warm-up rows.
    pub scale: bool,
    /// The warm-up rows.
    pub warmup: usize,
    /// η, the prior's price of one cluster.
    pub eta: f64,
    /// a, the temperature multiplier.
    pub coeff: f64,
    /// The proposal's scale rule (`laplace`, `paper`).
    pub proposal: &'static str,
    /// b, the multiplier of the proposal scale.
    pub proposal_scale: f64,
    /// N, the MCMC iterations per round.
    pub iterations: usize,
    /// W, with window memory (none: every point).
    pub window: Option<usize>,
    /// Whether each round's chain restarts from k-means centres.
    pub restart: bool,
    /// The seed.
    pub seed: u64,
}

impl PacoConfig {
    /// The settings by name (the batch fit's too).
    pub fn settings(&self) -> PacoSettings {
        PacoSettings {
            max_k: self.max_k(),
            radius: self.radius(),
            center: self.center(),
            scale: self.scale(),
            warmup: self.warmup(),
            eta: self.eta(),
            coeff: self.coeff(),
            proposal: self.proposal().name(),
            proposal_scale: self.proposal_scale(),
            iterations: self.iterations(),
            window: match self.memory() {
                Memory::All => None,
                Memory::Window(w) => Some(w),
            },
            restart: self.restart(),
            seed: self.seed(),
        }
    }
}

/// One round of PACBO as written out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PacoRecord {
    /// The round t (1-based).
    pub t: u64,
    /// k̂_t, the number of clusters that predicted the point (undefined during the warm-up).
    pub k: Option<usize>,
    /// ℓ(ĉ_t, x_t) (undefined during the warm-up).
    pub loss: Option<f64>,
    /// The sum of the losses so far.
    pub cumulative_loss: f64,
    /// The nearest centre of ĉ_t.
    pub label: Option<usize>,
    /// The acceptance rate of the chain run after the point (none while the warm-up
    /// buffers).
    pub acceptance_rate: Option<f64>,
}

/// What a PACBO run ends with.
#[derive(Clone, Debug, Serialize)]
pub struct PacoSummary<'a> {
    /// Whether the stream ended during the warm-up (nothing was predicted).
    pub warming_up: bool,
    /// k̂, the number of clusters of the final clustering.
    pub n_clusters: Option<usize>,
    /// The final centres, one row each, in the data's units.
    pub centres: Option<Vec<Vec<f64>>>,
    /// The cumulative loss of this chain and its rounds.
    pub totals: StreamTotals,
    /// R, as fixed by the settings or the warm-up.
    pub radius: Option<f64>,
    /// μ_0, the centre of the data.
    pub origin: Option<&'a [f64]>,
    /// The column scales, with standardisation.
    pub scales: Option<&'a [f64]>,
    /// What the chains did over the run.
    pub report: &'a PacoReport,
    /// The last round's chain.
    pub last_chain: Option<&'a SamplerReport>,
}

impl Describe for Paco {
    type Settings = PacoSettings;
    type Record<'a> = PacoRecord;
    type Summary<'a> = PacoSummary<'a>;

    fn settings(&self) -> PacoSettings {
        self.config().settings()
    }

    fn record<'a>(&'a self, step: &'a PacoStep, totals: &Totals) -> PacoRecord {
        PacoRecord {
            t: step.round,
            k: step.n_clusters,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
            label: step.label,
            acceptance_rate: step.sampler.as_ref().map(|s| s.acceptance_rate),
        }
    }

    fn summary<'a>(&'a self, totals: &Prequential, last: Option<&Totals>) -> PacoSummary<'a> {
        let frame = self.frame();
        PacoSummary {
            warming_up: self.is_warming_up(),
            n_clusters: self.n_clusters(),
            centres: self.centres().map(centre_rows),
            totals: StreamTotals::new(self.n_rounds(), totals, last),
            radius: frame.map(|f| f.radius()),
            origin: frame.map(|f| f.origin()),
            scales: frame.and_then(|f| f.scales()),
            report: self.report(),
            last_chain: self.last_chain(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paco::PacoParams;

    /// A checkpoint is resumed only by a run whose settings read the same: the names and
    /// forms written before stay (R as text in scientific notation, `window` null for every
    /// point).
    #[test]
    fn settings_keep_the_form_checkpoints_recorded() {
        let given = PacoParams::new()
            .radius(Radius::Given(2.5))
            .memory(Memory::Window(40))
            .check()
            .unwrap();
        let value = serde_json::to_value(given.settings()).unwrap();
        assert_eq!(value["radius"], "2.5e0");
        assert_eq!(value["window"], 40);
        let auto = PacoParams::new().check().unwrap();
        let value = serde_json::to_value(auto.settings()).unwrap();
        assert_eq!(value["radius"], "auto");
        assert_eq!(value["window"], serde_json::Value::Null);
        assert_eq!(value["proposal"], "laplace");
    }

    /// Snapshots written before the rename say `Exact`; they load, and new ones say the same.
    #[test]
    fn memory_all_is_written_and_read_as_exact() {
        assert_eq!(serde_json::to_string(&Memory::All).unwrap(), "\"Exact\"");
        let read: Memory = serde_json::from_str("\"Exact\"").unwrap();
        assert_eq!(read, Memory::All);
        let read: Memory = serde_json::from_str("\"All\"").unwrap();
        assert_eq!(read, Memory::All);
    }
}
