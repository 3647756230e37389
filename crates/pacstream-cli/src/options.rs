//! The options every command shares, flattened into each subcommand, and their validation
//! into a [`RunOptions`].
//!
//! clap checks the syntax (and exits with code 2 on a usage error); [`CommonArgs::validate`]
//! checks what clap cannot (an output format that fits the file name, a plot extension), so
//! that a run with bad options fails before it reads any input.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::failure::bad_input;
use crate::io::columns::{ColumnSelector, parse_column_list};
use crate::io::files::{self, InputFile, OutputFile, Source};

/// Options shared by every learning command that reads points: `--columns`, then those of
/// [`CommonArgsWithoutColumns`] (input, outputs, figure, checkpoints).
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    #[command(flatten)]
    pub columns: ColumnsArgs,

    #[command(flatten)]
    pub learning: CommonArgsWithoutColumns,
}

/// The shared options of a command that picks its columns with options of its own
/// (`experts`: `--outcome`, `--experts`): no `--columns`.
#[derive(Args, Debug, Clone)]
pub struct CommonArgsWithoutColumns {
    #[command(flatten)]
    pub input: InputFileArg,

    #[command(flatten)]
    pub input_options: InputArgs,

    #[command(flatten)]
    pub output_options: OutputArgs,

    #[command(flatten)]
    pub plot_options: PlotArgs,

    #[command(flatten)]
    pub checkpoint_options: CheckpointArgs,
}

/// The shared options of a command that learns nothing (`project`): no figure, no
/// checkpoints.
#[derive(Args, Debug, Clone)]
pub struct CommonArgsWithoutLearning {
    #[command(flatten)]
    pub input: InputFileArg,

    #[command(flatten)]
    pub columns: ColumnsArgs,

    #[command(flatten)]
    pub input_options: InputArgs,

    #[command(flatten)]
    pub output_options: OutputArgs,
}

/// The input file.
#[derive(Args, Debug, Clone)]
pub struct InputFileArg {
    /// The data: a CSV or TSV file, or `-` for standard input. Read as a stream. The first
    /// row is a header when one of its fields is not a number.
    #[arg(value_name = "INPUT")]
    pub path: String,
}

/// `--columns`.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Input")]
pub struct ColumnsArgs {
    /// The columns to use, by name or 1-based index, comma-separated; `2-4` is a range of
    /// indices (a bare integer is always an index). Default: every column whose first value
    /// is a number (the others are listed on stderr).
    #[arg(long, value_name = "LIST")]
    pub columns: Option<String>,
}

/// How the input is read.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// What to do with a row that is not numbers, has the wrong number of fields, or holds
    /// NaN or infinity: stop with an error naming the line and column, or skip it and count
    /// it.
    #[arg(long, value_enum, default_value_t = BadRowPolicy::Error, value_name = "POLICY")]
    pub on_bad_row: BadRowPolicy,

    /// Whether the first row is a header (`auto`: when one of its fields is not a number).
    #[arg(long, value_enum, default_value_t = HeaderMode::Auto, value_name = "MODE")]
    pub header: HeaderMode,

    /// The field delimiter: one ASCII character, or `tab`. Default: tab for `.tsv`/`.tab`
    /// files, otherwise guessed from the first line (`,` `;` `|` or tab).
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub delimiter: Option<u8>,
}

/// What the run writes.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// The seed of every random choice; the same seed and input give the same results.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,

    /// Write one record per input row (batch) or per round (online) to FILE (`-`: stdout),
    /// as they come. k-means: `row,label,squared_distance` (batch),
    /// `t,label,loss,cumulative_loss` (online); experts:
    /// `t,prediction,loss,realised_loss,chosen,cumulative_loss,best_expert,best_expert_loss,
    /// regret,regret_bound`; paco: `t,k,loss,cumulative_loss,label,acceptance_rate` and
    /// the true label with `--labels` (online), `row,label,squared_distance` (batch); curve:
    /// `t,loss,cumulative_loss,segments,phase,candidates,changed`; project:
    /// `row,arc_length,squared_distance,part,index,x1,x2,...`.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<String>,

    /// Format of `--output` (default: `csv` for `.csv`, tab-separated for `.tsv`, otherwise
    /// JSON lines).
    #[arg(long, value_enum, value_name = "FORMAT", requires = "output")]
    pub format: Option<FormatArg>,

    /// Write the final model and figures as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub summary: Option<String>,

    /// No notes, report or progress bar; errors are still printed.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The figure.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Output")]
