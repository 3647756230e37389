//! Sequential k-means as every front-end sees it ([`Describe`]), and the seeding methods by
//! name.

use serde::Serialize;

use super::{Centres, Init, SequentialKMeans, SequentialKMeansReport, SequentialKMeansStep};
use crate::describe::{Describe, StreamTotals};
use crate::eval::{Prequential, Totals};
use crate::online::OnlineLearner;

/// The seeding methods a front-end offers, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum InitMethod {
    /// Greedy k-means++: several candidates per step, the best kept.
    #[cfg_attr(feature = "clap", value(name = "greedy++"))]
    Greedy,
    /// Vanilla k-means++ (the 8(ln k + 2) guarantee).
    #[cfg_attr(feature = "clap", value(name = "k-means++"))]
    KMeansPlusPlus,
    /// k distinct points drawn at random.
    Random,
}

impl InitMethod {
    /// The seeding (greedy k-means++ with its default number of trials).
    pub fn to_init(self) -> Init {
        match self {
            InitMethod::Greedy => Init::GreedyKMeansPlusPlus {
                n_local_trials: None,
            },
            InitMethod::KMeansPlusPlus => Init::KMeansPlusPlus,
            InitMethod::Random => Init::Random,
        }
    }

    /// The method's name (`greedy++`, `k-means++`, `random`).
    pub fn name(self) -> &'static str {
        match self {
            InitMethod::Greedy => "greedy++",
            InitMethod::KMeansPlusPlus => "k-means++",
            InitMethod::Random => "random",
        }
    }
}

impl Init {
    /// The seeding's name (`greedy++`, `k-means++`, `random`, `given`).
    pub fn name(&self) -> &'static str {
        match self {
            Init::GreedyKMeansPlusPlus { .. } => InitMethod::Greedy.name(),
            Init::KMeansPlusPlus => InitMethod::KMeansPlusPlus.name(),
            Init::Random => InitMethod::Random.name(),
            Init::Given(_) => "given",
        }
    }
}

impl super::Refinement {
    /// The refinement's name (`none`, `hartigan`).
    pub fn name(self) -> &'static str {
        match self {
            super::Refinement::None => "none",
            super::Refinement::Hartigan => "hartigan",
        }
    }
}

impl super::Stopping {
    /// The rule's name (`centre-shift`, `changed-labels`).
    pub fn name(self) -> &'static str {
        match self {
            super::Stopping::CentreShift => "centre-shift",
            super::Stopping::ChangedLabels => "changed-labels",
        }
    }
}

/// The settings of sequential k-means, by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SequentialKMeansSettings {
    /// The number of clusters.
    pub k: usize,
    /// The seeding of the warm-up buffer.
    pub init: &'static str,
    /// The warm-up points.
    pub init_size: usize,
    /// The decay half-life in points, if any.
    pub decay: Option<f64>,
    /// The reassignment ratio.
    pub reassignment_ratio: f64,
    /// The seed.
    pub seed: u64,
}

/// One round of sequential k-means as written out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SequentialKMeansRecord {
    /// The round t (1-based).
    pub t: u64,
    /// The nearest centre under the model held before the round (undefined in round 1).
    pub label: Option<usize>,
    /// The squared distance to it: the loss paid this round (undefined in round 1).
    pub loss: Option<f64>,
    /// The sum of the losses of the rounds so far.
    pub cumulative_loss: f64,
}

/// What a sequential k-means run ends with.
#[derive(Clone, Debug, Serialize)]
pub struct SequentialKMeansSummary<'a> {
    /// Whether the warm-up buffer never filled (the centres are then the distinct points
    /// seen).
    pub warming_up: bool,
    /// The centres, one row each.
    pub centres: Option<Vec<Vec<f64>>>,
    /// The (decayed) number of points of each centre.
    pub counts: &'a [f64],
    /// The cumulative loss and its rounds.
    pub totals: StreamTotals,
    /// What the learner did (reassignments, warm-up inertia).
    pub report: &'a SequentialKMeansReport,
}

/// The centres, one row each.
pub fn centre_rows(centres: &Centres) -> Vec<Vec<f64>> {
    centres.iter().map(<[f64]>::to_vec).collect()
}

impl Describe for SequentialKMeans {
    type Settings = SequentialKMeansSettings;
    type Record<'a> = SequentialKMeansRecord;
    type Summary<'a> = SequentialKMeansSummary<'a>;

    fn settings(&self) -> SequentialKMeansSettings {
        let config = self.config();
        SequentialKMeansSettings {
            k: config.n_clusters,
            init: config.init.name(),
            init_size: config.init_size,
            decay: config.decay_half_life,
            reassignment_ratio: config.reassignment_ratio,
            seed: config.seed,
        }
    }

    fn record<'a>(&'a self, step: &'a SequentialKMeansStep, totals: &Totals) -> Self::Record<'a> {
        SequentialKMeansRecord {
            t: step.round,
            label: step.label,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
        }
    }

    fn summary<'a>(&'a self, totals: &Prequential, last: Option<&Totals>) -> Self::Summary<'a> {
        SequentialKMeansSummary {
            warming_up: self.is_warming_up(),
            centres: self.centres().map(centre_rows),
            counts: self.counts(),
            totals: StreamTotals::new(self.n_rounds(), totals, last),
            report: self.report(),
        }
    }
}

/// The settings of batch k-means, by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KMeansSettings {
    /// The number of clusters.
    pub k: usize,
    /// The seeding.
    pub init: &'static str,
    /// The restarts.
    pub n_init: usize,
    /// The largest number of Lloyd iterations per restart.
    pub max_iter: usize,
    /// The convergence tolerance.
    pub tol: f64,
    /// The stopping rule `tol` applies to (`centre-shift`, `changed-labels`).
    pub stopping: &'static str,
    /// What runs after Lloyd's iterations (`none`, `hartigan`).
    pub refinement: &'static str,
    /// The seed.
    pub seed: u64,
}

impl super::KMeansConfig {
    /// The settings by name.
    pub fn settings(&self) -> KMeansSettings {
        KMeansSettings {
            k: self.n_clusters(),
            init: self.init_method().name(),
            n_init: self.n_init(),
            max_iter: self.max_iter(),
            tol: self.tol(),
            stopping: self.stopping().name(),
            refinement: self.refinement().name(),
            seed: self.seed(),
        }
    }
}
