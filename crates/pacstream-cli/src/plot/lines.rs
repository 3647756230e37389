//! Line charts over rounds: several named series on one frame (k̂_t against the true number
//! of clusters; cumulative losses against an oracle and a bound).

use super::{draw_error, draw_svg, legend};
use plotters::prelude::*;

use super::{axis_range, cluster_colour, whole_number_label};

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesStyle {
    /// A polyline through the points.
    Line,
    /// A staircase: each value holds until the next point (counts such as k̂_t).
    Steps,
    /// Markers at the points, joined by a thin line.
    Markers,
    /// A dashed polyline.
    Dashed,
    /// A dashed staircase (a count drawn beside a [`SeriesStyle::Steps`] series).
    DashedSteps,
}

/// One named series.
#[derive(Debug)]
pub struct Series {
    /// The legend entry.
    pub name: String,
    /// (x, y) points in increasing x.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: SeriesStyle,
    /// Index into the cluster palette.
    pub colour: usize,
}

/// What a line chart shows.
#[derive(Debug)]
pub struct LineFigure {
    /// The title above the chart.
    pub title: String,
    /// The x axis label.
    pub x_label: String,
    /// The y axis label.
    pub y_label: String,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// A logarithmic y axis (for values spanning decades; non-positive values are left out).
    pub log_y: bool,
    /// Integer ticks on the y axis (counts).
    pub integer_y: bool,
}

/// Draws the figure; returns the SVG document.
pub fn draw_lines(figure: &LineFigure) -> anyhow::Result<String> {
    draw_svg((960, 540), |root| {
        let x_range = axis_range(
            figure
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0)),
        );
        let ys = || {
            figure
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
        };
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&figure.title, ("sans-serif", 20))
            .margin(14)
            .x_label_area_size(45)
            .y_label_area_size(80);
        if figure.log_y {
            let positive: Vec<f64> = ys().filter(|y| *y > 0.0 && y.is_finite()).collect();
            let low = positive.iter().copied().fold(f64::INFINITY, f64::min);
            let high = positive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (low, high) = if low <= high {
                (low / 1.5, high * 1.5)
            } else {
                (1.0, 10.0)
            };
            let mut chart = builder
                .build_cartesian_2d(x_range, (low..high).log_scale())
                .map_err(draw_error)?;
            chart
                .configure_mesh()
                .x_desc(&figure.x_label)
                .y_desc(&figure.y_label)
                .x_label_formatter(&|t| format!("{t:.0}"))
                .y_label_formatter(&|v| format!("{v:.0e}"))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(draw_error)?;
            for series in &figure.series {
                let points: Vec<(f64, f64)> = series
                    .points
                    .iter()
                    .copied()
                    .filter(|p| p.1 > 0.0 && p.1.is_finite())
                    .collect();
                draw_series(&mut chart, series, &points)?;
            }
            // Cumulative curves rise to the right: their lower right corner is free.
            legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        } else {
            let mut y_range = axis_range(ys().chain([0.0]));
            if figure.integer_y {
                // Counts: from 0 (or the lowest value, if negative) to just above the top.
                let lowest = ys().fold(0.0, f64::min);
                y_range = lowest.floor()..y_range.end.ceil() + 0.5;
            }
            let mut chart = builder
                .build_cartesian_2d(x_range, y_range)
                .map_err(draw_error)?;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(&figure.x_label)
                .y_desc(&figure.y_label)
                .x_label_formatter(&|t| format!("{t:.0}"))
                .light_line_style(WHITE.mix(0.0));
            if figure.integer_y {
                mesh.y_label_formatter(&whole_number_label);
            }
            mesh.draw().map_err(draw_error)?;
            for series in &figure.series {
                draw_series(&mut chart, series, &series.points)?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Ok(())
    })
}

fn draw_series<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &Series,
    points: &[(f64, f64)],
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let colour = cluster_colour(series.colour);
    let path: Vec<(f64, f64)> = match series.style {
        SeriesStyle::Steps | SeriesStyle::DashedSteps => {
            let mut path = Vec::with_capacity(2 * points.len());
            for (i, &(x, y)) in points.iter().enumerate() {
                if i > 0 {
                    path.push((x, points[i - 1].1));
                }
                path.push((x, y));
            }
            path
        }
        _ => points.to_vec(),
    };
    let drawn = match series.style {
        SeriesStyle::Dashed | SeriesStyle::DashedSteps => chart
            .draw_series(DashedLineSeries::new(path, 8, 5, colour.stroke_width(2)))
            .map_err(draw_error)?,
        SeriesStyle::Markers => {
            chart
                .draw_series(LineSeries::new(path, colour.mix(0.5).stroke_width(1)))
                .map_err(draw_error)?;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(move |&p| Circle::new(p, 4, colour.filled())),
                )
                .map_err(draw_error)?
        }
        _ => chart
            .draw_series(LineSeries::new(path, colour.stroke_width(2)))
            .map_err(draw_error)?,
    };
    drawn
        .label(series.name.clone())
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_well_formed_svgs() {
        for log_y in [false, true] {
            let figure = LineFigure {
                title: "k̂ <t>".into(),
                x_label: "round t".into(),
                y_label: "clusters".into(),
                series: vec![
                    Series {
                        name: "k̂".into(),
                        points: vec![(1.0, 1.0), (5.0, 3.0), (9.0, 2.0)],
                        style: SeriesStyle::Steps,
                        colour: 0,
                    },
                    Series {
                        name: "bound".into(),
                        points: vec![(1.0, 100.0), (9.0, 1e5)],
                        style: SeriesStyle::Markers,
                        colour: 3,
                    },
                    Series {
                        name: "oracle".into(),
                        points: vec![(1.0, 0.0), (9.0, 4.0)],
                        style: SeriesStyle::Dashed,
                        colour: 1,
                    },
                ],
                log_y,
                integer_y: !log_y,
            };
            let svg = draw_lines(&figure).unwrap();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(svg.contains("bound"));
        }
        // No points at all still draws a frame.
        let empty = LineFigure {
            title: "empty".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: Vec::new(),
            log_y: true,
            integer_y: false,
        };
        assert!(draw_lines(&empty).unwrap().contains("</svg>"));
    }
}
