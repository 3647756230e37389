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

/// An error one worker met, shared with the others so that every worker stops at the same
/// round (a worker that left alone would leave the others waiting for it).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Failure {
    row: Option<u64>,
    message: String,
}

impl Failure {
    pub(crate) fn of(error: &Error) -> Self {
        match error {
            Error::Row { row, message } => Self {
                row: Some(*row),
                message: message.clone(),
            },
            other => Self {
                row: None,
                message: other.to_string(),
            },
        }
    }

    /// The error every worker stops with, given this worker's own `failure` and every
    /// worker's (its own among them): the earliest failed row's (errors not tied to a row
    /// last, the first by message among them), so that every worker, and so every process,
    /// reports the same error, whichever worker met it and whatever the order the failures
    /// arrived in. A worker that met that failure itself returns its own error whole.
    ///
    /// Each worker used to return its own error when it had one: with bad rows in the
    /// shares of two workers, a process reported the later row when its worker 0 met that
    /// one, while a one-worker run stops at the earlier.
    pub(crate) fn settle<'a>(
        failure: Option<Error>,
        failures: impl IntoIterator<Item = &'a Failure>,
    ) -> Option<Error> {
        let first = failures.into_iter().min_by(|a, b| {
            (a.row.unwrap_or(u64::MAX), &a.message).cmp(&(b.row.unwrap_or(u64::MAX), &b.message))
        })?;
        if let Some(own) = failure {
            let mine = Self::of(&own);
            if mine.row == first.row && mine.message == first.message {
                return Some(own);
            }
        }
        Some(match first.row {
            Some(row) => Error::Row {
                row,
                message: first.message.clone(),
            },
            None => Error::Cluster(format!("another worker stopped: {}", first.message)),
        })
    }
}
