//! The learners of points (sequential k-means, PACBO, principal curves), all through one
//! generic wrapper, [`Run`], over the library's `UnsupervisedLearner`: `learn_one`,
//! `learn_many` (GIL released, rows read in place), the running totals, settings, and
//! snapshots (pickle and JSON). Each Python class is one [`point_learner!`] line plus its
//! constructor and its model's accessors.

use numpy::{PyArray1, PyArray2, ToPyArray};
use pacstream::describe::Describe;
use pacstream::eval::Prequential;
use pacstream::kmeans::{Centres, SequentialKMeans, SequentialKMeansParams, SequentialKMeansStep};
use pacstream::paco::{Memory, Paco, PacoParams, PacoStep, ProposalScale, Radius, Summation};
use pacstream::{Step, UnsupervisedLearner};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::arrays;
use crate::errors::{guard, lib, library_error};
use crate::kmeans::init_from;
use crate::record::Record;
use crate::values::{from_json, named_given, serde_to_py, to_json};

/// What `learn_many` writes per round beyond the loss: the label (nearest centre) and one
/// count (clusters, segments), each -1 where the round has none.
pub trait PointStep {
    /// The nearest centre, if the learner labels points.
    fn label(&self) -> Option<Option<usize>> {
        None
    }
    /// A per-round count and its name (`n_clusters`, `segments`).
    fn count(&self) -> Option<(&'static str, Option<usize>)> {
        None
    }
}

impl PointStep for SequentialKMeansStep {
    fn label(&self) -> Option<Option<usize>> {
        Some(self.label)
    }
}

impl PointStep for PacoStep {
    fn label(&self) -> Option<Option<usize>> {
        Some(self.label)
    }
    fn count(&self) -> Option<(&'static str, Option<usize>)> {
        Some(("n_clusters", self.n_clusters))
    }
}

impl PointStep for pacstream::curves::PrincipalCurveStep {
    fn count(&self) -> Option<(&'static str, Option<usize>)> {
        Some(("segments", self.segments))
    }
}

/// A learner of points and its running totals: what a Python object holds and snapshots.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run<L> {
    learner: L,
    totals: Prequential,
    /// The point of the current `learn_one`, kept so that a round allocates nothing.
    #[serde(skip)]
    scratch: Vec<f64>,
}

/// The columns of a batch of rounds.
#[derive(Debug, Default)]
struct Columns {
    loss: Vec<f64>,
    cumulative_loss: Vec<f64>,
    label: Vec<i64>,
    count: Vec<i64>,
    count_name: Option<&'static str>,
}

fn index(value: Option<usize>) -> i64 {
    value.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX))
}

