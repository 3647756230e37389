//! The streaming CSV/TSV reader: a file or stdin, one row at a time, in constant memory.
//!
//! - **Delimiter**: `--delimiter`, else tab for `.tsv`/`.tab`, else guessed from the first
//!   line (the most frequent of `,` `\t` `;` `|` outside quotes; `,` if none).
//! - **Header**: the first row is a header when one of its fields is not a number
//!   (`--header yes|no` overrides). A UTF-8 byte-order mark is dropped; CRLF line ends,
//!   quoted fields and blank lines are fine.
//! - **Columns**: `--columns` by name or index, else every column whose first data value is
//!   a number (the others are announced). Extra single columns (`--sample-weights`) are read beside
//!   the features and never taken as features.
//! - **Bad rows** (not numbers, wrong width, NaN or infinity, a negative weight) stop the run
//!   with a message naming the file, line and column, or are skipped and counted
//!   (`--on-bad-row`).
//! - **Resuming**: the reader counts the data rows it consumed and keeps a fingerprint of
//!   them, so that a resumed run can skip exactly those rows and check that the input is the
//!   one the checkpoint was made from.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use csv::ByteRecord;
use serde::{Deserialize, Serialize};

use super::columns::{ColumnNames, ColumnSelector};
use crate::failure::{bad_input, cannot_open, describe_io};
use crate::options::{BadRowPolicy, HeaderMode, InputOptions, InputSource, extension};
use crate::stream::FaultAt;
use crate::ui::Notes;

/// The first line is read whole (up to this many bytes) to guess the delimiter.
const SNIFF_LIMIT: u64 = 64 * 1024;

/// The longest line of input, in bytes (64 MiB): a row of a million columns fits; a file
/// with no line ends (`/dev/zero`, a binary file) is refused there instead of filling memory.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// The largest number of columns of an input, 2²⁰ (every cost of reading and choosing
/// columns is linear in it): a million experts and their outcome fit.
pub const MAX_COLUMNS: usize = 1 << 20;

/// Skipped rows are described one by one up to this many; after that only counted.
const SKIP_NOTES: u64 = 10;

/// Values quoted in messages are cut to this many characters.
const QUOTE_LIMIT: usize = 40;

/// A column read besides the features, such as a sample weight.
#[derive(Clone, Debug)]
pub struct ExtraColumn {
    /// The option that named it (`--sample-weights`), for messages.
    pub option: &'static str,
    /// Which column.
    pub selector: ColumnSelector,
    /// Whether values must be ≥ 0 (weights); they must always be finite.
    pub non_negative: bool,
}

/// The resolved columns of an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnLayout {
    /// 0-based indices of the feature columns, in the order given.
    pub features: Vec<usize>,
    /// Their labels (header names, or `column N`).
    pub feature_labels: Vec<String>,
    /// 0-based indices of the extra columns, in the order requested.
    pub extras: Vec<usize>,
}

/// How far a reader has got, as saved in checkpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputProgress {
    /// Data rows read (learned or skipped), not counting the header.
    pub rows_consumed: u64,
    /// Of those, the bad rows skipped.
    pub bad_rows_skipped: u64,
    /// FNV-1a hash of the fields of the rows consumed, to recognise the same input.
    #[serde(with = "hex_u64")]
    pub fingerprint: u64,
}

/// One good row.
#[derive(Debug)]
pub struct Row<'a> {
    /// The 1-based number of the data row in the input (the header is not counted; bad rows
    /// skipped are), so that results can be joined back to the input.
    pub number: u64,
    /// The feature values, finite (or NaN for an empty cell when empty cells are missing
    /// values).
    pub values: &'a [f64],
    /// The extra columns' values, finite (and ≥ 0 where required).
    pub extras: &'a [f64],
}

