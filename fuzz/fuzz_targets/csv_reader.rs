//! The streaming CSV/TSV reader on arbitrary bytes and options.
//!
//! Whatever the bytes: opening and reading never panic; every row returned has one value per
//! chosen column, each finite and within the magnitude limit (or NaN for an empty cell when
//! empty cells are missing values); the progress counts add up.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pacstream_cli::io::columns::parse_column_list;
use pacstream_cli::io::reader::RowReader;
use pacstream_cli::options::{BadRowPolicy, HeaderMode, InputOptions, InputSource};
use pacstream_cli::ui::Notes;

/// Column lists tried with `--columns` (byte 1 picks one; past the end: none).
const COLUMNS: &[&str] = &[
    "1", "2,1", "1-3", "x", "a,b", "x,x", "1,1", "5", "0", "\"a\"", "b-a",
];

/// The input: byte 0 holds the options (bits: skip, empty cells missing, magnitude limit,
/// header mode (2), delimiter (3)), byte 1 the column list, the rest is the file.
fn run(data: &[u8]) {
    let [flags, columns, bytes @ ..] = data else {
        return;
    };
    let columns = match COLUMNS.get(usize::from(*columns)) {
        Some(text) => match parse_column_list(text) {
            Ok(list) => Some(list),
            Err(_) => return,
        },
        None => None,
    };
    let bit = |n: u8| flags & (1 << n) != 0;
    let options = InputOptions {
        source: InputSource::Stdin,
        columns,
        on_bad_row: if bit(0) {
            BadRowPolicy::Skip
        } else {
            BadRowPolicy::Error
        },
        empty_is_missing: bit(1),
        max_magnitude: bit(2).then_some(1e150),
        header: [
            HeaderMode::Auto,
            HeaderMode::Yes,
            HeaderMode::No,
            HeaderMode::Auto,
        ][usize::from((flags >> 3) & 3)],
        delimiter: [
            None,
            Some(b','),
            Some(b';'),
            Some(b'\t'),
            Some(b'|'),
            Some(b' '),
            None,
            None,
        ][usize::from(flags >> 5)],
    };
    let bytes = bytes.to_vec();
    let Ok(mut reader) = RowReader::from_stream(
        "fuzz.csv".to_string(),
        Box::new(std::io::Cursor::new(bytes)),
        None,
        false,
        &options,
        &[],
        Notes::new(true),
        None,
    ) else {
        return;
    };
    let width = reader.layout().features.len();
    assert!(width > 0);
    assert_eq!(reader.layout().feature_labels.len(), width);
    let mut last = 0;
    loop {
        match reader.next_row() {
            Ok(Some(row)) => {
                assert_eq!(row.values.len(), width);
                assert!(row.number > last, "row numbers increase");
                last = row.number;
                for &v in row.values {
                    if v.is_nan() {
                        assert!(options.empty_is_missing, "NaN from a non-empty cell");
                    } else {
                        assert!(v.is_finite());
                        if let Some(limit) = options.max_magnitude {
                            assert!(v.abs() <= limit);
                        }
                    }
                }
            }
            Ok(None) => break,
            Err(_) => {
                assert_eq!(
                    options.on_bad_row,
                    BadRowPolicy::Error,
                    "skip never stops on a row"
                );
                break;
            }
        }
    }
    let progress = reader.progress();
    assert!(progress.bad_rows_skipped <= progress.rows_consumed);
}

fuzz_target!(|data: &[u8]| run(data));
