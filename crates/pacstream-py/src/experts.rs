//! The aggregation rules, all through the library's one face for them: settings as
//! `AggregatorParams` (whose `check` resolves each rule's defaults and refuses what a rule
//! does not take), the rule as `AnyAggregator`, rounds through the `Aggregator` trait, and
//! the summary and bound as the library gives them. Each Python class is one
//! [`aggregator_class!`] with its constructor.

use numpy::PyArray1;
use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorConfig, AggregatorParams, AnyAggregator, ExpertStep,
    LearningRate, Loss, LossRound, Rule,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde::{Deserialize, Serialize};

use crate::arrays;
use crate::errors::{guard, lib, library_error};
use crate::values::{from_json, serde_to_py, to_json};

/// A rule and the settings it was built from: what a Python object holds and snapshots.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Run {
    params: AggregatorParams,
    rule: AnyAggregator,
    #[serde(skip)]
    config: Option<AggregatorConfig>,
}

impl Run {
    fn new(params: AggregatorParams) -> PyResult<Self> {
        let config = lib(|| params.clone().check())?;
        let rule = lib(|| config.build())?;
        Ok(Self {
            params,
            rule,
            config: Some(config),
        })
    }

    fn config(&self) -> &AggregatorConfig {
        self.config
            .as_ref()
            .expect("a Run is built or restored with its config")
    }

    fn restore(text: &str, name: &str) -> PyResult<Self> {
        let mut run: Run = from_json(text, name)?;
        let config = run
            .params
            .clone()
            .check()
            .map_err(|e| PyValueError::new_err(format!("invalid {name} snapshot: {e}")))?;
        if run.rule.rule() != config.rule
            || run.rule.ledger().expert_losses().len() != config.n_experts
        {
            return Err(PyValueError::new_err(format!(
                "invalid {name} snapshot: its rule does not match its settings"
            )));
        }
        run.config = Some(config);
        Ok(run)
    }

    fn loss(&self) -> Loss {
        self.config().loss
    }
}

/// The learning rate from Python: a float is a fixed η; a name (`anytime`, `doubling`,
/// `adahedge`, `horizon` with `horizon=T`) is the library's schedule of that name.
fn rate(
    learning_rate: Option<&Bound<'_, PyAny>>,
    horizon: Option<u64>,
) -> PyResult<Option<LearningRate>> {
    let Some(value) = learning_rate else {
        return Ok(horizon.map(LearningRate::Horizon));
    };
    if let Ok(name) = value.cast::<PyString>() {
        let name = name.to_str()?;
        if let Some(horizon) = horizon {
            if name == LearningRate::Horizon(horizon).name() {
                return Ok(Some(LearningRate::Horizon(horizon)));
            }
        }
        let named = [
            LearningRate::Anytime,
            LearningRate::Doubling,
            LearningRate::AdaHedge,
        ];
        return named
            .into_iter()
            .find(|rate| rate.name() == name)
            .map(Some)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "invalid parameter `learning_rate`: a float η, \"anytime\", \"doubling\", \
                     \"adahedge\", or \"horizon\" with horizon=T, got {name:?}"
                ))
            });
    }
    if horizon.is_some() {
        return Err(PyValueError::new_err(
            "invalid parameter `horizon`: give it with learning_rate=\"horizon\" or alone",
        ));
    }
    Ok(Some(LearningRate::Fixed(value.extract::<f64>()?)))
}

/// The per-round columns of a batch.
#[derive(Debug, Default)]
struct Columns {
    prediction: Vec<f64>,
    loss: Vec<f64>,
    realised_loss: Vec<f64>,
    chosen: Vec<i64>,
    learning_rate: Vec<f64>,
    best_expert: Vec<i64>,
    regret: Vec<f64>,
}