pub struct PlotArgs {
    /// Draw a figure to FILE (SVG). k-means: the points coloured by cluster with the centres
    /// marked; online runs add the running average loss. experts: the weights over time,
    /// the regret against its bound and the running average losses. paco: the final
    /// clustering (`--plot-k` and `--plot-loss` draw the other two). curve: the points with
    /// the final curve (earlier curves faded), the number of segments over time and the
    /// cumulative regret. PNG is not supported.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// The largest number of points drawn by `--plot` (1 to 1,000,000): batch mode draws
    /// every m-th point, online mode keeps a uniform random sample (reservoir) of the stream,
    /// so memory stays constant.
    #[arg(long, default_value_t = 5000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub plot_points: u64,
}

/// Checkpoints of online runs.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Checkpoints (online mode)")]
pub struct CheckpointArgs {
    /// Save the run's state to FILE every `--checkpoint-every` rows and at the end. The file
    /// is replaced atomically: a crash leaves the old or the new checkpoint, never a torn one.
    /// A symlink's target is replaced; a device or FIFO is refused.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,

    /// Rows of input between checkpoints (1 to 10^12).
    #[arg(long, value_name = "N", requires = "checkpoint", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
    pub checkpoint_every: u64,

    /// Continue the run saved in FILE: the same command, settings and input are required.
    /// The checkpoint's checksum, and that `--output` still holds what the checkpoint says
    /// the run wrote, are checked before anything is written; then the rows already learned
    /// are skipped and `--output` is cut back to its length at the checkpoint and appended
    /// to, so the result equals an uninterrupted run. With
    /// `--output -` only the records after the checkpoint are written.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

/// What to do with a bad row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BadRowPolicy {
    /// Stop with an error (exit code 2).
    Error,
    /// Skip the row and count it.
    Skip,
}

/// Whether the first row is a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HeaderMode {
    /// A header when one of its fields is not a number.
    Auto,
    /// Always a header.
    Yes,
    /// Never a header: the first row is data.
    No,
}

/// `--format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values with a header row (empty field for an undefined value).
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
}

/// The input: a file or standard input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSource {
    /// Standard input (`-`).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl InputSource {
    /// `-` is standard input; anything else a path.
    pub fn parse(text: &str) -> Self {
        if text == "-" {
            InputSource::Stdin
        } else {
            InputSource::File(PathBuf::from(text))
        }
    }

    /// The name used in messages: the path as given, or `<stdin>`.
    pub fn display_name(&self) -> String {
        match self {
            InputSource::Stdin => "<stdin>".to_string(),
            InputSource::File(path) => path.display().to_string(),
        }
    }
}

/// Where a data file goes: a path or standard output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    /// Standard output (`-`).
    Stdout,
    /// A file.
    File(PathBuf),
}

impl OutputTarget {
    fn parse(text: &str) -> Self {
        if text == "-" {
            OutputTarget::Stdout
        } else {
            OutputTarget::File(PathBuf::from(text))
        }
    }
}

/// The format of per-round records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordFormat {
    /// JSON lines.
    Jsonl,
    /// Delimited text with a header row; the delimiter is `,` or tab.
    Delimited(u8),
}

impl RecordFormat {
    /// The format's name, as `--format` spells it.
    pub fn name(self) -> &'static str {
        match self {
            RecordFormat::Jsonl => "jsonl",
            RecordFormat::Delimited(b'\t') => "tsv",
            RecordFormat::Delimited(_) => "csv",
        }
    }
}