/// A streaming reader of numeric rows.
pub struct RowReader {
    source_name: String,
    records: csv::Reader<Box<dyn Read>>,
    header: Option<Vec<String>>,
    /// The field delimiter (given, by file name, or guessed).
    delimiter: u8,
    /// The progress before the current record, to give a refused row back.
    before_row: InputProgress,
    width: usize,
    layout: ColumnLayout,
    /// For each extra column, the option that named it if its values must be ≥ 0.
    extra_non_negative: Vec<Option<&'static str>>,
    /// The first data record, read while choosing the columns.
    pending: Option<ByteRecord>,
    record: ByteRecord,
    policy: BadRowPolicy,
    progress: InputProgress,
    values: Vec<f64>,
    extras: Vec<f64>,
    notes: Notes,
    total_bytes: Option<u64>,
    max_magnitude: Option<f64>,
    empty_is_missing: bool,
}

/// What a command that chooses its own columns sees when the input is opened: the column
/// names and which columns hold a number (or, when empty cells are missing values, nothing)
/// in the first data row.
#[derive(Debug)]
pub struct FirstRow<'a> {
    /// The header names (or `column N`) and selector resolution.
    pub names: ColumnNames<'a>,
    /// For each column, whether its first data value is a number (or a missing value).
    pub numeric: Vec<bool>,
    /// The line of the first data row, for messages.
    pub line: u64,
}

