//! What a run ends with: the hindsight comparators, the projections, the summary, the report
//! and the figure.

use std::time::Instant;

use pacstream::OnlineLearner;
use pacstream::curves::{
    Comparator, HindsightCurve, LatticeSummary, Memory, PrincipalCurveConfig, PrincipalCurveReport,
};
use pacstream::describe::{Describe, StreamTotals};
use serde::Serialize;
use serde_json::Value;

use super::family::CurveFamily;
use super::{figure, report};
use crate::commands::clusters::Axes;
use crate::commands::{InputSummary, no_good_rows, write_summary};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::reader::{InputProgress, RowReader};
use crate::options::RunOptions;
use crate::plot::draw_curve;
use crate::stream::PointTask;
use crate::ui::report_writer;

/// Searches the comparators, then writes the summary, the report and the figure.
pub(super) fn finish(
    task: &PointTask<CurveFamily>,
    reader: &RowReader,
    input: &InputProgress,
    options: &RunOptions,
    config: &PrincipalCurveConfig,
    axes: Axes,
    started: Instant,
) -> anyhow::Result<()> {
    let state = &task.state;
    let learner = &state.learner;
    if learner.n_rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), input));
    }
    let Some(curve) = learner.curve() else {
        return Err(bad_input(format!(
            "'{}' has {} good rows: too few to start a curve (--warmup {}, and the rows must \
             not all be equal)",
            reader.source_name(),
            learner.n_rounds(),
            config.warmup()
        )));
    };
    // The comparators need every row of the stream: only with all rows kept. Each is a
    // local search started from the final curve, which costs a few of the learner's
    // exploration rounds (the unpenalised search to p segments is left to the library).
    let comparators_started = Instant::now();
    let (penalised, hindsight) = if matches!(config.memory(), Memory::All) {
        (
            learner.hindsight(Comparator::Penalised),
            learner.hindsight(Comparator::SameSegments),
        )
    } else {
        (None, None)
    };
    let comparator_seconds = comparators_started.elapsed().as_secs_f64();
    let stored = learner.stored_points();
    let mut projections = Vec::with_capacity(stored.len());
    let mut stored_loss = 0.0;
    let mut comparator_cumulative: Vec<(u64, f64)> = Vec::new();
    let first_scored = learner.report().initialised_at.map_or(u64::MAX, |r| r + 1);
    let mut comparator_sum = 0.0;
    for (round, point) in &stored {
        let projection = curve.polyline().project(point);
        stored_loss += projection.squared_distance;
        projections.push(ProjectionRecord {
            t: *round,
            arc_length: projection.arc_length,
            squared_distance: projection.squared_distance,
        });
        if let Some(h) = &hindsight
            && *round >= first_scored
        {
            comparator_sum += h.curve.polyline().squared_distance(point);
            comparator_cumulative.push((*round, comparator_sum));
        }
    }
    let run = learner.summary(&state.totals, state.last.as_ref());
    let (Some(vertices), Some(segments), Some(length), Some(lattice)) =
        (run.vertices, run.segments, run.length, run.lattice)
    else {
        anyhow::bail!("invariant: a learner with a curve describes it");
    };
    let cumulative_loss = run.totals.cumulative_loss;
    let totals = CurveTotals {
        stream: run.totals,
        stored_points: stored.len(),
        mean_squared_distance: stored_loss / stored.len().max(1) as f64,
    };
    let comparators: Vec<ComparatorSummary> = [&penalised, &hindsight]
        .into_iter()
        .flatten()
        .map(|h| ComparatorSummary::new(h, cumulative_loss))
        .collect();
    let total_seconds = started.elapsed().as_secs_f64();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        report::print(
            &mut out,
            reader,
            learner,
            &totals,
            &comparators,
            state.learn_seconds,
            comparator_seconds,
        )?;
    }
    let summary = CurveSummary {
        command: "curve",
        input: InputSummary::new(reader, input),
        settings: &task.settings,
        vertices,
        segments,
        length,
        lattice,
        totals,
        comparators,
        report: run.report,
        learn_seconds: state.learn_seconds,
        comparator_seconds,
        total_seconds,
        projections,
    };
    write_summary(options, &summary)?;
    if let (Some(path), Some(trace)) = (&options.plot, &state.plot) {
        let figure = figure::curve_figure(
            reader,
            axes,
            learner,
            trace,
            hindsight.as_ref(),
            &comparator_cumulative,
        );
        write_atomically(path, draw_curve(&figure)?.as_bytes())?;
    }
    Ok(())
}

