//! Per-round (or per-row) records, written as they come: JSON lines or delimited text.
//!
//! The sink counts the bytes it has written, so that a checkpoint can record the length of
//! the output at that moment and a resumed run can cut the file back to it and append.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

use anyhow::Context;
use serde::Serialize;

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
    Jsonl(BufWriter<Counting>),
    Delimited(Box<csv::Writer<Counting>>),
}

impl RecordSink {
    /// A sink that drops every record.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Opens `--output` for a new run (the file is created or truncated).
    pub fn create(output: Option<&RecordOutput>) -> anyhow::Result<Self> {
        Self::open(output, None)
    }

    /// Opens `--output` for a resumed run: the file is cut back to `length` bytes, its length
    /// at the checkpoint, and appended to. An output file shorter than that was changed
    /// since, and is refused.
    pub fn resume(output: Option<&RecordOutput>, length: u64) -> anyhow::Result<Self> {
        Self::open(output, Some(length))
    }

    fn open(output: Option<&RecordOutput>, resume_length: Option<u64>) -> anyhow::Result<Self> {
        let Some(output) = output else {
            return Ok(Self::disabled());
        };
        let (target, name) = match &output.target {
            OutputTarget::Stdout => (Target::Stdout(io::stdout()), "<stdout>".to_string()),
            OutputTarget::File(path) => {
                let name = path.display().to_string();
                let cannot = |e: io::Error| {
                    bad_input(format!("cannot create '{name}': {}", describe_io(&e)))
                };
                let file = match resume_length {
                    None => File::create(path).map_err(cannot)?,
                    Some(length) => {
                        let mut file = OpenOptions::new()
                            .read(true)
                            .write(true)
                            .create(length == 0)
                            .truncate(false)
                            .open(path)
                            .map_err(|e| {
                                bad_input(format!(
                                    "cannot reopen the output '{name}' to continue it: {}",
                                    describe_io(&e)
                                ))
                            })?;
                        let current = file
                            .metadata()
                            .with_context(|| format!("cannot read the length of '{name}'"))?
                            .len();
                        if current < length {
                            return Err(bad_input(format!(
                                "the output '{name}' has {current} bytes, fewer than the {length} \
                                 it had at the checkpoint: it was changed, so the run cannot \
                                 continue it"
                            )));
                        }
                        file.set_len(length)
                            .with_context(|| format!("cannot truncate '{name}'"))?;
                        file.seek(SeekFrom::Start(length))
                            .with_context(|| format!("cannot seek in '{name}'"))?;
                        file
                    }
                };
                // Only regular files are fsynced: /dev/null or a named pipe refuse it.
                let regular = file.metadata().is_ok_and(|m| m.is_file());
                (Target::File { file, regular }, name)
            }
        };
        let counting = Counting {
            target,
            bytes: resume_length.unwrap_or(0),
        };
        // A header row only at the start of the file: a resumed file already has one (a
        // checkpoint is made after at least one record, or records nothing).
        let write_header = resume_length.unwrap_or(0) == 0;
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
        Ok(Self {
            inner: Some(Sink {
                name,
                format,
                header_pending: write_header,
            }),
        })
    }

    /// Whether records are written anywhere.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Writes one record (a struct of scalars; `None` is `null` in JSON, an empty field in
    /// delimited text).
    pub fn write<R: Serialize>(&mut self, record: &R) -> anyhow::Result<()> {
        let Some(sink) = &mut self.inner else {
            return Ok(());
        };
        // Errors become io::Error where they are one, so that a closed pipe is recognised.
        let result = match &mut sink.format {
            Format::Jsonl(writer) => serde_json::to_writer(&mut *writer, record)
                .map_err(io::Error::from)
                .and_then(|()| writer.write_all(b"\n")),
            Format::Delimited(writer) => {
                writer.serialize(record).map_err(|e| match e.into_kind() {
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

    /// Flushes the records to the file and makes them durable (fsync); returns the output's
    /// length in bytes (`None` without `--output`). Called before a checkpoint, which must
    /// never describe output that a crash could lose.
    pub fn sync(&mut self) -> anyhow::Result<Option<u64>> {
        let Some(sink) = &mut self.inner else {
            return Ok(None);
        };
        let name = &sink.name;
        let counting = match &mut sink.format {
            Format::Jsonl(writer) => {
                writer.flush().map_err(|e| write_error(name, e))?;
                writer.get_ref()
            }
            Format::Delimited(writer) => {
                writer.flush().map_err(|e| write_error(name, e))?;
                writer.get_ref()
            }
        };
        counting.target.sync().map_err(|e| write_error(name, e))?;
        Ok(Some(counting.bytes))
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

/// A writer that counts the bytes that pass through it.
#[derive(Debug)]
struct Counting {
    target: Target,
    bytes: u64,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.target.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.target.flush()
    }
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
        let length = sink.sync().unwrap().unwrap();
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
        assert_eq!(length, 10);
        let mut sink = RecordSink::resume(Some(&output), length).unwrap();
        sink.write(&Record {
            t: 2,
            loss: Some(0.25),
        })
        .unwrap();
        sink.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "t,loss\n1,\n2,0.25\n"
        );
        assert!(RecordSink::resume(Some(&output), 1000).is_err());
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