/// Chooses the feature columns (0-based) from the first row, instead of `--columns`.
pub type ColumnPlan<'p> = &'p dyn Fn(&FirstRow<'_>) -> anyhow::Result<Vec<usize>>;

impl std::fmt::Debug for RowReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowReader")
            .field("source_name", &self.source_name)
            .field("header", &self.header)
            .field("layout", &self.layout)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl RowReader {
    /// Opens the input, reads the header and the first data row, and resolves the columns.
    pub fn open(
        options: &InputOptions,
        extra_columns: &[ExtraColumn],
        notes: Notes,
    ) -> anyhow::Result<Self> {
        Self::open_with(options, extra_columns, notes, None)
    }

    /// [`RowReader::open`], with the feature columns chosen by `plan` (when given).
    pub fn open_with(
        options: &InputOptions,
        extra_columns: &[ExtraColumn],
        notes: Notes,
        plan: Option<ColumnPlan<'_>>,
    ) -> anyhow::Result<Self> {
        let source_name = options.source.display_name();
        let (raw, total_bytes, tab_by_name): (Box<dyn Read>, Option<u64>, bool) =
            match &options.source {
                InputSource::Stdin => (Box::new(io::stdin()), None, false),
                InputSource::File(path) => {
                    let file = File::open(path).map_err(|e| cannot_open(path, &e))?;
                    let metadata = file.metadata().map_err(|e| cannot_open(path, &e))?;
                    if metadata.is_dir() {
                        return Err(bad_input(format!(
                            "cannot open '{}': Is a directory",
                            path.display()
                        )));
                    }
                    let tab = matches!(extension(path).as_deref(), Some("tsv" | "tab"));
                    (
                        Box::new(file),
                        metadata.is_file().then_some(metadata.len()),
                        tab,
                    )
                }
            };
        Self::from_stream(
            source_name,
            raw,
            total_bytes,
            tab_by_name,
            options,
            extra_columns,
            notes,
            plan,
        )
    }

    /// [`RowReader::open_with`] on any byte stream (`source_name` names it in messages;
    /// `total_bytes`, if known, drives the progress bar; `tab_by_name`: the file name asks
    /// for tabs). The options' `source` is not read.
    #[allow(clippy::too_many_arguments, reason = "the parts of an opened input")]
    pub fn from_stream(
        source_name: String,
        raw: Box<dyn Read>,
        total_bytes: Option<u64>,
        tab_by_name: bool,
        options: &InputOptions,
        extra_columns: &[ExtraColumn],
        notes: Notes,
        plan: Option<ColumnPlan<'_>>,
    ) -> anyhow::Result<Self> {
        let raw: Box<dyn Read> = Box::new(LineLimit::new(raw, MAX_LINE_BYTES));
        let read_error =
            |e: io::Error| bad_input(format!("cannot read '{source_name}': {}", describe_io(&e)));
        let mut buffered = BufReader::with_capacity(64 * 1024, raw);
        let mut first_line = Vec::new();
        (&mut buffered)
            .take(SNIFF_LIMIT)
            .read_until(b'\n', &mut first_line)
            .map_err(read_error)?;
        if first_line.starts_with(b"\xEF\xBB\xBF") {
            first_line.drain(..3);
        }
        let delimiter = options
            .delimiter
            .or(tab_by_name.then_some(b'\t'))
            .unwrap_or_else(|| sniff_delimiter(&first_line));
        let stream: Box<dyn Read> = Box::new(io::Cursor::new(first_line).chain(buffered));
        let records = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(stream);
        let mut reader = Self {
            source_name,
            records,
            header: None,
            delimiter,
            before_row: InputProgress::default(),
            width: 0,
            layout: ColumnLayout {
                features: Vec::new(),
                feature_labels: Vec::new(),
                extras: Vec::new(),
            },
            extra_non_negative: extra_columns
                .iter()
                .map(|x| x.non_negative.then_some(x.option))
                .collect(),
            pending: None,
            record: ByteRecord::new(),
            policy: options.on_bad_row,
            progress: InputProgress {
                fingerprint: FNV_OFFSET,
                ..InputProgress::default()
            },
            values: Vec::new(),
            extras: Vec::new(),
            notes,
            total_bytes,
            max_magnitude: options.max_magnitude,
            empty_is_missing: options.empty_is_missing,
        };
        reader.read_head(options, extra_columns, plan)?;
        Ok(reader)
    }

    /// Reads the header (if any) and the first data row, and resolves the columns.
    fn read_head(
        &mut self,
        options: &InputOptions,
        extra_columns: &[ExtraColumn],
        plan: Option<ColumnPlan<'_>>,
    ) -> anyhow::Result<()> {
        let mut first = ByteRecord::new();
        if !self.read_record(&mut first)? {
            return Err(bad_input(format!(
                "'{}' is empty: there are no rows to read",
                self.source_name
            )));
        }
        let is_header = match options.header {
            HeaderMode::Auto => first.iter().any(|field| parse_number(field).is_none()),
            HeaderMode::Yes => true,
            HeaderMode::No => false,
        };
        let data = if is_header {
            self.header = Some(
                first
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                    .collect(),
            );
            let mut data = ByteRecord::new();
            if !self.read_record(&mut data)? {
                return Err(bad_input(format!(
                    "'{}' has a header but no data rows",
                    self.source_name
                )));
            }
            data
        } else {
            first
        };
        self.width = self.header.as_ref().map_or(data.len(), Vec::len);
        if self.width > MAX_COLUMNS {
            return Err(bad_input(format!(
                "'{}' has {} columns, more than {MAX_COLUMNS}, the most pacstream reads",
                self.source_name, self.width
            )));
        }
        let names = ColumnNames {
            source: &self.source_name,
            header: self.header.as_deref(),
            width: self.width,
        };
        let mut extras = Vec::with_capacity(extra_columns.len());
        for extra in extra_columns {
            let index = names
                .resolve_one(&extra.selector)
                .map_err(|reason| bad_input(format!("{}: {reason}", extra.option)))?;
            if let Some(other) = extras.iter().position(|&e| e == index) {
                return Err(bad_input(format!(
                    "{} and {} name the same column {}",
                    extra_columns[other].option,
                    extra.option,
                    names.describe(index)
                )));
            }
            extras.push(index);
        }
        let features = match (&options.columns, plan) {
            (None, Some(plan)) => {
                let numeric = (0..self.width)
                    .map(|index| {
                        data.get(index).is_none_or(|field| {
                            parse_number(field).is_some()
                                || (self.empty_is_missing && is_empty(field))
                        })
                    })
                    .collect();
                plan(&FirstRow {
                    names: ColumnNames {
                        source: &self.source_name,
                        header: self.header.as_deref(),
                        width: self.width,
                    },
                    numeric,
                    line: line_of(&data),
                })?
            }
            (Some(selectors), _) => {
                let features = names
                    .resolve_list(selectors)
                    .map_err(|reason| bad_input(format!("--columns: {reason}")))?;
                if let Some(position) = extras.iter().position(|e| features.contains(e)) {
                    return Err(bad_input(format!(
                        "--columns: column {} is also the {} column",
                        names.describe(extras[position]),
                        extra_columns[position].option
                    )));
                }
                features
            }
            (None, None) => {
                let mut features = Vec::new();
                let mut left_out = Vec::new();
                let mut first_values = Vec::new();
                for index in (0..self.width).filter(|i| !extras.contains(i)) {
                    // A field missing from a short first row counts as numeric: the row is
                    // reported as bad when it is read, and the column is not lost.
                    match data.get(index) {
                        Some(field) if parse_number(field).is_none() => {
                            left_out.push(names.describe(index));
                            first_values.push(quote(field));
                        }
                        _ => features.push(index),
                    }
                }
                if features.is_empty() {
                    return Err(bad_input(format!(
                        "'{}' has no numeric column (its first data row, line {}, holds no \
                         number); choose columns with --columns",
                        self.source_name,
                        line_of(&data)
                    )));
                }
                if left_out.len() == 1 {
                    self.notes.note(format!(
                        "leaving out column {} of '{}': its first value {} is not a number \
                         (choose columns with --columns)",
                        left_out[0], self.source_name, first_values[0]
                    ));
                } else if !left_out.is_empty() {
                    self.notes.note(format!(
                        "leaving out columns {} of '{}': their first values {} are not numbers \
                         (choose columns with --columns)",
                        left_out.join(", "),
                        self.source_name,
                        first_values.join(", ")
                    ));
                }
                features
            }
        };
        let feature_labels: Vec<String> = features.iter().map(|&i| names.label(i)).collect();
        // Labels name the columns in records, summaries and figures: two columns read under
        // one name would be confused there.
        let mut seen = std::collections::HashMap::with_capacity(features.len());
        for (position, label) in feature_labels.iter().enumerate() {
            if let Some(first) = seen.insert(label.as_str(), position) {
                return Err(bad_input(format!(
                    "columns {} and {} of '{}' are both named {label:?}: rename one in the \
                     header, or leave one out with --columns",
                    features[first] + 1,
                    features[position] + 1,
                    self.source_name
                )));
            }
        }
        self.layout = ColumnLayout {
            feature_labels,
            features,
            extras,
        };
        self.values = Vec::with_capacity(self.layout.features.len());
        self.extras = Vec::with_capacity(self.layout.extras.len());
        self.pending = Some(data);
        Ok(())
    }

    /// The field delimiter and whether the first row is a header: how another reader of
    /// the same file (a worker of a cluster) must read it.
    pub fn dialect(&self) -> (u8, bool) {
        (self.delimiter, self.header.is_some())
    }

    /// The resolved columns.
    pub fn layout(&self) -> &ColumnLayout {
        &self.layout
    }

    /// The input's name in messages (its path as given, or `<stdin>`).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// The column names, for resolving further options (`--axes`) and for messages.
    pub fn column_names(&self) -> ColumnNames<'_> {
        ColumnNames {
            source: &self.source_name,
            header: self.header.as_deref(),
            width: self.width,
        }
    }

    /// How far the reader has got.
    pub fn progress(&self) -> InputProgress {
        self.progress
    }

    /// Bytes of input read so far, and the input's size if known (for progress bars).
    pub fn bytes(&self) -> (u64, Option<u64>) {
        (self.records.position().byte(), self.total_bytes)
    }

    /// Makes the next record the current one: the one put back, else the next one read;
    /// `false` at the end of the input.
    fn advance(&mut self) -> anyhow::Result<bool> {
        if let Some(pending) = self.pending.take() {
            self.record = pending;
            return Ok(true);
        }
        let mut record = std::mem::take(&mut self.record);
        let more = self.read_record(&mut record)?;
        self.record = record;
        Ok(more)
    }

    /// The next good row, or `None` at the end of the input. A bad row is an error
    /// (`--on-bad-row error`: it is not counted as consumed, so a checkpoint made after the
    /// error resumes at that row) or is skipped and counted.
    pub fn next_row(&mut self) -> anyhow::Result<Option<Row<'_>>> {
        loop {
            if !self.advance()? {
                return Ok(None);
            }
            match self.parse_record() {
                Ok(()) => {
                    self.before_row = self.progress;
                    self.consume_record();
                    return Ok(Some(Row {
                        number: self.progress.rows_consumed,
                        values: &self.values,
                        extras: &self.extras,
                    }));
                }
                Err(problem) => {
                    let message = format!("{}: {problem}", self.source_name);
                    if self.policy == BadRowPolicy::Error {
                        return Err(bad_input(message));
                    }
                    self.consume_record();
                    self.progress.bad_rows_skipped += 1;
                    self.note_skipped(&message);
                }
            }
        }
    }

    /// Refuses the row last returned by [`RowReader::next_row`], which parsed but which the
    /// command refuses (`problem`, at `at`): under `--on-bad-row error` it is given back (not
    /// consumed, so a checkpoint made now resumes at it) and the error names the file, line
    /// and column; under `skip` it is skipped and counted like any bad row.
    pub fn refuse_current(&mut self, at: FaultAt, problem: &str) -> anyhow::Result<()> {
        let line = line_of(&self.record);
        let names = self.column_names();
        let place = match at {
            FaultAt::Row => format!("line {line}"),
            FaultAt::Feature(position) => match self.layout.features.get(position) {
                Some(&index) => format!("line {line}, column {}", names.describe(index)),
                None => format!("line {line}"),
            },
            FaultAt::Extra(position) => match self.layout.extras.get(position) {
                Some(&index) => format!("line {line}, column {}", names.describe(index)),
                None => format!("line {line}"),
            },
        };
        let message = format!("{}: {place}: {problem}", self.source_name);
        if self.policy == BadRowPolicy::Error {
            self.progress = self.before_row;
            return Err(bad_input(message));
        }
        self.progress.bad_rows_skipped += 1;
        self.note_skipped(&message);
        Ok(())
    }

    /// Notes a skipped row (the first few one by one, then only their count).
    fn note_skipped(&self, message: &str) {
        let skipped = self.progress.bad_rows_skipped;
        if skipped <= SKIP_NOTES {
            self.notes.note(format!("skipping a bad row: {message}"));
        }
        if skipped == SKIP_NOTES {
            self.notes.note(
                "further bad rows are skipped without a note; the total is reported at the end",
            );
        }
    }

    /// Skips the rows a checkpointed run consumed, checking that they are the same rows.
    pub fn fast_forward(&mut self, target: &InputProgress) -> anyhow::Result<()> {
        while self.progress.rows_consumed < target.rows_consumed {
            if !self.advance()? {
                return Err(bad_input(format!(
                    "'{}' has {} data rows, but the checkpoint had already read {}: it is \
                     not the input the checkpoint was made from",
                    self.source_name, self.progress.rows_consumed, target.rows_consumed
                )));
            }
            self.consume_record();
        }
        if self.progress.fingerprint != target.fingerprint {
            return Err(bad_input(format!(
                "the first {} data rows of '{}' differ from those the checkpoint was made from",
                target.rows_consumed, self.source_name
            )));
        }
        self.progress.bad_rows_skipped = target.bad_rows_skipped;
        Ok(())
    }

    /// Counts the current record as consumed and adds it to the fingerprint.
    fn consume_record(&mut self) {
        self.progress.rows_consumed += 1;
        let mut hash = self.progress.fingerprint;
        for field in &self.record {
            hash = fnv1a(hash, field);
            hash = fnv1a(hash, &[0x1f]);
        }
        self.progress.fingerprint = fnv1a(hash, &[0x1e]);
    }

    /// Parses the current record into `values` and `extras`, or says what is wrong with it.
    fn parse_record(&mut self) -> Result<(), String> {
        let line = line_of(&self.record);
        if self.record.len() != self.width {
            return Err(format!(
                "line {line}: expected {} fields, found {}",
                self.width,
                self.record.len()
            ));
        }
        self.values.clear();
        self.extras.clear();
        let names = ColumnNames {
            source: &self.source_name,
            header: self.header.as_deref(),
            width: self.width,
        };
        for &index in &self.layout.features {
            let field = self.record.get(index).unwrap_or_default();
            if self.empty_is_missing && is_empty(field) {
                self.values.push(f64::NAN);
                continue;
            }
            let value = checked_number(field).map_err(|problem| {
                format!("line {line}, column {}: {problem}", names.describe(index))
            })?;
            if let Some(limit) = self.max_magnitude
                && value.abs() > limit
            {
                return Err(format!(
                    "line {line}, column {}: {} is too large: values must lie within \
                         ±{limit:e}, so that losses stay finite",
                    names.describe(index),
                    quote(field)
                ));
            }
            self.values.push(value);
        }
        for (position, &index) in self.layout.extras.iter().enumerate() {
            let field = self.record.get(index).unwrap_or_default();
            let value = checked_number(field).map_err(|problem| {
                format!("line {line}, column {}: {problem}", names.describe(index))
            })?;
            if let Some(option) = self.extra_non_negative[position]
                && value < 0.0
            {
                return Err(format!(
                    "line {line}, column {}: {} is negative, and {option} values must be >= 0",
                    names.describe(index),
                    quote(field)
                ));
            }
            self.extras.push(value);
        }
        Ok(())
    }

    /// Reads one record; `false` at the end of the input.
    fn read_record(&mut self, record: &mut ByteRecord) -> anyhow::Result<bool> {
        self.records.read_byte_record(record).map_err(|error| {
            let detail = match error.kind() {
                csv::ErrorKind::Io(e) => describe_io(e),
                _ => error.to_string(),
            };
            bad_input(format!("cannot read '{}': {detail}", self.source_name))
        })
    }
}