impl<L> Run<L>
where
    L: UnsupervisedLearner + Serialize + DeserializeOwned + Send,
    L::Step: Serialize + PointStep + Layout + Send + Sync + 'static,
{
    pub fn new(learner: L) -> Self {
        Self {
            learner,
            totals: Prequential::new(),
            scratch: Vec::new(),
        }
    }

    pub fn learner(&self) -> &L {
        &self.learner
    }

    pub fn learn_one(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arrays::values_into(x, "x", &mut self.scratch)?;
        let (learner, point) = (&mut self.learner, &self.scratch);
        let step = lib(|| learner.learn_one(point))?;
        self.totals.record(&step);
        Record::wrap(py, step)
    }

    pub fn learn_many<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let array = arrays::rows(x, "X")?;
        let (n, d) = array.as_array().dim();
        let values = array.as_slice()?;
        let mut columns = Columns::default();
        let outcome = py.detach(|| {
            guard(|| {
                columns.loss.reserve(n);
                columns.cumulative_loss.reserve(n);
                if L::Step::has_label() {
                    columns.label.reserve(n);
                }
                if L::Step::count_name().is_some() {
                    columns.count.reserve(n);
                }
                for row in 0..n {
                    let point = &values[row * d..(row + 1) * d];
                    let step = self
                        .learner
                        .learn_one(point)
                        .map_err(|e| library_error(e.at_row(row)))?;
                    let totals = self.totals.record(&step);
                    columns.loss.push(step.loss().unwrap_or(f64::NAN));
                    columns.cumulative_loss.push(totals.cumulative_loss);
                    if let Some(label) = step.label() {
                        columns.label.push(index(label));
                    }
                    if let Some((name, count)) = step.count() {
                        columns.count_name = Some(name);
                        columns.count.push(index(count));
                    }
                }
                Ok(())
            })
        });
        // Rows before a bad one stay learned, as repeated learn_one would leave them; the
        // error names the row.
        outcome?;
        let out = PyDict::new(py);
        out.set_item("loss", PyArray1::from_vec(py, columns.loss))?;
        out.set_item(
            "cumulative_loss",
            PyArray1::from_vec(py, columns.cumulative_loss),
        )?;
        if L::Step::has_label() {
            out.set_item("label", PyArray1::from_vec(py, columns.label))?;
        }
        if let Some(name) = L::Step::count_name() {
            out.set_item(name, PyArray1::from_vec(py, columns.count))?;
        }
        Ok(out)
    }

    pub fn cumulative_loss(&self) -> f64 {
        self.totals.cumulative_loss()
    }

    pub fn n_rounds(&self) -> u64 {
        self.learner.n_rounds()
    }

    pub fn dim(&self) -> Option<usize> {
        self.learner.dim()
    }

    pub fn loss(&self, x: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        use pacstream::Model;
        let point = arrays::values(x, "x")?;
        let Some(model) = self.learner.model() else {
            return Ok(None);
        };
        let dim = self.learner.dim().unwrap_or(point.len());
        pacstream::data::check_point(&point, dim).map_err(library_error)?;
        guard(|| Ok(Some(model.loss(&point))))
    }
}

impl<L: Serialize + DeserializeOwned> crate::Snapshot for Run<L> {
    fn to_json(&self) -> PyResult<String> {
        to_json(self)
    }

    fn from_json(text: &str, name: &str) -> PyResult<Self> {
        from_json(text, name)
    }
}

/// The column layout of a family's steps, known without a step (so that an empty batch has
/// the same keys as any other).
pub trait Layout {
    /// Whether the steps carry a label.
    fn has_label() -> bool;
    /// The name of the per-round count, if any.
    fn count_name() -> Option<&'static str>;
}

impl Layout for SequentialKMeansStep {
    fn has_label() -> bool {
        true
    }
    fn count_name() -> Option<&'static str> {
        None
    }
}

impl Layout for PacoStep {
    fn has_label() -> bool {
        true
    }
    fn count_name() -> Option<&'static str> {
        Some("n_clusters")
    }
}

impl Layout for pacstream::curves::PrincipalCurveStep {
    fn has_label() -> bool {
        false
    }
    fn count_name() -> Option<&'static str> {
        Some("segments")
    }
}

