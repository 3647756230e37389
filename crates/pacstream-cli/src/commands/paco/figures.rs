//! The figures of a stream: k̂_t over time (`--plot-k`) and the cumulative loss against the
//! best fixed clustering in hindsight and the bound (`--plot-loss`).

use std::path::Path;

use pacstream::UnsupervisedLearner;
use pacstream::paco::Paco;
use pacstream::paco::oracle::{HindsightReport, ideal_sampler_bound};

use super::OnlineState;
use super::library_error;
use crate::io::atomic::write_atomically;
use crate::plot::{LineFigure, Series, SeriesStyle, draw_lines};
use crate::ui::Notes;

/// Draws k̂_t over time, with the true number of clusters in memory when labels are read.
pub(super) fn draw_k_path(
    path: &Path,
    state: &OnlineState,
    windowed: bool,
    source: &str,
) -> anyhow::Result<()> {
    let mut series = vec![Series {
        name: "k̂_t (PACBO)".to_string(),
        points: state.k_path.points(),
        style: SeriesStyle::Steps,
        colour: 0,
    }];
    if let Some(true_path) = &state.true_k_path {
        series.push(Series {
            name: if windowed {
                "true k (labels in the window)".to_string()
            } else {
                "true k (labels seen)".to_string()
            },
            points: true_path.points(),
            style: SeriesStyle::DashedSteps,
            colour: 3,
        });
    }
    let figure = LineFigure {
        title: format!("number of clusters over time: {source}"),
        x_label: "round t".to_string(),
        y_label: "clusters".to_string(),
        series,
        log_y: false,
        integer_y: true,
    };
    write_atomically(path, draw_lines(&figure)?.as_bytes())?;
    Ok(())
}

/// Draws the cumulative loss, the best fixed clustering in hindsight with k̂_T and the bound.
#[allow(clippy::too_many_arguments, reason = "one figure, every part of it")]
pub(super) fn draw_loss(
    path: &Path,
    learner: &Paco,
    state: &OnlineState,
    hindsight: Option<&HindsightReport>,
    restarts: usize,
    seed: u64,
    source: &str,
    notes: Notes,
) -> anyhow::Result<()> {
    let mut series = vec![Series {
        name: "PACBO cumulative loss".to_string(),
        points: state
            .loss_trace
            .points()
            .iter()
            .map(|&(_, (t, loss))| (t as f64, loss))
            .collect(),
        style: SeriesStyle::Line,
        colour: 0,
    }];
    match hindsight {
        Some(report) => series.extend(loss_figure_series(learner, report, state, restarts, seed)?),
        None => notes.note("--plot-loss: nothing was predicted; drawing the cumulative loss alone"),
    }
    let figure = LineFigure {
        title: format!("cumulative loss: {source}"),
        x_label: "round t".to_string(),
        y_label: "cumulative loss (log scale)".to_string(),
        series,
        log_y: true,
        integer_y: false,
    };
    write_atomically(path, draw_lines(&figure)?.as_bytes())?;
    Ok(())
}

/// The cumulative loss along the stream of the best fixed clustering in hindsight with the
/// learner's final number of clusters k̂_T (fitted on every predicted row), and the bound on
/// the ideal sampler's expected loss at a dozen prefixes of the stream.
fn loss_figure_series(
    learner: &Paco,
    report: &HindsightReport,
    state: &OnlineState,
    restarts: usize,
    seed: u64,
) -> anyhow::Result<Vec<Series>> {
    let mut series = Vec::new();
    let warmup = report.warmup_rows;
    let dim = learner.dim().unwrap_or(1);
    let rows = learner.memory_points().len() / dim;
    let final_k = learner.n_clusters();
    if let Some(fit) = final_k.and_then(|k| report.fit(k)) {
        let wanted: Vec<u64> = state.loss_trace.points().iter().map(|p| p.0).collect();
        let mut cumulative = 0.0;
        let mut points = Vec::new();
        let mut next = 0;
        let predicted = &learner.memory_points()[warmup as usize * dim..];
        for (index, point) in predicted.chunks_exact(dim).enumerate() {
            cumulative += fit.centres.nearest(point).1;
            let round = warmup + index as u64 + 1;
            while next < wanted.len() && wanted[next] < round {
                next += 1;
            }
            if next < wanted.len() && wanted[next] == round {
                points.push((round as f64, cumulative));
            }
        }
        if points.last().is_none_or(|p| p.0 < rows as f64) {
            points.push((rows as f64, cumulative));
        }
        series.push(Series {
            name: format!(
                "best fixed clustering in hindsight with k = k̂_T = {} (k-means, best of {} restarts)",
                fit.n_clusters, report.restarts
            ),
            points,
            style: SeriesStyle::Dashed,
            colour: 1,
        });
    }
    if report.bound.bound().is_some() {
        let mut points = Vec::new();
        let predicted = rows - warmup as usize;
        let steps = 12.min(predicted);
        for i in 1..=steps {
            let prefix = warmup as usize + predicted * i / steps;
            let bound =
                ideal_sampler_bound(learner, prefix, restarts, seed).map_err(library_error)?;
            if let Some(bound) = bound.bound() {
                points.push((prefix as f64, bound.value));
            }
        }
        series.push(Series {
            name: format!(
                "bound on the ideal sampler's expected loss (Li, Guedj & Loustau 2018, a = {})",
                learner.config().coeff()
            ),
            points,
            style: SeriesStyle::Markers,
            colour: 3,
        });
    }
    Ok(series)
}
