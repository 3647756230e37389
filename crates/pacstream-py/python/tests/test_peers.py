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
