"""Expert aggregation: pacstream side by side with NumPy and River, in time per round.

Run through `run-experts.sh`, which installs the peers into benches/compare/.venv. Prints, for
N = 10, 1,000 and 1,000,000 experts:

- a vectorised NumPy Hedge round (exponential weights from cumulative losses with the
  log-sum-exp shift, the mixture loss, the update), the reference the experts spec quotes
  (about 8.6 µs per round at N = 1,000 on the project's machine class);
- River's `ensemble.EWARegressor` (learn_one + predict_one over N constant regressors), at the
  sizes River can take;
- pacstream's Hedge and EWA rounds, from the criterion benchmark `experts` (median).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

REPO = pathlib.Path(os.environ["REPO_DIR"])


def numpy_hedge_ns(n, rounds, eta=0.1):
    rng = np.random.default_rng(1)
    # About 512 KB of rounds, as in pacstream's criterion benchmark (benches/experts.rs):
    # a table that stays in the L2 cache, like the losses a caller has just computed.
    losses = rng.random((min(rounds, max(2, (1 << 16) // n)), n))
    cumulative = np.zeros(n)
    total = 0.0
    start = time.perf_counter()
    for t in range(rounds):
        loss = losses[t % len(losses)]
        w = np.exp(-eta * (cumulative - cumulative.min()))
        p = w / w.sum()
        total += p @ loss
        cumulative += loss
    return (time.perf_counter() - start) / rounds * 1e9


def river_ewa_ns(n, rounds):
    from river import base, ensemble, optim

    class ConstantRegressor(base.Regressor):
        """An expert that always forecasts the same value: the cheapest model River accepts,
        so the time measured is the aggregation's own."""

        def __init__(self, value):
            self.value = value

        def learn_one(self, x, y):
            pass

        def predict_one(self, x):
            return self.value

    models = [ConstantRegressor(float(i) / n) for i in range(n)]
    model = ensemble.EWARegressor(models=models, loss=optim.losses.Squared(), learning_rate=0.1)
    rng = np.random.default_rng(2)
    xs = [{"x": float(v)} for v in rng.random(rounds)]
    ys = rng.random(rounds)
    start = time.perf_counter()
    for x, y in zip(xs, ys):
        model.predict_one(x)
        model.learn_one(x, float(y))
    return (time.perf_counter() - start) / rounds * 1e9


def pacstream_ns(group, name, n):
    path = REPO / f"target/criterion/{group}/{name}/{n}/new/estimates.json"
    return json.loads(path.read_text())["median"]["point_estimate"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-bench", action="store_true", help="reuse the last criterion results")
    args = parser.parse_args()
    if not args.skip_bench:
        subprocess.run(
            ["cargo", "bench", "--quiet", "-p", "pacstream", "--bench", "experts", "--",
             "--warm-up-time", "1", "--measurement-time", "3", "/fixed/"],
            cwd=REPO, check=True, stdout=subprocess.DEVNULL,
        )
    print("ns per round (median); ratio = peer / pacstream")
    print(f"{'N':>9} {'NumPy Hedge':>13} {'River EWA':>12} {'pacstream Hedge':>16} {'pacstream EWA':>14}"
          f" {'NumPy/Hedge':>12} {'River/EWA':>10}")
    for n, rounds, river_rounds in [(10, 200_000, 5_000), (1_000, 20_000, 200), (1_000_000, 30, 0)]:
        numpy_ns = numpy_hedge_ns(n, rounds)
        river_ns = river_ewa_ns(n, river_rounds) if river_rounds else float("nan")
        hedge_ns = pacstream_ns("hedge_round", "fixed", n)
        ewa_ns = pacstream_ns("ewa_round", "fixed", n)
        print(f"{n:>9} {numpy_ns:>13.0f} {river_ns:>12.0f} {hedge_ns:>16.0f} {ewa_ns:>14.0f}"
              f" {numpy_ns / hedge_ns:>11.1f}x {river_ns / ewa_ns:>9.0f}x")


if __name__ == "__main__":
    sys.exit(main())
