"""k-means: pacstream side by side with scikit-learn (batch) and River (sequential).

Run through `run-kmeans.sh`, which installs the peers into benches/compare/.venv and builds
the pacstream binary. Prints, for each data set of the k-means spec (§2), the median fit time
of scikit-learn's KMeans (Lloyd, greedy k-means++) and of `pacstream kmeans` over the same
seeds, their ratio, and the median inertias; then, for the sequential setting (§3), the time
per round of River's cluster.KMeans (learn_one + predict_one) against pacstream's sequential
k-means learn_one (criterion benchmark, which returns the label as predict_one would).

Both tools see the same data (written once to CSV) and use 2 threads (the machine's cores).
Fit times exclude reading the data: scikit-learn is timed around `fit`, pacstream reports the
wall time of its library fit call (`fit_seconds` in the summary).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, make_blobs

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data"
BIN = os.environ["PACSTREAM_BIN"]
REPO = pathlib.Path(os.environ["REPO_DIR"])


def datasets():
    """The three data sets of kmeans.md §2: (name, X, k, n_init)."""
    digits = load_digits().data.astype(np.float64)
    blobs_10d, _ = make_blobs(n_samples=100_000, n_features=10, centers=20, random_state=0)
    blobs_2d, _ = make_blobs(n_samples=1_000_000, n_features=2, centers=8, random_state=0)
    return [
        ("digits", digits, 10, 10),
        ("blobs-100k-10d", blobs_10d, 20, 1),
        ("blobs-1M-2d", blobs_2d, 8, 1),
    ]


def write_csv(name, X):
    path = DATA / f"{name}.csv"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        header = ",".join(f"x{j}" for j in range(X.shape[1]))
        np.savetxt(path, X, delimiter=",", header=header, comments="", fmt="%.17g")
    return path


def time_sklearn(X, k, n_init, seeds):
    times, inertias = [], []
    for seed in seeds:
        model = KMeans(n_clusters=k, n_init=n_init, init="k-means++", algorithm="lloyd",
                       random_state=seed)
        start = time.perf_counter()
        model.fit(X)
        times.append(time.perf_counter() - start)
        inertias.append(model.inertia_)
    return times, inertias


def time_pacstream(path, k, n_init, seeds):
    times, inertias = [], []
    summary = DATA / "summary.json"
    for seed in seeds:
        subprocess.run(
            [BIN, "kmeans", "--k", str(k), "--n-init", str(n_init), "--seed", str(seed),
             "--summary", str(summary), "--quiet", str(path)],
            check=True,
        )
        result = json.loads(summary.read_text())
        times.append(result["fit_seconds"])
        inertias.append(result["report"]["inertia"])
    return times, inertias


def river_ns_per_round(n_points, k, dim, seed=1):
    from river import cluster

    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 20, size=(k, dim))
    labels = rng.integers(0, k, size=n_points)
    X = means[labels] + rng.standard_normal((n_points, dim))
    rows = [{j: float(v) for j, v in enumerate(x)} for x in X]
    model = cluster.KMeans(n_clusters=k, seed=seed)
    for x in rows[: 10 * k]:
        model.learn_one(x)
    start = time.perf_counter()
    for x in rows[10 * k:]:
        model.learn_one(x)
        model.predict_one(x)
    return (time.perf_counter() - start) / (n_points - 10 * k) * 1e9


def pacstream_ns_per_round():
    subprocess.run(
        ["cargo", "bench", "--quiet", "-p", "pacstream", "--bench", "kmeans_sequential", "--",
         "--warm-up-time", "1", "--measurement-time", "3", "learn_one/plain/k8_d5"],
        cwd=REPO, check=True, stdout=subprocess.DEVNULL,
    )
    estimates = REPO / "target/criterion/sequential_kmeans_learn_one/plain/k8_d5/new/estimates.json"
    return json.loads(estimates.read_text())["median"]["point_estimate"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per tool and data set (seeds 0..runs-1)")
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--skip-sequential", action="store_true")
    args = parser.parse_args()
    seeds = list(range(args.runs))

    if not args.skip_batch:
        print(f"batch k-means, median of {args.runs} runs (seeds {seeds[0]}..{seeds[-1]})")
        print(f"{'data':<16} {'n x d':>14} {'k':>3} {'n_init':>6} {'sklearn':>10} {'pacstream':>10}"
              f" {'ratio':>7}  {'sklearn inertia':>16} {'pacstream inertia':>18} {'rel. diff':>9} {'best: rel. diff':>15}")
        for name, X, k, n_init in datasets():
            path = write_csv(name, X)
            sk_times, sk_inertias = time_sklearn(X, k, n_init, seeds)
            ps_times, ps_inertias = time_pacstream(path, k, n_init, seeds)
            sk_time, ps_time = statistics.median(sk_times), statistics.median(ps_times)
            sk_inertia, ps_inertia = statistics.median(sk_inertias), statistics.median(ps_inertias)
            print(f"{name:<16} {f'{X.shape[0]} x {X.shape[1]}':>14} {k:>3} {n_init:>6}"
                  f" {sk_time * 1e3:>8.1f}ms {ps_time * 1e3:>8.1f}ms {sk_time / ps_time:>6.2f}x"
                  f"  {sk_inertia:>16.6g} {ps_inertia:>18.6g} {(ps_inertia - sk_inertia) / sk_inertia:>+9.2e}"
                  f" {(min(ps_inertias) - min(sk_inertias)) / min(sk_inertias):>+15.2e}")
        print("ratio = scikit-learn time / pacstream time (> 1: pacstream is faster); inertias are"
              " medians over the seeds, rel. diff = (pacstream - sklearn) / sklearn, and 'best'"
              " compares the lowest inertia each reached over the seeds")
        print()

    if not args.skip_sequential:
        k, dim = 8, 5
        river = river_ns_per_round(20_000, k, dim)
        ours = pacstream_ns_per_round()
        print(f"sequential k-means, k = {k}, d = {dim}, ns per round")
        print(f"  River cluster.KMeans learn_one + predict_one: {river:>10.0f} ns")
        print(f"  pacstream SequentialKMeans learn_one:        {ours:>10.1f} ns")
        print(f"  ratio: {river / ours:.0f}x")


if __name__ == "__main__":
    sys.exit(main())
