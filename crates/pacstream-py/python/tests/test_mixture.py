"""The round's record, the generic aggregator (any rule by its library name) and the
opera-like Mixture over it."""

from __future__ import annotations

import collections.abc
import copy
import json
import pickle

import numpy as np
import pytest

import pacstream as ps
from pacstream import Mixture

# --- the record of a round ------------------------------------------------------------------


def test_a_record_reads_as_the_library_record():
    learner = ps.SequentialKMeans(2, init_size=2)
    learner.learn_one([0.0, 0.0])
    learner.learn_one([4.0, 0.0])
    record = learner.learn_one((1.0, 0.0))
    assert isinstance(record, collections.abc.Mapping)
    expected = {"round": 3, "label": 0, "loss": 1.0, "initialised": False, "reassigned": 0}
    assert record == expected
    assert dict(record) == expected and record.to_dict() == expected
    assert sorted(record) == sorted(expected) and len(record) == 5 and "loss" in record
    assert record.loss == record["loss"] == 1.0 and record.get("nope", 7) == 7
    with pytest.raises(KeyError):
        record["nope"]
    with pytest.raises(AttributeError):
        record.nope
    # pickles (and copies) as the dict it reads as
    assert pickle.loads(pickle.dumps(record)) == expected
    assert type(pickle.loads(pickle.dumps(record))) is dict
    # the record of an aggregation round too
    step = ps.EWA(2).learn_one([0.0, 1.0], 1.0)
    assert step["prediction"] == 0.5 and step["round"] == 1


def test_a_record_is_the_round_it_came_from():
    """Each record keeps its own round (not the learner's latest state)."""
    learner = ps.SequentialKMeans(2, init_size=2)
    records = [learner.learn_one([float(i), 0.0]) for i in range(6)]
    assert [r["round"] for r in records] == [1, 2, 3, 4, 5, 6]


# --- any rule by its library name ---------------------------------------------------------


def rounds(t=300, n=4, seed=0):
    rng = np.random.default_rng(seed)
    y = np.sin(np.arange(t) / 10.0)
    experts = y[:, None] + rng.normal(size=(t, n)) * np.linspace(0.1, 1.0, n)
    return np.ascontiguousarray(experts), y


def test_every_library_rule_is_reachable_by_its_name():
    rules = ps.Aggregator.rules()
    assert {"wm", "rwm", "hedge", "ewa", "fpl", "fixed-share", "mlpol"} <= set(rules)
    assert {"mlprod", "mlewa", "boa", "ftrl", "ogd", "ridge"} <= set(rules)
    experts, y = rounds()
    for rule in rules:
        settings = {
            "fpl": {"eta": 0.5, "loss_bound": 1.0, "loss": "absolute"},
            "fixed-share": {"eta": 1.0, "alpha": 0.05},
            "ftrl": {"eta": 0.5},
            "ogd": {"eta": 0.5},
            "ridge": {"lambda_": 1.0},
        }.get(rule, {})
        if ps.Aggregator(rule, 4, **settings).settings["loss"] == "zero-one":
            advice, outcome = (experts > 0).astype(np.float64), (y > 0).astype(np.float64)
        else:
            advice, outcome = np.clip(experts, -1, 1), y
        core = ps.Aggregator(rule, 4, **settings)
        core.learn_many(advice, outcome)
        assert core.rule == rule and core.n_rounds == len(y)


def test_the_generic_aggregator_is_the_named_class():
    experts, y = rounds()
    generic = ps.Aggregator("ewa", 4, loss="absolute", learning_rate="anytime", loss_bound=2.0)
    named = ps.EWA(4, loss="absolute", learning_rate="anytime", loss_bound=2.0)
    a = generic.learn_many(experts, y)
    b = named.learn_many(experts, y)
    for key in b:
        np.testing.assert_array_equal(a[key], b[key])
    assert generic.settings == named.settings
    np.testing.assert_array_equal(generic.weights, named.weights)


@pytest.mark.parametrize(
    "rule, settings, name",
    [
        ("ewa", {"alpha": 0.1}, "alpha"),
        ("fixed-share", {"alpha": 0.1}, "eta"),
        ("ewa", {"eta": -1.0}, "eta"),
        ("wm", {"loss": "square"}, "loss"),
        ("ewa", {"sample": True}, "sample"),
        ("mlpol", {"loss_bound": 1.0}, "loss_bound"),
        ("ewa", {"gradient": "yes"}, "gradient"),
        ("ewa", {"no_such_setting": 1}, "no_such_setting"),
        ("ewa", {"eta": 1.0, "beta": 0.5}, "learning_rate"),
        ("ewa", {"rate": 1.0}, "rate"),
        ("nope", {}, "rule"),
    ],
)
def test_a_bad_setting_is_refused_by_the_library_naming_it(rule, settings, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        ps.Aggregator(rule, 3, **settings)
    with pytest.raises(ValueError, match=f"`{name}`"):
        Mixture(rule, **settings)


def test_a_setting_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError):
        ps.Aggregator("ewa", 3, prior=object())
    with pytest.raises(TypeError):
        ps.Aggregator("ewa", 3, eta="fast")


def test_predict_is_the_forecast_of_the_next_round_without_learning():
    experts, y = rounds()
    core = ps.Aggregator("mlpol", 4)
    core.learn_many(experts[:100], y[:100])
    state = core.to_json()
    forecasts = core.predict(experts[100:110])
    assert core.to_json() == state  # nothing learned
    assert core.predict(experts[100]) == forecasts[0]
    step = core.learn_one(experts[100], y[100])
    assert step["prediction"] == forecasts[0]
    assert np.isnan(ps.Aggregator("hedge", 4).predict(experts[:2])).all()
    assert ps.Aggregator("hedge", 4).predict(experts[0]) is None


