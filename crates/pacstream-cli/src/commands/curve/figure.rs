//! The figure of a run: the data with the curve (and earlier curves), K over time and the
//! cumulative regret.

use pacstream::OnlineLearner;
use pacstream::curves::{HindsightCurve, PrincipalCurveLearner};

use super::family::PlotTrace;
use crate::commands::clusters::Axes;
use crate::commands::{plural, short_name};
use crate::io::reader::RowReader;
use crate::plot::CurveFigure;

pub(super) fn curve_figure(
    reader: &RowReader,
    axes: Axes,
    learner: &PrincipalCurveLearner,
    trace: &PlotTrace,
    hindsight: Option<&HindsightCurve>,
    comparator_cumulative: &[(u64, f64)],
) -> CurveFigure {
    let labels = &reader.layout().feature_labels;
    let Axes { x, y } = axes;
    let dim = trace.dim;
    // One-dimensional data: the row's value against its position in the sample.
    let project = |values: &[f64], index: usize| match y {
        Some(y) => [values[x], values[y]],
        None => [values[x], index as f64],
    };
    let points = trace
        .rows
        .points()
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, p)| project(p, i))
        .collect();
    let line = |vertices: &[f64]| -> Vec<[f64; 2]> {
        vertices
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| project(v, i))
            .collect()
    };
    let curve = learner.curve().expect("a curve exists");
    let segments = trace
        .series
        .points()
        .iter()
        .map(|&(_, (t, k, _))| (t as f64, k as f64))
        .collect();
    // Regret at the traced times: the learner's cumulative loss minus the comparator's.
    let regret = (!comparator_cumulative.is_empty()).then(|| {
        trace
            .series
            .points()
            .iter()
            .filter_map(|&(_, (t, _, loss))| {
                let position = comparator_cumulative.partition_point(|&(s, _)| s <= t);
                (position > 0).then(|| (t as f64, loss - comparator_cumulative[position - 1].1))
            })
            .collect()
    });
    let loss = trace
        .series
        .points()
        .iter()
        .map(|&(_, (t, _, l))| (t as f64, l))
        .collect();
    CurveFigure {
        title: format!(
            "principal curve of {}: {} after {} rounds",
            short_name(reader.source_name()),
            plural(curve.n_segments() as u64, "segment"),
            learner.n_rounds()
        ),
        x_label: labels[x].clone(),
        y_label: y.map_or_else(|| "sample index".to_string(), |y| labels[y].clone()),
        points,
        curve: line(curve.vertices()),
        earlier: trace.snapshots.iter().map(|(t, v)| (*t, line(v))).collect(),
        hindsight: hindsight.map(|h| line(h.curve.vertices())),
        segments,
        regret,
        cumulative_loss: loss,
    }
}
