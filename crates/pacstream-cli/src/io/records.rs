//! Per-round (or per-row) records, written as they come: JSON lines or delimited text.
//!
//! The sink counts the bytes and records it has written and hashes them (SHA-256), so that a
//! checkpoint can record what the output held at that moment ([`OutputMark`]) and a resumed
//! run can check that the file still holds exactly that before it cuts the file back to it
//! and appends ([`RecordSink::resume`]).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use anyhow::Context;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::checkpoint::{OutputMark, hex};
use crate::failure::{bad_input, describe_io, io_failure};
use crate::options::{OutputTarget, RecordFormat, RecordOutput};

/// Where records go: nowhere (no `--output`), a file, or stdout.
#[derive(Debug)]
pub struct RecordSink {
    inner: Option<Sink>,
}

#[derive(Debug)]
struct Sink {
    name: String,
    format: Format,
    /// Whether [`RecordSink::write_fields`] must still write the header row.
    header_pending: bool,
    /// Records written since the start of the file (before a resume, too).
    records: u64,
    record_format: RecordFormat,
}

/// One value of a record written by [`RecordSink::write_fields`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// A number.
    Number(f64),
    /// A count or an index.
    Integer(u64),
    /// No value: `null` in JSON, an empty field in delimited text.
    Missing,
}

impl Cell {
    /// A number, or `Missing` for `None`.
    pub fn from_option(value: Option<f64>) -> Self {
        value.map_or(Cell::Missing, Cell::Number)
    }
}

/// Named cells serialised as a JSON object in their order.
struct Fields<'a> {
    names: &'a [String],
    cells: &'a [Cell],
}

impl Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.names.len()))?;
        for (name, cell) in self.names.iter().zip(self.cells) {
            match cell {
                Cell::Number(value) if value.is_finite() => map.serialize_entry(name, value)?,
                Cell::Integer(value) => map.serialize_entry(name, value)?,
                Cell::Number(_) | Cell::Missing => map.serialize_entry(name, &())?,
            }
        }
        map.end()
    }
}

#[derive(Debug)]
enum Format {
    Jsonl(BufWriter<CountingWriter>),
    Delimited(Box<csv::Writer<CountingWriter>>),
}

impl RecordSink {
    /// A sink that drops every record.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Opens `--output` for a new run (the file is created or truncated).
    pub fn create(output: Option<&RecordOutput>) -> anyhow::Result<Self> {
        let Some(output) = output else {
            return Ok(Self::disabled());
        };
        let (target, name) = match &output.target {
            OutputTarget::Stdout => (Target::Stdout(io::stdout()), "<stdout>".to_string()),
            OutputTarget::File(path) => {
                let name = path.display().to_string();
                let file = File::create(path).map_err(|e| {
                    bad_input(format!("cannot create '{name}': {}", describe_io(&e)))
                })?;
                (Target::file(file), name)
            }
        };
        Ok(Self::with(output, target, name, Counting::new()))
    }