# --- Mixture -----------------------------------------------------------------------------


def test_mixture_batches_equal_rounds_one_at_a_time_and_keep_the_history():
    experts, y = rounds()
    batch = Mixture("mlpol", experts=experts, y=y)
    single = Mixture("mlpol")
    for row, outcome in zip(experts, y):
        single.update(row, outcome)
    for name in ("weights_history", "predictions", "losses", "cumulative_loss_history",
                 "expert_losses_history", "regret_history", "bound_history"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(single, name), err_msg=name)
    assert batch.weights_history.shape == (300, 4) and batch.n_rounds == 300
    # the history is the library's run: its last entries are the totals now
    assert batch.cumulative_loss_history[-1] == batch.cumulative_loss
    np.testing.assert_array_equal(batch.expert_losses_history[-1], batch.expert_losses)
    assert batch.regret_history[-1] == batch.regret and batch.bound_history[-1] == batch.bound
    # the weights of round 1 are uniform, and the best expert ends with the most weight
    np.testing.assert_array_equal(batch.weights_history[0], np.full(4, 0.25))
    assert np.argmax(batch.weights) == np.argmin(batch.expert_losses) == 0
    assert batch.regret <= batch.bound


def test_mixture_is_the_library_aggregator_round_for_round():
    experts, y = rounds()
    mixture = Mixture("fixed-share", loss="absolute", eta=2.0, alpha=0.02)
    out = mixture.update(experts, y)
    core = ps.Aggregator("fixed-share", 4, loss="absolute", eta=2.0, alpha=0.02)
    expected = core.learn_many(experts, y)
    for key in expected:
        np.testing.assert_array_equal(out[key], expected[key])
    assert mixture.summary()["regret"] == core.summary()["regret"]


def test_mixture_sleeping_experts_are_charged_nothing():
    experts, y = rounds(50, 3)
    awake = np.ones_like(experts, dtype=bool)
    awake[:, 2] = False
    experts[:, 2] = np.nan  # a sleeper's forecast is not read
    mixture = Mixture("ewa", experts=experts, y=y, awake=awake)
    assert mixture.expert_losses[2] == 0.0
    assert np.all(mixture.weights_history[:, 2] >= 0.0)


def test_mixture_update_is_atomic_and_names_the_bad_round():
    experts, y = rounds(60)
    mixture = Mixture("ewa")
    mixture.update(experts[:30], y[:30])
    before = mixture.to_json()
    bad = experts[30:].copy()
    bad[10, 1] = np.nan
    with pytest.raises(ValueError, match="10"):
        mixture.update(bad, y[30:])
    assert mixture.to_json() == before
    with pytest.raises(ValueError, match="columns"):
        mixture.update(experts[:5, :3], y[:5])
    with pytest.raises(ValueError):
        mixture.update(experts[30:], y[30:40])
    assert mixture.to_json() == before


@pytest.mark.parametrize("how", ["pickle", "json", "deepcopy"])
def test_mixture_resumes_bit_for_bit(how):
    experts, y = rounds()
    straight = Mixture("rwm", seed=4, experts=(experts[:150] > 0) * 1.0, y=(y[:150] > 0) * 1.0)
    if how == "pickle":
        resumed = pickle.loads(pickle.dumps(straight))
    elif how == "json":
        resumed = Mixture.from_json(straight.to_json())
    else:
        resumed = copy.deepcopy(straight)
    a = straight.update((experts[150:] > 0) * 1.0, (y[150:] > 0) * 1.0)
    b = resumed.update((experts[150:] > 0) * 1.0, (y[150:] > 0) * 1.0)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_array_equal(straight.weights_history, resumed.weights_history)
    assert straight.to_json() == resumed.to_json()


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '{"rule": "ewa"}'])
def test_a_corrupt_mixture_snapshot_raises_value_error(text):
    with pytest.raises(ValueError):
        Mixture.from_json(text)


def test_mixture_takes_pandas_frames_and_names_the_experts():
    pd = pytest.importorskip("pandas")
    experts, y = rounds(40, 3)
    frame = pd.DataFrame(experts, columns=["arima", "gam", "gbm"])
    mixture = Mixture("ewa", experts=frame, y=pd.Series(y))
    assert mixture.names == ["arima", "gam", "gbm"]
    assert mixture.summary()["best_expert"] in mixture.names


def test_mixture_figures(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    experts, y = rounds(100, 3)
    mixture = Mixture("ewa", learning_rate=1.0, loss_bound=4.0, experts=experts, y=y)
    weights = mixture.plot_weights()
    assert len(weights.collections) == 3  # one band per expert
    losses = mixture.plot_losses()
    lines = {line.get_label(): line for line in losses.get_lines()}
    np.testing.assert_array_equal(lines["mixture"].get_ydata(), mixture.cumulative_loss_history)
    np.testing.assert_array_equal(lines["2"].get_ydata(), mixture.expert_losses_history[:, 2])
    regret = mixture.plot_regret()
    lines = {line.get_label(): line for line in regret.get_lines()}
    np.testing.assert_array_equal(lines["regret"].get_ydata(), mixture.regret_history)
    np.testing.assert_array_equal(lines["bound"].get_ydata(), mixture.bound_history)
    figure = mixture.plot(str(tmp_path / "mixture.png"))
    assert (tmp_path / "mixture.png").stat().st_size > 0
    assert len(figure.axes) == 3
    # no bound for these settings: none is drawn
    unbounded = Mixture("fixed-share", eta=1.0, alpha=0.1, experts=experts, y=y)
    lines = {line.get_label() for line in unbounded.plot_regret().get_lines()}
    assert "bound" not in lines
