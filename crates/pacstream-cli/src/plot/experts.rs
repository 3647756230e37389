//! The three panels of an expert-aggregation run: the weights over time (stacked areas),
//! the regret against its theoretical bound, and the running average loss of every expert
//! against the learner's.

use super::draw_error;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{axis_range, cluster_colour};

/// Legends list at most this many experts; beyond, they hide the curves.
const LEGEND_LIMIT: usize = 12;

/// What the figure shows, at the rounds kept.
#[derive(Debug)]
pub struct ExpertsFigure {
    /// The title above the first panel.
    pub title: String,
    /// The experts' names.
    pub names: Vec<String>,
    /// The rounds kept (x axis).
    pub rounds: Vec<f64>,
    /// The weights after each kept round (one vector per round).
    pub weights: Vec<Vec<f64>>,
    /// The regret after each kept round.
    pub regret: Vec<f64>,
    /// The bound on it, where the rule has one.
    pub bound: Vec<Option<f64>>,
    /// What the regret and its bound are: `regret` or `expected regret`.
    pub regret_name: String,
    /// Whether the run ended without a bound (no theorem covers its settings).
    pub no_bound: bool,
    /// The learner's average loss per round.
    pub learner_mean: Vec<f64>,
    /// Every expert's average loss per awake round.
    pub expert_means: Vec<Vec<f64>>,
}

/// Draws the figure; returns the SVG document.
pub fn draw_experts(figure: &ExpertsFigure) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 1260)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let panels = root.split_evenly((3, 1));
        draw_weights(&panels[0], figure)?;
        draw_regret(&panels[1], figure)?;
        draw_losses(&panels[2], figure)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn x_range(figure: &ExpertsFigure) -> std::ops::Range<f64> {
    let last = figure.rounds.last().copied().unwrap_or(1.0);
    0.0..last.max(1.0)
}

fn draw_weights(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ExpertsFigure,
) -> anyhow::Result<()> {
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{}: weights", figure.title), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range(figure), 0.0..1.0)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_desc("round")
        .y_desc("weight (stacked)")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_error)?;
    // Expert i's band lies between the sum of the weights before it and that sum plus its own.
    let n = figure.names.len();
    let mut lower = vec![0.0; figure.rounds.len()];
    for expert in 0..n {
        let upper: Vec<f64> = lower
            .iter()
            .zip(&figure.weights)
            .map(|(low, w)| (low + w[expert]).min(1.0))
            .collect();
        let colour = cluster_colour(expert);
        let outline: Vec<(f64, f64)> = figure
            .rounds
            .iter()
            .copied()
            .zip(upper.iter().copied())
            .chain(
                figure
                    .rounds
                    .iter()
                    .copied()
                    .zip(lower.iter().copied())
                    .rev(),
            )
            .collect();
        let drawn = chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                colour.mix(0.75).filled(),
            )))
            .map_err(draw_error)?;
        if n <= LEGEND_LIMIT {
            drawn
                .label(figure.names[expert].clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
        }
        lower = upper;
    }
    if n <= LEGEND_LIMIT {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(draw_error)?;
    }
    Ok(())
}

fn draw_regret(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ExpertsFigure,
) -> anyhow::Result<()> {
    let bounds: Vec<(f64, f64)> = figure
        .rounds
        .iter()
        .zip(&figure.bound)
        .filter_map(|(r, b)| b.map(|b| (*r, b)))
        .collect();
    let y_range = axis_range(
        figure
            .regret
            .iter()
            .copied()
            .chain(bounds.iter().map(|p| p.1))
            .chain(std::iter::once(0.0)),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(
            if figure.no_bound {
                format!(
                    "cumulative {} against the best expert (no bound applies: see the summary)",
                    figure.regret_name
                )
            } else {
                format!("cumulative {} against the best expert", figure.regret_name)
            },
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range(figure), y_range)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_desc("round")
        .y_desc(figure.regret_name.as_str())
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_error)?;
    chart
        .draw_series(LineSeries::new(
            figure
                .rounds
                .iter()
                .copied()
                .zip(figure.regret.iter().copied()),
            BLACK.stroke_width(2),
        ))
        .map_err(draw_error)?
        .label(figure.regret_name.as_str())
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(2)));
    if !bounds.is_empty() {
        let red = RGBColor(214, 39, 40);
        chart
            .draw_series(LineSeries::new(bounds, red.stroke_width(2)))
            .map_err(draw_error)?
            .label(format!(
                "bound on the {} (the rule's theorem)",
                figure.regret_name
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], red.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(draw_error)?;
    Ok(())
}

fn draw_losses(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ExpertsFigure,
) -> anyhow::Result<()> {
    let y_range = axis_range(
        figure
            .learner_mean
            .iter()
            .chain(figure.expert_means.iter().flatten())
            .copied(),
    );
    let mut chart = ChartBuilder::on(area)
        .caption("running average loss per round", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range(figure), y_range)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_desc("round")
        .y_desc("average loss")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_error)?;
    let n = figure.names.len();
    for expert in 0..n {
        let colour = cluster_colour(expert);
        let drawn = chart
            .draw_series(LineSeries::new(
                figure
                    .rounds
                    .iter()
                    .copied()
                    .zip(figure.expert_means.iter().map(|m| m[expert])),
                colour.stroke_width(1),
            ))
            .map_err(draw_error)?;
        if n <= LEGEND_LIMIT {
            drawn
                .label(figure.names[expert].clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
        }
    }
    chart
        .draw_series(LineSeries::new(
            figure
                .rounds
                .iter()
                .copied()
                .zip(figure.learner_mean.iter().copied()),
            BLACK.stroke_width(3),
        ))
        .map_err(draw_error)?
        .label("learner")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(3)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(draw_error)?;
    Ok(())
}
