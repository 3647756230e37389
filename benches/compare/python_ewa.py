"""Per-round cost of exponentially weighted averaging at N = 1,000 experts from Python:
River's `ensemble.EWARegressor`, pacstream's River-compatible `pacstream.river.EWARegressor`
over the same River models and over the same forecasts given by feature name, and
pacstream's array-first `EWA` (`learn_one` on a round's advice, `learn_many` on all rounds),
side by side in one run, as ratios to River.

    benches/compare/run-python.sh   # its own virtual environment, the package built into it

The experts are River regressors that read their forecast from the round's features
(`x[i]`) and learn nothing, so that the models cost as little as a River model can and the
timings are those of the aggregation around them. River can only aggregate models; the
River-compatible wrapper can also take the experts by feature name (opera's setting: the
forecasts come with the data), which is the same computation on the same dicts without
2,000 Python calls a round. Both aggregators use the square loss and
the same fixed rate η = 0.5 (River's default), so their weights are the same up to
rounding: the script prints the largest difference after the run as a check that they
computed the same thing. (River's forecast is a running formula, not Σ p_i ŷ_i, so the
forecasts are not compared.) T = 300 rounds; the best of 3 repetitions of each.
"""

import time

import numpy as np
from river import base
from river import ensemble

import pacstream as ps
import pacstream.river as pr

N, T, ETA = 1_000, 300, 0.5
# The loss range B that pacstream's fixed rate asks for (for its bound; the weights do not
# depend on it): the squared errors of these forecasts stay far below it.
LOSS_BOUND = 100.0
rng = np.random.default_rng(0)
outcomes = np.sin(np.arange(T) / 10.0) + 0.1 * rng.normal(size=T)
bias = rng.normal(scale=0.5, size=N)
advice = np.ascontiguousarray(outcomes[:, None] + bias[None, :] + 0.2 * rng.normal(size=(T, N)))
rows = advice.tolist()
# Features named as River's data sets name them (strings); the experts read them by name.
NAMES = [f"expert_{i}" for i in range(N)]
features = [dict(zip(NAMES, row)) for row in rows]
# The same rounds keyed by integers: Python's dict compares integer keys above 256 by
# value, not identity, so each lookup costs more, for River's models and the named experts
# alike (printed as a second pair).
features_int = [dict(enumerate(row)) for row in rows]
ys = outcomes.tolist()


class Forecast(base.Regressor):
    """Expert i: the feature named i of the round, learning nothing."""

    def __init__(self, i):
        self.i = i

    def learn_one(self, x, y):
        pass

    def predict_one(self, x):
        return x[self.i]


def models(names=NAMES):
    return [Forecast(name) for name in names]


def best(run, repeat=3):
    times = []
    for _ in range(repeat):
        model, start = run()
        times.append((time.perf_counter() - start) / T)
    return min(times), model


def river_ewa(names=NAMES, rounds=features):
    model = ensemble.EWARegressor(models(names), learning_rate=ETA)
    start = time.perf_counter()
    for x, y in zip(rounds, ys):
        model.learn_one(x, y)
    return model, start


def river_ewa_int():
    return river_ewa(list(range(N)), features_int)


def pacstream_river_ewa():
    model = pr.EWARegressor(models(), learning_rate=ETA, loss_bound=LOSS_BOUND)
    start = time.perf_counter()
    for x, y in zip(features, ys):
        model.learn_one(x, y)
    return model, start


def pacstream_river_ewa_named(names=NAMES, rounds=features):
    model = pr.EWARegressor(list(names), learning_rate=ETA, loss_bound=LOSS_BOUND)
    start = time.perf_counter()
    for x, y in zip(rounds, ys):
        model.learn_one(x, y)
    return model, start


def pacstream_river_ewa_named_int():
    return pacstream_river_ewa_named(list(range(N)), features_int)


def pacstream_learn_one_list():
    model = ps.EWA(N, learning_rate=ETA, loss_bound=LOSS_BOUND)
    start = time.perf_counter()
    for row, y in zip(rows, ys):
        model.learn_one(row, y)
    return model, start


def pacstream_learn_one_array():
    model = ps.EWA(N, learning_rate=ETA, loss_bound=LOSS_BOUND)
    start = time.perf_counter()
    for t in range(T):
        model.learn_one(advice[t], ys[t])
    return model, start


def pacstream_learn_many():
    model = ps.EWA(N, learning_rate=ETA, loss_bound=LOSS_BOUND)
    start = time.perf_counter()
    model.learn_many(advice, outcomes)
    return model, start


runs = {
    "River 0.26 ensemble.EWARegressor.learn_one (River models)": river_ewa,
    "pacstream.river.EWARegressor.learn_one (the same River models)": pacstream_river_ewa,
    "pacstream.river.EWARegressor.learn_one (the forecasts by feature name)": pacstream_river_ewa_named,
    "pacstream.EWA.learn_one (a round's advice as a list)": pacstream_learn_one_list,
    "pacstream.EWA.learn_one (a round's advice as a NumPy row)": pacstream_learn_one_array,
    "pacstream.EWA.learn_many (all rounds, one call)": pacstream_learn_many,
    "River 0.26 ensemble.EWARegressor.learn_one (integer feature keys)": river_ewa_int,
    "pacstream.river.EWARegressor.learn_one (by name, integer feature keys)": pacstream_river_ewa_named_int,
}
results, finals = {}, {}
for name, run in runs.items():
    results[name], finals[name] = best(run)

reference = results["River 0.26 ensemble.EWARegressor.learn_one (River models)"]
reference_int = results["River 0.26 ensemble.EWARegressor.learn_one (integer feature keys)"]
print(f"N = {N:,} experts, T = {T} rounds, square loss, fixed η = {ETA}")
print("  (ratios to River on the same dicts: string feature names, or integer keys)")
for name, seconds in results.items():
    against = reference_int if "integer feature keys" in name else reference
    print(f"  {name:72s} {seconds * 1e6:10.1f} µs/round  {against / seconds:8.1f}x faster")

river_weights = np.array(finals["River 0.26 ensemble.EWARegressor.learn_one (River models)"].weights)
for name in list(runs)[1:]:
    ours = np.asarray(finals[name].weights)
    print(f"  largest |weight difference| with River: {np.max(np.abs(ours - river_weights)):.1e}"
          f"  ({name})")
