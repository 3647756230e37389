//! The aggregation rules, all through the library's one face for them: settings as
//! `AggregatorParams` (whose `check` resolves each rule's defaults and refuses what a rule
//! does not take), the rule as `AnyAggregator`, rounds through the `Aggregator` trait, and
//! the summary and bound as the library gives them. Each Python class is one
//! [`aggregator_class!`] with its constructor.

use numpy::{PyArray1, PyArray2};
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
use crate::record::Record;
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

    fn loss(&self) -> Loss {
        self.config().loss
    }
}

impl crate::Snapshot for Run {
    fn to_json(&self) -> PyResult<String> {
        to_json(self)
    }

    fn from_json(text: &str, name: &str) -> PyResult<Self> {
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
        if let Some(horizon) = horizon
            && name == LearningRate::Horizon(horizon).name()
        {
            return Ok(Some(LearningRate::Horizon(horizon)));
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

/// The per-round columns of a batch; with `history`, also what a round's figure needs: the
/// weights the round was played with and, after it, every expert's cumulative loss and the
/// bound on the regret (NaN where the rule's theorem gives none).
#[derive(Debug, Default)]
struct Columns {
    prediction: Vec<f64>,
    loss: Vec<f64>,
    realised_loss: Vec<f64>,
    chosen: Vec<i64>,
    learning_rate: Vec<f64>,
    best_expert: Vec<i64>,
    regret: Vec<f64>,
    cumulative_loss: Vec<f64>,
    history: Option<History>,
}

/// The T × N and T columns of a batch's history.
#[derive(Debug, Default)]
struct History {
    n_experts: usize,
    weights: Vec<f64>,
    expert_cumulative_loss: Vec<f64>,
    bound: Vec<f64>,
}

impl Columns {
    fn new(rounds: usize, n_experts: usize, history: bool) -> Self {
        let mut columns = Columns {
            history: history.then(|| History {
                n_experts,
                weights: Vec::with_capacity(rounds * n_experts),
                expert_cumulative_loss: Vec::with_capacity(rounds * n_experts),
                bound: Vec::with_capacity(rounds),
            }),
            ..Columns::default()
        };
        for column in [
            &mut columns.prediction,
            &mut columns.loss,
            &mut columns.realised_loss,
            &mut columns.learning_rate,
            &mut columns.regret,
            &mut columns.cumulative_loss,
        ] {
            column.reserve(rounds);
        }
        columns
    }

    /// What is kept before a round: the weights it is played with.
    fn before(&mut self, rule: &AnyAggregator) {
        if let Some(history) = &mut self.history {
            history.weights.extend(rule.weights());
        }
    }

    /// What is kept after a round.
    fn push(&mut self, step: &ExpertStep, rule: &AnyAggregator) {
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
        self.cumulative_loss.push(rule.ledger().learner_loss());
        if let Some(history) = &mut self.history {
            history
                .expert_cumulative_loss
                .extend_from_slice(rule.ledger().expert_losses());
            history
                .bound
                .push(rule.regret_bound().value().unwrap_or(f64::NAN));
        }
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
        out.set_item(
            "cumulative_loss",
            PyArray1::from_vec(py, self.cumulative_loss),
        )?;
        if let Some(history) = self.history {
            let rows = history.bound.len();
            let table = |values: Vec<f64>| {
                ndarray::Array2::from_shape_vec((rows, history.n_experts), values)
                    .map(|a| PyArray2::from_owned_array(py, a))
                    .map_err(|e| PyValueError::new_err(e.to_string()))
            };
            out.set_item("weights", table(history.weights)?)?;
            out.set_item(
                "expert_cumulative_loss",
                table(history.expert_cumulative_loss)?,
            )?;
            out.set_item("bound", PyArray1::from_vec(py, history.bound))?;
        }
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
        snapshot_class!($class, $name, Run, {
            $($extra)*

            /// Plays one round: every expert's advice (a sequence or 1-D float64 array),
            /// the outcome, and optionally which experts are awake (sleeping experts).
            /// Returns the round's record (a read-only mapping); on error the rule is unchanged.
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
                Record::wrap(py, step)
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
                Record::wrap(py, step)
            }

            /// Plays every round of a batch: `advice` T × N and `outcomes` of length T
            /// (C-ordered float64, read in place with the GIL released), `awake` an
            /// optional T × N bool mask. Returns a dict of arrays, one entry per round
            /// (NaN / -1 where the rule has no value, an infinite learning rate as inf).
            /// A bad round raises ValueError naming it; the rounds before it stay learned.
            /// With `history`, also `weights` (T × N, the weights each round was played
            /// with), `expert_cumulative_loss` (T × N, after each round) and `bound` (the
            /// bound on the regret after each round, NaN where none).
            #[pyo3(signature = (advice, outcomes, awake = None, *, history = false))]
            fn learn_many<'py>(
                &mut self,
                py: Python<'py>,
                advice: &Bound<'py, PyAny>,
                outcomes: &Bound<'py, PyAny>,
                awake: Option<&Bound<'py, PyAny>>,
                history: bool,
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
                let mut columns = Columns::new(t, n, history);
                py.detach(|| guard(|| {
                    for row in 0..t {
                        let round = AdviceRound {
                            advice: &advice[row * n..(row + 1) * n],
                            outcome: outcomes[row],
                            awake: awake_row(mask, row, n),
                        };
                        columns.before(rule);
                        let step = rule
                            .learn_advice(round, loss)
                            .map_err(|e| round_error(e, row))?;
                        columns.push(&step, rule);
                    }
                    Ok(())
                }))?;
                columns.into_dict(py)
            }

            /// [`learn_many`] for losses given directly (Hedge and FPL): `losses` T × N.
            #[pyo3(signature = (losses, awake = None, *, history = false))]
            fn learn_many_losses<'py>(
                &mut self,
                py: Python<'py>,
                losses: &Bound<'py, PyAny>,
                awake: Option<&Bound<'py, PyAny>>,
                history: bool,
            ) -> PyResult<Bound<'py, PyDict>> {
                let losses = arrays::rows(losses, "losses")?;
                let awake = awake.map(|a| arrays::mask(a, "awake")).transpose()?;
                let (t, n) = losses.as_array().dim();
                check_mask(awake.as_ref(), t, n)?;
                let losses = losses.as_slice()?;
                let mask = awake.as_ref().map(|a| a.as_slice()).transpose()?;
                let rule = &mut self.run.rule;
                let mut columns = Columns::new(t, n, history);
                py.detach(|| guard(|| {
                    for row in 0..t {
                        let round = LossRound {
                            losses: &losses[row * n..(row + 1) * n],
                            awake: awake_row(mask, row, n),
                        };
                        columns.before(rule);
                        let step = rule
                            .learn_losses(round)
                            .map_err(|e| round_error(e, row))?;
                        columns.push(&step, rule);
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
        },
        to_json: [
            /// The snapshot as JSON text (settings, weights, random state); `from_json`
            /// resumes it bit for bit.
        ],
        from_json: [
            /// Restores a snapshot written by `to_json`; a corrupt one raises ValueError.
        ]);
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

    /// The forecast Σ p_i ỹ_i for this advice, without learning; with `awake`, over the
    /// awake experts only (the weights renormalised over them, as the round would play).
    #[pyo3(signature = (advice, awake = None))]
    fn predict(
        &self,
        advice: &Bound<'_, PyAny>,
        awake: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let advice = arrays::values(advice, "advice")?;
        let awake = awake.map(|a| arrays::flags(a, "awake")).transpose()?;
        match &self.run.rule {
            AnyAggregator::Ewa(ewa) => lib(|| ewa.predict_among(&advice, awake.as_deref())),
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

/// The settings of a rule given by its library name, from keyword arguments, with no
/// per-rule code: `loss` by the library's name, the rate as `learning_rate` (as for the
/// classes above), `eta` (a fixed η) or `beta` (weighted majority's β = e^{−η}); every
/// other keyword (`lambda_` for `lambda`) is the `AggregatorParams` field of that name, read through its serde
/// form, so that a rule's new setting is taken as soon as the library has it. A keyword
/// that is no field is refused by name; the library then checks the values and what the
/// rule takes (`AggregatorParams::check`), naming the setting it refuses.
fn params_from(
    rule: &str,
    n_experts: usize,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<AggregatorParams> {
    let rule = rule_named(rule)?;
    let mut params = AggregatorParams::new(rule, n_experts);
    let Some(settings) = settings else {
        return Ok(params);
    };
    let settings = settings.copy()?;
    let take = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        let value = settings.get_item(name)?.filter(|v| !v.is_none());
        settings.del_item(name).ok();
        Ok(value)
    };
    if let Some(loss) = take("loss")? {
        params.loss = Some(parse_loss(loss.extract::<&str>()?)?);
    }
    let learning_rate = take("learning_rate")?;
    let horizon = take("horizon")?.map(|h| h.extract::<u64>()).transpose()?;
    let eta = take("eta")?.map(|e| e.extract::<f64>()).transpose()?;
    let beta = take("beta")?.map(|b| b.extract::<f64>()).transpose()?;
    let given = [
        learning_rate.is_some() || horizon.is_some(),
        eta.is_some(),
        beta.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() > 1 {
        return Err(PyValueError::new_err(
            "invalid parameter `learning_rate`: give one of learning_rate (with horizon), eta \
             or beta",
        ));
    }
    params.rate = match (eta, beta) {
        (Some(eta), _) => Some(LearningRate::Fixed(eta)),
        (_, Some(beta)) => Some(lib(|| LearningRate::beta(beta))?),
        _ => rate(learning_rate.as_ref(), horizon)?,
    };
    let mut value = serde_json::to_value(&params)
        .map_err(|e| PyValueError::new_err(format!("cannot describe the settings: {e}")))?;
    let fields = value
        .as_object_mut()
        .ok_or_else(|| PyValueError::new_err("the settings are not a map"))?;
    let mut given = Vec::new();
    for (key, item) in settings.iter() {
        let key: String = key.extract()?;
        // Python spells a setting named by a reserved word with a trailing underscore
        // (`lambda_` for ridge's λ, as scikit-learn does): it is the field without it.
        let key = match key.strip_suffix('_') {
            Some(field) if field == "lambda" => field.to_string(),
            _ => key,
        };
        if matches!(key.as_str(), "rule" | "n_experts" | "rate") {
            return Err(PyValueError::new_err(format!(
                "invalid parameter `{key}`: give it as {}",
                match key.as_str() {
                    "rate" => "learning_rate, eta or beta",
                    _ => "the first arguments",
                }
            )));
        }
        if item.is_none() {
            continue;
        }
        fields.insert(key.clone(), crate::values::from_py(&item, &key)?);
        // Read after each field, so that a value of the wrong form is named.
        serde_json::from_value::<AggregatorParams>(value_of(fields))
            .map_err(|e| PyValueError::new_err(format!("invalid parameter `{key}`: {e}")))?;
        given.push(key);
    }
    let params: AggregatorParams = serde_json::from_value(value_of(fields))
        .map_err(|e| PyValueError::new_err(format!("invalid settings: {e}")))?;
    // A keyword that is no field was ignored by serde: refuse it.
    let read = serde_json::to_value(&params)
        .map_err(|e| PyValueError::new_err(format!("cannot describe the settings: {e}")))?;
    let known: Vec<String> = read
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(unknown) = given.iter().find(|key| !known.contains(key)) {
        return Err(PyValueError::new_err(format!(
            "invalid parameter `{unknown}`: not a setting of the aggregation rules (they take \
             loss, learning_rate, horizon, eta, beta and {})",
            known
                .iter()
                .filter(|k| !matches!(k.as_str(), "rule" | "n_experts" | "rate" | "loss"))
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(params)
}

fn value_of(fields: &serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
    serde_json::Value::Object(fields.clone())
}

/// A rule by its library name.
fn rule_named(name: &str) -> PyResult<Rule> {
    use clap::ValueEnum;
    Rule::from_str(name, false).map_err(|_| {
        PyValueError::new_err(format!(
            "invalid parameter `rule`: one of {:?}, got {name:?}",
            rule_names()
        ))
    })
}

/// The library's rules, by name.
fn rule_names() -> Vec<&'static str> {
    use clap::ValueEnum;
    Rule::value_variants().iter().map(|r| r.name()).collect()
}

aggregator_class!(PyAggregator, "Aggregator", {
    /// Any aggregation rule of the library, by its name (`Aggregator.rules()` lists them),
    /// with its settings as keywords: `loss` ("square", "absolute", "pinball:τ",
    /// "zero-one"), the rate as `learning_rate` (a float η or a schedule's name, with
    /// `horizon`), `eta` or `beta`, and any other setting of the library's aggregation
    /// settings by its name (`loss_bound`, `prior`, `gradient`, `sample`, `alpha`, `seed`,
    /// ...). The library resolves the rule's defaults and refuses, by name, a setting the
    /// rule does not take or a bad value (ValueError).
    #[new]
    #[pyo3(signature = (rule, n_experts, **settings))]
    fn new(rule: &str, n_experts: usize, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(Self {
            run: Run::new(params_from(rule, n_experts, settings)?)?,
        })
    }

    /// The names of the library's aggregation rules.
    #[staticmethod]
    fn rules() -> Vec<&'static str> {
        rule_names()
    }

    /// The rule's name.
    #[getter]
    fn rule(&self) -> &'static str {
        self.run.config().rule.name()
    }

    /// The forecast of the rule for this round's advice (a 1-D array of N values, or a
    /// T × N array: one forecast per row, each with the current weights), without
    /// learning: the prediction the rule would make in its next round, as the library
    /// computes it (None, or NaN in an array, for the rules that choose an expert rather
    /// than forecast, Hedge and FPL).
    #[pyo3(signature = (advice, awake = None))]
    fn predict(
        &self,
        py: Python<'_>,
        advice: &Bound<'_, PyAny>,
        awake: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::IntoPyObjectExt;
        let two_d = advice
            .cast::<numpy::PyUntypedArray>()
            .is_ok_and(|a| numpy::PyUntypedArrayMethods::ndim(a) == 2);
        let loss = self.run.loss();
        // The round is played on a copy with a placeholder outcome: a rule's prediction
        // is made before the outcome is revealed, so it does not depend on it.
        let forecast = |advice: &[f64], awake: Option<&[bool]>| -> pacstream::Result<Option<f64>> {
            let mut copy = self.run.rule.clone();
            let round = AdviceRound {
                advice,
                outcome: 0.0,
                awake,
            };
            Ok(copy.learn_advice(round, loss)?.prediction)
        };
        if !two_d {
            let advice = arrays::values(advice, "advice")?;
            let awake = awake.map(|a| arrays::flags(a, "awake")).transpose()?;
            return lib(|| forecast(&advice, awake.as_deref()))?.into_py_any(py);
        }
        let advice = arrays::rows(advice, "advice")?;
        let awake = awake.map(|a| arrays::mask(a, "awake")).transpose()?;
        let (t, n) = advice.as_array().dim();
        check_mask(awake.as_ref(), t, n)?;
        let values = advice.as_slice()?;
        let mask = awake.as_ref().map(|a| a.as_slice()).transpose()?;
        let forecasts = py.detach(|| {
            guard(|| {
                (0..t)
                    .map(|row| {
                        forecast(&values[row * n..(row + 1) * n], awake_row(mask, row, n))
                            .map(|p| p.unwrap_or(f64::NAN))
                            .map_err(|e| round_error(e, row))
                    })
                    .collect::<PyResult<Vec<f64>>>()
            })
        })?;
        PyArray1::from_vec(py, forecasts).into_py_any(py)
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
    m.add_class::<PyAggregator>()?;
    Ok(())
}
