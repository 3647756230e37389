//! The input as each worker reads it: every worker opens the file and parses the numbers
//! of its own rows only.

use std::fs::File;
use std::path::{Path, PathBuf};

use pacstream_dataflow::keyed::KeyedRow;
use pacstream_dataflow::{Error as FlowError, Selection, Source};

use crate::failure::bad_input;

/// The input's columns, resolved from its header before the workers start.
#[derive(Clone, Debug)]
pub(crate) struct CsvColumns {
    pub(super) path: PathBuf,
    pub(super) key: Option<usize>,
    pub(super) values: Vec<usize>,
    pub(super) names: Vec<String>,
    /// The field delimiter.
    pub(super) delimiter: u8,
    /// Whether the first line is a header.
    pub(super) has_header: bool,
}

impl CsvColumns {
    pub(super) fn resolve(
        path: &Path,
        columns: Option<&[String]>,
        key: Option<&str>,
    ) -> anyhow::Result<Self> {
        let mut reader = csv::Reader::from_path(path)
            .map_err(|e| bad_input(format!("cannot open '{}': {e}", path.display())))?;
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad_input(format!("'{}': {e}", path.display())))?
            .iter()
            .map(str::to_string)
            .collect();
        let find = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| bad_input(format!("no column '{name}' in '{}'", path.display())))
        };
        let key = key.map(find).transpose()?;
        let values = match columns {
            Some(names) => names
                .iter()
                .map(|n| find(n))
                .collect::<anyhow::Result<Vec<_>>>()?,
            None => (0..header.len()).filter(|i| Some(*i) != key).collect(),
        };
        if values.is_empty() {
            return Err(bad_input("no numeric column to learn from"));
        }
        let names = values.iter().map(|&i| header[i].clone()).collect();
        Ok(Self {
            path: path.to_path_buf(),
            key,
            values,
            names,
            delimiter: b',',
            has_header: true,
        })
    }

    /// The columns a streaming command resolved with its own reader (0-based `values`, their
    /// labels, the delimiter and whether there is a header), so that every worker reads the
    /// rows that command would read.
    pub(crate) fn from_layout(
        path: &Path,
        key: Option<usize>,
        values: Vec<usize>,
        names: Vec<String>,
        delimiter: u8,
        has_header: bool,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            key,
            values,
            names,
            delimiter,
            has_header,
        }
    }
}

/// The rows of a CSV file (each worker opens its own reader, and parses the numbers of its
/// own rows only: the others are passed over as bytes).
pub(super) struct CsvSource {
    columns: CsvColumns,
    reader: csv::Reader<File>,
    record: csv::StringRecord,
    passed: csv::ByteRecord,
    row: u64,
}

impl CsvSource {
    pub(super) fn open(columns: &CsvColumns) -> Result<Self, FlowError> {
        let reader = csv::ReaderBuilder::new()
            .delimiter(columns.delimiter)
            .has_headers(columns.has_header)
            .from_path(&columns.path)
            .map_err(|e| FlowError::Usage(e.to_string()))?;
        Ok(Self {
            columns: columns.clone(),
            reader,
            record: csv::StringRecord::new(),
            passed: csv::ByteRecord::new(),
            row: 0,
        })
    }

    fn next_row(&mut self) -> Result<Option<(String, Vec<f64>)>, FlowError> {
        let more = self
            .reader
            .read_record(&mut self.record)
            .map_err(|e| FlowError::Row {
                row: self.row + 1,
                message: e.to_string(),
            })?;
        if !more {
            return Ok(None);
        }
        self.row += 1;
        let mut values = Vec::with_capacity(self.columns.values.len());
        for (&index, name) in self.columns.values.iter().zip(&self.columns.names) {
            let field = self.record.get(index).unwrap_or("");
            let value: f64 = field.trim().parse().map_err(|_| FlowError::Row {
                row: self.row,
                message: format!("column '{name}': '{field}' is not a number"),
            })?;
            values.push(value);
        }
        let key = self
            .columns
            .key
            .map(|k| self.record.get(k).unwrap_or("").to_string())
            .unwrap_or_default();
        Ok(Some((key, values)))
    }

    /// [`Source::next_selected`] for both views: the rows `keep` does not select are split
    /// into fields (to find where they end) but neither decoded nor parsed.
    fn next_selected_rows<R>(
        &mut self,
        n: usize,
        keep: &Selection,
        out: &mut Vec<(usize, R)>,
        view: impl Fn((String, Vec<f64>)) -> R,
    ) -> Result<usize, FlowError> {
        let mut passed = 0;
        // The selected rows come by ranges: no test per row beyond two comparisons.
        let mut selected = keep.next_range(0);
        while passed < n {
            if passed >= selected.end {
                selected = keep.next_range(passed);
            }
            if passed >= selected.start {
                match self.next_row()? {
                    Some(row) => out.push((passed, view(row))),
                    None => break,
                }
            } else if !self.pass_row()? {
                break;
            }
            passed += 1;
        }
        Ok(passed)
    }

    /// Passes over one row without decoding it; false at the end of the input.
    fn pass_row(&mut self) -> Result<bool, FlowError> {
        let more = self
            .reader
            .read_byte_record(&mut self.passed)
            .map_err(|e| FlowError::Row {
                row: self.row + 1,
                message: e.to_string(),
            })?;
        if more {
            self.row += 1;
        }
        Ok(more)
    }
}

impl Source for CsvSource {
    type Row = Vec<f64>;

    fn next_batch(&mut self, n: usize, out: &mut Vec<Vec<f64>>) -> Result<(), FlowError> {
        while out.len() < n {
            match self.next_row()? {
                Some((_, values)) => out.push(values),
                None => break,
            }
        }
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<(), FlowError> {
        for _ in 0..n {
            if !self.pass_row()? {
                break;
            }
        }
        Ok(())
    }

    fn next_selected(
        &mut self,
        n: usize,
        keep: &Selection,
        out: &mut Vec<(usize, Vec<f64>)>,
    ) -> Result<usize, FlowError> {
        self.next_selected_rows(n, keep, out, |(_, values)| values)
    }
}

/// The keyed view of a CSV source.
pub(super) struct KeyedCsv(pub(super) CsvSource);

impl Source for KeyedCsv {
    type Row = KeyedRow;

    fn next_batch(&mut self, n: usize, out: &mut Vec<KeyedRow>) -> Result<(), FlowError> {
        while out.len() < n {
            match self.0.next_row()? {
                Some(row) => out.push(row),
                None => break,
            }
        }
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<(), FlowError> {
        self.0.skip_rows(n)
    }

    fn next_selected(
        &mut self,
        n: usize,
        keep: &Selection,
        out: &mut Vec<(usize, KeyedRow)>,
    ) -> Result<usize, FlowError> {
        self.0.next_selected_rows(n, keep, out, |row| row)
    }
}