impl Columns {
    fn push(&mut self, step: &ExpertStep) {
        self.prediction.push(step.prediction.unwrap_or(f64::NAN));
        self.loss.push(step.loss);
        self.realised_loss
            .push(step.realised_loss.unwrap_or(f64::NAN));
        self.chosen
            .push(step.chosen.map_or(-1, |c| i64::try_from(c).unwrap_or(-1)));
        // The library's None is an infinite rate (AdaHedge's follow the leader).
        self.learning_rate
            .push(step.learning_rate.unwrap_or(f64::INFINITY));
        self.best_expert
            .push(i64::try_from(step.best_expert).unwrap_or(-1));
        self.regret.push(step.regret);
    }

    fn into_dict(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("prediction", PyArray1::from_vec(py, self.prediction))?;
        out.set_item("loss", PyArray1::from_vec(py, self.loss))?;
        out.set_item("realised_loss", PyArray1::from_vec(py, self.realised_loss))?;
        out.set_item("chosen", PyArray1::from_vec(py, self.chosen))?;
        out.set_item("learning_rate", PyArray1::from_vec(py, self.learning_rate))?;
        out.set_item("best_expert", PyArray1::from_vec(py, self.best_expert))?;
        out.set_item("regret", PyArray1::from_vec(py, self.regret))?;
        Ok(out)
    }
}

/// The awake flags of row `row` of an n × N mask.
fn awake_row(mask: Option<&[bool]>, row: usize, n_experts: usize) -> Option<&[bool]> {
    mask.map(|m| &m[row * n_experts..(row + 1) * n_experts])
}

/// Checks that an optional awake mask has the shape of the batch.
fn check_mask(
    mask: Option<&numpy::PyReadonlyArray2<'_, bool>>,
    rows: usize,
    cols: usize,
) -> PyResult<()> {
    if let Some(mask) = mask {
        let shape = mask.as_array().dim();
        if shape != (rows, cols) {
            return Err(PyValueError::new_err(format!(
                "awake must have the shape of the batch, {rows} × {cols}, got {} × {}",
                shape.0, shape.1
            )));
        }
    }
    Ok(())
}