/// Validated input options.
#[derive(Clone, Debug)]
pub struct InputOptions {
    /// Where the data comes from.
    pub source: InputSource,
    /// `--columns`, parsed (resolved against the header when the input is opened).
    pub columns: Option<Vec<ColumnSelector>>,
    /// `--on-bad-row`.
    pub on_bad_row: BadRowPolicy,
    /// `--header`.
    pub header: HeaderMode,
    /// `--delimiter`, if given.
    pub delimiter: Option<u8>,
    /// The largest absolute value a data column may hold (the point learners refuse
    /// coordinates whose squared distances could overflow); `None`: any finite value.
    pub max_magnitude: Option<f64>,
    /// Whether an empty feature field is a missing value (read as NaN, for the command to
    /// interpret: a sleeping expert) rather than a bad row.
    pub empty_is_missing: bool,
}

/// Validated `--output` options.
#[derive(Clone, Debug)]
pub struct RecordOutput {
    /// Where the records go.
    pub target: OutputTarget,
    /// Their format.
    pub format: RecordFormat,
}

/// Validated `--checkpoint`/`--resume` options.
#[derive(Clone, Debug, Default)]
pub struct CheckpointOptions {
    /// Where to save checkpoints, and every how many input rows.
    pub save: Option<(PathBuf, u64)>,
    /// The checkpoint to resume from.
    pub resume: Option<PathBuf>,
}

/// Every shared option, validated.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// How to read the input.
    pub input: InputOptions,
    /// `--seed`.
    pub seed: u64,
    /// `--output` and `--format`.
    pub output: Option<RecordOutput>,
    /// `--summary`.
    pub summary: Option<OutputTarget>,
    /// `--plot` (an SVG path).
    pub plot: Option<PathBuf>,
    /// `--plot-points`.
    pub plot_points: usize,
    /// `--quiet`.
    pub quiet: bool,
    /// Checkpoints.
    pub checkpoints: CheckpointOptions,
}

impl RunOptions {
    /// Whether some output (`--output` or `--summary`) goes to standard output, in which
    /// case the human-readable report goes to stderr instead.
    pub fn stdout_carries_data(&self) -> bool {
        self.output
            .as_ref()
            .is_some_and(|o| o.target == OutputTarget::Stdout)
            || self.summary == Some(OutputTarget::Stdout)
    }
}

/// The shared options a command was given, whichever of them it takes.
#[derive(Clone, Copy, Debug)]
struct Parts<'a> {
    input: &'a str,
    columns: Option<&'a ColumnsArgs>,
    input_options: &'a InputArgs,
    output_options: &'a OutputArgs,
    plot_options: Option<&'a PlotArgs>,
    checkpoint_options: Option<&'a CheckpointArgs>,
}

impl CommonArgs {
    /// Checks the shared options and returns them validated.
    pub fn validate(&self) -> anyhow::Result<RunOptions> {
        self.validate_with(&OtherFiles::default())
    }

    /// [`CommonArgs::validate`] for a command that also reads or writes `other` files: no
    /// output may be an input, or another output.
    pub fn validate_with(&self, other: &OtherFiles) -> anyhow::Result<RunOptions> {
        Parts {
            columns: Some(&self.columns),
            ..self.learning.parts()
        }
        .validate(other)
    }
}

impl CommonArgsWithoutColumns {
    /// Checks the shared options and returns them validated.
    pub fn validate(&self) -> anyhow::Result<RunOptions> {
        self.validate_with(&OtherFiles::default())
    }

    /// [`CommonArgsWithoutColumns::validate`] for a command that also writes `other` files.
    pub fn validate_with(&self, other: &OtherFiles) -> anyhow::Result<RunOptions> {
        self.parts().validate(other)
    }

    fn parts(&self) -> Parts<'_> {
        Parts {
            input: &self.input.path,
            columns: None,
            input_options: &self.input_options,
            output_options: &self.output_options,
            plot_options: Some(&self.plot_options),
            checkpoint_options: Some(&self.checkpoint_options),
        }
    }
}

