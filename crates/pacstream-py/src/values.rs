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

/// A Python value as the JSON value serde reads settings from: None, bool, int, float,
/// str, a sequence (list, tuple, 1-D array) or a dict with str keys. A float must be
/// finite (JSON has no NaN); anything else is a `TypeError`.
pub fn from_py(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Value> {
    use pyo3::exceptions::PyTypeError;
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        if let Ok(i) = value.extract::<i64>() {
            return Ok(Value::from(i));
        }
        return Ok(Value::from(value.extract::<u64>().map_err(|_| {
            PyValueError::new_err(format!(
                "invalid parameter `{name}`: {value} is out of range"
            ))
        })?));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        let f = f.value();
        return serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "invalid parameter `{name}`: must be finite, got {f}"
                ))
            });
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (key, item) in dict.iter() {
            let key: String = key.extract().map_err(|_| {
                PyTypeError::new_err(format!("`{name}`: the keys of a dict must be str"))
            })?;
            map.insert(key, from_py(&item, name)?);
        }
        return Ok(Value::Object(map));
    }
    if value.cast::<PyList>().is_ok() || value.cast::<PyTuple>().is_ok() {
        return value
            .try_iter()?
            .map(|item| from_py(&item?, name))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    // A NumPy array or scalar: through its Python values.
    if value.hasattr("tolist")? {
        let plain = value.call_method0("tolist")?;
        if !plain.is(value) {
            return from_py(&plain, name);
        }
    }
    Err(PyTypeError::new_err(format!(
        "`{name}` must be None, a bool, a number, a str, a sequence or a dict, got {}",
        value.get_type().name()?
    )))
}

/// A library enum by its serde name as `settings` shows it (`PointByPoint`), or the same
/// words in lower case with `-` or `_` (`point-by-point`).
pub fn named<E: DeserializeOwned>(value: &str, parameter: &str) -> PyResult<E> {
    let pascal: String = value
        .split(['-', '_'])
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect();
    serde_json::from_value(Value::String(value.to_owned()))
        .or_else(|_| serde_json::from_value(Value::String(pascal)))
        .map_err(|e| PyValueError::new_err(format!("invalid parameter `{parameter}`: {e}")))
}

/// [`named`] for a setting that may be left out (None).
pub fn named_given<E: DeserializeOwned>(
    value: Option<&str>,
    parameter: &str,
) -> PyResult<Option<E>> {
    value.map(|value| named(value, parameter)).transpose()
}
