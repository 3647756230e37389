//! The three panels of an expert-aggregation run: the weights over time (stacked areas),
//! the regret against its theoretical bound, and the running average loss of every expert
//! against the learner's.

use super::{draw_error, draw_svg};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::panel::{Chart, PanelFrame, draw_mesh, framed_chart};
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
    draw_svg((960, 1260), |root| {
        let panels = root.split_evenly((3, 1));
        draw_weights(&panels[0], figure)?;
        draw_regret(&panels[1], figure)?;
        draw_losses(&panels[2], figure)?;
        Ok(())
    })
}

fn x_range(figure: &ExpertsFigure) -> std::ops::Range<f64> {
    let last = figure.rounds.last().copied().unwrap_or(1.0);
    0.0..last.max(1.0)
}

/// The chart of one panel of the figure, under `caption`, its y axis (`y_range`, named
/// `y_desc`) given `y_label_area` pixels, its mesh drawn.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    figure: &ExpertsFigure,
    caption: &str,
    (y_range, y_desc, y_label_area): (std::ops::Range<f64>, &str, u32),
) -> anyhow::Result<Chart<'a, 'b>> {
    let frame = PanelFrame {
        caption_size: 20,
        margin: 12,
        x_label_area: 40,
        y_label_area,
    };
    let mut chart = framed_chart(area, frame, caption, x_range(figure), y_range)?;
    draw_mesh(&mut chart, "round", y_desc)?;
    Ok(chart)
}

/// One line per expert: `per_round[k][expert]` at the k-th kept round, `stroke` pixels
/// wide, each named in the legend when there are few.
/// The line of `values` over `rounds` in `style`, with its entry in the legend.
fn draw_labelled_line<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    (rounds, values): (&[f64], &[f64]),
    style: ShapeStyle,
    label: impl Into<String>,
) -> anyhow::Result<()> {
    chart
        .draw_series(LineSeries::new(
            rounds.iter().copied().zip(values.iter().copied()),
            style,
        ))
        .map_err(draw_error)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
    Ok(())
}

/// The filled band inside `outline` in `colour`, with its entry in the legend when it is
/// `name`d (not when there are too many experts to list).
fn draw_band<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    outline: Vec<(f64, f64)>,
    colour: RGBColor,
    name: Option<&str>,
) -> anyhow::Result<()> {
    let drawn = chart
        .draw_series(std::iter::once(Polygon::new(
            outline,
            colour.mix(0.75).filled(),
        )))
        .map_err(draw_error)?;
    if let Some(name) = name {
        drawn
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    Ok(())
}

fn draw_expert_lines<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    figure: &ExpertsFigure,
    per_round: &[Vec<f64>],
    stroke: u32,
) -> anyhow::Result<()> {
    let n = figure.names.len();
    for expert in 0..n {
        let colour = cluster_colour(expert);
        let drawn = chart
            .draw_series(LineSeries::new(
                figure
                    .rounds
                    .iter()
                    .copied()
                    .zip(per_round.iter().map(|values| values[expert])),
                colour.stroke_width(stroke),
            ))
            .map_err(draw_error)?;
        if n <= LEGEND_LIMIT {
            drawn
                .label(figure.names[expert].clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
        }
    }
    Ok(())
}

/// The legend of the series labelled so far, at `position`.
fn draw_legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(position)
        .draw()
        .map_err(draw_error)
}

fn draw_weights(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ExpertsFigure,
) -> anyhow::Result<()> {
    let off_simplex = figure
        .weights
        .iter()
        .any(|w| w.iter().any(|&x| x < 0.0) || w.iter().sum::<f64>() > 1.0 + 1e-9);
    if off_simplex {
        return draw_linear_weights(area, figure);
    }
    let caption = format!("{}: weights", figure.title);
    let y_axis = (0.0..1.0, "weight (stacked)", 60);
    let mut chart = panel(area, figure, &caption, y_axis)?;
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
        let name = (n <= LEGEND_LIMIT).then(|| figure.names[expert].as_str());
        draw_band(&mut chart, outline, colour, name)?;
        lower = upper;
    }
    if n <= LEGEND_LIMIT {
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(())
}

