//! The per-round records of a run, written by worker 0 in stream order (one JSON object per
//! line), whatever the number of workers: the file a one-worker run writes. The workers
//! format the records of the rows they learned; worker 0 writes the bytes.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::checkpoint::truncate;
use crate::error::{Error, Result};

/// Worker 0's record file (other workers hold none).
#[derive(Debug)]
pub(crate) struct Records {
    path: PathBuf,
    writer: BufWriter<fs::File>,
    written: u64,
}

impl Records {
    /// Opens `path` afresh, or (resuming) keeps its first `resume_at` bytes.
    pub(crate) fn open(path: &Path, resume_at: Option<u64>) -> Result<Self> {
        let file = match resume_at {
            Some(len) => {
                truncate(path, len)?;
                fs::OpenOptions::new().append(true).open(path)
            }
            None => fs::File::create(path),
        }
        .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            writer: BufWriter::new(file),
            written: resume_at.unwrap_or(0),
        })
    }

    /// Flushes and syncs; returns the length a checkpoint records.
    pub(crate) fn sync(&mut self) -> Result<u64> {
        self.writer
            .flush()
            .and_then(|()| self.writer.get_ref().sync_data())
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(self.written)
    }
}

/// Where a run writes: its records (worker 0 only) and its checkpoints.
#[derive(Clone, Debug, Default)]
pub struct RunFiles {
    /// Per-round records, one JSON object per line, in stream order.
    pub records: Option<PathBuf>,
    /// Epoch checkpoints.
    pub checkpoints: Option<crate::checkpoint::Checkpoints>,
    /// Whether worker 0's process writes the run's summary. Keyed learners format their
    /// keys' summary entries only then (at 10^5 keys they are hundreds of megabytes); only
    /// process 0 need say so, every worker learns it at the start.
    pub summary: bool,
}

impl Records {
    /// Worker 0's record file when the run writes one (kept up to `resume_at` bytes when
    /// resuming); none on the other workers.
    pub(crate) fn for_worker(
        files: &RunFiles,
        index: usize,
        resume_at: Option<u64>,
    ) -> Result<Option<Self>> {
        match (&files.records, index) {
            (Some(path), 0) => Self::open(path, resume_at).map(Some),
            _ => Ok(None),
        }
    }

    /// Writes lines already formatted (each ending with a newline).
    pub(crate) fn write_bytes(&mut self, lines: &[u8]) -> Result<()> {
        self.writer
            .write_all(lines)
            .map_err(|e| Error::io(&self.path, e))?;
        self.written += lines.len() as u64;
        Ok(())
    }

    pub(crate) fn write_line(&mut self, line: &str) -> Result<()> {
        self.writer
            .write_all(line.as_bytes())
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(|e| Error::io(&self.path, e))?;
        self.written += line.len() as u64 + 1;
        Ok(())
    }
}
