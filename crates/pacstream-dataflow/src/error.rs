//! What can go wrong in a distributed run.

use std::path::Path;

/// An error of a distributed run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The library refused a setting or a row.
    #[error(transparent)]
    Library(#[from] pacstream::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A checkpoint could not be written or read back.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// Settings the distributed mode does not take.
    #[error("{0}")]
    Usage(String),
    /// A row of the input could not be read.
    #[error("input row {row}: {message}")]
    Row {
        /// 1-based data row.
        row: u64,
        /// Why.
        message: String,
    },
    /// timely could not start or a worker stopped.
    #[error("cluster: {0}")]
    Cluster(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// The result of a distributed run.
pub type Result<T, E = Error> = std::result::Result<T, E>;