macro_rules! aggregator_class {
    ($class:ident, $name:literal, { $($extra:tt)* }) => {
        #[pyclass(module = "pacstream._pacstream", name = $name)]
        #[derive(Debug)]
        pub struct $class {
            run: Run,
        }

        #[pymethods]
        impl $class {
            $($extra)*

            /// Plays one round: every expert's advice (a sequence or 1-D float64 array),
            /// the outcome, and optionally which experts are awake (sleeping experts).
            /// Returns the round's record as a dict; on error the rule is unchanged.
            #[pyo3(signature = (advice, outcome, awake = None))]
            fn learn_one(
                &mut self,
                py: Python<'_>,
                advice: &Bound<'_, PyAny>,
                outcome: f64,
                awake: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                let advice = arrays::values(advice, "advice")?;
                let awake = awake.map(|a| arrays::flags(a, "awake")).transpose()?;
                let loss = self.run.loss();
                let round = AdviceRound { advice: &advice, outcome, awake: awake.as_deref() };
                let step = lib(|| self.run.rule.learn_advice(round, loss))?;
                serde_to_py(py, &step)
            }

            /// Plays one round of losses given directly (Hedge and FPL): every expert's
            /// loss, and optionally which experts are awake.
            #[pyo3(signature = (losses, awake = None))]
            fn learn_losses(
                &mut self,
                py: Python<'_>,
                losses: &Bound<'_, PyAny>,
                awake: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                let losses = arrays::values(losses, "losses")?;
                let awake = awake.map(|a| arrays::flags(a, "awake")).transpose()?;
                let round = LossRound { losses: &losses, awake: awake.as_deref() };
                let step = lib(|| self.run.rule.learn_losses(round))?;
                serde_to_py(py, &step)
            }

            /// Plays every round of a batch: `advice` T × N and `outcomes` of length T
            /// (C-ordered float64, read in place with the GIL released), `awake` an
            /// optional T × N bool mask. Returns a dict of arrays, one entry per round
            /// (NaN / -1 where the rule has no value, an infinite learning rate as inf).
            /// A bad round raises ValueError naming it; the rounds before it stay learned.
            #[pyo3(signature = (advice, outcomes, awake = None))]
            fn learn_many<'py>(
                &mut self,
                py: Python<'py>,
                advice: &Bound<'py, PyAny>,
                outcomes: &Bound<'py, PyAny>,
                awake: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyDict>> {
                let advice = arrays::rows(advice, "advice")?;
                let outcomes = arrays::vector(outcomes, "outcomes")?;
                let awake = awake.map(|a| arrays::mask(a, "awake")).transpose()?;
                let (t, n) = advice.as_array().dim();
                let n_outcomes = outcomes.as_array().len();
                if n_outcomes != t {
                    return Err(PyValueError::new_err(format!(
                        "outcomes must have one value per row of advice ({t}), got {n_outcomes}"
                    )));
                }
                check_mask(awake.as_ref(), t, n)?;
                let advice = advice.as_slice()?;
                let outcomes = outcomes.as_slice()?;
                let mask = awake.as_ref().map(|a| a.as_slice()).transpose()?;
                let loss = self.run.loss();
                let rule = &mut self.run.rule;
                let mut columns = Columns::default();
                py.detach(|| guard(|| {
                    for row in 0..t {
                        let round = AdviceRound {
                            advice: &advice[row * n..(row + 1) * n],
                            outcome: outcomes[row],
                            awake: awake_row(mask, row, n),
                        };
                        let step = rule
                            .learn_advice(round, loss)
                            .map_err(|e| round_error(e, row))?;
                        columns.push(&step);
                    }
                    Ok(())
                }))?;
                columns.into_dict(py)
            }

            /// [`learn_many`] for losses given directly (Hedge and FPL): `losses` T × N.
            #[pyo3(signature = (losses, awake = None))]
            fn learn_many_losses<'py>(
                &mut self,
                py: Python<'py>,
                losses: &Bound<'py, PyAny>,
                awake: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyDict>> {
                let losses = arrays::rows(losses, "losses")?;
                let awake = awake.map(|a| arrays::mask(a, "awake")).transpose()?;
                let (t, n) = losses.as_array().dim();
                check_mask(awake.as_ref(), t, n)?;
                let losses = losses.as_slice()?;
                let mask = awake.as_ref().map(|a| a.as_slice()).transpose()?;
                let rule = &mut self.run.rule;
                let mut columns = Columns::default();
                py.detach(|| guard(|| {
                    for row in 0..t {
                        let round = LossRound {
                            losses: &losses[row * n..(row + 1) * n],
                            awake: awake_row(mask, row, n),
                        };
                        let step = rule
                            .learn_losses(round)
                            .map_err(|e| round_error(e, row))?;
                        columns.push(&step);
                    }
                    Ok(())
                }))?;
                columns.into_dict(py)
            }

            /// The normalised weights of the experts for the next round.
            #[getter]
            fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
                PyArray1::from_vec(py, self.run.rule.weights())
            }

            /// Every expert's cumulative loss (on its awake rounds).
            #[getter]
            fn expert_losses<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
                PyArray1::from_slice(py, self.run.rule.ledger().expert_losses())
            }

            /// The learner's cumulative loss (the loss the bound is about: see the record).
            #[getter]
            fn cumulative_loss(&self) -> f64 {
                self.run.rule.ledger().learner_loss()
            }

            /// The regret against the best expert in hindsight.
            #[getter]
            fn regret(&self) -> f64 {
                self.run.rule.ledger().best_expert().1
            }

            /// The best expert in hindsight.
            #[getter]
            fn best_expert(&self) -> usize {
                self.run.rule.ledger().best_expert().0
            }

            /// The theorem's bound on the regret against the best expert, for exactly these
            /// settings, or None when no theorem covers them (see `guarantee`).
            #[getter]
            fn bound(&self) -> Option<f64> {
                self.run.rule.regret_bound().value()
            }

            /// What the bound bounds and under which theorem, or why there is none.
            #[getter]
            fn guarantee(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                serde_to_py(py, &self.run.rule.regret_bound())
            }

            /// The rounds played.
            #[getter]
            fn n_rounds(&self) -> u64 {
                self.run.rule.rounds()
            }

            /// The number of experts.
            #[getter]
            fn n_experts(&self) -> usize {
                self.run.config().n_experts
            }

            /// The settings by name, every default resolved.
            #[getter]
            fn settings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                serde_to_py(py, self.run.config())
            }

            /// The run's summary (totals, regret and its bound, every expert's loss,
            /// regret, bound and weight), the experts called `names` (default "0", "1"...).
            #[pyo3(signature = (names = None))]
            fn summary(&self, py: Python<'_>, names: Option<Vec<String>>) -> PyResult<Py<PyAny>> {
                let n = self.run.config().n_experts;
                let names = names.unwrap_or_else(|| (0..n).map(|i| i.to_string()).collect());
                if names.len() != n {
                    return Err(PyValueError::new_err(format!(
                        "names must name the {n} experts, got {}", names.len()
                    )));
                }
                let summary = self.run.config().summary(self.run.rule.as_dyn(), &names);
                serde_to_py(py, &summary)
            }

            /// The snapshot as JSON text (settings, weights, random state); `from_json`
            /// resumes it bit for bit.
            fn to_json(&self) -> PyResult<String> {
                to_json(&self.run)
            }

            /// Restores a snapshot written by `to_json`; a corrupt one raises ValueError.
            #[staticmethod]
            fn from_json(text: &str) -> PyResult<Self> {
                let run = Run::restore(text, $name)?;
                Ok(Self { run })
            }

            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
            ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyString>,))> {
                let text = to_json(&slf.borrow().run)?;
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

/// An error of round `row` of a batch, naming the round (the library's round errors carry
/// no row of their own).
fn round_error(error: pacstream::Error, row: usize) -> PyErr {
    let located = error.clone().at_row(row);
    if located == error {
        PyValueError::new_err(format!("round {row}: {error}"))
    } else {
        library_error(located)
    }
}

fn params(rule: Rule, n_experts: usize, seed: u64) -> AggregatorParams {
    AggregatorParams::new(rule, n_experts).seed(seed)
}

aggregator_class!(PyWeightedMajority, "WeightedMajority", {
    /// Deterministic weighted majority on binary advice (0/1): predicts the weighted
    /// majority, multiplies the weight of every wrong expert by β. Its mistakes are
    /// bounded by the lecture notes' theorem.
    #[new]
    #[pyo3(signature = (n_experts, *, beta = 0.5))]
    fn new(n_experts: usize, beta: f64) -> PyResult<Self> {
        let rate = lib(|| LearningRate::beta(beta))?;
        Ok(Self {
            run: Run::new(params(Rule::Wm, n_experts, 0).rate(rate))?,
        })
    }
});

aggregator_class!(
    PyRandomizedWeightedMajority,
    "RandomizedWeightedMajority",
    {
        /// Randomized weighted majority on binary advice: predicts 1 with the weight of the
        /// experts saying 1. β fixed, or a schedule (`learning_rate`: "doubling" by default,
        /// "anytime", "horizon" with `horizon`).
        #[new]
        #[pyo3(signature = (n_experts, *, beta = None, learning_rate = None, horizon = None, seed = 0))]
        fn new(
            n_experts: usize,
            beta: Option<f64>,
            learning_rate: Option<&Bound<'_, PyAny>>,
            horizon: Option<u64>,
            seed: u64,
        ) -> PyResult<Self> {
            let mut p = params(Rule::Rwm, n_experts, seed);
            p.rate = match beta {
                Some(beta) => Some(lib(|| LearningRate::beta(beta))?),
                None => rate(learning_rate, horizon)?,
            };
            Ok(Self { run: Run::new(p)? })
        }
    }
);

aggregator_class!(PyHedge, "Hedge", {
    /// Hedge (exponential weights in the decision-theoretic setting): pays the mixture
    /// loss Σ p_i ℓ_i. `learning_rate`: "adahedge" (default), a float η, "anytime",
    /// "doubling", or "horizon" with `horizon`. Given advice, each expert pays
    /// `loss(advice, outcome)`; `learn_losses` takes the losses directly.
    #[new]
    #[pyo3(signature = (n_experts, *, learning_rate = None, horizon = None, loss = None,
                        loss_bound = None, prior = None, sample = false, seed = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_experts: usize,
        learning_rate: Option<&Bound<'_, PyAny>>,
        horizon: Option<u64>,
        loss: Option<&str>,
        loss_bound: Option<f64>,
        prior: Option<Vec<f64>>,
        sample: bool,
        seed: u64,
    ) -> PyResult<Self> {
        let mut p = params(Rule::Hedge, n_experts, seed);
        p.rate = rate(learning_rate, horizon)?;
        p.loss = loss.map(parse_loss).transpose()?;
        p.loss_bound = loss_bound;
        p.prior = prior;
        p.sample = sample;
        Ok(Self { run: Run::new(p)? })
    }
});