/// The methods every learner of points shares, forwarded to [`Run`]; `$extra` holds the
/// class's constructor and model accessors (one `#[pymethods]` block per class).
macro_rules! point_learner {
    ($class:ident, $name:literal, $learner:ty, { $($extra:tt)* }) => {
        snapshot_class!($class, $name, Run<$learner>, {
            $($extra)*

            /// Pays the loss of the current model on the point `x` (a sequence of floats
            /// or a 1-D float64 array), then updates; returns the round's record (a read-only
            /// mapping, `Record`).
            /// On error (wrong dimension, NaN, inf) the learner is unchanged.
            fn learn_one(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                self.run.learn_one(py, x)
            }

            /// Learns every row of `X` (an n × d C-ordered float64 array, read in place with
            /// the GIL released), as repeated `learn_one`; returns a dict of arrays, one
            /// entry per round (`loss` NaN and indices -1 where undefined). A bad row
            /// raises ValueError naming it; the rows before it stay learned.
            #[pyo3(signature = (X))]
            #[allow(non_snake_case)]
            fn learn_many<'py>(
                &mut self,
                py: Python<'py>,
                X: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyDict>> {
                self.run.learn_many(py, X)
            }

            /// The loss the current model would pay on `x` (None before a model exists).
            fn loss(&self, x: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
                self.run.loss(x)
            }

            /// The learner's cumulative loss over the rounds it paid for.
            #[getter]
            fn cumulative_loss(&self) -> f64 {
                self.run.cumulative_loss()
            }

            /// The rounds played.
            #[getter]
            fn n_rounds(&self) -> u64 {
                self.run.n_rounds()
            }

            /// The dimension of the points, once the first point has fixed it.
            #[getter]
            fn dim(&self) -> Option<usize> {
                self.run.dim()
            }

            /// Whether the warm-up buffer is still filling.
            #[getter]
            fn warming_up(&self) -> bool {
                self.run.learner().is_warming_up()
            }

            /// What the learner did so far (as the library reports it), as a dict.
            #[getter]
            fn report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                serde_to_py(py, self.run.learner().report())
            }
        },
        to_json: [
            /// The snapshot as JSON text: learner, random state and totals. `from_json`
            /// resumes it bit for bit.
        ],
        from_json: [
            /// Restores a snapshot written by `to_json`; a corrupt or inconsistent one
            /// raises ValueError.
        ]);
    };
}

/// [`point_learner!`] for the learners whose model is a set of centres (sequential
/// k-means, PACBO): their centres, and the nearest centre, the distances and the inertia
/// of a batch of rows under them.
macro_rules! centre_learner {
    ($class:ident, $name:literal, $learner:ty, { $($extra:tt)* }) => {
        point_learner!($class, $name, $learner, {
            $($extra)*

            /// The centres, one row each (None before the first point; during a warm-up,
            /// what the learner holds then).
            #[getter]
            fn centres<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
                self.run.learner().centres().map(|c| c.to_array().to_pyarray(py))
            }

            /// The nearest centre of every row of `X` (-1 before a model exists).
            #[pyo3(signature = (X))]
            #[allow(non_snake_case)]
            fn predict<'py>(
                &self,
                py: Python<'py>,
                X: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyArray1<i64>>> {
                predict_rows(py, self.run.learner().centres(), self.run.dim(), X)
            }

            /// The squared distance of every row of `X` to every centre (n × k;
            /// ValueError before a model exists).
            #[pyo3(signature = (X))]
            #[allow(non_snake_case)]
            fn transform<'py>(
                &self,
                py: Python<'py>,
                X: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyArray2<f64>>> {
                transform_rows(py, self.run.learner().centres(), X)
            }

            /// The inertia of the current centres on `X`: the sum over its rows of the
            /// loss the model would pay (ValueError before a model exists).
            #[pyo3(signature = (X))]
            #[allow(non_snake_case)]
            fn inertia_on(&self, py: Python<'_>, X: &Bound<'_, PyAny>) -> PyResult<f64> {
                inertia_rows(py, self.run.learner().centres(), X)
            }
        });
    };
}

centre_learner!(PySequentialKMeans, "SequentialKMeans", SequentialKMeans, {
    /// Sequential (online) k-means: a warm-up buffer fitted by k-means++ and Lloyd, then
    /// each point moves its nearest centre by 1/n_j (optionally with decay and
    /// reassignment of starved centres). Settings are checked by the library; a bad one
    /// raises ValueError naming it.
    #[new]
    #[pyo3(signature = (n_clusters, *, init = None, init_size = None, decay_half_life = None,
                        reassignment_ratio = None, seed = 0))]
    fn new(
        n_clusters: usize,
        init: Option<&Bound<'_, PyAny>>,
        init_size: Option<usize>,
        decay_half_life: Option<f64>,
        reassignment_ratio: Option<f64>,
        seed: u64,
    ) -> PyResult<Self> {
        let mut params = SequentialKMeansParams::new(n_clusters).seed(seed);
        let init = init.map(init_from).transpose()?;
        set_given!(params, init, init_size, decay_half_life, reassignment_ratio);
        let config = lib(|| params.check())?;
        Ok(Self {
            run: Run::new(config.build()),
        })
    }

    /// The (decayed) number of points of each centre.
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.run.learner().counts())
    }

    /// The settings by name, as the library names them.
    #[getter]
    fn settings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        serde_to_py(py, &self.run.learner().settings())
    }

    /// None: no theorem bounds the regret of sequential k-means (the library gives none).
    #[getter]
    fn bound(&self) -> Option<f64> {
        None
    }
});

