//! A CSV reader for workers that parse only some of the records: the records a worker does
//! not own are passed over by searching for the end of their line (`memchr`), not run
//! through the CSV state machine, which cost every worker a full parse of the whole file;
//! and the records it owns are split at their delimiters the same way.
//!
//! A line is handled that way only when what its record is cannot depend on CSV syntax:
//! it holds no quote (a quoted field may hold delimiters, line ends and escaped quotes), and
//! the delimiter is none of `"`, `\r` and `\n`. Otherwise, and always for the file's first
//! record (which may start with a byte-order mark, and whose width the others are checked
//! against), the record goes through `csv_core`, the state machine of the `csv` crate. The
//! rules `csv_core` applies, which the plain path reproduces: `\r`, `\n` and `\r\n` each end a
//! record (`csv_core` consumes the `\r`, then the `\n` as an empty line), any run of line ends
//! between records is no record (a line holding a space is a record of one field), and the
//! fields of a line without quotes are its bytes between delimiters, unchanged.
//!
//! Records, positions and error messages are those of `csv::Reader` (with `has_headers`,
//! not flexible, reading each parsed record as a `StringRecord`), byte for byte: the tests
//! compare the two on the same inputs. A record passed over is neither checked for its width
//! nor for UTF-8: only the worker that owns it reports it, with the message `csv::Reader`
//! gives, so the error of a run does not depend on which worker passed over what.

use std::fmt;
use std::io::{self, Read};

use csv_core::ReadRecordResult;

/// The buffer's first size; it doubles while a record passed over does not fit.
const BUFFER_BYTES: usize = 256 * 1024;

/// Where the reader is, as `csv::Position` counts it: bytes consumed, the line (1 plus the
/// `\n` consumed) and the records read (the header included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) byte: u64,
    pub(super) line: u64,
    pub(super) record: u64,
}

/// Why a record could not be read; displayed as `csv::Error` displays the same error.
#[derive(Debug)]
pub(super) enum ScanError {
    /// The input could not be read.
    Io(io::Error),
    /// A record's width is not the first record's.
    UnequalLengths {
        pos: Position,
        expected: u64,
        len: u64,
    },
    /// A field is not UTF-8 (`pos`: where the reader was before the call that read it).
    Utf8 {
        pos: Position,
        field: usize,
        valid_up_to: usize,
    },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(error) => error.fmt(f),
            Self::UnequalLengths { pos, expected, len } => write!(
                f,
                "CSV error: record {} (line: {}, byte: {}): found record with {} fields, but \
                 the previous record has {} fields",
                pos.record, pos.line, pos.byte, len, expected
            ),
            Self::Utf8 {
                pos,
                field,
                valid_up_to,
            } => write!(
                f,
                "CSV parse error: record {} (line {}, field: {}, byte: {}): invalid utf-8: \
                 invalid UTF-8 in field {} near byte index {}",
                pos.record, pos.line, field, pos.byte, field, valid_up_to
            ),
        }
    }
}

/// Where the next record is (see [`Scanner::next_line`]).
enum Line {
    /// The unread bytes start with the record's `len` bytes (no quote, no line end), then
    /// `end` bytes (0 or 1) that end it.
    Plain { len: usize, end: usize },
    /// `csv_core` must read it.
    Parse,
}

/// A record read, as text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Record<'a> {
    text: &'a str,
    ends: &'a [usize],
    /// Bytes between a field's end and the next one's start (a delimiter, or none).
    gap: usize,
}

impl<'a> Record<'a> {
    /// Field `i`, if the record has one. Every field of a record read is UTF-8, so its
    /// bounds are bounds of characters of the whole.
    pub(super) fn get(&self, i: usize) -> Option<&'a str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1] + self.gap
        };
        self.text.get(start..end)
    }
}

