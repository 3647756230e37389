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