#[derive(Serialize)]
pub(super) struct CurveTotals {
    /// Rounds, scored rounds, cumulative loss, mean loss.
    #[serde(flatten)]
    pub(super) stream: StreamTotals,
    /// The rows the learner keeps (all, or the last --window).
    pub(super) stored_points: usize,
    /// The mean squared distance from the stored rows to the final curve.
    pub(super) mean_squared_distance: f64,
}

/// A hindsight comparator and the regret against it.
#[derive(Serialize)]
pub(super) struct ComparatorSummary {
    /// `penalised` or `same-segments`.
    pub(super) comparator: Comparator,
    /// What the comparator minimises, in words.
    pub(super) objective_minimised: &'static str,
    pub(super) vertices: Vec<Vec<f64>>,
    pub(super) segments: usize,
    /// Σ_s Δ(f*, x_s) over the scored rounds.
    pub(super) loss: f64,
    /// h(f*)/η_T (0 for `same-segments`).
    pub(super) penalty: f64,
    /// loss + penalty.
    pub(super) objective: f64,
    /// η_T, for `penalised`.
    pub(super) learning_rate: Option<f64>,
    /// κ c_1/η_T, for `penalised`.
    pub(super) penalty_per_segment: f64,
    pub(super) max_segments: usize,
    /// cumulative_loss − objective: a lower estimate of the regret against the best curve
    /// of the class (f* is a local optimum).
    pub(super) regret: f64,
    pub(super) moves: usize,
    pub(super) converged: bool,
}

impl ComparatorSummary {
    fn new(h: &HindsightCurve, cumulative_loss: f64) -> Self {
        Self {
            comparator: h.comparator,
            objective_minimised: h.comparator.objective(),
            vertices: h.curve.vertex_rows().map(<[f64]>::to_vec).collect(),
            segments: h.curve.n_segments(),
            loss: h.loss,
            penalty: h.penalty,
            objective: h.objective,
            learning_rate: h.learning_rate,
            penalty_per_segment: h.penalty_per_segment,
            max_segments: h.max_segments,
            regret: h.regret(cumulative_loss),
            moves: h.moves,
            converged: h.converged,
        }
    }
}

/// The projection of a stored row on the final curve.
#[derive(Serialize)]
struct ProjectionRecord {
    /// The round of the row.
    t: u64,
    /// The projection index: the arc length from the first vertex.
    arc_length: f64,
    squared_distance: f64,
}

#[derive(Serialize)]
struct CurveSummary<'a> {
    command: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    /// The final curve's vertices, in the input's coordinates (what `pacstream project`
    /// reads).
    vertices: Vec<Vec<f64>>,
    segments: usize,
    length: f64,
    lattice: LatticeSummary<'a>,
    totals: CurveTotals,
    /// The hindsight comparators and the regrets against them (only when every row is
    /// kept): the penalised objective of follow the perturbed leader, and the best curve
    /// with the learner's number of segments.
    comparators: Vec<ComparatorSummary>,
    report: &'a PrincipalCurveReport,
    /// Wall time spent in the learner over the whole stream, in seconds.
    learn_seconds: f64,
    /// Wall time spent searching the hindsight comparators, in seconds.
    comparator_seconds: f64,
    /// Wall time of the command (reading, learning, comparator, outputs), in seconds.
    total_seconds: f64,
    projections: Vec<ProjectionRecord>,
}