aggregator_class!(PyEwa, "EWA", {
    /// The exponentially weighted average forecaster on real-valued advice: predicts
    /// Σ p_i ỹ_i and pays loss(ŷ, y). `loss`: "square" (default), "absolute",
    /// "pinball:τ"; `learning_rate` as for Hedge ("adahedge" by default); `gradient`
    /// charges the linearised losses.
    #[new]
    #[pyo3(signature = (n_experts, *, loss = None, learning_rate = None, horizon = None,
                        loss_bound = None, prior = None, gradient = false))]
    fn new(
        n_experts: usize,
        loss: Option<&str>,
        learning_rate: Option<&Bound<'_, PyAny>>,
        horizon: Option<u64>,
        loss_bound: Option<f64>,
        prior: Option<Vec<f64>>,
        gradient: bool,
    ) -> PyResult<Self> {
        let mut p = params(Rule::Ewa, n_experts, 0);
        p.rate = rate(learning_rate, horizon)?;
        p.loss = loss.map(parse_loss).transpose()?;
        p.loss_bound = loss_bound;
        p.prior = prior;
        p.gradient = gradient;
        Ok(Self { run: Run::new(p)? })
    }

    /// The forecast Σ p_i ỹ_i for this advice, without learning.
    fn predict(&self, advice: &Bound<'_, PyAny>) -> PyResult<f64> {
        let advice = arrays::values(advice, "advice")?;
        match &self.run.rule {
            AnyAggregator::Ewa(ewa) => lib(|| ewa.predict(&advice)),
            _ => Err(PyValueError::new_err("not an EWA rule")),
        }
    }
});

