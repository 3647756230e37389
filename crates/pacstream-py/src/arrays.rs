//! NumPy arrays in and out.
//!
//! A batch is read in place, without a copy, when it is a C-ordered (row-major) float64
//! array; anything else is refused with a message that says how to convert it, never read
//! as if it were one. `PyReadonlyArray2::as_slice` also succeeds on a Fortran-ordered array,
//! whose memory holds columns, not rows: reading it as rows would silently give other
//! points, so C order is checked first.
//!
//! A single point (`learn_one`) is small: a list, a tuple or a 1-D array of any stride is
//! copied into a vector (a 1-D array of another dtype is refused, as above).

use numpy::{
    Element, PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1,
    PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods, dtype,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// Checks that `x` is a NumPy array of `T` with `ndim` dimensions, in C order.
fn checked<'py, T: Element>(
    x: &Bound<'py, PyAny>,
    name: &str,
    ndim: usize,
    what: &str,
) -> PyResult<()> {
    let py = x.py();
    let Ok(array) = x.cast::<PyUntypedArray>() else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a NumPy array ({what}), got {}; convert it with \
             numpy.ascontiguousarray({name}, dtype=numpy.{})",
            x.get_type().name()?,
            dtype::<T>(py).str()?
        )));
    };
    let expected = dtype::<T>(py);
    if !array.dtype().is_equiv_to(&expected) {
        return Err(PyTypeError::new_err(format!(
            "{name} must have dtype {} ({what}), got {}; convert it with \
             numpy.ascontiguousarray({name}, dtype=numpy.{})",
            expected.str()?,
            array.dtype().str()?,
            expected.str()?
        )));
    }
    if array.ndim() != ndim {
        return Err(PyValueError::new_err(format!(
            "{name} must be a {ndim}-D array ({what}), got {} dimensions with shape {:?}",
            array.ndim(),
            array.shape()
        )));
    }
    if !array.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{name} must be C-contiguous (row-major, {what}): a Fortran-ordered or strided \
             array would be read in another order; pass numpy.ascontiguousarray({name})"
        )));
    }
    Ok(())
}

/// A batch of rows: an n × d C-ordered float64 array, borrowed without a copy.
pub fn rows<'py>(x: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArray2<'py, f64>> {
    checked::<f64>(x, name, 2, "one row per point")?;
    Ok(x.cast::<PyArray2<f64>>()?.readonly())
}

/// A C-ordered float64 vector, borrowed without a copy.
pub fn vector<'py>(x: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArray1<'py, f64>> {
    checked::<f64>(x, name, 1, "one value per round")?;
    Ok(x.cast::<PyArray1<f64>>()?.readonly())
}

/// An n × N C-ordered bool array (the awake mask of a batch of rounds).
pub fn mask<'py>(x: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArray2<'py, bool>> {
    checked::<bool>(x, name, 2, "one row of flags per round")?;
    Ok(x.cast::<PyArray2<bool>>()?.readonly())
}

/// One point (or one round's values): a sequence of numbers, or a 1-D float64 array of
/// any stride, copied.
pub fn values(x: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    let mut out = Vec::new();
    values_into(x, name, &mut out)?;
    Ok(out)
}

/// [`values`] into `out` (cleared first), which a learner keeps between rounds so that a
/// round allocates nothing. A list or a tuple, what `learn_one` is mostly given, is read
/// item by item without the sequence protocol.
pub fn values_into(x: &Bound<'_, PyAny>, name: &str, out: &mut Vec<f64>) -> PyResult<()> {
    out.clear();
    if let Ok(list) = x.cast::<PyList>() {
        out.reserve(list.len());
        for item in list.iter() {
            out.push(number(&item, name)?);
        }
        return Ok(());
    }
    if let Ok(tuple) = x.cast::<PyTuple>() {
        out.reserve(tuple.len());
        for item in tuple.iter() {
            out.push(number(&item, name)?);
        }
        return Ok(());
    }
    out.extend(values_slow(x, name)?);
    Ok(())
}

/// One item of a point given as a list or tuple.
fn number(item: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    item.extract::<f64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a sequence of numbers or a 1-D float64 array, got an item of type {}",
            item.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })
}

fn values_slow(x: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    if x.cast::<PyUntypedArray>().is_ok() {
        checked_1d::<f64>(x, name)?;
        return Ok(x
            .cast::<PyArray1<f64>>()?
            .readonly()
            .as_array()
            .iter()
            .copied()
            .collect());
    }
    x.extract::<Vec<f64>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a sequence of numbers or a 1-D float64 array, got {}",
            x.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })
}

/// One round's flags: a sequence of bools, or a 1-D bool array, copied.
pub fn flags(x: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<bool>> {
    if x.cast::<PyUntypedArray>().is_ok() {
        checked_1d::<bool>(x, name)?;
        return Ok(x
            .cast::<PyArray1<bool>>()?
            .readonly()
            .as_array()
            .iter()
            .copied()
            .collect());
    }
    x.extract::<Vec<bool>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a sequence of bools or a 1-D bool array"
        ))
    })
}

/// A 1-D array of `T`, any stride (it is read through its strides, then copied).
fn checked_1d<T: Element>(x: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let py = x.py();
    let array = x.cast::<PyUntypedArray>()?;
    let expected = dtype::<T>(py);
    if !array.dtype().is_equiv_to(&expected) {
        return Err(PyTypeError::new_err(format!(
            "{name} must have dtype {}, got {}",
            expected.str()?,
            array.dtype().str()?
        )));
    }
    if array.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "{name} must be a 1-D array, got shape {:?}",
            array.shape()
        )));
    }
    Ok(())
}
