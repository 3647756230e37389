//! Batch k-means (k-means++ seeding, Lloyd's iterations) and the seeding choice shared with
//! sequential k-means.

use clap::ValueEnum;
use numpy::{PyArray1, PyArray2, ToPyArray};
use pacstream::kmeans::{
    Algorithm, Centres, Init, InitMethod, KMeans, KMeansConfig, KMeansParams, Refinement, Stopping,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde::{Deserialize, Serialize};

use crate::arrays;
use crate::errors::lib;
use crate::values::{from_json, named_given, serde_to_py, to_json};

/// The seeding: a method by the library's name (`greedy++`, `k-means++`, `random`) or the
/// initial centres as a k × d float64 array.
pub fn init_from(init: &Bound<'_, PyAny>) -> PyResult<Init> {
    if let Ok(name) = init.cast::<PyString>() {
        let name = name.to_str()?;
        return InitMethod::from_str(name, false)
            .map(InitMethod::to_init)
            .map_err(|_| {
                let names: Vec<&str> = InitMethod::value_variants()
                    .iter()
                    .map(|m| m.name())
                    .collect();
                PyValueError::new_err(format!(
                    "invalid parameter `init`: one of {names:?} or an array of centres, got {name:?}"
                ))
            });
    }
    let centres = arrays::rows(init, "init").map_err(|e| {
        PyTypeError::new_err(format!(
            "init must be a method name or an array of centres: {e}"
        ))
    })?;
    let centres = lib(|| Centres::from_array(centres.as_array()))?;
    Ok(Init::Given(centres))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct State {
    config: KMeansConfig,
    fit: Option<KMeans>,
}

/// Batch k-means: greedy k-means++ (or the chosen seeding), then Lloyd's iterations, the
/// best of `n_init` restarts. Settings are checked by the library; a bad one raises
/// ValueError naming it.
#[pyclass(module = "pacstream._pacstream", name = "KMeans")]
#[derive(Debug)]
pub struct PyKMeans {
    state: State,
}

impl PyKMeans {
    fn fitted(&self) -> PyResult<&KMeans> {
        self.state
            .fit
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("this KMeans is not fitted yet: call fit(X)"))
    }
}

#[pymethods]
impl PyKMeans {
    /// `stopping`: "centre-shift" (the default, scikit-learn's rule: the centres' total
    /// squared shift at most tol × the mean per-feature variance) or "changed-labels" (at
    /// most tol × n points changed cluster); `algorithm`: "auto", "lloyd" or "hamerly" (the same fit, two
    /// ways of computing it); `refinement`: "hartigan" (single-point moves after Lloyd,
    /// the default) or "none".
    #[new]
    #[pyo3(signature = (n_clusters, *, init = None, n_init = None, max_iter = None, tol = None,
                        stopping = None, algorithm = None, refinement = None, seed = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_clusters: usize,
        init: Option<&Bound<'_, PyAny>>,
        n_init: Option<usize>,
        max_iter: Option<usize>,
        tol: Option<f64>,
        stopping: Option<&str>,
        algorithm: Option<&str>,
        refinement: Option<&str>,
        seed: u64,
    ) -> PyResult<Self> {
        let mut params = KMeansParams::new(n_clusters).seed(seed);
        let init = init.map(init_from).transpose()?;
        let stopping = named_given::<Stopping>(stopping, "stopping")?;
        let algorithm = named_given::<Algorithm>(algorithm, "algorithm")?;
        let refinement = named_given::<Refinement>(refinement, "refinement")?;
        set_given!(
            params, init, n_init, max_iter, tol, stopping, algorithm, refinement
        );
        let config = lib(|| params.check())?;
        Ok(Self {
            state: State { config, fit: None },
        })
    }

    /// Fits the rows of `X` (an n × d C-ordered float64 array, read in place with the GIL
    /// released), optionally weighted; returns self.
    #[pyo3(signature = (X, sample_weight = None))]
    #[allow(non_snake_case)]
    fn fit<'py>(
        mut slf: PyRefMut<'py, Self>,
        X: &Bound<'py, PyAny>,
        sample_weight: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = X.py();
        let data = arrays::rows(X, "X")?;
        let weights = sample_weight
            .map(|w| arrays::vector(w, "sample_weight"))
            .transpose()?;
        let view = data.as_array();
        let weight_view = weights.as_ref().map(|w| w.as_array());
        let config = slf.state.config.clone();
        let fit = py.detach(|| {
            lib(|| match weight_view {
                Some(w) => config.fit_weighted(view, w),
                None => config.fit(view),
            })
        })?;
        slf.state.fit = Some(fit);
        Ok(slf)
    }

    /// The centres, one row each.
    #[getter]
    fn centres<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(self.fitted()?.centres().to_array().to_pyarray(py))
    }

    /// The label of every training row.
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let labels = self.fitted()?.labels().iter().map(|&l| l as i64).collect();
        Ok(PyArray1::from_vec(py, labels))
    }

    /// The inertia of the fit on its training data: Σ w(x) min_j ‖x − c_j‖².
    #[getter]
    fn inertia(&self) -> PyResult<f64> {
        Ok(self.fitted()?.report().inertia)
    }

    /// The report of the fit (iterations, convergence, re-seeded clusters), as a dict.
    #[getter]
    fn report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        serde_to_py(py, self.fitted()?.report())
    }

    /// The settings by name.
    #[getter]
    fn settings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        serde_to_py(py, &self.state.config.settings())
    }

    /// The nearest centre of every row of `X`.
    #[pyo3(signature = (X))]
    #[allow(non_snake_case)]
    fn predict<'py>(&self, X: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let py = X.py();
        let fit = self.fitted()?;
        let data = arrays::rows(X, "X")?;
        let view = data.as_array();
        let labels = py.detach(|| lib(|| fit.predict_many(view)))?;
        Ok(PyArray1::from_vec(
            py,
            labels.iter().map(|&l| l as i64).collect(),
        ))
    }

    /// The squared distance of every row of `X` to every centre (n × k).
    #[pyo3(signature = (X))]
    #[allow(non_snake_case)]
    fn transform<'py>(&self, X: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let py = X.py();
        let fit = self.fitted()?;
        let data = arrays::rows(X, "X")?;
        let view = data.as_array();
        let k = fit.centres().n_centres();
        let values = py.detach(|| {
            lib(|| {
                let mut out = Vec::with_capacity(view.nrows() * k);
                for (row, point) in view.rows().into_iter().enumerate() {
                    let point = point.as_slice().unwrap_or(&[]);
                    out.extend(fit.transform(point).map_err(|e| e.at_row(row))?);
                }
                Ok(out)
            })
        })?;
        let array = ndarray::Array2::from_shape_vec((view.nrows(), k), values)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(array.to_pyarray(py))
    }

    /// The inertia of the centres on `X`: Σ_x min_j ‖x − c_j‖² (lower is better).
    #[pyo3(signature = (X))]
    #[allow(non_snake_case)]
    fn inertia_on(&self, X: &Bound<'_, PyAny>) -> PyResult<f64> {
        let py = X.py();
        let fit = self.fitted()?;
        let data = arrays::rows(X, "X")?;
        let view = data.as_array();
        py.detach(|| lib(|| fit.score(view)))
    }

    /// The snapshot as JSON text (settings and fit).
    fn to_json(&self) -> PyResult<String> {
        to_json(&self.state)
    }

    /// Restores a snapshot written by `to_json`; a corrupt one raises ValueError.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self {
            state: from_json(text, "KMeans")?,
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyString>,))> {
        let text = to_json(&slf.borrow().state)?;
        let restore = slf.get_type().getattr("from_json")?;
        Ok((restore, (PyString::new(slf.py(), &text),)))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyKMeans>()?;
    Ok(())
}
