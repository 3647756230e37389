//! A principal curve over its data, with the number of segments over time and the
//! cumulative regret against the best curve found in hindsight with the learner's final
//! number of segments.

use super::{draw_error, draw_svg, legend};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::panel::{PanelFrame, RoundSeries, draw_mesh, draw_over_rounds, framed_chart};
use super::{axis_range, cluster_colour};

/// The frame of the two panels beside the curve.
const FRAME: PanelFrame = PanelFrame {
    caption_size: 18,
    margin: 10,
    x_label_area: 40,
    y_label_area: 70,
};

/// What a curve figure shows.
#[derive(Debug)]
pub struct CurveFigure {
    /// The title above the data.
    pub title: String,
    /// The x axis label.
    pub x_label: String,
    /// The y axis label.
    pub y_label: String,
    /// The data points drawn, (x, y).
    pub points: Vec<[f64; 2]>,
    /// The final curve's vertices.
    pub curve: Vec<[f64; 2]>,
    /// Earlier curves, (round, vertices), drawn faded.
    pub earlier: Vec<(u64, Vec<[f64; 2]>)>,
    /// The hindsight curve (the best found with K ≤ the final K), dashed, if computed.
    pub hindsight: Option<Vec<[f64; 2]>>,
    /// K(f̂_t) against t.
    pub segments: Vec<(f64, f64)>,
    /// Cumulative regret against the hindsight curve, against t (a lower estimate: that
    /// curve is a local optimum).
    pub regret: Option<Vec<(f64, f64)>>,
    /// Cumulative loss against t (drawn when there is no regret).
    pub cumulative_loss: Vec<(f64, f64)>,
}

/// Draws the figure; returns the SVG document.
pub fn draw_curve(figure: &CurveFigure) -> anyhow::Result<String> {
    let size = (1300, 620);
    draw_svg(size, |root| {
        let (left, right) = root.split_horizontally(size.0 * 58 / 100);
        draw_data(&left, figure)?;
        let (top, bottom) = right.split_vertically(size.1 / 2);
        let segments = RoundSeries {
            caption: "number of segments K",
            y_label: "K",
            points: &figure.segments,
            colour: cluster_colour(2),
            count: true,
        };
        draw_over_rounds(&top, FRAME, &segments)?;
        let below = match &figure.regret {
            Some(regret) => RoundSeries {
                caption: "cumulative regret (lower estimate)",
                y_label: "regret vs best curve found with the final K",
                points: regret,
                colour: cluster_colour(3),
                count: false,
            },
            None => RoundSeries {
                caption: "cumulative loss",
                y_label: "Σ squared distance",
                points: &figure.cumulative_loss,
                colour: cluster_colour(3),
                count: false,
            },
        };
        draw_over_rounds(&bottom, FRAME, &below)?;
        Ok(())
    })
}

fn draw_data(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &CurveFigure,
) -> anyhow::Result<()> {
    let all = figure
        .points
        .iter()
        .chain(&figure.curve)
        .chain(figure.hindsight.iter().flatten());
    let x_range = axis_range(all.clone().map(|p| p[0]));
    let y_range = axis_range(all.map(|p| p[1]));
    let frame = PanelFrame {
        caption_size: 20,
        margin: 12,
        x_label_area: 45,
        y_label_area: 60,
    };
    let mut chart = framed_chart(area, frame, &figure.title, x_range, y_range)?;
    draw_mesh(&mut chart, &figure.x_label, &figure.y_label)?;
    let radius = if figure.points.len() > 2000 { 2 } else { 3 };
    chart
        .draw_series(
            figure
                .points
                .iter()
                .map(|p| Circle::new((p[0], p[1]), radius, cluster_colour(7).mix(0.45).filled())),
        )
        .map_err(draw_error)?
        .label("data")
        .legend(|(x, y)| Circle::new((x, y), 4, cluster_colour(7).filled()));
    for (index, (_, vertices)) in figure.earlier.iter().enumerate() {
        let drawn = chart
            .draw_series(LineSeries::new(
                vertices.iter().map(|p| (p[0], p[1])),
                cluster_colour(0).mix(0.25).stroke_width(2),
            ))
            .map_err(draw_error)?;
        if index == 0 {
            drawn.label("earlier curves").legend(|(x, y)| {
                PathElement::new(
                    [(x - 8, y), (x + 8, y)],
                    cluster_colour(0).mix(0.3).stroke_width(2),
                )
            });
        }
    }
    if let Some(hindsight) = &figure.hindsight {
        chart
            .draw_series(DashedLineSeries::new(
                hindsight.iter().map(|p| (p[0], p[1])),
                6,
                4,
                BLACK.mix(0.6).stroke_width(1),
            ))
            .map_err(draw_error)?
            .label("hindsight curve, same K")
            .legend(|(x, y)| PathElement::new([(x - 8, y), (x + 8, y)], BLACK.mix(0.6)));
    }
    let colour = cluster_colour(1);
    chart
        .draw_series(LineSeries::new(
            figure.curve.iter().map(|p| (p[0], p[1])),
            colour.stroke_width(3),
        ))
        .map_err(draw_error)?
        .label("final curve")
        .legend(move |(x, y)| PathElement::new([(x - 8, y), (x + 8, y)], colour.stroke_width(3)));
    chart
        .draw_series(
            figure
                .curve
                .iter()
                .map(|p| Circle::new((p[0], p[1]), 4, colour.filled())),
        )
        .map_err(draw_error)?;
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_well_formed_svg() {
        let figure = CurveFigure {
            title: "curve".into(),
            x_label: "long".into(),
            y_label: "lat".into(),
            points: vec![[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]],
            curve: vec![[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]],
            earlier: vec![(100, vec![[0.0, 0.0], [2.0, 0.5]])],
            hindsight: Some(vec![[0.0, 0.1], [2.0, 0.4]]),
            segments: vec![(21.0, 1.0), (30.0, 2.0)],
            regret: Some(vec![(21.0, 0.5), (30.0, 1.5)]),
            cumulative_loss: vec![(21.0, 1.0), (30.0, 3.0)],
        };
        let svg = draw_curve(&figure).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("cumulative regret (lower estimate)"));
        assert!(svg.contains("earlier curves"));
        let without = CurveFigure {
            regret: None,
            hindsight: None,
            earlier: Vec::new(),
            ..figure
        };
        assert!(draw_curve(&without).unwrap().contains("cumulative loss"));
    }
}
