//! What the clustering commands (k-means, PACBO) write alike: the table of centres in the
//! report, the figure of the points coloured by cluster, and the two axes it is drawn on.

use std::io::Write;

use pacstream::kmeans::Centres;

use super::human_number;
use crate::failure::bad_input;
use crate::io::columns::parse_column_list;
use crate::io::reader::RowReader;
use crate::plot::{CentreMarks, ClusterFigure, LossCurve};

/// The axes of a figure: the positions, among the columns learned, of the x and y columns;
/// no y for one-dimensional data (the row number is drawn instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axes {
    /// The column drawn across.
    pub x: usize,
    /// The column drawn up, if any.
    pub y: Option<usize>,
}

impl Axes {
    /// `--axes COL,COL` resolved against the input's columns; by default the first two
    /// columns learned.
    pub fn choose(axes: Option<&str>, reader: &RowReader) -> anyhow::Result<Self> {
        let features = &reader.layout().features;
        let Some(text) = axes else {
            return Ok(Self {
                x: 0,
                y: (features.len() > 1).then_some(1),
            });
        };
        let names = reader.column_names();
        let selectors = parse_column_list(text).map_err(|r| bad_input(format!("--axes: {r}")))?;
        let indices = names
            .resolve_list(&selectors)
            .map_err(|r| bad_input(format!("--axes: {r}")))?;
        if indices.len() != 2 {
            return Err(bad_input(format!(
                "--axes: expected two columns (COL,COL), got {}",
                indices.len()
            )));
        }
        let mut positions = Vec::with_capacity(2);
        for index in indices {
            let position = features.iter().position(|&f| f == index).ok_or_else(|| {
                bad_input(format!(
                    "--axes: column {} is not one of the columns learned",
                    names.describe(index)
                ))
            })?;
            positions.push(position);
        }
        Ok(Self {
            x: positions[0],
            y: Some(positions[1]),
        })
    }

    /// Where a point (with its data row number) is drawn.
    pub fn place(self, point: &[f64], number: u64) -> [f64; 2] {
        match self.y {
            Some(y) => [point[self.x], point[y]],
            None => [point[self.x], number as f64],
        }
    }

    /// The axis labels, from the labels of the columns learned.
    pub fn labels(self, feature_labels: &[String]) -> (String, String) {
        (
            feature_labels[self.x].clone(),
            match self.y {
                Some(y) => feature_labels[y].clone(),
                None => "row".to_string(),
            },
        )
    }
}

/// Writes the table of centres: each centre's count (`count_name`) and coordinates.
pub fn write_centres_table(
    out: &mut dyn Write,
    labels: &[String],
    centres: &Centres,
    count_name: &str,
    count: impl Fn(usize) -> String,
) -> anyhow::Result<()> {
    write!(out, "  {:<8}{:>10}", "centre", count_name)?;
    for label in labels {
        write!(out, "  {label:>12}")?;
    }
    writeln!(out)?;
    for (j, centre) in centres.iter().enumerate() {
        write!(out, "  {j:<8}{:>10}", count(j))?;
        for value in centre {
            write!(out, "  {:>12}", human_number(*value))?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// Builds the cluster figure from sampled points (the clustered values and the data row
/// number) and their labels.
pub fn cluster_figure<'a>(
    reader: &RowReader,
    axes: Axes,
    title: String,
    points: impl Iterator<Item = (&'a [f64], u64)>,
    labels: impl Iterator<Item = usize>,
    centres: &Centres,
    loss: Option<LossCurve>,
) -> ClusterFigure {
    let (x_label, y_label) = axes.labels(&reader.layout().feature_labels);
    let x = axes.x;
    ClusterFigure {
        title,
        x_label,
        y_label,
        points: points.map(|(p, number)| axes.place(p, number)).collect(),
        labels: labels.collect(),
        n_clusters: centres.n_centres(),
        centres: match axes.y {
            Some(y) => CentreMarks::Points(centres.iter().map(|c| [c[x], c[y]]).collect()),
            None => CentreMarks::VerticalLines(centres.iter().map(|c| c[x]).collect()),
        },
        loss,
    }
}
