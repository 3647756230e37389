"""Per-row cost of every learner of the Python package: `learn_one` (one call a row) and
`learn_many` (one call for all rows, NumPy in), side by side in one run, with the batch
k-means `fit` beside scikit-learn's `KMeans.fit` on the same data (the River and
scikit-learn streaming peers are in `python_kmeans.py` and `python_ewa.py`).

    benches/compare/run-python.sh python_learners.py

Aggregators: N = 10 experts, 20,000 rounds of advice in [0, 1] (binary for the weighted
majorities), absolute loss. Point learners: Gaussian mixtures, d = 5 for k-means, d = 2 for
PACBO (its default 500 chain steps a row) and the principal curve. The best of 3
repetitions of each; every repetition starts from a new learner.
"""

import time

import numpy as np
from sklearn.cluster import KMeans as SkKMeans

import pacstream as ps

rng = np.random.default_rng(0)
N, T = 10, 20_000
advice = rng.random((T, N))
binary = np.round(advice)
outcomes = rng.random(T)
binary_outcomes = np.round(outcomes)


def mixture(n, d, k=8):
    means = 20.0 * rng.random((k, d))
    return np.ascontiguousarray(means[rng.integers(0, k, n)] + rng.normal(size=(n, d)))


points = {"kmeans": mixture(60_000, 5), "paco": mixture(1_000, 2, 4), "curve": mixture(5_000, 2, 3)}


def best(run, rows, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) / rows)
    return min(times)


def aggregator_rows(name, make, advice, outcomes):
    def one():
        learner = make()
        for a, y in zip(advice.tolist(), outcomes.tolist()):
            learner.learn_one(a, y)

    def many():
        make().learn_many(advice, outcomes)

    return name, best(one, len(outcomes)), best(many, len(outcomes))


def point_rows(name, make, X, repeat=3):
    def one():
        learner = make()
        for x in X.tolist():
            learner.learn_one(x)

    def many():
        make().learn_many(X)

    return name, best(one, len(X), repeat), best(many, len(X), repeat)


rows = [
    aggregator_rows("WeightedMajority", lambda: ps.WeightedMajority(N), binary, binary_outcomes),
    aggregator_rows(
        "RandomizedWeightedMajority", lambda: ps.RandomizedWeightedMajority(N), binary, binary_outcomes
    ),
    aggregator_rows(
        "Hedge (anytime)", lambda: ps.Hedge(N, loss_bound=1.0, learning_rate="anytime"), advice, outcomes
    ),
    aggregator_rows("EWA (AdaHedge)", lambda: ps.EWA(N, loss="absolute"), advice, outcomes),
    aggregator_rows("FPL", lambda: ps.FPL(N, loss_bound=1.0, horizon=T), advice, outcomes),
]
for rule in ["mlpol", "mlprod", "mlewa", "boa", "fixed-share", "ftrl", "ogd", "ridge"]:
    settings = {"fixed-share": {"learning_rate": 1.0, "alpha": 0.01, "loss_bound": 1.0},
                "ftrl": {"learning_rate": 0.1}, "ogd": {"learning_rate": 0.1},
                "ridge": {"loss": "square", "lambda": 1.0}}.get(rule, {})
    settings.setdefault("loss", "absolute")
    rows.append(
        aggregator_rows(
            f"Aggregator({rule!r})",
            lambda rule=rule, settings=settings: ps.Aggregator(rule, N, **settings),
            advice,
            outcomes,
        )
    )
rows += [
    point_rows("SequentialKMeans k = 8, d = 5", lambda: ps.SequentialKMeans(8, seed=1), points["kmeans"]),
    point_rows("Paco d = 2", lambda: ps.Paco(seed=1), points["paco"], repeat=1),
    point_rows("PrincipalCurve d = 2", lambda: ps.PrincipalCurve(seed=1), points["curve"], repeat=1),
]

print(f"{'learner':34} {'learn_one per row':>18} {'learn_many per row':>19} {'ratio':>6}")
for name, one, many in rows:
    print(f"{name:34} {one * 1e6:15.2f} µs {many * 1e6:16.2f} µs {one / many:5.1f}x")

X = points["kmeans"]
ours = best(lambda: ps.KMeans(8, n_init=1, seed=1).fit(X), 1)
theirs = best(lambda: SkKMeans(n_clusters=8, n_init=1, random_state=1, algorithm="lloyd").fit(X), 1)
inertia_ours = ps.KMeans(8, n_init=1, seed=1).fit(X).inertia
inertia_theirs = SkKMeans(n_clusters=8, n_init=1, random_state=1, algorithm="lloyd").fit(X).inertia_
print(
    f"batch k-means 60,000 x 5, k = 8, n_init = 1: pacstream KMeans.fit {ours * 1e3:.1f} ms "
    f"(inertia {inertia_ours:.1f}), scikit-learn KMeans.fit {theirs * 1e3:.1f} ms "
    f"(inertia {inertia_theirs:.1f}): {theirs / ours:.1f}x"
)
