//! Python bindings of pacstream: the extension module `pacstream._pacstream`, built by
//! maturin beneath the pure-Python package `pacstream` (`python/pacstream/`).
//!
//! The bindings are thin: every formula, default, check and bound is the library's. This
//! crate only
//!
//! - reads NumPy arrays without copying them, and refuses (never misreads) the ones it
//!   cannot read as rows of float64 ([`arrays`]);
//! - turns library errors into `ValueError` and a panic into `RuntimeError` ([`errors`]);
//! - turns the library's serde records, settings and snapshots into Python values
//!   ([`values`]);
//! - releases the GIL while a batch is learned;
//! - declares each learner once, through the generic wrappers of [`points`] (the learners
//!   of points, over `OnlineLearner` + `UnsupervisedLearner`) and [`experts`] (the
//!   aggregation rules, over `Aggregator`).

use pyo3::prelude::*;

/// Sets every builder field given (`Some`) on `params`: `set_given!(params, a, b)` is
/// `if let Some(v) = a { params = params.a(v) }` and so on.
macro_rules! set_given {
    ($params:ident, $($field:ident),+ $(,)?) => {
        $(
            if let Some(value) = $field {
                $params = $params.$field(value);
            }
        )+
    };
}

/// What a Python learner object holds, as the JSON snapshot its `to_json`, `from_json` and
/// pickling share.
trait Snapshot: Sized {
    /// The snapshot as JSON text.
    fn to_json(&self) -> PyResult<String>;
    /// The holding restored from `text`; a corrupt or inconsistent snapshot is a
    /// `ValueError` naming the class `name`.
    fn from_json(text: &str, name: &str) -> PyResult<Self>;
}

/// A Python class `$name` holding `run` (a [`Snapshot`]) with its `$methods`, then the
/// methods every learner shares: `to_json` and `from_json` (with the documentation given
/// after `to_json:` and `from_json:`), pickling through them, and copies.
macro_rules! snapshot_class {
    (
        $class:ident, $name:literal, $run:ty, { $($methods:tt)* },
        to_json: [$(#[$to_json:meta])*],
        from_json: [$(#[$from_json:meta])*] $(,)?
    ) => {
        #[pyclass(module = "pacstream._pacstream", name = $name)]
        #[derive(Debug)]
        pub struct $class {
            run: $run,
        }

        #[pymethods]
        impl $class {
            $($methods)*

            $(#[$to_json])*
            fn to_json(&self) -> PyResult<String> {
                $crate::Snapshot::to_json(&self.run)
            }

            $(#[$from_json])*
            #[staticmethod]
            fn from_json(text: &str) -> PyResult<Self> {
                Ok(Self {
                    run: $crate::Snapshot::from_json(text, $name)?,
                })
            }

            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
            ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyString>,))> {
                let text = $crate::Snapshot::to_json(&slf.borrow().run)?;
                let restore = slf.get_type().getattr("from_json")?;
                Ok((restore, (PyString::new(slf.py(), &text),)))
            }

            fn __copy__(&self) -> Self {
                Self { run: self.run.clone() }
            }

            fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
                Self { run: self.run.clone() }
            }
        }
    };
}

mod arrays;
mod errors;
mod experts;
mod kmeans;
mod points;
mod record;
mod values;

#[pymodule]
fn _pacstream(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<arrays::FeatureReader>()?;
    record::register(m)?;
    points::register(m)?;
    kmeans::register(m)?;
    experts::register(m)?;
    Ok(())
}
