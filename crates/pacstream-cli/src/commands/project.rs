//! `pacstream project --curve SUMMARY.json INPUT`: projects rows on a fitted principal curve.
//!
//! The curve is read from the `vertices` of a `pacstream curve --summary` file. Every row of
//! the input streams through, in constant memory, to one record: the row number, the
//! projection index (arc length from the first vertex), the squared distance to the curve,
//! the segment or vertex the nearest point lies on, and that point's coordinates.

use std::path::PathBuf;

use clap::Args;
use pacstream::curves::PrincipalCurve;
use pacstream::curves::limits::{MAX_DIM, MAX_SEGMENTS};
use pacstream::geometry::Part;
use serde::Serialize;

use super::{InputSummary, note_skipped, write_summary};
use crate::failure::{bad_input, cannot_open};
use crate::io::columns::ColumnSelector;
use crate::io::reader::RowReader;
use crate::io::records::RecordSink;
use crate::options::{CommonArgs, OtherFiles, OutputTarget, RecordFormat, RecordOutput};
use crate::ui::{Notes, Progress};

/// Arguments of `pacstream project`.
#[derive(Args, Debug, Clone)]
#[command(
    about = "Project rows on a principal curve fitted by `pacstream curve`",
    long_about = "Project rows on a principal curve: for each row, the projection index (the \
        arc length from the first vertex to the nearest point of the curve), the squared \
        distance, the segment or vertex it falls on, and the nearest point.\n\n\
        The curve is the `vertices` field of a `pacstream curve --summary` file, which also \
        records the columns it was fitted on: they are found in the input by name (by index \
        for a curve fitted on a file without a header); --columns, if given, must pick the \
        same columns in the same order. Records go to --output, or to standard output as \
        JSON lines.",
    after_help = "Example:\n  \
        pacstream curve --columns long,lat data/quakes.csv --summary curve.json\n  \
        pacstream project --curve curve.json data/quakes.csv -o projected.csv"
)]
pub struct ProjectArgs {
    /// The summary file of a `pacstream curve` run.
    #[arg(long, value_name = "SUMMARY.json")]
    pub curve: PathBuf,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// One record per input row.
struct ProjectionRecord<'a> {
    /// The 1-based data row number in the input (skipped bad rows are counted).
    row: u64,
    /// The projection index: the arc length from the first vertex to the nearest point.
    arc_length: f64,
    /// The squared distance from the row to the curve.
    squared_distance: f64,
    /// `segment` or `vertex`.
    part: &'static str,
    /// The index of that segment (0-based, from the first vertex) or vertex.
    index: usize,
    /// The nearest point of the curve, one field per column (`x1`, `x2`, ...).
    point: &'a [f64],
    names: &'a [&'static str],
}

impl Serialize for ProjectionRecord<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // A flat struct, so that CSV output gets one column per coordinate.
        let mut record = serializer.serialize_struct("ProjectionRecord", 5 + self.point.len())?;
        record.serialize_field("row", &self.row)?;
        record.serialize_field("arc_length", &self.arc_length)?;
        record.serialize_field("squared_distance", &self.squared_distance)?;
        record.serialize_field("part", self.part)?;
        record.serialize_field("index", &self.index)?;
        for (name, value) in self.names.iter().zip(self.point) {
            record.serialize_field(name, value)?;
        }
        record.end()
    }
}

/// The field names `x1`..`xd` of the nearest point. Serde names struct fields with static
/// strings: these few bytes are allocated once per run and never freed.
fn coordinate_names(dim: usize) -> Vec<&'static str> {
    (1..=dim)
        .map(|j| &*Box::leak(format!("x{j}").into_boxed_str()))
        .collect()
}

#[derive(Serialize)]
struct ProjectSummary<'a> {
    command: &'static str,
    input: InputSummary<'a>,
    curve: String,
    segments: usize,
    length: f64,
    /// The mean squared distance from the rows to the curve.
    mean_squared_distance: f64,
}