/// The reader: a buffer over the input, `csv_core` for the records parsed, and the
/// position and width bookkeeping of `csv::Reader`.
pub(super) struct Scanner<R> {
    input: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// The input has no more bytes.
    at_eof: bool,
    /// The end of the records was met, or the input failed: no more records (as
    /// `csv::Reader`, which returns none after either).
    done: bool,
    core: csv_core::Reader,
    delimiter: u8,
    /// Lines without a quote may be read without `csv_core` (see the module's
    /// documentation).
    fast: bool,
    has_header: bool,
    header_read: bool,
    /// `csv_core` has read the first record (so it has dealt with a byte-order mark).
    started: bool,
    pos: Position,
    /// The first record's number of fields.
    expected: Option<u64>,
    /// The fields of the last record `csv_core` parsed, unescaped.
    fields: Vec<u8>,
    /// The end of each of the last record's `len` fields, in the bytes `held` says.
    ends: Vec<usize>,
    len: usize,
    held: Held,
}

/// Where the last record's bytes are: parsed by `csv_core` into `fields` (each field
/// starts where the one before ends), or a plain line still in the buffer at `start` (each
/// field starts one delimiter after the one before ends; the buffer is refilled only by the
/// next read or pass).
#[derive(Clone, Copy, Debug)]
enum Held {
    Parsed,
    Line { start: usize },
}

impl<R> fmt::Debug for Scanner<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scanner")
            .field("pos", &self.pos)
            .field("fast", &self.fast)
            .finish_non_exhaustive()
    }
}

impl<R: Read> Scanner<R> {
    /// A reader of `input` with this delimiter; the first record is a header (passed over,
    /// never returned) when `has_header`.
    pub(super) fn new(input: R, delimiter: u8, has_header: bool) -> Self {
        let core = csv_core::ReaderBuilder::new().delimiter(delimiter).build();
        Self {
            input,
            buf: vec![0; BUFFER_BYTES],
            start: 0,
            end: 0,
            at_eof: false,
            done: false,
            core,
            delimiter,
            fast: delimiter.is_ascii() && !matches!(delimiter, b'"' | b'\r' | b'\n'),
            has_header,
            header_read: false,
            started: false,
            pos: Position {
                byte: 0,
                line: 1,
                record: 0,
            },
            expected: None,
            fields: vec![0; 1024],
            ends: vec![0; 64],
            len: 0,
            held: Held::Parsed,
        }
    }

    /// Reads the next record (false at the end), checked as `csv::Reader::read_record`
    /// checks it: its width against the first record's, then its UTF-8. A line without a
    /// quote is split at its delimiters, which is what `csv_core` does with it.
    pub(super) fn read(&mut self) -> Result<bool, ScanError> {
        // `csv::Reader` reads the header within the first call, and a UTF-8 error of that
        // call names the position from before the header: so does this one.
        let before = self.pos;
        self.pass_header()?;
        // The record's position is from before the empty lines that precede it.
        let at = self.pos;
        let more = match self.next_line()? {
            Line::Plain { len, end } => {
                self.split(len);
                self.consume(len + end);
                self.record_read(at, true)?
            }
            Line::Parse => self.parse(at, true)?,
        };
        if more {
            self.validate(before)?;
        }
        Ok(more)
    }

    /// Passes over the next record (false at the end), by its line end when it has no
    /// quote; neither its width nor its UTF-8 is checked.
    pub(super) fn skip(&mut self) -> Result<bool, ScanError> {
        self.pass_header()?;
        let at = self.pos;
        match self.next_line()? {
            Line::Plain { len, end } => {
                self.consume(len + end);
                self.pos.record += 1;
                Ok(true)
            }
            Line::Parse => self.parse(at, false),
        }
    }

    /// Passes over up to `n` records, as `n` calls of [`Scanner::skip`] would: the same
    /// records, the same position after each, the same error. Returns how many it passed
    /// over (fewer than `n` at the end of the input or at an error) and the error that
    /// stopped it. The plain lines in the buffer are found by one search over it
    /// ([`Scanner::pass_plain_lines`]), not one call per line: a k-means worker passes over
    /// the other workers' chunks, thousands of lines at a time, and the search set up per
    /// line cost it about 30 ns a line of the whole file.
    pub(super) fn skip_many(&mut self, n: usize) -> (usize, Result<(), ScanError>) {
        let mut passed = 0;
        while passed < n {
            if self.fast && self.started && !self.done && (self.header_read || !self.has_header) {
                passed += self.pass_plain_lines(n - passed);
                if passed == n {
                    break;
                }
            }
            // A line holding a quote, the buffer's last line (which may go on in the input),
            // the first record or the end of the input: one record as `skip` passes it.
            match self.skip() {
                Ok(true) => passed += 1,
                Ok(false) => break,
                Err(error) => return (passed, Err(error)),
            }
        }
        (passed, Ok(()))
    }

