//! The curve's hooks into the streaming loop: its record, its figure samples.

use std::time::Instant;

use pacstream::OnlineLearner;
use pacstream::curves::{PrincipalCurveConfig, PrincipalCurveLearner, PrincipalCurveStep};
use pacstream::describe::Describe;
use pacstream::eval::Totals;
use serde::{Deserialize, Serialize};

use super::{CurveState, library_error};
use crate::io::reader::Row;
use crate::io::records::RecordSink;
use crate::plot::{RowSample, ThinnedSeries};
use crate::stream::{PointFamily, check_same_sample, point_fault};

/// What `--plot` draws, kept in bounded memory: a uniform sample of the rows, K and the
/// cumulative loss thinned to at most [`ThinnedSeries::LIMIT`] rounds, and a few earlier
/// curves.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct PlotTrace {
    pub(super) rows: RowSample,
    pub(super) dim: usize,
    /// (t, K(f̂_t), cumulative loss), indexed by scored rounds.
    pub(super) series: ThinnedSeries<(u64, usize, f64)>,
    /// Earlier curves (t, vertices), taken at t = 2^j · 100.
    pub(super) snapshots: Vec<(u64, Vec<f64>)>,
}

impl PlotTrace {
    const SNAPSHOTS: usize = 6;

    pub(super) fn new(capacity: usize, dim: usize, seed: u64) -> Self {
        Self {
            rows: RowSample::new(capacity, dim, seed),
            dim,
            series: ThinnedSeries::default(),
            snapshots: Vec::new(),
        }
    }

    fn add(
        &mut self,
        point: &[f64],
        number: u64,
        step: &PrincipalCurveStep,
        totals: &Totals,
        learner: &PrincipalCurveLearner,
    ) {
        self.rows.add(point, number);
        if let Some(k) = step.segments {
            self.series.push(
                totals.scored_rounds,
                (step.round, k, totals.cumulative_loss),
            );
        }
        let t = step.round;
        if t >= 100
            && (t / 100).is_power_of_two()
            && t.is_multiple_of(100)
            && let Some(curve) = learner.curve()
        {
            self.snapshots.push((t, curve.vertices().to_vec()));
            if self.snapshots.len() > Self::SNAPSHOTS {
                self.snapshots.remove(0);
            }
        }
    }

    fn validate(&self, capacity: usize, dim: usize) -> Result<(), String> {
        self.rows.validate(capacity, dim)?;
        self.series.validate(|(_, _, loss)| loss.is_finite())?;
        if self.dim != dim
            || self
                .snapshots
                .iter()
                .any(|(_, v)| v.len() % dim != 0 || v.len() < 2 * dim)
        {
            return Err("its plot sample is inconsistent".to_string());
        }
        Ok(())
    }
}

/// The curve's hooks into the streaming loop.
#[derive(Debug)]
pub(super) struct CurveFamily {
    pub(super) config: PrincipalCurveConfig,
}

impl PointFamily for CurveFamily {
    const COMMAND: &'static str = "curve";
    type State = CurveState;

    fn same_config(&self, learner: &PrincipalCurveLearner) -> bool {
        learner.config() == &self.config
    }

    fn check_extra(
        &self,
        mine: &CurveState,
        theirs: &CurveState,
        dim: usize,
    ) -> Result<(), String> {
        if !(theirs.learn_seconds.is_finite() && theirs.learn_seconds >= 0.0) {
            return Err("its learning time is not a duration".to_string());
        }
        check_same_sample(mine.plot.as_ref(), theirs.plot.as_ref(), |mine, theirs| {
            theirs.validate(mine.rows.capacity(), dim)
        })
    }

    fn learn(
        &mut self,
        state: &mut CurveState,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let step = state
            .learner
            .learn_one(row.values)
            // A row the learner cannot take (e.g. far outside the ball) is a bad row.
            .map_err(|error| point_fault(error, 0, library_error))?;
        state.learn_seconds += started.elapsed().as_secs_f64();
        let totals = state.account(&step);
        sink.write(&state.learner.record(&step, &totals))?;
        if let Some(trace) = &mut state.plot {
            trace.add(row.values, row.number, &step, &totals, &state.learner);
        }
        Ok(())
    }
}