/// Runs `pacstream project`.
pub fn run(args: &ProjectArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate_with(&OtherFiles {
        inputs: vec![("--curve", args.curve.clone())],
        outputs: Vec::new(),
    })?;
    options.input.max_magnitude = Some(pacstream::data::MAX_COORDINATE);
    if options.checkpoints.save.is_some() || options.checkpoints.resume.is_some() {
        return Err(bad_input(
            "--checkpoint and --resume do not apply to `project`: it learns nothing",
        ));
    }
    if options.plot.is_some() {
        return Err(bad_input(
            "--plot does not apply to `project`: draw the curve with `pacstream curve --plot`",
        ));
    }
    let (curve, fitted_on) = read_curve(&args.curve)?;
    let notes = Notes::new(options.quiet);
    // Without --columns, the columns the curve was fitted on, by name (or by index, for a
    // curve fitted on a file without a header).
    let given = options.input.columns.is_some();
    if !given {
        options.input.columns = Some(fitted_on.iter().map(|name| selector_of(name)).collect());
    }
    let mut reader = RowReader::open(&options.input, &[], notes).map_err(|error| {
        if given {
            error
        } else {
            bad_input(format!(
                "the curve in '{}' was fitted on the columns {}, which '{}' does not have \
                 ({error:#}); pick the columns that hold them with --columns, or name them so \
                 in the header",
                args.curve.display(),
                fitted_on.join(", "),
                options.input.source.display_name()
            ))
        }
    })?;
    let labels = &reader.layout().feature_labels;
    if *labels != fitted_on {
        return Err(bad_input(format!(
            "the curve in '{}' was fitted on the columns {} (in this order), and --columns \
             picks {}: the coordinates would be mixed up; pick the same columns in the same \
             order",
            args.curve.display(),
            fitted_on.join(", "),
            labels.join(", ")
        )));
    }
    let dim = reader.layout().features.len();
    if dim != curve.dim() {
        return Err(bad_input(format!(
            "'{}' is not a valid curve summary: its vertices have {} coordinates, its columns {}",
            args.curve.display(),
            curve.dim(),
            fitted_on.len()
        )));
    }
    let output = options.output.clone().unwrap_or(RecordOutput {
        target: OutputTarget::Stdout,
        format: RecordFormat::Jsonl,
    });
    let mut sink = RecordSink::create(Some(&output))?;
    let mut progress = Progress::new(notes, reader.bytes().1);
    let names = coordinate_names(dim);
    let (mut total, mut rows) = (0.0, 0u64);
    while let Some(row) = reader.next_row()? {
        let projection = curve.polyline().project(row.values);
        let (part, index) = match projection.part {
            Part::Segment(i) => ("segment", i),
            Part::Vertex(i) => ("vertex", i),
        };
        total += projection.squared_distance;
        rows += 1;
        sink.write(&ProjectionRecord {
            row: row.number,
            arc_length: projection.arc_length,
            squared_distance: projection.squared_distance,
            part,
            index,
            point: &projection.point,
            names: &names,
        })?;
        if rows % 4096 == 0 {
            progress.update(rows, reader.bytes().0);
        }
    }
    sink.finish()?;
    progress.finish();
    let input = reader.progress();
    note_skipped(notes, &input, reader.source_name());
    let summary = ProjectSummary {
        command: "project",
        input: InputSummary::new(&reader, &input),
        curve: args.curve.display().to_string(),
        segments: curve.n_segments(),
        length: curve.length(),
        mean_squared_distance: total / rows.max(1) as f64,
    };
    write_summary(&options, &summary)
}

/// The largest curve summary read, in bytes (1 GiB): a summary holds the projection of
/// every stored row, about 70 bytes each.
const MAX_SUMMARY_BYTES: u64 = 1 << 30;

/// What `project` reads of a `pacstream curve` summary (the rest, such as the projections of
/// the stored rows, is skipped as it streams past). Its arrays are read up to the sizes a
/// curve can have, so that a wrong file cannot fill memory.
#[derive(serde::Deserialize)]
struct CurveSummary {
    vertices: Bounded<Bounded<f64, { MAX_DIM }>, { MAX_SEGMENTS + 1 }>,
    input: SummaryInput,
}

#[derive(serde::Deserialize)]
struct SummaryInput {
    columns: Bounded<String, { MAX_DIM }>,
}

/// An array of at most `N` items.
struct Bounded<T, const N: usize>(Vec<T>);

impl<'de, T: serde::Deserialize<'de>, const N: usize> serde::Deserialize<'de> for Bounded<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Items<T, N> {
            type Value = Bounded<T, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "an array of at most {N} items")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    if items.len() == N {
                        return Err(serde::de::Error::custom(format!(
                            "an array of more than {N} items, more than a curve has"
                        )));
                    }
                    items.push(item);
                }
                Ok(Bounded(items))
            }
        }
        deserializer.deserialize_seq(Items::<T, N>(std::marker::PhantomData))
    }
}

/// A column of the fitted curve, as a selector: its name, or `column N` of a file without a
/// header as index N.
fn selector_of(name: &str) -> ColumnSelector {
    match name
        .strip_prefix("column ")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(index) if index >= 1 => ColumnSelector::Index(index),
        _ => ColumnSelector::Name(name.to_string()),
    }
}

/// The curve of a `pacstream curve` summary (its `vertices`) and the columns it was fitted
/// on (its `input.columns`). Read as a stream, up to [`MAX_SUMMARY_BYTES`].
fn read_curve(path: &std::path::Path) -> anyhow::Result<(PrincipalCurve, Vec<String>)> {
    let file = std::fs::File::open(path).map_err(|e| cannot_open(path, &e))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(bad_input(format!(
            "cannot open '{}': Is a directory",
            path.display()
        )));
    }
    let invalid = |why: &str| {
        bad_input(format!(
            "'{}' is not the summary of `pacstream curve`: {why}",
            path.display()
        ))
    };
    let reader = std::io::BufReader::new(LimitedRead {
        inner: file,
        left: MAX_SUMMARY_BYTES,
    });
    let summary: CurveSummary =
        serde_json::from_reader(reader).map_err(|e| invalid(&e.to_string()))?;
    let vertices: Vec<Vec<f64>> = summary.vertices.0.into_iter().map(|v| v.0).collect();
    let columns = summary.input.columns.0;
    let dim = vertices.first().map_or(0, Vec::len);
    if vertices.iter().any(|v| v.len() != dim) {
        return Err(invalid("its vertices have different dimensions"));
    }
    if columns.len() != dim {
        return Err(invalid(&format!(
            "its vertices have {dim} coordinates, but it names {} columns",
            columns.len()
        )));
    }
    let vertices = vertices.into_iter().flatten().collect();
    let curve =
        PrincipalCurve::from_vertices(vertices, dim).map_err(|e| invalid(&e.to_string()))?;
    Ok((curve, columns))
}

/// A reader that fails once more than `left` bytes have been read.
struct LimitedRead<R> {
    inner: R,
    left: u64,
}

impl<R: std::io::Read> std::io::Read for LimitedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.left = self.left.checked_sub(read as u64).ok_or_else(|| {
            std::io::Error::other(format!(
                "it is larger than {} MiB, the limit of a curve summary",
                MAX_SUMMARY_BYTES >> 20
            ))
        })?;
        Ok(read)
    }
}
