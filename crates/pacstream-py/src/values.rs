//! The library's serde values (records, settings, summaries, snapshots) as Python values.

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `value` as Python: objects become dicts, arrays lists, numbers int or float, null None.
pub fn to_py(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py_any(py)?,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_py_any(py)?
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_py_any(py)?
            }
        }
        Value::String(s) => s.into_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// Any serialisable library value as Python.
pub fn serde_to_py<T: Serialize + ?Sized>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let value = serde_json::to_value(value)
        .map_err(|e| PyValueError::new_err(format!("cannot describe the value: {e}")))?;
    to_py(py, &value)
}

/// A snapshot as JSON text (floats kept exact: the workspace enables `float_roundtrip`).
pub fn to_json<T: Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("cannot write the snapshot: {e}")))
}

/// A snapshot from JSON text; a corrupt or inconsistent one is a `ValueError` (the library
/// validates every learner it restores).
pub fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> PyResult<T> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("invalid {what} snapshot: {e}")))
}
