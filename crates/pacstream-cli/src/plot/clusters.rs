//! Points coloured by cluster with the centres marked, optionally beside the running average
//! loss of an online run.

use super::{draw_error, draw_svg, legend};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::panel::{PanelFrame, RoundSeries, draw_mesh, draw_over_rounds, framed_chart};
use super::{axis_range, cluster_colour};

/// Legends are drawn only for this many clusters or fewer; beyond, they hide the data.
const LEGEND_LIMIT: usize = 12;

/// How the centres are marked.
#[derive(Debug)]
pub enum CentreMarks {
    /// At these (x, y) positions (two or more dimensions).
    Points(Vec<[f64; 2]>),
    /// As vertical lines at these x positions (one-dimensional data).
    VerticalLines(Vec<f64>),
}

/// The running average loss of an online run: (round t, mean loss over the scored rounds up
/// to t).
#[derive(Debug)]
pub struct LossCurve {
    /// The points of the curve, in increasing t.
    pub points: Vec<(f64, f64)>,
}

/// What a cluster figure shows.
#[derive(Debug)]
pub struct ClusterFigure {
    /// The title above the points.
    pub title: String,
    /// The x axis label.
    pub x_label: String,
    /// The y axis label.
    pub y_label: String,
    /// The points drawn, (x, y).
    pub points: Vec<[f64; 2]>,
    /// The cluster of each point.
    pub labels: Vec<usize>,
    /// The number of clusters.
    pub n_clusters: usize,
    /// The centres.
    pub centres: CentreMarks,
    /// A second panel with the running average loss, for online runs.
    pub loss: Option<LossCurve>,
}

/// Draws the figure; returns the SVG document.
pub fn draw_clusters(figure: &ClusterFigure) -> anyhow::Result<String> {
    let size = if figure.loss.is_some() {
        (1300, 560)
    } else {
        (820, 620)
    };
    draw_svg(size, |root| {
        match &figure.loss {
            Some(loss) => {
                let (left, right) = root.split_horizontally(size.0 * 55 / 100);
                draw_points(&left, figure)?;
                draw_loss(&right, loss)?;
            }
            None => draw_points(root, figure)?,
        }
        Ok(())
    })
}

fn draw_points(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    figure: &ClusterFigure,
) -> anyhow::Result<()> {
    let (centre_x, centre_y): (Vec<f64>, Vec<f64>) = match &figure.centres {
        CentreMarks::Points(points) => points.iter().map(|p| (p[0], p[1])).unzip(),
        CentreMarks::VerticalLines(xs) => (xs.clone(), Vec::new()),
    };
    let x_range = axis_range(figure.points.iter().map(|p| p[0]).chain(centre_x));
    let y_range = axis_range(figure.points.iter().map(|p| p[1]).chain(centre_y));
    let frame = PanelFrame {
        caption_size: 20,
        margin: 12,
        x_label_area: 45,
        y_label_area: 70,
    };
    let (x, y) = (x_range.clone(), y_range.clone());
    let mut chart = framed_chart(area, frame, &figure.title, x, y)?;
    draw_mesh(&mut chart, &figure.x_label, &figure.y_label)?;
    let radius = if figure.points.len() > 2000 { 2 } else { 3 };
    for cluster in 0..figure.n_clusters {
        let colour = cluster_colour(cluster);
        let series = figure
            .points
            .iter()
            .zip(&figure.labels)
            .filter(|(_, label)| **label == cluster)
            .map(move |(p, _)| Circle::new((p[0], p[1]), radius, colour.mix(0.55).filled()));
        let drawn = chart.draw_series(series).map_err(draw_error)?;
        if figure.n_clusters <= LEGEND_LIMIT {
            drawn
                .label(format!("cluster {cluster}"))
                .legend(move |(x, y)| Circle::new((x, y), 4, colour.filled()));
        }
    }
    match &figure.centres {
        CentreMarks::Points(points) => {
            chart
                .draw_series(
                    points
                        .iter()
                        .enumerate()
                        .map(|(j, p)| Circle::new((p[0], p[1]), 7, cluster_colour(j).filled())),
                )
                .map_err(draw_error)?;
            let drawn = chart
                .draw_series(
                    points
                        .iter()
                        .map(|p| Cross::new((p[0], p[1]), 7, BLACK.stroke_width(2))),
                )
                .map_err(draw_error)?;
            drawn
                .label("centre")
                .legend(|(x, y)| Cross::new((x, y), 5, BLACK.stroke_width(2)));
        }
        CentreMarks::VerticalLines(xs) => {
            for (j, &x) in xs.iter().enumerate() {
                chart
                    .draw_series(LineSeries::new(
                        [(x, y_range.start), (x, y_range.end)],
                        cluster_colour(j).stroke_width(2),
                    ))
                    .map_err(draw_error)?;
            }
        }
    }
    if figure.n_clusters <= LEGEND_LIMIT {
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(())
}

/// The running average loss, in the panel beside the points.
fn draw_loss(area: &DrawingArea<SVGBackend<'_>, Shift>, loss: &LossCurve) -> anyhow::Result<()> {
    let frame = PanelFrame {
        caption_size: 20,
        margin: 12,
        x_label_area: 45,
        y_label_area: 80,
    };
    let series = RoundSeries {
        caption: "average loss per round",
        y_label: "cumulative loss / scored rounds",
        points: &loss.points,
        colour: cluster_colour(0),
        count: false,
    };
    draw_over_rounds(area, frame, &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_well_formed_svg() {
        let figure = ClusterFigure {
            title: "k-means".into(),
            x_label: "x <&> y".into(),
            y_label: "y".into(),
            points: vec![[0.0, 0.0], [1.0, 1.0], [10.0, 10.0]],
            labels: vec![0, 0, 1],
            n_clusters: 2,
            centres: CentreMarks::Points(vec![[0.5, 0.5], [10.0, 10.0]]),
            loss: Some(LossCurve {
                points: vec![(2.0, 1.0), (3.0, 0.5)],
            }),
        };
        let svg = draw_clusters(&figure).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("cluster 1"));
        let one_d = ClusterFigure {
            centres: CentreMarks::VerticalLines(vec![0.5]),
            loss: None,
            n_clusters: 1,
            labels: vec![0, 0, 0],
            ..figure
        };
        assert!(draw_clusters(&one_d).unwrap().contains("</svg>"));
    }
}
