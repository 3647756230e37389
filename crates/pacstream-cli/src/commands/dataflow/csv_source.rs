//! The input as each worker reads it: every worker opens the file and parses the numbers
//! of its own rows only.

use std::fs::File;
use std::path::{Path, PathBuf};

use pacstream_dataflow::{Error as FlowError, Rows, Selection, Source};

use super::csv_scan::Scanner;
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
/// own rows only: the others are passed over by their line end, see [`Scanner`]). Rows go
/// straight into the caller's [`Rows`]: no allocation per row.
pub(super) struct CsvSource {
    columns: CsvColumns,
    scanner: Scanner<File>,
    /// The values of the row being parsed (reused).
    values: Vec<f64>,
    row: u64,
}

impl CsvSource {
    pub(super) fn open(columns: &CsvColumns) -> Result<Self, FlowError> {
        let file = File::open(&columns.path).map_err(|e| FlowError::Usage(e.to_string()))?;
        Ok(Self {
            columns: columns.clone(),
            scanner: Scanner::new(file, columns.delimiter, columns.has_header),
            values: Vec::with_capacity(columns.values.len()),
            row: 0,
        })
    }

    /// Reads and parses the next row into `out` at `offset` (false at the end of the
    /// input).
    fn read_row(&mut self, offset: u64, out: &mut Rows) -> Result<bool, FlowError> {
        let more = self.scanner.read().map_err(|e| FlowError::Row {
            row: self.row + 1,
            message: e.to_string(),
        })?;
        if !more {
            return Ok(false);
        }
        self.row += 1;
        self.values.clear();
        let record = self.scanner.record();
        for (&index, name) in self.columns.values.iter().zip(&self.columns.names) {
            let field = record.get(index).unwrap_or("");
            let value = number(field).ok_or_else(|| FlowError::Row {
                row: self.row,
                message: format!("column '{name}': '{field}' is not a number"),
            })?;
            self.values.push(value);
        }
        let key = self.columns.key.and_then(|k| record.get(k)).unwrap_or("");
        out.push(offset, key, &self.values);
        Ok(true)
    }

    /// Passes over up to `n` rows without parsing them; returns how many (fewer at the end
    /// of the input). A run of rows goes to [`Scanner::skip_many`], which finds their
    /// lines by one search of the buffer.
    fn pass_rows(&mut self, n: usize) -> Result<usize, FlowError> {
        let (passed, result) = if n == 1 {
            match self.scanner.skip() {
                Ok(more) => (usize::from(more), Ok(())),
                Err(error) => (0, Err(error)),
            }
        } else {
            self.scanner.skip_many(n)
        };
        self.row += passed as u64;
        result.map_err(|e| FlowError::Row {
            row: self.row + 1,
            message: e.to_string(),
        })?;
        Ok(passed)
    }
}

/// A cell's number: the cell without its surrounding white space, parsed as `f64`.
fn number(field: &str) -> Option<f64> {
    // `trim` walks Unicode white space from both ends; a printable ASCII byte at each end
    // (the common case) means there is none to cut.
    let bytes = field.as_bytes();
    let bare = matches!(
        (bytes.first(), bytes.last()),
        (Some(b'!'..=b'~'), Some(b'!'..=b'~'))
    );
    let field = if bare { field } else { field.trim() };
    field.parse().ok()
}

impl Source for CsvSource {
    fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<(), FlowError> {
        for offset in 0..n as u64 {
            if !self.read_row(offset, out)? {
                break;
            }
        }
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<(), FlowError> {
        let mut left = n;
        while left > 0 {
            let step = usize::try_from(left).unwrap_or(usize::MAX);
            let passed = self.pass_rows(step)?;
            if passed < step {
                break;
            }
            left -= passed as u64;
        }
        Ok(())
    }

    /// The rows `keep` does not select are passed over by their line end (see
    /// [`Scanner::skip`]), neither split into fields nor parsed.
    fn next_selected(
        &mut self,
        n: usize,
        keep: &Selection,
        out: &mut Rows,
    ) -> Result<usize, FlowError> {
        let mut passed = 0;
        // The selected rows come by ranges: the rows between two ranges are passed over
        // as one run.
        let mut selected = keep.next_range(0);
        while passed < n {
            if passed >= selected.end {
                selected = keep.next_range(passed);
            }
            if passed < selected.start {
                let gap = selected.start.min(n) - passed;
                let skipped = self.pass_rows(gap)?;
                passed += skipped;
                if skipped < gap {
                    break;
                }
                continue;
            }
            if !self.read_row(passed as u64, out)? {
                break;
            }
            passed += 1;
        }
        Ok(passed)
    }
}

#[cfg(test)]
mod tests {
    use super::number;

    /// A cell is trimmed as `str::trim` trims it (Unicode white space too) only when an end
    /// could be white space; the number is `f64`'s parse of what is left.
    #[test]
    fn cells_are_trimmed_as_str_trim_trims_them() {
        for cell in [
            "1.5",
            " 1.5",
            "1.5 ",
            "\t-2e3\r",
            "\u{a0}7\u{2003}",
            "x",
            "",
            " ",
            "1 5",
            "+.5",
            "inf",
            "\u{85}3",
        ] {
            assert_eq!(number(cell), cell.trim().parse().ok(), "{cell:?}");
        }
        assert_eq!(number("\u{a0}7\u{2003}"), Some(7.0));
    }
}
