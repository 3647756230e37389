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
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

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

/// The forecasts of experts given by feature name (`pacstream.river.EWARegressor`), read
/// from each round's features as in opera, where the experts' forecasts come with the data.
///
/// `read(x)` returns the values in the order of the names as a float64 array and, when some
/// are missing, which are present (a bool array; `None` when all are): a name absent from
/// `x`, or whose value is `None` or NaN, is an expert asleep this round (opera's reading of a
/// missing forecast), its value 0.0. A value that is not a number raises `TypeError`.
///
/// **Why a class.** A stream's dicts are usually built with the same key objects in the same
/// order every round (a CSV reader's field names, a DataFrame's columns). So the reader
/// remembers the last dict's keys (holding them, so that their addresses stay theirs) and
/// where each name sat; a round whose dict has the same keys in the same order (the same
/// objects, or else equal ones) is read in one pass over its entries with no hashing: about
/// 125 instructions a value against 280–300 for a lookup per name (callgrind, N = 1,000).
/// Any other round (another mapping type, other keys) is read by lookups and, for a dict,
/// remembered for the next.
#[pyclass(module = "pacstream._pacstream")]
#[derive(Debug)]
pub struct FeatureReader {
    names: Py<PyList>,
    /// The keys of the last dict read, in its order.
    layout: Vec<Py<PyAny>>,
    /// For each name, its position in `layout` (None: not in that dict).
    positions: Vec<Option<usize>>,
    /// Whether some name reads the entry at that position.
    read_at: Vec<bool>,
    /// Scratch: the values of the last dict, by position.
    by_position: Vec<f64>,
}

#[pymethods]
impl FeatureReader {
    #[new]
    fn new(names: Bound<'_, PyList>) -> Self {
        Self {
            names: names.unbind(),
            layout: Vec::new(),
            positions: Vec::new(),
            read_at: Vec::new(),
            by_position: Vec::new(),
        }
    }

    /// Pickled (and copied) as its names: what it remembers is rebuilt on the first read.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyAny>, (Py<PyList>,)) {
        let names = slf.borrow().names.clone_ref(slf.py());
        (slf.get_type().into_any(), (names,))
    }

    /// The named values of `x` and which are present (None when all are).
    #[allow(clippy::type_complexity)]
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Option<Bound<'py, PyArray1<bool>>>,
    )> {
        let names = self.names.bind(py).clone();
        let values = match x.cast::<PyDict>() {
            Ok(dict) => match self.read_same_layout(dict)? {
                Some(values) => values,
                None => {
                    let values = lookups(py, x, &names)?;
                    self.remember(py, dict, &names)?;
                    values
                }
            },
            Err(_) => lookups(py, x, &names)?,
        };
        let mut values = values;
        let awake = if values.iter().any(|v| v.is_nan()) {
            let present = values.iter().map(|v| !v.is_nan()).collect();
            values
                .iter_mut()
                .filter(|v| v.is_nan())
                .for_each(|v| *v = 0.0);
            Some(PyArray1::from_vec(py, present))
        } else {
            None
        };
        Ok((PyArray1::from_vec(py, values), awake))
    }
}