    /// Passes over up to `n` records that are plain lines ended in the buffer, with the
    /// empty lines before them, as [`Scanner::skip`] passes each (see
    /// [`Scanner::next_line`]): a run of line ends before a record is no record, a record
    /// ends at its first `\r` or `\n`, which it consumes. Stops before a line holding a
    /// quote and before a line not ended in the buffer (which `skip` must see); returns the
    /// number passed over.
    fn pass_plain_lines(&mut self, n: usize) -> usize {
        let rest = &self.buf[self.start..self.end];
        let (mut passed, mut line_start, mut lines) = (0, 0, 0u64);
        for end in memchr::memchr3_iter(b'\n', b'\r', b'"', rest) {
            let byte = rest[end];
            if byte == b'"' {
                break;
            }
            lines += u64::from(byte == b'\n');
            // A line end at the start of a line ends no record (an empty line).
            passed += usize::from(end > line_start);
            line_start = end + 1;
            if passed == n {
                break;
            }
        }
        self.pos.line += lines;
        self.pos.record += passed as u64;
        self.consume(line_start);
        passed
    }

    /// Finds the next record's line: passes over the empty lines before it, then looks
    /// for its end. A record whose end does not depend on CSV syntax is `Plain`: the
    /// unread bytes start with it. Otherwise (a quote, the first record, the end of the
    /// input, a delimiter that is a quote or a line end) `csv_core` must read it.
    // Inlined: its result, returned through memory, stalled the caller's loads of it.
    #[inline(always)]
    fn next_line(&mut self) -> Result<Line, ScanError> {
        if !self.fast || !self.started || self.done {
            return Ok(Line::Parse);
        }
        // Empty lines: no record (`csv_core` discards line ends at the start of a record).
        loop {
            let rest = &self.buf[self.start..self.end];
            let blank = rest
                .iter()
                .position(|&b| b != b'\n' && b != b'\r')
                .unwrap_or(rest.len());
            self.pos.line += memchr::memchr_iter(b'\n', &rest[..blank]).count() as u64;
            self.consume(blank);
            if self.start < self.end {
                break;
            }
            if !self.fill()? {
                // The end of the input: `csv_core` says so (and the reader is done).
                return Ok(Line::Parse);
            }
        }
        // The record: up to its first line end, unless a quote comes first.
        let mut scanned = 0;
        loop {
            let rest = &self.buf[self.start..self.end];
            match memchr::memchr3(b'\n', b'\r', b'"', &rest[scanned..]) {
                Some(found) => {
                    let len = scanned + found;
                    if rest[len] == b'"' {
                        // A quoted field may hold line ends: the state machine decides.
                        return Ok(Line::Parse);
                    }
                    // `csv_core` consumes the one byte that ends the record (of `\r\n`,
                    // the `\n` is an empty line before the next record).
                    self.pos.line += u64::from(rest[len] == b'\n');
                    return Ok(Line::Plain { len, end: 1 });
                }
                None => {
                    scanned = rest.len();
                    if !self.fill()? {
                        // The last record, with no line end.
                        return Ok(Line::Plain {
                            len: scanned,
                            end: 0,
                        });
                    }
                }
            }
        }
    }