/// A reader that refuses a line longer than its limit (a file with no line ends), so that
/// the CSV reader never buffers more than that for one record.
struct LineLimit<R> {
    inner: R,
    limit: u64,
    /// Bytes since the last line end.
    run: u64,
}

impl<R> LineLimit<R> {
    fn new(inner: R, limit: u64) -> Self {
        Self {
            inner,
            limit,
            run: 0,
        }
    }
}

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        let chunk = &buf[..read];
        self.run = match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => (read - last - 1) as u64,
            None => self.run + read as u64,
        };
        if self.run > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a line is longer than {} MiB, the most pacstream reads (is it a CSV or TSV \
                     file?)",
                    self.limit >> 20
                ),
            ));
        }
        Ok(read)
    }
}

/// Whether a field holds nothing but spaces.
fn is_empty(field: &[u8]) -> bool {
    field.iter().all(u8::is_ascii_whitespace)
}

/// The value of a numeric field (surrounding spaces allowed), or `None`.
fn parse_number(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field).ok()?.trim().parse::<f64>().ok()
}

/// The finite value of a numeric field, or what is wrong with it.
fn checked_number(field: &[u8]) -> Result<f64, String> {
    match parse_number(field) {
        Some(value) if value.is_finite() => Ok(value),
        Some(_) => Err(format!("{} is not a finite number", quote(field))),
        None => Err(format!("{} is not a number", quote(field))),
    }
}

