"""Per-row cost of sequential k-means from Python: pacstream's learn_many (one call, rows
read in place, GIL released) and learn_one (one call per row, a list), River's KMeans
(learn_one on dicts) and scikit-learn's MiniBatchKMeans.partial_fit (batches of 1,024),
side by side in one run, as ratios to pacstream's learn_many.

    benches/compare/run-python.sh   # its own virtual environment, the package built into it

k = 8, d = 5, n = 60,000 rows; the best of 3 repetitions of each. Two streams: the one
of the Rust criterion benchmark `sequential_kmeans_learn_one` (k groups whose means are
drawn uniformly in [0, 20)^d, unit Gaussian noise around them), so that learn_many can be
compared with its figure, and standard Gaussian rows (no groups: the nearest centre changes
unpredictably, which costs the Rust loop itself more).
"""

import time

import numpy as np

import pacstream as ps
from river import cluster
from sklearn.cluster import MiniBatchKMeans

K, D, N = 8, 5, 60_000
_rng = np.random.default_rng(0)
STREAMS = {
    "groups": np.ascontiguousarray(
        (20.0 * _rng.random((K, D)))[_rng.integers(0, K, N)] + _rng.normal(size=(N, D))
    ),
    "gaussian": _rng.normal(size=(N, D)),
}
X = rows = dicts = None


def use(stream):
    global X, rows, dicts
    X = STREAMS[stream]
    rows = X.tolist()
    dicts = [dict(enumerate(r)) for r in rows[:10_000]]


def best(run, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        n = run()
        times.append((time.perf_counter() - start) / n)
    return min(times)


def pacstream_many():
    ps.SequentialKMeans(K, seed=1).learn_many(X)
    return N


def pacstream_one():
    learner = ps.SequentialKMeans(K, seed=1)
    for r in rows:
        learner.learn_one(r)
    return N


def river_one():
    model = cluster.KMeans(n_clusters=K, seed=1)
    for x in dicts:
        model.learn_one(x)
    return len(dicts)


def sklearn_partial_fit():
    model = MiniBatchKMeans(n_clusters=K, random_state=1, n_init=1)
    for start in range(0, N, 1024):
        model.partial_fit(X[start : start + 1024])
    return N


for stream in STREAMS:
    use(stream)
    results = {
        "pacstream SequentialKMeans.learn_many": best(pacstream_many),
        "pacstream SequentialKMeans.learn_one (list)": best(pacstream_one),
        "River KMeans.learn_one (dict)": best(river_one),
        "scikit-learn MiniBatchKMeans.partial_fit (1,024 rows)": best(sklearn_partial_fit),
    }
    reference = results["pacstream SequentialKMeans.learn_many"]
    print(f"stream: {stream}")
    for name, seconds in results.items():
        print(f"  {name:55s} {seconds * 1e9:10.0f} ns/row  {seconds / reference:8.1f}x")
