//! Figures, drawn as SVG with plotters (no font files needed: text stays text in the SVG
//! and the viewer renders it).
//!
//! Each figure is drawn into a string first and written atomically, so a failed run never
//! leaves half a picture.

use plotters::coord::Shift;
use plotters::prelude::{
    BLACK, Cartesian2d, ChartContext, Color, DrawingArea, IntoDrawingArea, Ranged, SVGBackend,
    SeriesLabelPosition, WHITE,
};

mod clusters;
mod curves;
mod experts;
mod lines;
mod panel;
mod sample;

pub use clusters::{CentreMarks, ClusterFigure, LossCurve, draw_clusters};
pub use curves::{CurveFigure, draw_curve};
pub use experts::{ContributionsFigure, ExpertsFigure, draw_contributions, draw_experts};
pub use lines::{LineFigure, Series, SeriesStyle, draw_lines};
pub use sample::{RowSample, ThinnedSeries};

/// The error of a figure that could not be drawn.
fn draw_error<E: std::error::Error + Send + Sync>(
    error: plotters::drawing::DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the figure: {error}")
}

/// Draws a figure of `size` pixels on a white background; returns the SVG document.
fn draw_svg(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> anyhow::Result<()>,
) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        draw(&root)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// The legend of the series labelled so far, at `position`.
fn legend<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(draw_error)
}

/// The colour of cluster `index`: Tableau's ten colours, repeated for larger k.
pub fn cluster_colour(index: usize) -> plotters::style::RGBColor {
    const PALETTE: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    plotters::style::RGBColor(r, g, b)
}

/// The label of a tick on an axis of counts: the whole numbers only, no label elsewhere.
pub fn whole_number_label(value: &f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else {
        String::new()
    }
}

/// A padded axis range that covers `values` (a unit range around a single value, `0..1`
/// when there is none), so that every point is drawn inside the frame.
pub fn axis_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (low, high) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if low > high {
        return 0.0..1.0;
    }
    let span = high - low;
    let pad = if span > 0.0 && span.is_finite() {
        span * 0.05
    } else {
        low.abs().max(1.0) * 0.5
    };
    // The span must stay finite: plotters' tick search never ends on an infinite one.
    let limit = f64::MAX / 2.0;
    let from = (low - pad).max(-limit);
    let to = (high + pad).min(limit);
    if from < to { from..to } else { -1.0..1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_never_empty() {
        let range = axis_range([1.0, 3.0].into_iter());
        assert!(range.start < 1.0 && range.end > 3.0);
        let range = axis_range([5.0].into_iter());
        assert!(range.start < 5.0 && range.end > 5.0);
        assert_eq!(axis_range(std::iter::empty()), 0.0..1.0);
        for values in [
            [f64::MAX, -f64::MAX],
            [1.7e308, -1e308],
            [f64::MAX, f64::MAX],
        ] {
            let range = axis_range(values.into_iter());
            assert!(range.start < range.end && (range.end - range.start).is_finite());
        }
    }
}