impl CommonArgsWithoutLearning {
    /// Checks the shared options, with the `other` files of the command, and returns them
    /// validated.
    pub fn validate_with(&self, other: &OtherFiles) -> anyhow::Result<RunOptions> {
        Parts {
            input: &self.input.path,
            columns: Some(&self.columns),
            input_options: &self.input_options,
            output_options: &self.output_options,
            plot_options: None,
            checkpoint_options: None,
        }
        .validate(other)
    }
}

impl Parts<'_> {
    fn validate(self, other: &OtherFiles) -> anyhow::Result<RunOptions> {
        let input = self.input_options;
        let columns = match self.columns.and_then(|c| c.columns.as_ref()) {
            Some(text) => Some(
                parse_column_list(text)
                    .map_err(|reason| bad_input(format!("--columns: {reason}")))?,
            ),
            None => None,
        };
        let out = self.output_options;
        let output = match &out.output {
            Some(text) => {
                let target = OutputTarget::parse(text);
                let format = match out.format {
                    Some(FormatArg::Jsonl) => RecordFormat::Jsonl,
                    Some(FormatArg::Csv) => RecordFormat::Delimited(b','),
                    Some(FormatArg::Tsv) => RecordFormat::Delimited(b'\t'),
                    None => format_from_extension(Path::new(text)),
                };
                Some(RecordOutput { target, format })
            }
            None => None,
        };
        if let (Some(output), Some(summary)) = (&out.output, &out.summary)
            && output == "-"
            && summary == "-"
        {
            return Err(bad_input(
                "--output and --summary cannot both go to standard output",
            ));
        }
        let plot = self.plot_options.and_then(|p| p.plot.as_ref());
        if let Some(plot) = plot {
            check_plot_path("--plot", plot)?;
        }
        check_distinct_files(self, other)?;
        let checkpoints = match self.checkpoint_options {
            Some(checkpoint) => CheckpointOptions {
                save: checkpoint
                    .checkpoint
                    .clone()
                    .map(|path| (path, checkpoint.checkpoint_every)),
                resume: checkpoint.resume.clone(),
            },
            None => CheckpointOptions::default(),
        };
        let plot_points = self.plot_options.map_or(0, |p| p.plot_points);
        Ok(RunOptions {
            input: InputOptions {
                source: InputSource::parse(self.input),
                columns,
                on_bad_row: input.on_bad_row,
                header: input.header,
                delimiter: input.delimiter,
                max_magnitude: None,
                empty_is_missing: false,
            },
            seed: out.seed,
            output,
            summary: out.summary.as_deref().map(OutputTarget::parse),
            plot: plot.cloned(),
            plot_points: usize::try_from(plot_points).unwrap_or(usize::MAX),
            quiet: out.quiet,
            checkpoints,
        })
    }
}

/// The files a command reads and writes besides the shared ones (`--curve`; `--plot-k`),
/// for the one same-file check of [`CommonArgs::validate_with`].
#[derive(Clone, Debug, Default)]
pub struct OtherFiles {
    /// Files read, by option.
    pub inputs: Vec<(&'static str, PathBuf)>,
    /// Files written, by option.
    pub outputs: Vec<(&'static str, PathBuf)>,
}

/// Refuses runs that would write one file twice, or overwrite one of their inputs (`-o
/// data.csv data.csv` would truncate the data before it is read; so would a hard link to
/// it, or `- -o data.csv < data.csv`). Files are compared by device and inode
/// ([`files::check_distinct`]).
fn check_distinct_files(args: Parts<'_>, other: &OtherFiles) -> anyhow::Result<()> {
    let out = args.output_options;
    let resume = args.checkpoint_options.and_then(|c| c.resume.as_ref());
    let checkpoint = args.checkpoint_options.and_then(|c| c.checkpoint.as_ref());
    let plot = args.plot_options.and_then(|p| p.plot.as_ref());
    let mut inputs = vec![InputFile {
        option: "the input".to_string(),
        source: if args.input == "-" {
            Source::Stdin
        } else {
            Source::Path(PathBuf::from(args.input))
        },
        may_be: None,
    }];
    if let Some(path) = resume {
        inputs.push(InputFile {
            option: "--resume".to_string(),
            source: Source::Path(path.clone()),
            may_be: Some("--checkpoint"),
        });
    }
    for (option, path) in &other.inputs {
        inputs.push(InputFile {
            option: (*option).to_string(),
            source: Source::Path(path.clone()),
            may_be: None,
        });
    }
    let mut outputs = Vec::new();
    for (option, path) in [("--output", &out.output), ("--summary", &out.summary)] {
        if let Some(path) = path.as_deref().filter(|p| *p != "-") {
            outputs.push(OutputFile {
                option: option.to_string(),
                path: PathBuf::from(path),
            });
        }
    }
    let named = [("--plot", plot), ("--checkpoint", checkpoint)];
    for (option, path) in named {
        if let Some(path) = path {
            outputs.push(OutputFile {
                option: option.to_string(),
                path: path.clone(),
            });
        }
    }
    for (option, path) in &other.outputs {
        outputs.push(OutputFile {
            option: (*option).to_string(),
            path: path.clone(),
        });
    }
    files::check_distinct(&inputs, &outputs)
}

/// A path made comparable: its directory resolved (links, `..`), the file name kept, so
/// that files which do not exist yet compare too.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    if let Ok(full) = std::fs::canonicalize(path) {
        return full;
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(parent), Some(name)) => parent.join(name),
        _ => path.to_path_buf(),
    }
}

