//! Library errors and panics as Python exceptions.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A library error as a `ValueError`: every library error is about a value the caller gave
/// (a setting, a point, a snapshot), and its message names the parameter, row or column.
pub fn library_error(error: pacstream::Error) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Runs `work`, turning a panic (a broken internal invariant, never expected from user
/// input) into a `RuntimeError` rather than PyO3's `PanicException`, which derives from
/// `BaseException` and escapes `except Exception`.
pub fn guard<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in pacstream (please report it): {message}"
            )))
        }
    }
}

/// [`guard`] for a library call.
pub fn lib<T>(work: impl FnOnce() -> pacstream::Result<T>) -> PyResult<T> {
    guard(|| work().map_err(library_error))
}