/// The nearest centre of each row of `x` under `centres` (all -1 when there are none).
pub fn predict_rows<'py>(
    py: Python<'py>,
    centres: Option<&Centres>,
    dim: Option<usize>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let array = arrays::rows(x, "X")?;
    let view = array.as_array();
    let Some(centres) = centres else {
        return Ok(PyArray1::from_vec(py, vec![-1; view.nrows()]));
    };
    let dim = dim.unwrap_or(centres.dim());
    let labels = py.detach(|| {
        lib(|| {
            view.rows()
                .into_iter()
                .enumerate()
                .map(|(row, point)| {
                    let point = point.as_slice().unwrap_or(&[]);
                    pacstream::data::check_point(point, dim).map_err(|e| e.at_row(row))?;
                    Ok(index(Some(centres.nearest(point).0)))
                })
                .collect::<pacstream::Result<Vec<i64>>>()
        })
    })?;
    Ok(PyArray1::from_vec(py, labels))
}

fn no_model() -> PyErr {
    PyValueError::new_err("no centres yet: learn some points first")
}

/// The squared distances of every row of `x` to every centre (the library's
/// `Centres::transform`).
pub fn transform_rows<'py>(
    py: Python<'py>,
    centres: Option<&Centres>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let centres = centres.ok_or_else(no_model)?;
    let array = arrays::rows(x, "X")?;
    let view = array.as_array();
    let k = centres.n_centres();
    let values = py.detach(|| {
        lib(|| {
            let mut out = Vec::with_capacity(view.nrows() * k);
            for (row, point) in view.rows().into_iter().enumerate() {
                let point = point.as_slice().unwrap_or(&[]);
                out.extend(centres.transform(point).map_err(|e| e.at_row(row))?);
            }
            Ok(out)
        })
    })?;
    let array = ndarray::Array2::from_shape_vec((view.nrows(), k), values)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(array.to_pyarray(py))
}

/// The sum of the model's losses (`Model::loss`) over the rows of `x`, each checked first.
pub fn inertia_rows(
    py: Python<'_>,
    centres: Option<&Centres>,
    x: &Bound<'_, PyAny>,
) -> PyResult<f64> {
    use pacstream::Model;
    let centres = centres.ok_or_else(no_model)?;
    let array = arrays::rows(x, "X")?;
    let view = array.as_array();
    py.detach(|| {
        lib(|| {
            let mut total = 0.0;
            for (row, point) in view.rows().into_iter().enumerate() {
                let point = point.as_slice().unwrap_or(&[]);
                pacstream::data::check_point(point, centres.dim()).map_err(|e| e.at_row(row))?;
                total += centres.loss(point);
            }
            Ok(total)
        })
    })
}

/// A radius given (or None): a number, or "auto" (the library's choice from the warm-up).
fn radius_from<R>(
    radius: Option<&Bound<'_, PyAny>>,
    auto: R,
    given: fn(f64) -> R,
) -> PyResult<Option<R>> {
    let Some(radius) = radius else {
        return Ok(None);
    };
    if let Ok(text) = radius.extract::<String>() {
        if text == "auto" {
            return Ok(Some(auto));
        }
        return Err(PyValueError::new_err(format!(
            "invalid parameter `radius`: a number or \"auto\", got {text:?}"
        )));
    }
    Ok(Some(given(radius.extract::<f64>()?)))
}

