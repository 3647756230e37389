"""The conventions of River and scikit-learn, checked by their own suites."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from river import checks as river_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

import pacstream.river as pr
import pacstream.sklearn as psk

# --- River ------------------------------------------------------------------------------------


def _river_models():
    for cls in (pr.SequentialKMeans, pr.Paco, pr.EWARegressor):
        for params in cls._unit_test_params():
            yield pytest.param(cls(**params), id=cls.__name__)


@pytest.mark.parametrize("model", list(_river_models()))
def test_river_check_estimator(model):
    # River 0.26.1 keeps check_estimator in river.checks (river.utils.estimator_checks is
    # the location of older releases).
    river_checks.check_estimator(model)


def test_river_kmeans_learns_dicts_like_the_core():
    import pacstream as ps

    rng = np.random.default_rng(0)
    X = np.ascontiguousarray(rng.normal(size=(100, 3)))
    model = pr.SequentialKMeans(n_clusters=2, init_size=10, seed=3)
    for row in X:
        model.learn_one({"b": row[1], "a": row[0], "c": row[2]})
    core = ps.SequentialKMeans(2, init_size=10, seed=3)
    core.learn_many(X)
    assert model.cumulative_loss == core.cumulative_loss
    np.testing.assert_array_equal(np.array([list(c.values()) for c in model.centers.values()]), core.centres)


def test_river_learn_many_on_a_dataframe_equals_learn_one():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(60, 2)), columns=["x", "y"])
    batch = pr.SequentialKMeans(n_clusters=2, init_size=10, seed=1)
    batch.learn_many(frame)
    single = pr.SequentialKMeans(n_clusters=2, init_size=10, seed=1)
    for _, row in frame.iterrows():
        single.learn_one(row.to_dict())
    assert pickle.dumps(batch) == pickle.dumps(single)
    np.testing.assert_array_equal(batch.predict_many(frame).to_numpy(), [single.predict_one(r.to_dict()) for _, r in frame.iterrows()])


def test_ewa_regressor_favours_the_better_model_and_keeps_its_bound():
    from river import datasets
    from river import linear_model as lm
    from river import preprocessing as pp
    from river import stats
    from river import dummy

    model = pr.EWARegressor([dummy.StatisticRegressor(stats.Mean()), pp.StandardScaler() | lm.LinearRegression(intercept_lr=0.1)])
    for x, y in datasets.TrumpApproval().take(500):
        model.learn_one(x, y)
    losses = model._core.expert_losses
    assert losses[0] != losses[1]
    assert np.argmax(model.weights) == np.argmin(losses)
    assert 0.0 < model.bound
    assert model.regret <= model.bound


def test_ewa_regressor_experts_by_name_equal_the_core_on_the_same_forecasts():
    # Named experts read their forecast from x: the same rounds through the array-first
    # core give the same weights, bit for bit, and the same forecasts.
    import pacstream as ps
    from river import datasets

    pollsters = ["gallup", "ipsos", "morning_consult", "rasmussen", "you_gov"]
    named = pr.EWARegressor(pollsters, learning_rate=0.01, loss_bound=400.0)
    core = ps.EWA(len(pollsters), learning_rate=0.01, loss_bound=400.0)
    for x, y in datasets.TrumpApproval().take(200):
        advice = [x[p] for p in pollsters]
        assert named.predict_one(x) == core.predict(advice)
        named.learn_one(x, y)
        core.learn_one(advice, y)
    np.testing.assert_array_equal(named.weights, core.weights)
    assert named.regret == core.regret


def test_ewa_regressor_named_expert_sleeps_when_its_feature_is_missing():
    import pacstream as ps

    model = pr.EWARegressor(["a", "b", "c"], learning_rate=1.0, loss_bound=100.0)
    core = ps.EWA(3, learning_rate=1.0, loss_bound=100.0)
    rounds = [
        ({"a": 1.0, "b": 2.0, "c": 3.0}, 1.5),
        ({"a": 1.0, "c": float("nan")}, 1.0),  # b missing, c NaN: only a advises
        ({"a": None, "b": 2.5, "c": 0.0}, 2.0),  # a is None
        ({"b": 2.0, "c": 2.0}, 2.0),
    ]
    for x, y in rounds:
        awake = [x.get(k) is not None and x.get(k) == x.get(k) for k in "abc"]
        advice = [x[k] if awake[i] else 0.0 for i, k in enumerate("abc")]
        assert model.predict_one(x) == core.predict(advice, awake)
        model.learn_one(x, y)
        core.learn_one(advice, y, awake)
    np.testing.assert_array_equal(model.weights, core.weights)
    # Only a advised in round 2: the forecast is a's.
    fresh = pr.EWARegressor(["a", "b"], learning_rate=1.0, loss_bound=100.0)
    assert fresh.predict_one({"a": 4.0}) == 4.0
    # No expert advises: 0.0, and learning such a round changes nothing.
    assert fresh.predict_one({"z": 1.0}) == 0.0
    fresh.learn_one({"z": 1.0}, 3.0)
    np.testing.assert_array_equal(fresh.weights, [0.5, 0.5])
    with pytest.raises(TypeError):
        fresh.learn_one({"a": "high", "b": 1.0}, 1.0)


def test_feature_reader_reads_by_name_whatever_the_dicts_layout():
    from collections import OrderedDict
    from types import MappingProxyType

    from pacstream import _pacstream

    reader = _pacstream.FeatureReader(["b", "a", "b"])  # a name may be read twice
    rounds = [
        {"a": 1.0, "b": 2.0, "z": "not a forecast"},  # first layout
        {"a": 3.0, "b": 4.0, "z": "x"},  # same keys, same order: the one-pass read
        {"b": 5.0, "a": 6.0, "z": "x"},  # same keys, other order
        {"a": 7.0, "z": "x"},  # b missing
        {"".join(["a"]): 8.0, "".join(["b"]): 9.0},  # equal keys, other objects
        OrderedDict(a=10.0, b=11.0),  # a dict subclass
        MappingProxyType({"a": 12.0, "b": None}),  # not a dict; b None
        {"a": 13.0, "b": 14.0, "z": "x"},
    ]
    for x in rounds:
        values, present = reader.read(x)
        want = [x.get(k) for k in ["b", "a", "b"]]
        awake = [v is not None for v in want]
        np.testing.assert_array_equal(values, [v if v is not None else 0.0 for v in want])
        if all(awake):
            assert present is None
        else:
            np.testing.assert_array_equal(present, awake)
    with pytest.raises(TypeError):
        reader.read({"a": 1.0, "b": "high"})
    # Pickled as its names.
    again = pickle.loads(pickle.dumps(reader))
    np.testing.assert_array_equal(again.read({"a": 1.0, "b": 2.0})[0], [2.0, 1.0, 2.0])


def test_feature_reader_one_pass_reads_every_number_and_survives_a_changing_dict():
    """The one-pass read walks the dict with borrowed references: values that are not
    exact floats (ints, NumPy scalars, float subclasses) go through the general
    conversion, and Python code run during the walk (a `__float__` or a key's `__eq__`
    that changes the dict) must neither crash nor return a stale read."""
    from pacstream import _pacstream

    class Half(float):
        pass

    names = ["a", "b", "c", "d"]
    reader = _pacstream.FeatureReader(names)
    reader.read({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0})  # remembers the layout
    values, present = reader.read({"a": 1, "b": np.float64(2.5), "c": Half(3.5), "d": True})
    np.testing.assert_array_equal(values, [1.0, 2.5, 3.5, 1.0])
    assert present is None

    x = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}

    class Clears:
        def __float__(self):
            x.clear()
            return 7.0

    x["b"] = Clears()
    # The dict is emptied halfway through the walk: the read is discarded and redone by
    # lookups, which see the emptied dict (every expert asleep), not a mix of both.
    values, present = reader.read(x)
    np.testing.assert_array_equal(present, [False] * 4)

    class Key(str):
        # Equal to the remembered "a" but another object, and its comparison changes
        # the dict being read.
        def __eq__(self, other):
            y.pop("d", None)
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    reader.read({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0})
    y = {Key("a"): 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    values, present = reader.read(y)
    np.testing.assert_array_equal(present, [True, True, True, False])
    np.testing.assert_array_equal(values, [1.0, 2.0, 3.0, 0.0])


def test_ewa_regressor_with_named_experts_pickles_and_resumes():
    model = pr.EWARegressor(["a", "b"], learning_rate=0.5, loss_bound=100.0)
    twin = pr.EWARegressor(["a", "b"], learning_rate=0.5, loss_bound=100.0)
    for t in range(10):
        x = {"a": float(t), "b": 1.0}
        model.learn_one(x, float(t))
        twin.learn_one(x, float(t))
    model = pickle.loads(pickle.dumps(model))
    for t in range(10, 20):
        x = {"a": float(t), "b": 1.0}
        model.learn_one(x, float(t))
        twin.learn_one(x, float(t))
    np.testing.assert_array_equal(model.weights, twin.weights)


def test_ewa_regressor_mixes_named_experts_and_river_models():
    from river import dummy, stats

    model = pr.EWARegressor(["a", dummy.StatisticRegressor(stats.Mean())], learning_rate=0.5, loss_bound=100.0)
    for t in range(30):
        model.learn_one({"a": float(t)}, float(t))
    # The named expert forecasts the outcome exactly; the running mean does not.
    assert model.weights[0] > 0.99
    assert model.predict_one({"a": 31.0}) == pytest.approx(31.0, abs=0.5)


# --- scikit-learn ---------------------------------------------------------------------------

EXPECTED_FAILURES = {
    # Weighted seeding draws differ from the draws on repeated rows (k-means++ samples rows),
    # so the fits differ; scikit-learn's own KMeans declares the same expected failure.
    "check_sample_weight_equivalence_on_dense_data": (
        "k-means++ seeding draws rows: weights and repeated rows give other draws"
    ),
}


def _expected_failures(estimator):
    # KMeans.fit takes sample_weight; the stream estimators take none, so the check does
    # not run on them.
    return EXPECTED_FAILURES if isinstance(estimator, psk.KMeans) else {}


# Paco with 20 MCMC iterations per point (the library's default is 500), to keep the suite
# short; the checks are about conventions, not about the chain's mixing.
@parametrize_with_checks(
    [psk.KMeans(), psk.SequentialKMeans(n_clusters=3), psk.Paco(iterations=20), psk.PrincipalCurve()],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def test_sklearn_stream_clusterers_are_the_core_streams():
    import pacstream as ps

    rng = np.random.default_rng(6)
    X = np.ascontiguousarray(np.repeat(rng.normal(scale=5, size=(3, 2)), 100, axis=0) + rng.normal(size=(300, 2)))
    rng.shuffle(X)
    ours = psk.SequentialKMeans(n_clusters=3, random_state=4).fit(X)
    core = ps.SequentialKMeans(3, init_size=30, seed=4)
    core.learn_many(X)
    np.testing.assert_array_equal(ours.cluster_centers_, core.centres)
    np.testing.assert_array_equal(ours.labels_, core.predict(X))
    assert ours.cumulative_loss_ == core.cumulative_loss and ours.n_steps_ == 300
    # partial_fit in batches is the same stream
    parts = psk.SequentialKMeans(n_clusters=3, random_state=4)
    for start in range(0, 300, 60):
        parts.partial_fit(X[start : start + 60])
    np.testing.assert_array_equal(parts.cluster_centers_, core.centres)
    with pytest.raises(ValueError, match="features"):
        parts.partial_fit(X[:, :1])

    paco = psk.Paco(iterations=30, random_state=2).fit(X)
    core = ps.Paco(iterations=30, seed=2)
    core.learn_many(X)
    np.testing.assert_array_equal(paco.cluster_centers_, core.centres)
    assert paco.n_clusters_ == core.n_clusters
    assert paco.cumulative_loss_ == core.cumulative_loss


def test_sklearn_principal_curve_transform_is_the_projection_index():
    import pacstream as ps

    rng = np.random.default_rng(7)
    t = rng.uniform(0, 3, 300)
    X = np.ascontiguousarray(np.column_stack([t, np.sin(t)]) + rng.normal(scale=0.05, size=(300, 2)))
    ours = psk.PrincipalCurve(random_state=3).fit(X)
    core = ps.PrincipalCurve(seed=3)
    core.learn_many(X)
    np.testing.assert_array_equal(ours.vertices_, core.vertices)
    projection = core.project(X)
    index = ours.transform(X)
    assert index.shape == (300, 1)
    np.testing.assert_array_equal(index[:, 0], projection["arc_length"])
    np.testing.assert_array_equal(ours.project(X), projection["points"])
    assert ours.score(X) == -np.mean(projection["squared_distance"])
    with pytest.raises(ValueError, match="n_samples = 1"):
        psk.PrincipalCurve().fit(X[:1])


def test_sklearn_kmeans_is_the_core_fit():
    import pacstream as ps

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    ours = psk.KMeans(n_clusters=4, random_state=5, n_init=2).fit(X)
    core = ps.KMeans(4, n_init=2, seed=5).fit(np.ascontiguousarray(X))
    np.testing.assert_array_equal(ours.cluster_centers_, core.centres)
    assert ours.inertia_ == core.inertia
    assert ours.score(X) == -core.inertia_on(np.ascontiguousarray(X))
    np.testing.assert_array_equal(ours.transform(X), np.sqrt(core.transform(np.ascontiguousarray(X))))
    # Fortran-ordered or int input is converted by scikit-learn's validation, never misread
    np.testing.assert_array_equal(ours.predict(np.asfortranarray(X)), core.predict(np.ascontiguousarray(X)))


def test_sklearn_partial_fit_is_one_sequential_stream():
    import pacstream as ps

    rng = np.random.default_rng(4)
    X = np.ascontiguousarray(rng.normal(size=(500, 3)))
    ours = psk.KMeans(n_clusters=3, random_state=2)
    for start in range(0, 500, 100):
        ours.partial_fit(X[start : start + 100])
    core = ps.SequentialKMeans(3, init_size=100, seed=2)
    core.learn_many(X)
    np.testing.assert_array_equal(ours.cluster_centers_, core.centres)
    np.testing.assert_array_equal(ours.predict(X), core.predict(X))
    assert ours.score(X) == -core.inertia_on(X)
    assert ours.n_steps_ == 500
    with pytest.raises(ValueError, match="features"):
        ours.partial_fit(X[:, :2])
