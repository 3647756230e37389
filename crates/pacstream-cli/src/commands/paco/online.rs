//! The stream: PACBO's hooks into the streaming loop, its checkpoint, and the run.

use std::time::Instant;

use pacstream::OnlineLearner;
use pacstream::describe::{Describe, StreamTotals};
use pacstream::eval::Prequential;
use pacstream::kmeans::{Centres, centre_rows};
use pacstream::paco::oracle::hindsight_report;
use pacstream::paco::{Memory, Paco, PacoConfig, PacoReport, PacoStep, SamplerReport};
use serde::Serialize;
use serde_json::Value;

use super::hindsight::HindsightSummary;
use super::paths::{CountPath, LabelTracker};
use super::records::{CentresField, Column, ExtraColumns};
use super::{OnlineState, PacoArgs, figures, library_error, report};
use crate::commands::clusters::{Axes, draw_sample_clusters};
use crate::commands::{InputSummary, no_good_rows, short_name, stream_input, write_summary};
use crate::io::reader::{Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::{RecordFormat, RunOptions};
use crate::plot::{RowSample, ThinnedSeries};
use crate::stream::{PointFamily, PointTask, check_same_sample, point_fault, point_settings};
use crate::ui::{Notes, report_writer};

/// PACBO's hooks into the streaming loop.
#[derive(Debug)]
struct OnlinePaco {
    config: PacoConfig,
    with_centres: bool,
    format: Option<RecordFormat>,
}

impl OnlinePaco {
    fn centres_field(&self, centres: Option<&Centres>) -> Column<CentresField> {
        if !self.with_centres {
            return Column::Absent;
        }
        Column::Present(centres.map(|centres| {
            let rows = centre_rows(centres);
            match self.format {
                Some(RecordFormat::Delimited(_)) => {
                    CentresField::Text(serde_json::to_string(&rows).unwrap_or_default())
                }
                _ => CentresField::Nested(rows),
            }
        }))
    }
}

impl PointFamily for OnlinePaco {
    const COMMAND: &'static str = "paco";
    type State = OnlineState;

    fn same_config(&self, learner: &Paco) -> bool {
        learner.config() == &self.config
    }

    fn check_extra(
        &self,
        mine: &OnlineState,
        state: &OnlineState,
        dim: usize,
    ) -> Result<(), String> {
        if state.labels.is_some() != mine.labels.is_some()
            || state.true_k_path.is_some() != mine.true_k_path.is_some()
        {
            return Err("its label tracking does not match --labels".to_string());
        }
        check_same_sample(mine.plot.as_ref(), state.plot.as_ref(), |mine, theirs| {
            theirs.validate(mine.capacity(), dim)
        })?;
        state.loss_trace.validate(|(_, loss)| loss.is_finite())?;
        if !(state.seconds.is_finite() && state.seconds >= 0.0) {
            return Err("its run time is not a number of seconds".to_string());
        }
        Ok(())
    }

    fn learn(
        &mut self,
        state: &mut OnlineState,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let predicted_by = if self.with_centres {
            state.learner.centres().cloned()
        } else {
            None
        };
        let step: PacoStep = state
            .learner
            .learn_one(row.values)
            .map_err(|e| point_fault(e, 0, library_error))?;
        state.seconds += started.elapsed().as_secs_f64();
        let totals = state.account(&step);
        if let Some(k) = step.n_clusters {
            state.k_path.record(step.round, k);
        }
        let true_label = row.extras.first().copied();
        if let (Some(label), Some(tracker), Some(path)) = (
            true_label,
            state.labels.as_mut(),
            state.true_k_path.as_mut(),
        ) {
            let distinct = tracker.add(label);
            path.record(step.round, distinct);
        }
        if totals.loss.is_some() {
            state
                .loss_trace
                .push(totals.scored_rounds, (totals.round, totals.cumulative_loss));
        }
        if let Some(sample) = &mut state.plot {
            sample.add(row.values, row.number);
        }
        let centres = self.centres_field(predicted_by.as_ref());
        let record = state.learner.record(&step, &totals);
        let columns = ExtraColumns {
            true_label: if state.labels.is_some() {
                Column::Present(true_label)
            } else {
                Column::Absent
            },
            centres,
        };
        sink.write_joined(&record, &columns)
    }
}

#[derive(Serialize)]
struct OnlineSummary<'a> {
    command: &'static str,
    mode: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    n_clusters: Option<usize>,
    centres: Option<Vec<Vec<f64>>>,
    /// (first round, k̂) at every change of k̂_t; past 20,000 changes a sketch of the path
    /// (every other change dropped each time the limit is reached).
    k_path: &'a [(u64, usize)],
    /// The number of changes of k̂_t (more than `k_path` holds when it is a sketch).
    k_path_changes: u64,
    /// (first round, number of distinct labels in memory) at every change, with --labels.
    true_k_path: Option<&'a [(u64, usize)]>,
    totals: StreamTotals,
    /// Seconds spent learning (the library's learn_one calls).
    learn_seconds: f64,
    radius: Option<f64>,
    origin: Option<&'a [f64]>,
    scales: Option<&'a [f64]>,
    report: &'a PacoReport,
    last_chain: Option<&'a SamplerReport>,
    hindsight: Option<HindsightSummary>,
}