/// The record format a file name asks for: `.csv` comma-separated, `.tsv`/`.tab`
/// tab-separated, anything else (and stdout) JSON lines.
pub fn format_from_extension(path: &Path) -> RecordFormat {
    match extension(path).as_deref() {
        Some("csv") => RecordFormat::Delimited(b','),
        Some("tsv" | "tab") => RecordFormat::Delimited(b'\t'),
        _ => RecordFormat::Jsonl,
    }
}

/// The lower-case extension of `path`, if any.
pub fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Figures are SVG: PNG would need a rasteriser and font files, which this build does not
/// carry; say so rather than write an SVG under a `.png` name.
pub(crate) fn check_plot_path(option: &str, path: &Path) -> anyhow::Result<()> {
    match extension(path).as_deref() {
        Some("svg") => Ok(()),
        Some("png") => Err(bad_input(format!(
            "{option} '{}': PNG is not supported, only SVG (convert the SVG with any SVG \
             renderer, or use a .svg name)",
            path.display()
        ))),
        _ => Err(bad_input(format!(
            "{option} '{}': the figure is SVG, so the file name must end in .svg",
            path.display()
        ))),
    }
}

/// Parses `--delimiter`: one ASCII character, `tab` or `\t`.
fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ => match text.as_bytes() {
            [byte] if byte.is_ascii() && *byte != b'"' && *byte != b'\n' && *byte != b'\r' => {
                Ok(*byte)
            }
            _ => Err(format!(
                "expected one ASCII character (other than a quote or a newline) or `tab`, got {text:?}"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(
            format_from_extension(Path::new("a/b.CSV")),
            RecordFormat::Delimited(b',')
        );
        assert_eq!(
            format_from_extension(Path::new("b.tsv")),
            RecordFormat::Delimited(b'\t')
        );
        assert_eq!(
            format_from_extension(Path::new("b.jsonl")),
            RecordFormat::Jsonl
        );
        assert_eq!(format_from_extension(Path::new("-")), RecordFormat::Jsonl);
    }

    #[test]
    fn delimiters() {
        assert_eq!(parse_delimiter("tab"), Ok(b'\t'));
        assert_eq!(parse_delimiter(";"), Ok(b';'));
        assert!(parse_delimiter(";;").is_err());
        assert!(parse_delimiter("\"").is_err());
        assert!(parse_delimiter("é").is_err());
    }

    #[test]
    fn plots_are_svg() {
        assert!(check_plot_path("--plot", Path::new("x.svg")).is_ok());
        assert!(check_plot_path("--plot", Path::new("x.png")).is_err());
        let error = check_plot_path("--plot-k", Path::new("x")).unwrap_err();
        assert!(error.to_string().starts_with("--plot-k 'x'"), "{error}");
    }
}