aggregator_class!(PyFpl, "FPL", {
    /// Follow the perturbed leader: each round, the expert whose cumulative loss minus an
    /// exponential perturbation is least. Needs the loss range `loss_bound` and a rate (a
    /// float η or `horizon`).
    #[new]
    #[pyo3(signature = (n_experts, loss_bound, *, learning_rate = None, horizon = None, loss = None, seed = 0))]
    fn new(
        n_experts: usize,
        loss_bound: f64,
        learning_rate: Option<&Bound<'_, PyAny>>,
        horizon: Option<u64>,
        loss: Option<&str>,
        seed: u64,
    ) -> PyResult<Self> {
        let mut p = params(Rule::Fpl, n_experts, seed);
        p.rate = rate(learning_rate, horizon)?;
        p.loss = loss.map(parse_loss).transpose()?;
        p.loss_bound = Some(loss_bound);
        Ok(Self { run: Run::new(p)? })
    }
});

/// A loss by the library's name (`square`, `absolute`, `zero-one`, `pinball:0.9`).
fn parse_loss(name: &str) -> PyResult<Loss> {
    name.parse::<Loss>().map_err(library_error)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWeightedMajority>()?;
    m.add_class::<PyRandomizedWeightedMajority>()?;
    m.add_class::<PyHedge>()?;
    m.add_class::<PyEwa>()?;
    m.add_class::<PyFpl>()?;
    Ok(())
}