pub(super) fn run(
    args: &PacoArgs,
    options: &RunOptions,
    config: PacoConfig,
    mut reader: RowReader,
    axes: Axes,
    notes: Notes,
) -> anyhow::Result<()> {
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    let plot_points = options.plot.is_some().then_some(options.plot_points);
    let window = match config.memory() {
        Memory::All => None,
        Memory::Window(w) => Some(w),
    };
    let labelled = !layout.extras.is_empty();
    let settings = point_settings(config.settings(), &layout, Some("labels"), options)?;
    let mut task = PointTask {
        settings,
        dim,
        state: OnlineState {
            learner: config.build(),
            totals: Prequential::new(),
            last: None,
            k_path: CountPath::default(),
            true_k_path: labelled.then(CountPath::default),
            labels: labelled.then(|| LabelTracker::new(window)),
            loss_trace: ThinnedSeries::default(),
            plot: plot_points.map(|capacity| RowSample::new(capacity, dim, options.seed)),
            seconds: 0.0,
        },
        family: OnlinePaco {
            config,
            with_centres: args.centres,
            format: options.output.as_ref().map(|o| o.format),
        },
    };
    let input = stream_input(&mut task, &mut reader, options, notes)?;
    let state = &task.state;
    let learner = &state.learner;
    if learner.n_rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    if learner.is_warming_up() {
        notes.note(format!(
            "the stream ended during the warm-up ({} of {} rows): nothing was predicted",
            learner.n_rounds(),
            learner.config().warmup()
        ));
    }
    let run = learner.summary(&state.totals, state.last.as_ref());

    // The comparison with the best fixed clusterings in hindsight and the bound, as the
    // library reports them.
    let restarts = usize::try_from(args.oracle_restarts).unwrap_or(5);
    let hindsight = if learner.is_warming_up() {
        None
    } else {
        Some(hindsight_report(learner, restarts, options.seed).map_err(library_error)?)
    };
    let hindsight_summary = hindsight
        .as_ref()
        .map(|report| HindsightSummary::new(report, learner.config().coeff()));

    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        report::print_online(
            &mut out,
            &reader,
            learner,
            &run.totals,
            state,
            hindsight.as_ref(),
        )?;
    }
    let summary = OnlineSummary {
        command: "paco",
        mode: "online",
        input: InputSummary::labelled(&reader, &input),
        settings: &task.settings,
        n_clusters: run.n_clusters,
        centres: run.centres,
        k_path: &state.k_path.changes,
        k_path_changes: state.k_path.total_changes,
        true_k_path: state.true_k_path.as_ref().map(|p| p.changes.as_slice()),
        totals: run.totals,
        learn_seconds: state.seconds,
        radius: run.radius,
        origin: run.origin,
        scales: run.scales,
        report: run.report,
        last_chain: run.last_chain,
        hindsight: hindsight_summary,
    };
    write_summary(options, &summary)?;

    let source = short_name(reader.source_name()).to_string();
    if let (Some(path), Some(sample), Some(centres)) =
        (&options.plot, &state.plot, learner.centres())
    {
        let title = format!(
            "PACBO on {source}: k̂ = {}, {} rounds",
            centres.n_centres(),
            learner.n_rounds()
        );
        draw_sample_clusters(path, &reader, axes, &title, sample, centres, None)?;
    }
    if let Some(path) = &args.plot_k {
        figures::draw_k_path(path, state, window.is_some(), &source)?;
    }
    if let Some(path) = &args.plot_loss {
        figures::draw_loss(
            path,
            learner,
            state,
            hindsight.as_ref(),
            restarts,
            options.seed,
            &source,
            notes,
        )?;
    }
    Ok(())
}
