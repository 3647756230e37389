//! What the clustering commands (k-means, PACBO) do alike: read every row for a batch fit,
//! write the label of every row, the table of centres in the report, the figure of the
//! points coloured by cluster, and the two axes it is drawn on.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use ndarray::ArrayView2;
use pacstream::geometry::squared_distance;
use pacstream::kmeans::Centres;
use serde::Serialize;

use super::{human_number, human_seconds, no_good_rows, note_skipped, write_summary};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::columns::parse_column_list;
use crate::io::reader::{InputProgress, RowReader};
use crate::io::records::RecordSink;
use crate::options::{RecordOutput, RunOptions};
use crate::plot::{CentreMarks, ClusterFigure, LossCurve, RowSample, draw_clusters};
use crate::ui::{Notes, Progress};

/// Every good row of the input, read into memory for a batch fit.
#[derive(Debug)]
pub struct BatchRows {
    /// The clustered values, row after row.
    pub values: Vec<f64>,
    /// The data row number of every row (1-based; skipped bad rows are counted).
    pub numbers: Vec<u64>,
    /// The first extra column of every row (weights or labels), when there is one.
    pub extras: Vec<f64>,
    /// The number of columns clustered.
    pub dim: usize,
    /// What was read.
    pub input: InputProgress,
}

/// One `--output` record of a batch fit.
#[derive(Serialize)]
struct LabelRecord {
    /// The data row number in the input (1-based; skipped bad rows are counted).
    row: u64,
    /// The index of the row's centre in the summary's `centres`.
    label: usize,
    /// The squared distance from the row to its centre.
    squared_distance: f64,
}

impl BatchRows {
    /// Reads the rest of the input (noting the bad rows skipped); an input without a good
    /// row is an error.
    pub fn read(reader: &mut RowReader, notes: Notes) -> anyhow::Result<Self> {
        let dim = reader.layout().features.len();
        let mut values = Vec::new();
        let mut numbers = Vec::new();
        let mut extras = Vec::new();
        let mut progress = Progress::new(notes, reader.bytes().1);
        while let Some(row) = reader.next_row()? {
            values.extend_from_slice(row.values);
            numbers.push(row.number);
            if let Some(&extra) = row.extras.first() {
                extras.push(extra);
            }
            if numbers.len() % 4096 == 0 {
                progress.update(numbers.len() as u64, reader.bytes().0);
            }
        }
        progress.finish();
        let input = reader.progress();
        note_skipped(notes, &input, reader.source_name());
        if numbers.is_empty() {
            return Err(no_good_rows(reader.source_name(), &input));
        }
        Ok(Self {
            values,
            numbers,
            extras,
            dim,
            input,
        })
    }

    /// The number of rows (never zero: an input without a good row is refused).
    pub fn len(&self) -> usize {
        self.numbers.len()
    }