    /// Opens `--output` for a resumed run whose checkpoint recorded `mark`. A regular file
    /// must hold exactly what the checkpoint says the run wrote: at least `mark.bytes` bytes,
    /// whose SHA-256 is `mark.sha256`, ending on a record boundary after `mark.records`
    /// records (and the header row of delimited text). Only then is it cut back to that
    /// length and appended to; otherwise it is refused, untouched. On standard output, a
    /// FIFO or a device, which cannot be read back, only the records after the checkpoint
    /// are written.
    pub fn resume(output: Option<&RecordOutput>, mark: &OutputMark) -> anyhow::Result<Self> {
        let Some(output) = output else {
            return Ok(Self::disabled());
        };
        let path = match &output.target {
            OutputTarget::File(path) if !is_special(path) => path,
            _ => return Self::create(Some(output)),
        };
        let name = path.display().to_string();
        let refuse = |why: String| {
            bad_input(format!(
                "the output '{name}' {why}: it is not the output the checkpoint recorded (it \
                 was changed, or the run wrote another file), so the run cannot continue it; \
                 resume with the run's own --output, or start a new run"
            ))
        };
        let counting = match File::open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && mark.bytes == 0 => Counting::new(),
            Err(e) => {
                return Err(bad_input(format!(
                    "cannot reopen the output '{name}' to continue it: {}",
                    describe_io(&e)
                )));
            }
            Ok(file) => {
                let current = file
                    .metadata()
                    .with_context(|| format!("cannot read the length of '{name}'"))?
                    .len();
                if current < mark.bytes {
                    return Err(refuse(format!(
                        "has {current} bytes, fewer than the {} it had at the checkpoint",
                        mark.bytes
                    )));
                }
                let prefix = Prefix::read(file, mark.bytes)
                    .map_err(|e| io_failure(format!("cannot read '{name}'"), &e))?;
                if hex(&prefix.hasher.clone().finalize()) != mark.sha256 {
                    return Err(refuse(format!(
                        "differs in its first {} bytes from what the run wrote",
                        mark.bytes
                    )));
                }
                let header = u64::from(
                    matches!(output.format, RecordFormat::Delimited(_)) && mark.records > 0,
                );
                if prefix.last != Some(b'\n') && mark.bytes > 0
                    || prefix.lines != mark.records + header
                {
                    return Err(refuse(format!(
                        "does not end its first {} bytes after {} records",
                        mark.bytes, mark.records
                    )));
                }
                Counting {
                    bytes: mark.bytes,
                    records: mark.records,
                    hasher: prefix.hasher,
                }
            }
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create(mark.bytes == 0)
            .truncate(false)
            .open(path)
            .map_err(|e| {
                bad_input(format!(
                    "cannot reopen the output '{name}' to continue it: {}",
                    describe_io(&e)
                ))
            })?;
        file.set_len(mark.bytes)
            .with_context(|| format!("cannot truncate '{name}'"))?;
        file.seek(SeekFrom::Start(mark.bytes))
            .with_context(|| format!("cannot seek in '{name}'"))?;
        Ok(Self::with(output, Target::file(file), name, counting))
    }

    fn with(output: &RecordOutput, target: Target, name: String, counting: Counting) -> Self {
        // A header row only at the start of the file: a resumed file already has one (a
        // checkpoint is made after at least one record, or records nothing).
        let write_header = counting.bytes == 0;
        let records = counting.records;
        let counting = CountingWriter { target, counting };
        let format = match output.format {
            RecordFormat::Jsonl => Format::Jsonl(BufWriter::with_capacity(64 * 1024, counting)),
            RecordFormat::Delimited(delimiter) => Format::Delimited(Box::new(
                csv::WriterBuilder::new()
                    .delimiter(delimiter)
                    .has_headers(write_header)
                    .buffer_capacity(64 * 1024)
                    .from_writer(counting),
            )),
        };
        Self {
            inner: Some(Sink {
                name,
                format,
                header_pending: write_header,
                records,
                record_format: output.format,
            }),
        }
    }

    /// Whether records are written anywhere.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Writes one record (a struct of scalars; `None` is `null` in JSON, an empty field in
    /// delimited text).
    pub fn write<R: Serialize>(&mut self, record: &R) -> anyhow::Result<()> {
        self.write_as(record, record)
    }