/// Weights of any sign (ridge regression's): one line per expert, not stacked.
fn draw_linear_weights(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ExpertsFigure,
) -> anyhow::Result<()> {
    let y_range = axis_range(
        figure
            .weights
            .iter()
            .flatten()
            .copied()
            .chain(std::iter::once(0.0)),
    );
    let caption = format!("{}: weights (any sign: a linear combination)", figure.title);
    let mut chart = panel(area, figure, &caption, (y_range, "weight", 60))?;
    draw_expert_lines(&mut chart, figure, &figure.weights, 2)?;
    if figure.names.len() <= LEGEND_LIMIT {
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
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
    let caption = if figure.no_bound {
        format!(
            "cumulative {} against the best expert (no bound applies: see the summary)",
            figure.regret_name
        )
    } else {
        format!("cumulative {} against the best expert", figure.regret_name)
    };
    let y_axis = (y_range, figure.regret_name.as_str(), 80);
    let mut chart = panel(area, figure, &caption, y_axis)?;
    draw_labelled_line(
        &mut chart,
        (&figure.rounds, &figure.regret),
        BLACK.stroke_width(2),
        figure.regret_name.as_str(),
    )?;
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
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
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
    let caption = "running average loss per round";
    let mut chart = panel(area, figure, caption, (y_range, "average loss", 80))?;
    draw_expert_lines(&mut chart, figure, &figure.expert_means, 1)?;
    draw_labelled_line(
        &mut chart,
        (&figure.rounds, &figure.learner_mean),
        BLACK.stroke_width(3),
        "learner",
    )?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// The contribution of each expert to the prediction over time, as R's opera draws it
/// (`plot.mixture`): weight × forecast, stacked (positive parts upwards from 0, negative
/// parts downwards), with the outcome and the prediction.
#[derive(Debug)]
pub struct ContributionsFigure {
    /// The title above the chart.
    pub title: String,
    /// The experts' names.
    pub names: Vec<String>,
    /// The rounds kept (x axis).
    pub rounds: Vec<f64>,
    /// weight × forecast of every expert at each kept round.
    pub contributions: Vec<Vec<f64>>,
    /// The outcome of each kept round.
    pub outcomes: Vec<f64>,
    /// The learner's prediction of each kept round (NaN where it has none).
    pub predictions: Vec<f64>,
}

/// Draws the contributions; returns the SVG document.
pub fn draw_contributions(figure: &ContributionsFigure) -> anyhow::Result<String> {
    let n = figure.names.len();
    let kept = figure.rounds.len();
    // Expert i's band: from the sum of the contributions of the same sign before it.
    let mut bands: Vec<(Vec<f64>, Vec<f64>)> = Vec::with_capacity(n);
    let mut above = vec![0.0; kept];
    let mut below = vec![0.0; kept];
    for expert in 0..n {
        let mut low = Vec::with_capacity(kept);
        let mut high = Vec::with_capacity(kept);
        for k in 0..kept {
            let c = figure.contributions[k][expert];
            if c >= 0.0 {
                low.push(above[k]);
                above[k] += c;
                high.push(above[k]);
            } else {
                high.push(below[k]);
                below[k] += c;
                low.push(below[k]);
            }
        }
        bands.push((low, high));
    }
    let y_range = axis_range(
        above
            .iter()
            .chain(&below)
            .chain(&figure.outcomes)
            .chain(figure.predictions.iter().filter(|p| p.is_finite()))
            .copied()
            .chain(std::iter::once(0.0)),
    );
    let last = figure.rounds.last().copied().unwrap_or(1.0);
    draw_svg((960, 540), |root| {
        let frame = PanelFrame {
            caption_size: 20,
            margin: 14,
            x_label_area: 45,
            y_label_area: 80,
        };
        let x_range = 0.0..last.max(1.0);
        let mut chart = framed_chart(root, frame, &figure.title, x_range, y_range)?;
        draw_mesh(&mut chart, "round", "weight × forecast (stacked)")?;
        for (expert, (low, high)) in bands.iter().enumerate() {
            let colour = cluster_colour(expert);
            let outline: Vec<(f64, f64)> = figure
                .rounds
                .iter()
                .copied()
                .zip(high.iter().copied())
                .chain(figure.rounds.iter().copied().zip(low.iter().copied()).rev())
                .collect();
            let name = (n <= LEGEND_LIMIT).then(|| figure.names[expert].as_str());
            draw_band(&mut chart, outline, colour, name)?;
        }
        draw_labelled_line(
            &mut chart,
            (&figure.rounds, &figure.outcomes),
            BLACK.stroke_width(2),
            "outcome",
        )?;
        let predictions: Vec<(f64, f64)> = figure
            .rounds
            .iter()
            .copied()
            .zip(figure.predictions.iter().copied())
            .filter(|p| p.1.is_finite())
            .collect();
        if !predictions.is_empty() {
            let grey = RGBColor(90, 90, 90);
            chart
                .draw_series(DashedLineSeries::new(
                    predictions,
                    6,
                    4,
                    grey.stroke_width(1),
                ))
                .map_err(draw_error)?
                .label("prediction")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], grey));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}