impl FeatureReader {
    /// The values by name if `dict` has the remembered keys, by identity, in the same order
    /// (NaN for a missing or `None` value); `None` otherwise.
    ///
    /// This is the hot path of the River-compatible EWA over named experts (one call a
    /// round, N values), so it walks the dict with `PyDict_Next`'s borrowed references and
    /// reads exact floats with `PyFloat_AsDouble`: no reference counting per entry (a call
    /// each under the stable ABI) and no generic extraction. The instruction counts are in
    /// `docs/benchmarks.md`. Anything that can run Python code (a key equal but not
    /// identical, a value that is not an exact float) first takes an owned reference; such
    /// code may change the dict, which `PyDict_Next` tolerates (it checks the position
    /// against the current table), and a walk that does not end with exactly the
    /// remembered number of entries is discarded.
    #[allow(unsafe_code)]
    fn read_same_layout(&mut self, dict: &Bound<'_, PyDict>) -> PyResult<Option<Vec<f64>>> {
        use pyo3::ffi;
        if self.layout.is_empty() || dict.len() != self.layout.len() {
            return Ok(None);
        }
        let py = dict.py();
        self.by_position.clear();
        let mut position: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        for (remembered, &is_read) in self.layout.iter().zip(&self.read_at) {
            // SAFETY: `dict` is a live dict and the GIL is held (we have a `Bound`);
            // `PyDict_Next` writes borrowed references to the entry at `position`.
            let found =
                unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut position, &mut key, &mut value) };
            if found == 0 {
                return Ok(None);
            }
            let read = if key == remembered.as_ptr() {
                if !is_read {
                    f64::NAN
                // SAFETY: `value` is the borrowed reference just returned, valid as no
                // Python code has run since.
                } else if unsafe { ffi::PyFloat_CheckExact(value) } != 0 {
                    // SAFETY: an exact float: `PyFloat_AsDouble` reads it and runs no
                    // Python code.
                    unsafe { ffi::PyFloat_AsDouble(value) }
                } else {
                    // SAFETY: as above; an owned reference before `forecast` may run Python
                    // code (`__float__`).
                    forecast(&unsafe { Bound::from_borrowed_ptr(py, value) })?
                }
            } else {
                // Equal keys that are other objects (integers above 256, strings built
                // anew each round) cost a comparison, still no hashing. The comparison can
                // run Python code, so both references are owned first.
                // SAFETY: `key` and `value` are the borrowed references just returned,
                // valid as no Python code has run since.
                let (key, value) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, key),
                        Bound::from_borrowed_ptr(py, value),
                    )
                };
                if !key.eq(remembered.bind(py)).unwrap_or(false) {
                    return Ok(None);
                }
                if is_read { forecast(&value)? } else { f64::NAN }
            };
            self.by_position.push(read);
        }
        if dict.len() != self.layout.len() {
            return Ok(None);
        }
        Ok(Some(
            self.positions
                .iter()
                .map(|p| p.map_or(f64::NAN, |p| self.by_position[p]))
                .collect(),
        ))
    }

    /// Remembers the keys of `dict` and where each name sits among them.
    fn remember(
        &mut self,
        py: Python<'_>,
        dict: &Bound<'_, PyDict>,
        names: &Bound<'_, PyList>,
    ) -> PyResult<()> {
        let position_of = PyDict::new(py);
        self.layout.clear();
        for (position, key) in dict.keys().iter().enumerate() {
            position_of.set_item(&key, position)?;
            self.layout.push(key.unbind());
        }
        self.read_at = vec![false; self.layout.len()];
        self.positions.clear();
        for name in names.iter() {
            let position = match position_of.get_item(&name)? {
                Some(p) => Some(p.extract::<usize>()?),
                None => None,
            };
            if let Some(p) = position {
                self.read_at[p] = true;
            }
            self.positions.push(position);
        }
        Ok(())
    }
}

/// A named expert's value: NaN for `None` (asleep, as NaN itself), else a number.
fn forecast(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_none() {
        Ok(f64::NAN)
    } else {
        number(value, "a named expert's forecast")
    }
}

/// The values of `names` in the mapping `x` by one lookup each (NaN where missing or None).
fn lookups(py: Python<'_>, x: &Bound<'_, PyAny>, names: &Bound<'_, PyList>) -> PyResult<Vec<f64>> {
    let dict = x.cast::<PyDict>().ok();
    let mut values = Vec::with_capacity(names.len());
    for name in names.iter() {
        let value = match dict {
            Some(dict) => dict.get_item(&name)?,
            None => match x.get_item(&name) {
                Ok(value) => Some(value),
                Err(error) if error.is_instance_of::<PyKeyError>(py) => None,
                Err(error) => return Err(error),
            },
        };
        values.push(value.map_or(Ok(f64::NAN), |v| forecast(&v))?);
    }
    Ok(values)
}