    /// Writes a library's record followed by the front-end's own columns (structs of
    /// scalars both), as one record: one JSON object, one delimited row under one header.
    pub fn write_joined<R: Serialize, C: Serialize>(
        &mut self,
        record: &R,
        columns: &C,
    ) -> anyhow::Result<()> {
        /// One object of both structs' fields (a map to serde, which JSON writes as it
        /// writes a struct; the csv crate writes no maps, but writes a tuple of structs
        /// as one row under their fields' names).
        #[derive(Serialize)]
        struct Joined<'a, R, C> {
            #[serde(flatten)]
            record: &'a R,
            #[serde(flatten)]
            columns: &'a C,
        }
        self.write_as(&Joined { record, columns }, &(record, columns))
    }

    /// Writes `json` as a JSON line or `delimited` as a delimited row, whichever the sink
    /// writes: the same record in the two shapes the two writers take.
    fn write_as(
        &mut self,
        json: &impl Serialize,
        delimited: &impl Serialize,
    ) -> anyhow::Result<()> {
        let Some(sink) = &mut self.inner else {
            return Ok(());
        };
        sink.records += 1;
        // Errors become io::Error where they are one, so that a closed pipe is recognised.
        let result = match &mut sink.format {
            Format::Jsonl(writer) => serde_json::to_writer(&mut *writer, json)
                .map_err(io::Error::from)
                .and_then(|()| writer.write_all(b"\n")),
            Format::Delimited(writer) => {
                writer
                    .serialize(delimited)
                    .map_err(|e| match e.into_kind() {
                        csv::ErrorKind::Io(e) => e,
                        other => io::Error::other(format!("{other:?}")),
                    })
            }
        };
        result.map_err(|e| write_error(&sink.name, e))
    }

    /// Writes one record whose fields are known only at run time (one column per expert,
    /// say): `names` and `cells` in the same order, the same names for every record.
    pub fn write_fields(&mut self, names: &[String], cells: &[Cell]) -> anyhow::Result<()> {
        let Some(sink) = &mut self.inner else {
            return Ok(());
        };
        debug_assert_eq!(names.len(), cells.len());
        sink.records += 1;
        let result = match &mut sink.format {
            Format::Jsonl(writer) => serde_json::to_writer(&mut *writer, &Fields { names, cells })
                .map_err(io::Error::from)
                .and_then(|()| writer.write_all(b"\n")),
            Format::Delimited(writer) => {
                let header = if sink.header_pending {
                    sink.header_pending = false;
                    writer.write_record(names)
                } else {
                    Ok(())
                };
                header
                    .and_then(|()| {
                        writer.write_record(cells.iter().map(|cell| match cell {
                            Cell::Number(value) if value.is_finite() => value.to_string(),
                            Cell::Integer(value) => value.to_string(),
                            Cell::Number(_) | Cell::Missing => String::new(),
                        }))
                    })
                    .map_err(|e| match e.into_kind() {
                        csv::ErrorKind::Io(e) => e,
                        other => io::Error::other(format!("{other:?}")),
                    })
            }
        };
        result.map_err(|e| write_error(&sink.name, e))
    }

    /// Flushes the records to the file and makes them durable (fsync); returns what the
    /// output holds (`None` without `--output`). Called before a checkpoint, which must
    /// never describe output that a crash could lose.
    pub fn sync(&mut self) -> anyhow::Result<Option<OutputMark>> {
        let Some(sink) = &mut self.inner else {
            return Ok(None);
        };
        let name = &sink.name;
        let writer = match &mut sink.format {
            Format::Jsonl(writer) => {
                writer.flush().map_err(|e| write_error(name, e))?;
                writer.get_ref()
            }
            Format::Delimited(writer) => {
                writer.flush().map_err(|e| write_error(name, e))?;
                writer.get_ref()
            }
        };
        writer.target.sync().map_err(|e| write_error(name, e))?;
        let counting = &writer.counting;
        Ok(Some(OutputMark {
            bytes: counting.bytes,
            sha256: hex(&counting.hasher.clone().finalize()),
            records: sink.records,
            format: sink.record_format.name().to_string(),
        }))
    }

    /// Flushes and closes the output.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.sync().map(drop)
    }
}

/// A write error naming the output.
fn write_error(name: &str, error: io::Error) -> anyhow::Error {
    io_failure(format!("cannot write to '{name}'"), &error)
}

/// What the file holds from its start: bytes, records (the writer passes bytes on, the
/// sink counts records) and the bytes' SHA-256.
#[derive(Clone)]
struct Counting {
    bytes: u64,
    records: u64,
    hasher: Sha256,
}

impl Counting {
    fn new() -> Self {
        Self {
            bytes: 0,
            records: 0,
            hasher: Sha256::new(),
        }
    }
}

impl std::fmt::Debug for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counting")
            .field("bytes", &self.bytes)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

/// A writer that counts and hashes the bytes that pass through it.
#[derive(Debug)]
struct CountingWriter {
    target: Target,
    counting: Counting,
}

impl Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.target.write(buf)?;
        self.counting.bytes += written as u64;
        self.counting.hasher.update(&buf[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.target.flush()
    }
}

/// The first bytes of an existing output: their hash, line count and last byte.
struct Prefix {
    hasher: Sha256,
    lines: u64,
    last: Option<u8>,
}