/// A field quoted for a message, cut to a readable length, control characters escaped.
fn quote(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    let mut chars = text.chars();
    let cut: String = chars.by_ref().take(QUOTE_LIMIT).collect();
    if chars.next().is_some() {
        format!("{:?}...", cut)
    } else {
        format!("{cut:?}")
    }
}

/// The line where a record starts.
fn line_of(record: &ByteRecord) -> u64 {
    record.position().map_or(0, csv::Position::line)
}

/// Guesses the delimiter from the first line: the most frequent of `,` `\t` `;` `|`
/// outside double quotes (ties in that order), `,` when none occurs.
pub fn sniff_delimiter(line: &[u8]) -> u8 {
    const CANDIDATES: [u8; 4] = [b',', b'\t', b';', b'|'];
    let mut counts = [0usize; 4];
    let mut quoted = false;
    for &byte in line {
        if byte == b'"' {
            quoted = !quoted;
        } else if !quoted && let Some(slot) = CANDIDATES.iter().position(|&c| c == byte) {
            counts[slot] += 1;
        }
    }
    let mut best = 0;
    for slot in 1..CANDIDATES.len() {
        if counts[slot] > counts[best] {
            best = slot;
        }
    }
    CANDIDATES[best]
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits: a small, stable hash (unlike the standard library's, whose algorithm may
/// change between Rust versions, so a checkpoint could not be checked after an upgrade).
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// Serialises a u64 as 16 hex digits (JSON readers that use doubles would round a number).
mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::columns::parse_column_list;
    use std::io::Write;

    fn options(path: &std::path::Path) -> InputOptions {
        InputOptions {
            source: InputSource::File(path.to_path_buf()),
            columns: None,
            on_bad_row: BadRowPolicy::Error,
            header: HeaderMode::Auto,
            delimiter: None,
            max_magnitude: None,
            empty_is_missing: false,
        }
    }

    fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join(name);
        let mut file = File::create(&path).unwrap();
        file.write_all(bytes).unwrap();
        path
    }

    /// A reader of the file `name` holding `bytes`, written in `dir`.
    fn open(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> RowReader {
        let path = write(dir, name, bytes);
        RowReader::open(&options(&path), &[], Notes::new(true)).unwrap()
    }

    fn read_all(reader: &mut RowReader) -> anyhow::Result<Vec<Vec<f64>>> {
        let mut rows = Vec::new();
        while let Some(row) = reader.next_row()? {
            rows.push(row.values.to_vec());
        }
        Ok(rows)
    }

    #[test]
    fn sniffing() {
        assert_eq!(sniff_delimiter(b"a,b,c\n"), b',');
        assert_eq!(sniff_delimiter(b"a\tb\tc\n"), b'\t');
        assert_eq!(sniff_delimiter(b"\"a,b\";c;d\n"), b';');
        assert_eq!(sniff_delimiter(b"1.5\n"), b',');
    }

    #[test]
    fn header_bom_crlf_quotes_and_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = open(
            &dir,
            "x.csv",
            b"\xEF\xBB\xBF\"a\";\"b\"\r\n1;2\r\n\r\n\"3\";4.5\r\n",
        );
        assert_eq!(reader.column_names().header.unwrap(), ["a", "b"]);
        assert_eq!(
            read_all(&mut reader).unwrap(),
            vec![vec![1.0, 2.0], vec![3.0, 4.5]]
        );
        assert_eq!(reader.progress().rows_consumed, 2);
    }

    #[test]
    fn headerless_tsv_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = open(&dir, "x.tsv", b"1\t2\n3\t4\n");
        assert!(reader.column_names().header.is_none());
        assert_eq!(read_all(&mut reader).unwrap().len(), 2);
    }

    #[test]
    fn non_numeric_columns_are_left_out_and_weights_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "x.csv", b"x,name,w\n1,a,2\n3,b,0.5\n");
        let extra = ExtraColumn {
            option: "--sample-weights",
            selector: ColumnSelector::Name("w".into()),
            non_negative: true,
        };
        let mut reader = RowReader::open(&options(&path), &[extra], Notes::new(true)).unwrap();
        assert_eq!(reader.layout().features, vec![0]);
        assert_eq!(reader.layout().extras, vec![2]);
        let row = reader.next_row().unwrap().unwrap();
        assert_eq!(
            (row.values, row.extras, row.number),
            (&[1.0][..], &[2.0][..], 1)
        );
    }

    #[test]
    fn bad_rows_name_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = open(
            &dir,
            "f.csv",
            b"\"e\",\"w\"\n1,2\n3,abc\n4,5,6\n7,NaN\n8,9\n",
        );
        reader.next_row().unwrap();
        let error = reader.next_row().unwrap_err().to_string();
        assert!(
            error.ends_with("f.csv: line 3, column 2 (\"w\"): \"abc\" is not a number"),
            "{error}"
        );
        let mut skipping = options(&dir.path().join("f.csv"));
        skipping.on_bad_row = BadRowPolicy::Skip;
        let mut reader = RowReader::open(&skipping, &[], Notes::new(true)).unwrap();
        let rows = read_all(&mut reader).unwrap();
        assert_eq!(rows, vec![vec![1.0, 2.0], vec![8.0, 9.0]]);
        assert_eq!(reader.progress().bad_rows_skipped, 3);
        assert_eq!(reader.progress().rows_consumed, 5);
    }

    #[test]
    fn columns_by_name_and_fast_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "f.csv", b"a,b,c\n1,2,3\n4,5,6\n7,8,9\n");
        let mut chosen = options(&path);
        chosen.columns = Some(parse_column_list("c,1").unwrap());
        let mut reader = RowReader::open(&chosen, &[], Notes::new(true)).unwrap();
        reader.next_row().unwrap();
        reader.next_row().unwrap();
        let saved = reader.progress();
        let mut again = RowReader::open(&chosen, &[], Notes::new(true)).unwrap();
        again.fast_forward(&saved).unwrap();
        let row = again.next_row().unwrap().unwrap();
        assert_eq!((row.number, row.values), (3, &[9.0, 7.0][..]));
        let other = write(&dir, "g.csv", b"a,b,c\n1,2,3\n4,5,7\n7,8,9\n");
        chosen.source = InputSource::File(other);
        let mut different = RowReader::open(&chosen, &[], Notes::new(true)).unwrap();
        assert!(different.fast_forward(&saved).is_err());
    }

    #[test]
    fn empty_and_header_only_inputs() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes, expected) in [
            ("empty.csv", &b""[..], "is empty"),
            ("blank.csv", &b"\n\n\r\n"[..], "is empty"),
            ("header.csv", &b"\"a\",\"b\"\n"[..], "no data rows"),
        ] {
            let path = write(&dir, name, bytes);
            let error = RowReader::open(&options(&path), &[], Notes::new(true)).unwrap_err();
            assert!(error.to_string().contains(expected), "{name}: {error}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Whatever the bytes, the reader returns rows or errors; it never panics.
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<u8>(),
                    proptest::sample::select(b"0123456789.,;\t\"\n\r-eE+naif ".to_vec()),
                ],
                0..400,
            ),
            skip in proptest::prelude::any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = write(&dir, "fuzz.csv", &bytes);
            let mut opts = options(&path);
            if skip {
                opts.on_bad_row = BadRowPolicy::Skip;
            }
            if let Ok(mut reader) = RowReader::open(&opts, &[], Notes::new(true)) {
                while let Ok(Some(row)) = reader.next_row() {
                    proptest::prop_assert!(row.values.iter().all(|v| v.is_finite()));
                }
            }
        }
    }
}
