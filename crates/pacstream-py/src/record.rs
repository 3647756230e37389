//! The record of one round, handed to Python without building it.
//!
//! `learn_one` returns the library's per-round record. Building a dict of it every round
//! (through serde, keys and values as new Python objects) costs more than the round itself
//! at k = 8, d = 5, so the record is returned as a [`Record`]: it holds the library's step
//! and turns it into a dict the first time a field is read, through the same serde form as
//! before (so its keys and values are exactly those of the library's record, whatever the
//! learner). It is a read-only `collections.abc.Mapping` (`record["loss"]`,
//! `record.loss`, `dict(record)`, `record == {...}`), and pickles as the dict.

use pyo3::exceptions::{PyAttributeError, PyKeyError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMapping};
use serde::Serialize;

use crate::values::serde_to_py;

/// A library step, erased: what a [`Record`] turns into a dict on demand.
trait Step: Send + Sync {
    fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>>;
}

impl<T: Serialize + Send + Sync> Step for T {
    fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        serde_to_py(py, self)
    }
}

/// The record of one round: a read-only mapping from the library's field names to their
/// values (None where the round has none), built the first time it is read.
#[pyclass(module = "pacstream._pacstream", name = "Record", frozen, mapping)]
pub struct Record {
    step: Box<dyn Step>,
    dict: PyOnceLock<Py<PyDict>>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record").finish_non_exhaustive()
    }
}

impl Record {
    /// The record of `step`, not yet turned into Python values.
    pub fn wrap<T: Serialize + Send + Sync + 'static>(
        py: Python<'_>,
        step: T,
    ) -> PyResult<Py<PyAny>> {
        let record = Record {
            step: Box::new(step),
            dict: PyOnceLock::new(),
        };
        Ok(Py::new(py, record)?.into_any())
    }

    fn dict<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyDict>> {
        let dict = self.dict.get_or_try_init(py, || {
            let value = self.step.to_py(py)?;
            value
                .bind(py)
                .cast::<PyDict>()
                .map(|d| d.clone().unbind())
                .map_err(PyErr::from)
        })?;
        Ok(dict.bind(py))
    }
}

#[pymethods]
impl Record {
    /// The record as a new dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.dict(py)?.copy()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?
            .get_item(key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    /// A field as an attribute: `record.loss` is `record["loss"]`.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?
            .get_item(name)?
            .ok_or_else(|| PyAttributeError::new_err(format!("the record has no field {name:?}")))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.dict(py)?.len())
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.dict(py)?.contains(key)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.dict(py)?.keys().into_any().try_iter()?.into_any())
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0("keys")
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0("values")
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0("items")
    }

    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.dict(py)?.get_item(key)?.or(default))
    }

    /// Equal to a mapping with the same items (a dict, another record).
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = match other.cast::<Record>() {
            Ok(record) => record.get().dict(py)?.clone().into_any(),
            Err(_) => other.clone(),
        };
        self.dict(py)?.eq(other)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Record({})", self.dict(py)?.repr()?))
    }

    /// Pickles as the dict it reads as.
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let dict_type = py.get_type::<PyDict>().into_any();
        Ok((dict_type, (self.to_dict(py)?,)))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Record>()?;
    PyMapping::register::<Record>(m.py())?;
    Ok(())
}
