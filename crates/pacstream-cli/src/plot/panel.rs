//! A small panel beside a figure's main plot: one quantity over the rounds of a run (the
//! running loss of a clustering, the segments and regret of a curve).

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::{axis_range, draw_error, whole_number_label};

/// The frame of a panel: its caption's font size, its margin and the room of its axis
/// labels, in pixels.
#[derive(Debug, Clone, Copy)]
pub struct PanelFrame {
    pub caption_size: u32,
    pub margin: u32,
    pub x_label_area: u32,
    pub y_label_area: u32,
}

/// One quantity over the rounds: its caption, its axis label, its (round t, value) points,
/// its colour, and whether it is a count (then only the whole numbers are labelled).
#[derive(Debug, Clone, Copy)]
pub struct RoundSeries<'a> {
    pub caption: &'a str,
    pub y_label: &'a str,
    pub points: &'a [(f64, f64)],
    pub colour: RGBColor,
    pub count: bool,
}

/// A chart over two real axes.
pub type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart in `area` framed by `frame`, under `caption`, over `x_range` × `y_range` (its
/// mesh not drawn yet).
pub fn framed_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    frame: PanelFrame,
    caption: &str,
    x_range: std::ops::Range<f64>,
    y_range: std::ops::Range<f64>,
) -> anyhow::Result<Chart<'a, 'b>> {
    ChartBuilder::on(area)
        .caption(caption, ("sans-serif", frame.caption_size))
        .margin(frame.margin)
        .x_label_area_size(frame.x_label_area)
        .y_label_area_size(frame.y_label_area)
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_error)
}

/// Draws the mesh of `chart`, its axes named `x_desc` and `y_desc`, without light grid lines.
pub fn draw_mesh<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    x_desc: &str,
    y_desc: &str,
) -> anyhow::Result<()> {
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_error)
}

/// Draws `series` as one line against the round t in `area`, the y axis reaching down to 0.
pub fn draw_over_rounds(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    frame: PanelFrame,
    series: &RoundSeries<'_>,
) -> anyhow::Result<()> {
    let x_range = axis_range(series.points.iter().map(|p| p.0));
    let y_range = axis_range(series.points.iter().map(|p| p.1).chain([0.0]));
    let mut chart = framed_chart(area, frame, series.caption, x_range, y_range)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("round t")
        .x_label_formatter(&|t| format!("{t:.0}"))
        .y_desc(series.y_label)
        .light_line_style(WHITE.mix(0.0));
    if series.count {
        mesh.y_label_formatter(&whole_number_label);
    }
    mesh.draw().map_err(draw_error)?;
    chart
        .draw_series(LineSeries::new(
            series.points.iter().copied(),
            series.colour.stroke_width(2),
        ))
        .map_err(draw_error)?;
    Ok(())
}