centre_learner!(PyPaco, "Paco", Paco, {
    /// PACBO (Li, Guedj & Loustau 2018): online clustering with an unknown and changing
    /// number of clusters, each round's clustering drawn from a Gibbs quasi-posterior by
    /// reversible-jump MCMC. Every setting left as None takes the library's calibrated
    /// default; a bad one raises ValueError naming it. `proposal`: "laplace" or "paper";
    /// `summation`: "auto", "point-by-point" or "index" (how the quasi-posterior sums the
    /// past losses; the same value either way).
    #[new]
    #[pyo3(signature = (*, max_k = None, radius = None, center = None, scale = None,
                        warmup = None, eta = None, coeff = None, proposal = None,
                        proposal_scale = None, iterations = None, window = None,
                        restart = None, summation = None, seed = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        max_k: Option<usize>,
        radius: Option<&Bound<'_, PyAny>>,
        center: Option<bool>,
        scale: Option<bool>,
        warmup: Option<usize>,
        eta: Option<f64>,
        coeff: Option<f64>,
        proposal: Option<&str>,
        proposal_scale: Option<f64>,
        iterations: Option<usize>,
        window: Option<usize>,
        restart: Option<bool>,
        summation: Option<&str>,
        seed: u64,
    ) -> PyResult<Self> {
        let mut params = PacoParams::new().seed(seed);
        let radius = radius_from(radius, Radius::Auto, Radius::Given)?;
        let proposal = named_given::<ProposalScale>(proposal, "proposal")?;
        let summation = named_given::<Summation>(summation, "summation")?;
        let memory = window.map(Memory::Window);
        set_given!(
            params,
            max_k,
            radius,
            center,
            scale,
            warmup,
            eta,
            coeff,
            proposal,
            proposal_scale,
            iterations,
            memory,
            restart,
            summation
        );
        let config = lib(|| params.check())?;
        Ok(Self {
            run: Run::new(config.build()),
        })
    }

    /// k̂, the number of clusters of the current clustering.
    #[getter]
    fn n_clusters(&self) -> Option<usize> {
        self.run.learner().n_clusters()
    }

    /// The validated settings, as a dict.
    #[getter]
    fn settings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        serde_to_py(py, self.run.learner().config())
    }

    /// The run against the best fixed k-clustering of the predicted rows in hindsight for
    /// every k ≤ max_k (k-means with `restarts` restarts: the regrets are under-estimates),
    /// and the bound of Li, Guedj & Loustau (2018, adaptive corollary) on the expected
    /// cumulative loss of the ideal sampler for this run's settings, or why there is none;
    /// as a dict, exactly as the library reports it.
    #[pyo3(signature = (restarts = 5, seed = 0))]
    fn hindsight(&self, py: Python<'_>, restarts: usize, seed: u64) -> PyResult<Py<PyAny>> {
        let learner = self.run.learner();
        let report = py.detach(|| {
            lib(|| pacstream::paco::oracle::hindsight_report(learner, restarts, seed))
        })?;
        serde_to_py(py, &report)
    }
});