    /// Splits the `len` bytes of a plain line (no quote, no line end) at its delimiters,
    /// as `csv_core` would; the record's bytes stay in the buffer, where the line is.
    fn split(&mut self, len: usize) {
        let line = &self.buf[self.start..self.start + len];
        let delimiter = self.delimiter;
        let mut n = 0;
        // A byte loop: fields are short, and a search call per field costs more. (Without
        // a branch per byte, writing every position and keeping the delimiters', it ran
        // 6 % more instructions for 16 % fewer simulated mispredictions: no better.)
        for end in line
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == delimiter)
            .map(|(i, _)| i)
            .chain(std::iter::once(len))
        {
            if n == self.ends.len() {
                self.ends.resize(n * 2, 0);
            }
            self.ends[n] = end;
            n += 1;
        }
        self.len = n;
        self.held = Held::Line { start: self.start };
    }

    /// The bytes of the record last parsed, and what separates its fields there.
    fn held(&self) -> (&[u8], usize) {
        let used = self.ends[..self.len].last().copied().unwrap_or(0);
        match self.held {
            Held::Parsed => (&self.fields[..used], 0),
            Held::Line { start } => (&self.buf[start..start + used], 1),
        }
    }

    /// Field `i` of the record last parsed, if it has one.
    pub(super) fn field(&self, i: usize) -> Option<&[u8]> {
        let (bytes, gap) = self.held();
        let end = *self.ends[..self.len].get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] + gap };
        bytes.get(start..end)
    }

    /// The record last read ([`Scanner::read`]) as text, to take its fields from: one UTF-8
    /// conversion per record, not one per field.
    pub(super) fn record(&self) -> Record<'_> {
        let (bytes, gap) = self.held();
        Record {
            // A record read is UTF-8 field by field, and its delimiters (if held) are
            // ASCII, so the whole is UTF-8 too.
            text: std::str::from_utf8(bytes).unwrap_or_default(),
            ends: &self.ends[..self.len],
            gap,
        }
    }

    /// Where the reader is.
    #[cfg(test)]
    pub(super) fn position(&self) -> Position {
        self.pos
    }

    fn pass_header(&mut self) -> Result<(), ScanError> {
        if self.has_header && !self.header_read {
            self.header_read = true;
            self.parse(self.pos, true)?;
        }
        Ok(())
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.pos.byte += n as u64;
    }

    /// Reads more input after the unread bytes (kept, moved to the front, the buffer grown
    /// when they fill it); false at the end of the input.
    fn fill(&mut self) -> Result<bool, ScanError> {
        if self.at_eof {
            return Ok(false);
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.at_eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    return Err(ScanError::Io(e));
                }
            }
        }
    }

    /// Parses the next record with `csv_core` (as `csv::Reader::read_byte_record` does);
    /// with `check`, its width is checked against the first record's.
    fn parse(&mut self, at: Position, check: bool) -> Result<bool, ScanError> {
        if self.done {
            return Ok(false);
        }
        // Records passed over by their line end moved the line on without `csv_core`.
        self.core.set_line(self.pos.line);
        let (mut out, mut ends) = (0, 0);
        loop {
            if self.start == self.end {
                self.fill()?;
            }
            let (result, read, wrote, ended) = self.core.read_record(
                &self.buf[self.start..self.end],
                &mut self.fields[out..],
                &mut self.ends[ends..],
            );
            self.consume(read);
            self.pos.line = self.core.line();
            out += wrote;
            ends += ended;
            match result {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    let grown = self.fields.len() * 2;
                    self.fields.resize(grown, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let grown = self.ends.len() * 2;
                    self.ends.resize(grown, 0);
                }
                ReadRecordResult::Record => {
                    self.len = ends;
                    self.held = Held::Parsed;
                    self.started = true;
                    return self.record_read(at, check);
                }
                ReadRecordResult::End => {
                    self.done = true;
                    return Ok(false);
                }
            }
        }
    }

    /// Counts the record just parsed (at `at`); with `check`, its width must be the first
    /// record's (`csv::Reader`'s check, which counts the record first).
    fn record_read(&mut self, at: Position, check: bool) -> Result<bool, ScanError> {
        self.pos.record += 1;
        let len = self.len as u64;
        match self.expected {
            None => {
                self.expected = Some(len);
                Ok(true)
            }
            Some(expected) if check && len != expected => Err(ScanError::UnequalLengths {
                pos: at,
                expected,
                len,
            }),
            Some(_) => Ok(true),
        }
    }

    /// The UTF-8 check of `csv`'s `StringRecord`: the first field that is not UTF-8.
    fn validate(&self, pos: Position) -> Result<(), ScanError> {
        if self.held().0.is_ascii() {
            return Ok(());
        }
        for i in 0..self.len {
            if let Err(e) = std::str::from_utf8(self.field(i).unwrap_or_default()) {
                return Err(ScanError::Utf8 {
                    pos,
                    field: i,
                    valid_up_to: e.valid_up_to(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
impl<R: Read> Scanner<R> {
    /// A reader whose buffer starts at `bytes` (the tests make records outgrow it).
    fn with_buffer(input: R, delimiter: u8, has_header: bool, bytes: usize) -> Self {
        let mut scanner = Self::new(input, delimiter, has_header);
        scanner.buf = vec![0; bytes.max(1)];
        scanner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An input that hands out at most `chunk` bytes per read, so that records and line
    /// ends straddle the reads.
    struct Chunked<'a> {
        bytes: &'a [u8],
        chunk: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.bytes.len().min(self.chunk).min(out.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// What one call gave: a record's fields, a record passed over, the end, or an error.
    #[derive(Debug, PartialEq)]
    enum Outcome {
        Read(Vec<String>),
        Passed,
        End,
        Error(String),
    }

    /// The calls (true: read, false: pass over) on `csv::Reader`, as the dataflow source
    /// made them before (`read_record` and `read_byte_record`), each with the position
    /// after it. A record passed over of another width is no error here (the new reader
    /// does not check it; the worker that reads it does).
    fn reference(
        bytes: &[u8],
        chunk: usize,
        delimiter: u8,
        header: bool,
        calls: &[bool],
    ) -> Vec<(Outcome, Position)> {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(header)
            .from_reader(Chunked { bytes, chunk });
        let mut record = csv::StringRecord::new();
        let mut passed = csv::ByteRecord::new();
        let mut out = Vec::new();
        for &read in calls {
            let outcome = if read {
                match reader.read_record(&mut record) {
                    Ok(true) => Outcome::Read(record.iter().map(str::to_string).collect()),
                    Ok(false) => Outcome::End,
                    Err(e) => Outcome::Error(e.to_string()),
                }
            } else {
                match reader.read_byte_record(&mut passed) {
                    Ok(true) => Outcome::Passed,
                    Ok(false) => Outcome::End,
                    Err(e) if matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. }) => {
                        Outcome::Passed
                    }
                    Err(e) => Outcome::Error(e.to_string()),
                }
            };
            let p = reader.position();
            let stop = matches!(outcome, Outcome::End | Outcome::Error(_));
            out.push((
                outcome,
                Position {
                    byte: p.byte(),
                    line: p.line(),
                    record: p.record(),
                },
            ));
            if stop {
                break;
            }
        }
        out
    }

    fn scanned(
        bytes: &[u8],
        (chunk, buffer): (usize, usize),
        delimiter: u8,
        header: bool,
        calls: &[bool],
    ) -> Vec<(Outcome, Position)> {
        let input = Chunked { bytes, chunk };
        let mut scanner = Scanner::with_buffer(input, delimiter, header, buffer);
        let mut out = Vec::new();
        for &read in calls {
            let outcome = if read {
                read_outcome(&mut scanner)
            } else {
                match scanner.skip() {
                    Ok(true) => Outcome::Passed,
                    Ok(false) => Outcome::End,
                    Err(e) => Outcome::Error(e.to_string()),
                }
            };
            let stop = matches!(outcome, Outcome::End | Outcome::Error(_));
            out.push((outcome, scanner.position()));
            if stop {
                break;
            }
        }
        out
    }

    /// What one `read` of the scanner gives: the record's fields, the end, or the error.
    fn read_outcome<R: Read>(scanner: &mut Scanner<R>) -> Outcome {
        match scanner.read() {
            Ok(true) => {
                let record = scanner.record();
                Outcome::Read(
                    (0..scanner.len)
                        .map(|i| record.get(i).unwrap().to_string())
                        .collect(),
                )
            }
            Ok(false) => Outcome::End,
            Err(e) => Outcome::Error(e.to_string()),
        }
    }

    /// The calls as runs: `runs` are reads (0) and runs of k records passed over (k > 0),
    /// each with its outcomes and the position after it. With `bulk`, a run is one call of
    /// `skip_many` on the scanner; otherwise it is k calls of the reference (`csv::Reader`).
    fn runs(
        bytes: &[u8],
        (chunk, buffer): (usize, usize),
        delimiter: u8,
        header: bool,
        runs: &[usize],
        bulk: bool,
    ) -> Vec<(Vec<Outcome>, Position)> {
        let end_position = |outcome: &Outcome| matches!(outcome, Outcome::End | Outcome::Error(_));
        if !bulk {
            let calls: Vec<bool> = runs
                .iter()
                .flat_map(|&k| if k == 0 { vec![true] } else { vec![false; k] })
                .collect();
            let mut each = reference(bytes, chunk, delimiter, header, &calls).into_iter();
            let mut out = Vec::new();
            for &k in runs {
                let mut outcomes = Vec::new();
                let mut position = None;
                for (outcome, after) in each.by_ref().take(k.max(1)) {
                    let stop = end_position(&outcome);
                    outcomes.push(outcome);
                    position = Some(after);
                    if stop {
                        break;
                    }
                }
                let Some(position) = position else { break };
                let stop = outcomes.last().is_some_and(end_position);
                out.push((outcomes, position));
                if stop {
                    break;
                }
            }
            return out;
        }
        let input = Chunked { bytes, chunk };
        let mut scanner = Scanner::with_buffer(input, delimiter, header, buffer);
        let mut out = Vec::new();
        for &k in runs {
            let outcomes = if k == 0 {
                vec![read_outcome(&mut scanner)]
            } else {
                let (passed, result) = scanner.skip_many(k);
                let mut outcomes: Vec<Outcome> = (0..passed).map(|_| Outcome::Passed).collect();
                match result {
                    Err(e) => outcomes.push(Outcome::Error(e.to_string())),
                    Ok(()) if passed < k => outcomes.push(Outcome::End),
                    Ok(()) => {}
                }
                outcomes
            };
            let stop = outcomes.last().is_some_and(end_position);
            out.push((outcomes, scanner.position()));
            if stop {
                break;
            }
        }
        out
    }

    /// Whether the scanner's first input to `csv_core` is the reference's, where that
    /// matters: `csv_core` strips a byte-order mark only from its first input, and when that
    /// input is the mark alone it takes it for the end of the file. Both readers' first read
    /// of a file is whole (8 KiB for `csv::Reader`, 256 KiB here); the tests' small buffers
    /// and chunks make them differ.
    fn comparable(bytes: &[u8], chunk: usize, buffer: usize) -> bool {
        !bytes.starts_with(b"\xef") || buffer >= chunk.min(8192)
    }

    /// Every way of reading `bytes` (each call a read or a pass, chunks and buffers from one
    /// byte up) gives what `csv::Reader` gives, positions included.
    fn assert_same(bytes: &[u8], delimiter: u8, header: bool, calls: &[bool]) {
        for chunk in [1, 2, 3, 7, 4096] {
            let expected = reference(bytes, chunk, delimiter, header, calls);
            for buffer in [1, 2, 5, 64, BUFFER_BYTES] {
                if !comparable(bytes, chunk, buffer) {
                    continue;
                }
                let got = scanned(bytes, (chunk, buffer), delimiter, header, calls);
                assert_eq!(
                    got,
                    expected,
                    "{:?}, header {header}, calls {calls:?}, chunks of {chunk}, buffer {buffer}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }

    /// The calls of every pattern of `n` reads and passes.
    fn patterns(n: usize) -> impl Iterator<Item = Vec<bool>> {
        (0..1u32 << n).map(move |bits| (0..n).map(|i| bits >> i & 1 == 1).collect())
    }

    #[test]
    fn records_passed_over_are_those_the_csv_reader_reads() {
        let cases: &[&[u8]] = &[
            b"a,b\n1,2\n3,4\n5,6\n",
            // CRLF, CR only, and no line end at the end.
            b"a,b\r\n1,2\r\n3,4\r\n5,6\r\n",
            b"a,b\r1,2\r3,4\r5,6",
            b"a,b\n1,2\n3,4\n5,6",
            // Empty lines, of every kind, between and before records and at the end.
            b"a,b\n\n1,2\r\n\r\n3,4\r\r\n\n5,6\n\n\r\n",
            b"\n\r\na,b\n1,2\n",
            // Quoted fields holding line ends, delimiters and quotes.
            b"a,b\n\"1\n2\",3\n\"x,\"\"y\"\"\r\nz\",4\n5,6\n",
            b"a,b\n1,\"2\r\n\r\n3\"\n4,\"5\"\"\n6\"\n",
            // A quote inside an unquoted field, and after a quoted one.
            b"a,b\n1,2\"3\n4,\"5\"6\n7,8\n",
            // A row of another width, and a blank-looking row (a space is a field).
            b"a,b\n1,2\n3\n4,5\n",
            b"a,b\n1,2\n \n4,5\n",
            b"a,b\n1,2,3\n4,5\n",
            // Not UTF-8, in the first row (the header read in the same call) and later.
            b"a,b\n1,\xff\n2,3\n",
            b"a,b\n1,2\n\xc3,3\n4,\"\xe9\"\n",
            // A byte-order mark.
            b"\xef\xbb\xbfa,b\n1,2\n3,4\n",
            b"\xef\xbb\xbf1,2\n3,4\n",
            // Header only; nothing at all.
            b"a,b\n",
            b"",
            b"\n\n",
        ];
        for bytes in cases {
            for header in [true, false] {
                for calls in patterns(6) {
                    assert_same(bytes, b',', header, &calls);
                }
            }
        }
        // Another delimiter: a comma is then part of a field.
        for calls in patterns(5) {
            assert_same(b"a;b\n1,2;3\n\"4;\n\";5\n6;7\r\n", b';', true, &calls);
            assert_same(b"a\tb\n1\t2\n3\n\n4\t5\n", b'\t', true, &calls);
        }
    }

    /// A record longer than the buffer, and records of many fields, passed over and read.
    #[test]
    fn long_records_grow_the_buffer() {
        let long = "x".repeat(5000);
        let text = format!("a,b\n{long},1\n2,{long}\n\"{long}\n{long}\",3\n4,5\n");
        let wide = |cell: &str| vec![cell; 300].join(",");
        let many = format!(
            "{}\n{}\n{}\n{}\n",
            wide("a"),
            wide(""),
            wide("12"),
            wide("3")
        );
        for text in [text, many] {
            for calls in patterns(5) {
                for buffer in [1, 100, 4096] {
                    let expected = reference(text.as_bytes(), 4096, b',', true, &calls);
                    let got = scanned(text.as_bytes(), (4096, buffer), b',', true, &calls);
                    assert_eq!(got, expected, "calls {calls:?}, buffer {buffer}");
                }
            }
        }
    }

    /// A failed read is the csv reader's error, and the reader gives nothing after it.
    #[test]
    fn a_failed_read_is_the_csv_readers_io_error() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("the disk is gone"))
            }
        }
        let mut scanner = Scanner::new(Failing, b',', true);
        let error = scanner.skip().unwrap_err().to_string();
        let mut reader = csv::Reader::from_reader(Failing);
        let expected = reader
            .read_byte_record(&mut csv::ByteRecord::new())
            .unwrap_err()
            .to_string();
        assert_eq!(error, expected);
        assert!(!scanner.read().unwrap());
    }

    /// Runs of records passed over by `skip_many` are the records `csv::Reader` reads
    /// one by one, positions included, on the hand-written cases and long runs.
    #[test]
    fn runs_passed_over_are_those_the_csv_reader_reads() {
        let cases: &[&[u8]] = &[
            b"a,b\n1,2\n3,4\n5,6\n7,8\n9,10\n",
            b"a,b\r\n1,2\r\n3,4\r\n5,6\r\n",
            b"a,b\r1,2\r3,4\r5,6",
            b"a,b\n\n1,2\r\n\r\n3,4\r\r\n\n5,6\n\n\r\n",
            b"\n\r\na,b\n1,2\n",
            b"a,b\n\"1\n2\",3\n\"x,\"\"y\"\"\r\nz\",4\n5,6\n",
            b"a,b\n1,2\"3\n4,\"5\"6\n7,8\n",
            b"a,b\n1,2\n \n4,5\n6\n",
            b"a,b\n1,\xff\n2,3\n",
            b"\xef\xbb\xbfa,b\n1,2\n3,4\n",
            b"a,b\n",
            b"",
        ];
        for bytes in cases {
            for header in [true, false] {
                for calls in [
                    vec![2],
                    vec![1, 3],
                    vec![0, 2, 0, 1],
                    vec![3, 0, 3],
                    vec![0, 0, 5],
                    vec![100],
                ] {
                    for chunk in [1, 3, 4096] {
                        let expected = runs(bytes, (chunk, 0), b',', header, &calls, false);
                        for buffer in [1, 5, 64, BUFFER_BYTES] {
                            if !comparable(bytes, chunk, buffer) {
                                continue;
                            }
                            let got = runs(bytes, (chunk, buffer), b',', header, &calls, true);
                            assert_eq!(
                                got,
                                expected,
                                "{:?}, header {header}, runs {calls:?}, chunks of {chunk}, buffer {buffer}",
                                String::from_utf8_lossy(bytes)
                            );
                        }
                    }
                }
            }
        }
        // Many lines in one buffer, passed over by one search, then read on.
        let text: String = std::iter::once("a,b\n".to_string())
            .chain((0..5000).map(|i| {
                if i % 7 == 3 {
                    format!("{i},x\r\n\n")
                } else {
                    format!("{i},{}\n", i * 3)
                }
            }))
            .collect();
        for calls in [
            vec![4000, 0, 999, 0, 10],
            vec![0, 2500, 2500, 0],
            vec![1, 4998, 0],
        ] {
            let expected = runs(text.as_bytes(), (65536, 0), b',', true, &calls, false);
            for buffer in [64, 4096, BUFFER_BYTES] {
                let got = runs(text.as_bytes(), (65536, buffer), b',', true, &calls, true);
                assert_eq!(got, expected, "runs {calls:?}, buffer {buffer}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Random inputs over the bytes that matter to CSV (quotes, both line ends,
        /// delimiters, spaces, bytes that are not UTF-8) and random reads and passes.
        #[test]
        fn random_inputs_read_as_the_csv_reader_reads_them(
            bytes in proptest::collection::vec(
                prop::sample::select(vec![
                    b'a', b'1', b',', b',', b'"', b'\r', b'\n', b'\n', b' ', b';', 0xc3, 0xa9,
                    0xff, 0xef, 0xbb, 0xbf,
                ]),
                0..60,
            ),
            header in any::<bool>(),
            semicolon in any::<bool>(),
            calls in proptest::collection::vec(any::<bool>(), 1..16),
        ) {
            let delimiter = if semicolon { b';' } else { b',' };
            for chunk in [1, 3, 4096] {
                let expected = reference(&bytes, chunk, delimiter, header, &calls);
                for buffer in [1, 7, 4096] {
                    if !comparable(&bytes, chunk, buffer) {
                        continue;
                    }
                    let got = scanned(&bytes, (chunk, buffer), delimiter, header, &calls);
                    prop_assert_eq!(&got, &expected);
                }
            }
        }

        /// Random inputs read and passed over in runs (`skip_many`) as `csv::Reader`
        /// reads them one record at a time.
        #[test]
        fn random_runs_pass_over_what_the_csv_reader_reads(
            bytes in proptest::collection::vec(
                prop::sample::select(vec![
                    b'a', b'1', b',', b',', b'"', b'\r', b'\n', b'\n', b'\n', b' ', b';',
                    0xc3, 0xa9, 0xff, 0xef, 0xbb, 0xbf,
                ]),
                0..80,
            ),
            header in any::<bool>(),
            semicolon in any::<bool>(),
            calls in proptest::collection::vec(0usize..6, 1..10),
        ) {
            let delimiter = if semicolon { b';' } else { b',' };
            for chunk in [1, 3, 4096] {
                let expected = runs(&bytes, (chunk, 0), delimiter, header, &calls, false);
                for buffer in [1, 7, 4096] {
                    if !comparable(&bytes, chunk, buffer) {
                        continue;
                    }
                    let got = runs(&bytes, (chunk, buffer), delimiter, header, &calls, true);
                    prop_assert_eq!(&got, &expected);
                }
            }
        }
    }
}