    /// Whether there is no row (never, once read).
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// The rows as a matrix.
    pub fn view(&self) -> anyhow::Result<ArrayView2<'_, f64>> {
        ArrayView2::from_shape((self.len(), self.dim), &self.values)
            .context("invariant: every row has the number of columns")
    }

    /// What a batch fit writes once its report is printed, in order: the label of every
    /// row and its squared distance to its centre (`--output`), the summary, and the
    /// figure of the rows coloured by label with the centres (titled by `title`).
    #[allow(
        clippy::too_many_arguments,
        reason = "one fit's outputs, every part of them"
    )]
    pub fn write_outputs(
        &self,
        options: &RunOptions,
        reader: &RowReader,
        axes: Axes,
        centres: &Centres,
        labels: &[usize],
        summary: &impl Serialize,
        title: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        self.write_labels(options.output.as_ref(), centres, labels)?;
        write_summary(options, summary)?;
        if let Some(path) = &options.plot {
            self.draw(
                path,
                options.plot_points,
                reader,
                axes,
                title(),
                labels,
                centres,
            )?;
        }
        Ok(())
    }

    fn write_labels(
        &self,
        output: Option<&RecordOutput>,
        centres: &Centres,
        labels: &[usize],
    ) -> anyhow::Result<()> {
        let mut sink = RecordSink::create(output)?;
        if sink.is_enabled() {
            for (index, point) in self.values.chunks_exact(self.dim).enumerate() {
                let label = labels[index];
                sink.write(&LabelRecord {
                    row: self.numbers[index],
                    label,
                    squared_distance: squared_distance(point, centres.centre(label)),
                })?;
            }
        }
        sink.finish()
    }

    /// Draws at most `plot_points` rows (every n-th), coloured by label, with the centres.
    #[allow(clippy::too_many_arguments, reason = "one figure, every part of it")]
    fn draw(
        &self,
        path: &Path,
        plot_points: usize,
        reader: &RowReader,
        axes: Axes,
        title: String,
        labels: &[usize],
        centres: &Centres,
    ) -> anyhow::Result<()> {
        let n = self.len();
        let dim = self.dim;
        let stride = n.div_ceil(plot_points.max(1));
        let sample: Vec<usize> = (0..n).step_by(stride).collect();
        let figure = cluster_figure(
            reader,
            axes,
            title,
            sample
                .iter()
                .map(|&i| (&self.values[i * dim..(i + 1) * dim], self.numbers[i])),
            sample.iter().map(|&i| labels[i]),
            centres,
            None,
        );
        write_atomically(path, draw_clusters(&figure)?.as_bytes())
    }
}

/// The number of rows of each of the `k` clusters.
pub fn cluster_sizes(labels: &[usize], k: usize) -> Vec<u64> {
    let mut sizes = vec![0u64; k];
    for &label in labels {
        sizes[label] += 1;
    }
    sizes
}

/// `--axes`, for the commands that draw points.
#[derive(clap::Args, Debug, Clone)]
pub struct AxesArg {
    /// The two columns drawn by --plot (default: the first two columns learned).
    #[arg(
        long,
        value_name = "COL,COL",
        requires = "plot",
        help_heading = "Output"
    )]
    pub axes: Option<String>,
}

impl AxesArg {
    /// The axes chosen, resolved against the input's columns ([`Axes::choose`]).
    pub fn choose(&self, reader: &RowReader) -> anyhow::Result<Axes> {
        Axes::choose(self.axes.as_deref(), reader)
    }
}

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

/// The end of a batch fit's report: the time of the fit, then the centres with the size of
/// each cluster.
pub fn write_batch_report_end(
    out: &mut dyn Write,
    fit_seconds: f64,
    labels: &[String],
    centres: &Centres,
    sizes: &[u64],
) -> anyhow::Result<()> {
    writeln!(
        out,
        "  fit time               {}",
        human_seconds(fit_seconds)
    )?;
    write_centres_table(out, labels, centres, "size", |j| sizes[j].to_string())
}

/// Draws into `path` the figure of a stream's sampled rows (`sample`, of the input's
/// columns), each coloured by its nearest final centre; `title` is followed by the sample's
/// note, and `loss` is the running loss drawn beside, if any.
pub fn draw_sample_clusters(
    path: &Path,
    reader: &RowReader,
    axes: Axes,
    title: &str,
    sample: &RowSample,
    centres: &Centres,
    loss: Option<LossCurve>,
) -> anyhow::Result<()> {
    let dim = reader.layout().features.len();
    let points: Vec<&[f64]> = sample.points().chunks_exact(dim).collect();
    let numbers = sample.numbers().iter().copied();
    let figure = cluster_figure(
        reader,
        axes,
        format!("{title}{}", sample.sampled_note()),
        points.iter().copied().zip(numbers),
        points.iter().map(|p| centres.nearest(p).0),
        centres,
        loss,
    );
    write_atomically(path, draw_clusters(&figure)?.as_bytes())
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