point_learner!(
    PyPrincipalCurve,
    "PrincipalCurve",
    pacstream::curves::PrincipalCurveLearner,
    {
        /// Sequential principal curves (slpc, Li & Guedj 2021): a polygonal line through the
        /// stream, chosen each round by follow the perturbed leader over candidate curves.
        /// Settings left as None take the library's defaults; a bad one raises ValueError
        /// naming it. `radius`: a number or "auto"; `feedback`: "bandit" or "full";
        /// `estimator`: "label-efficient" or "paper".
        #[new]
        #[pyo3(signature = (*, radius = None, delta = None, max_segments = None, max_length = None,
                        penalty = None, eta_scale = None, feedback = None, estimator = None,
                        explore = None, alpha = None, local_vertices = None,
                        max_candidates = None, warmup = None, window = None, bin_side = None,
                        max_atoms = None, seed = 0))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            radius: Option<&Bound<'_, PyAny>>,
            delta: Option<f64>,
            max_segments: Option<usize>,
            max_length: Option<f64>,
            penalty: Option<f64>,
            eta_scale: Option<f64>,
            feedback: Option<&str>,
            estimator: Option<&str>,
            explore: Option<f64>,
            alpha: Option<f64>,
            local_vertices: Option<usize>,
            max_candidates: Option<usize>,
            warmup: Option<usize>,
            window: Option<usize>,
            bin_side: Option<f64>,
            max_atoms: Option<usize>,
            seed: u64,
        ) -> PyResult<Self> {
            use pacstream::curves::{Estimator, Feedback, Memory, PrincipalCurveParams, Radius};
            let mut params = PrincipalCurveParams::new().seed(seed);
            let radius = radius_from(radius, Radius::Auto, Radius::Given)?;
            let feedback = named_given::<Feedback>(feedback, "feedback")?;
            let estimator = named_given::<Estimator>(estimator, "estimator")?;
            let memory = window.map(Memory::Window);
            set_given!(
                params,
                radius,
                delta,
                max_segments,
                max_length,
                penalty,
                eta_scale,
                feedback,
                estimator,
                explore,
                alpha,
                local_vertices,
                max_candidates,
                warmup,
                memory,
                bin_side,
                max_atoms
            );
            let config = lib(|| params.check())?;
            Ok(Self {
                run: Run::new(config.build()),
            })
        }

        /// The vertices of the current curve, one row each (None during the warm-up).
        #[getter]
        fn vertices<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
            let Some(curve) = self.run.learner().curve() else {
                return Ok(None);
            };
            let dim = curve.dim();
            let rows = curve.vertices().len() / dim.max(1);
            let array = ndarray::Array2::from_shape_vec((rows, dim), curve.vertices().to_vec())
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok(Some(array.to_pyarray(py)))
        }

        /// The validated settings, as a dict.
        #[getter]
        fn settings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
            serde_to_py(py, self.run.learner().config())
        }

        /// Projects every row of `X` on the current curve: a dict with `points` (the nearest
        /// points of the curve), `arc_length` (the projection index) and `squared_distance`.
        /// ValueError before a curve exists.
        #[pyo3(signature = (X))]
        #[allow(non_snake_case)]
        fn project<'py>(
            &self,
            py: Python<'py>,
            X: &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyDict>> {
            let Some(curve) = self.run.learner().curve() else {
                return Err(PyValueError::new_err(
                    "no curve yet: the learner is warming up",
                ));
            };
            let array = arrays::rows(X, "X")?;
            let view = array.as_array();
            let (n, d) = view.dim();
            let (points, arc, dist) = py.detach(|| {
                lib(|| {
                    let mut points = Vec::with_capacity(n * d);
                    let mut arc = Vec::with_capacity(n);
                    let mut dist = Vec::with_capacity(n);
                    for (row, point) in view.rows().into_iter().enumerate() {
                        let point = point.as_slice().unwrap_or(&[]);
                        let projection = curve.project(point).map_err(|e| e.at_row(row))?;
                        points.extend_from_slice(&projection.point);
                        arc.push(projection.arc_length);
                        dist.push(projection.squared_distance);
                    }
                    Ok((points, arc, dist))
                })
            })?;
            let out = PyDict::new(py);
            let points = ndarray::Array2::from_shape_vec((n, d), points)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            out.set_item("points", points.to_pyarray(py))?;
            out.set_item("arc_length", PyArray1::from_vec(py, arc))?;
            out.set_item("squared_distance", PyArray1::from_vec(py, dist))?;
            Ok(out)
        }
    }
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySequentialKMeans>()?;
    m.add_class::<PyPaco>()?;
    m.add_class::<PyPrincipalCurve>()?;
    Ok(())
}