impl Prefix {
    /// Reads the first `length` bytes of `file` (which has at least that many).
    fn read(file: File, length: u64) -> io::Result<Self> {
        let mut prefix = Self {
            hasher: Sha256::new(),
            lines: 0,
            last: None,
        };
        let mut reader = BufReader::with_capacity(1 << 20, file.take(length));
        let mut read = 0u64;
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            prefix.hasher.update(chunk);
            prefix.lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            prefix.last = chunk.last().copied();
            let n = chunk.len();
            read += n as u64;
            reader.consume(n);
        }
        if read != length {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file became shorter while it was read",
            ));
        }
        Ok(prefix)
    }
}

/// Whether `path` names a FIFO, device or socket (which cannot be read back or cut).
fn is_special(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

#[derive(Debug)]
enum Target {
    Stdout(io::Stdout),
    File {
        file: File,
        /// Whether it is a regular file (which can be fsynced).
        regular: bool,
    },
}

impl Target {
    fn file(file: File) -> Self {
        // Only regular files are fsynced: /dev/null or a named pipe refuse it.
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        Target::File { file, regular }
    }

    /// Makes what was written durable: fsync for a file (data, and the length it grew to).
    fn sync(&self) -> io::Result<()> {
        match self {
            Target::Stdout(out) => {
                let mut out = out;
                out.flush()
            }
            Target::File { file, regular } => {
                if *regular {
                    file.sync_data()
                } else {
                    Ok(())
                }
            }
        }
    }
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::Stdout(out) => out.write(buf),
            Target::File { file, .. } => file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::Stdout(out) => out.flush(),
            Target::File { file, .. } => file.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Record {
        t: u64,
        loss: Option<f64>,
    }

    #[test]
    fn resumed_output_is_cut_back_and_continued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let output = RecordOutput {
            target: OutputTarget::File(path.clone()),
            format: RecordFormat::Delimited(b','),
        };
        let mut sink = RecordSink::create(Some(&output)).unwrap();
        sink.write(&Record { t: 1, loss: None }).unwrap();
        let mark = sink.sync().unwrap().unwrap();
        sink.write(&Record {
            t: 2,
            loss: Some(0.5),
        })
        .unwrap();
        sink.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "t,loss\n1,\n2,0.5\n"
        );
        assert_eq!((mark.bytes, mark.records), (10, 1));
        assert_eq!(
            mark.sha256,
            super::super::checkpoint::sha256_hex(b"t,loss\n1,\n")
        );
        let mut sink = RecordSink::resume(Some(&output), &mark).unwrap();
        sink.write(&Record {
            t: 2,
            loss: Some(0.25),
        })
        .unwrap();
        let after = sink.sync().unwrap().unwrap();
        sink.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "t,loss\n1,\n2,0.25\n");
        // The hash and the count go on from the checkpoint's.
        assert_eq!(after.records, 2);
        assert_eq!(
            after.sha256,
            super::super::checkpoint::sha256_hex(text.as_bytes())
        );
        // Whatever the file no longer holds as recorded is refused, and left as it is.
        for (name, bad) in [
            (
                "longer",
                OutputMark {
                    bytes: 1000,
                    ..mark.clone()
                },
            ),
            (
                "other hash",
                OutputMark {
                    sha256: "00".repeat(32),
                    ..mark.clone()
                },
            ),
            (
                "other count",
                OutputMark {
                    records: 2,
                    ..mark.clone()
                },
            ),
        ] {
            assert!(RecordSink::resume(Some(&output), &bad).is_err(), "{name}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{name}");
        }
        // A cut inside a record.
        let mut cut = mark.clone();
        cut.bytes = 8;
        cut.sha256 = super::super::checkpoint::sha256_hex(b"t,loss\n1");
        assert!(RecordSink::resume(Some(&output), &cut).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn jsonl_uses_null_for_undefined() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let output = RecordOutput {
            target: OutputTarget::File(path.clone()),
            format: RecordFormat::Jsonl,
        };
        let mut sink = RecordSink::create(Some(&output)).unwrap();
        sink.write(&Record { t: 1, loss: None }).unwrap();
        sink.write(&Record {
            t: 2,
            loss: Some(1e-300),
        })
        .unwrap();
        sink.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"t\":1,\"loss\":null}\n{\"t\":2,\"loss\":1e-300}\n"
        );
    }
}
