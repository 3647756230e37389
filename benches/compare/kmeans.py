"""k-means: pacstream side by side with scikit-learn, scikit-learn-intelex and faiss (batch)
and River (sequential).

Run through `run-kmeans.sh`, which installs the peers into benches/compare/.venv and builds
the pacstream binary. Prints, for each data set of the k-means spec (§2), the median fit time
over the same seeds (each fitted `--rounds` times, the tools taking turns) of

- scikit-learn's KMeans (Lloyd, greedy k-means++),
- scikit-learn-intelex's KMeans (Intel oneDAL; same settings),
- faiss's Kmeans (float32, BLAS distance matrices, random seeding; `nredo` = n_init, its
  default 25 iterations, every point used: no subsampling),
- `pacstream kmeans` (greedy k-means++, f64, Lloyd with the stopping rule of the k-means spec,
  which is scikit-learn's: total squared centre shift ≤ 1e-4 × mean feature variance; then
  its default refinement, Hartigan's single-point moves, which the peers do not run), one
  fresh process per fit, as a user of the command runs it,
- `pacstream.sklearn.KMeans` (the Python package: the same library and defaults), in this
  process like the Python peers,

the ratio of each peer's median time to pacstream's and the median of the paired ratios
(the same seed and round; > 1: pacstream is faster), the median and
best inertia of each, and the Lloyd iterations each run took (scikit-learn's and intelex's
`n_iter_`, faiss's fixed `niter`, pacstream's `n_iter`). Every inertia is computed here, in f64, from the returned centres on the
same f64 data (each point to its nearest centre), so faiss's float32 arithmetic is judged on
the same scale as the others. Then, for the sequential setting (§3), the time per round of
River's cluster.KMeans (learn_one + predict_one) against pacstream's sequential k-means
learn_one (criterion benchmark, which returns the label as predict_one would).

Every tool sees the same data (written once to CSV for pacstream) and uses 2 threads (the
machine's cores). Fit times exclude reading the data: the Python tools are timed around their
fit call, pacstream reports the wall time of its library fit call (`fit_seconds` in the
summary).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

# Before any import that may start a thread pool (rayon reads it when pacstream's starts).
os.environ["RAYON_NUM_THREADS"] = "2"

import numpy as np  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.datasets import load_digits, make_blobs

THREADS = 2

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


def inertia(X, centres):
    """Σ_x min_j ‖x − c_j‖² in f64, from direct differences, in blocks of rows."""
    centres = np.asarray(centres, dtype=np.float64)
    total = 0.0
    for start in range(0, X.shape[0], 65536):
        block = X[start:start + 65536]
        d2 = ((block[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        total += float(d2.min(axis=1).sum())
    return total


def time_estimator(X, seeds, make):
    """Times `fit` of the scikit-learn-style estimator `make(seed)` for each seed."""
    times, inertias, iterations = [], [], []
    for seed in seeds:
        model = make(seed)
        start = time.perf_counter()
        model.fit(X)
        times.append(time.perf_counter() - start)
        inertias.append(inertia(X, model.cluster_centers_))
        iterations.append(model.n_iter_)
    return times, inertias, iterations


def time_sklearn(X, k, n_init, seeds, estimator=KMeans):
    return time_estimator(X, seeds, lambda seed: estimator(
        n_clusters=k, n_init=n_init, init="k-means++", algorithm="lloyd", random_state=seed))


def time_intelex(X, k, n_init, seeds):
    from sklearnex.cluster import KMeans as IntelKMeans

    return time_sklearn(X, k, n_init, seeds, estimator=IntelKMeans)


def time_faiss(X, k, n_init, seeds):
    import faiss

    faiss.omp_set_num_threads(THREADS)
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    times, inertias, iterations = [], [], []
    for seed in seeds:
        model = faiss.Kmeans(X.shape[1], k, niter=25, nredo=n_init, seed=seed,
                             max_points_per_centroid=X.shape[0], verbose=False)
        start = time.perf_counter()
        model.train(X32)
        times.append(time.perf_counter() - start)
        inertias.append(inertia(X, model.centroids))
        iterations.append(25)
    return times, inertias, iterations


def time_pacstream_python(X, k, n_init, seeds):
    """pacstream's Python package (its scikit-learn estimator), in this process like the other
    Python tools, timed around `fit`; the same library and defaults as the command."""
    from pacstream.sklearn import KMeans as PacstreamKMeans

    return time_estimator(X, seeds, lambda seed: PacstreamKMeans(
        n_clusters=k, n_init=n_init, random_state=seed))


def time_pacstream(path, X, k, n_init, seeds):
    times, inertias, iterations = [], [], []
    summary = DATA / "summary.json"
    for seed in seeds:
        subprocess.run(
            [BIN, "kmeans", "--k", str(k), "--n-init", str(n_init), "--seed", str(seed),
             "--summary", str(summary), "--quiet", str(path)],
            check=True, env={**os.environ, "RAYON_NUM_THREADS": str(THREADS)},
        )
        result = json.loads(summary.read_text())
        times.append(result["fit_seconds"])
        inertias.append(inertia(X, result["centres"]))
        iterations.append(result["report"]["n_iter"])
    return times, inertias, iterations


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
    parser.add_argument("--runs", type=int, default=5, help="seeds per tool and data set (0..runs-1)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times each seed is fitted by each tool (the medians are over all fits)")
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--skip-sequential", action="store_true")
    args = parser.parse_args()
    seeds = list(range(args.runs))

    if not args.skip_batch:
        tools = [("scikit-learn", lambda X, path, k, n_init, seeds: time_sklearn(X, k, n_init, seeds)),
                 ("sklearn-intelex", lambda X, path, k, n_init, seeds: time_intelex(X, k, n_init, seeds)),
                 ("faiss", lambda X, path, k, n_init, seeds: time_faiss(X, k, n_init, seeds)),
                 ("pacstream", lambda X, path, k, n_init, seeds: time_pacstream(path, X, k, n_init, seeds)),
                 ("pacstream-python", lambda X, path, k, n_init, seeds: time_pacstream_python(X, k, n_init, seeds))]
        print(f"batch k-means, {THREADS} threads, {args.rounds} rounds x {args.runs} seeds"
              f" ({seeds[0]}..{seeds[-1]}), the tools interleaved; inertia computed in f64 from each"
              " tool's centres")
        print(f"{'data':<16} {'tool':<16} {'median time':>12} {'ratio':>7} {'paired':>7}"
              f" {'median inertia':>16} {'rel. to pacstream':>17} {'best inertia':>14}"
              f" {'rel. to pacstream':>17}")
        for name, X, k, n_init in datasets():
            path = write_csv(name, X)
            results = {tool: ([], [], []) for tool, _ in tools}
            # One fit per tool and seed, the tools taking turns in an order that rotates from
            # one seed to the next: this host's speed drifts over seconds (a pure-Python loop
            # of fixed work took 8.5-18 ms from one second to the next), so timing each tool's
            # seeds in one block would let a slow spell fall on one tool only.
            order = 0
            for _ in range(args.rounds):
                for seed in seeds:
                    for turn in range(len(tools)):
                        tool, run = tools[(order + turn) % len(tools)]
                        for total, part in zip(results[tool], run(X, path, k, n_init, [seed])):
                            total.extend(part)
                    order += 1
            ours = results["pacstream"]
            ours_time = statistics.median(ours[0])
            ours_median, ours_best = statistics.median(ours[1]), min(ours[1])
            for tool, (times, inertias, _) in results.items():
                t, median, best = statistics.median(times), statistics.median(inertias), min(inertias)
                paired = statistics.median(a / b for a, b in zip(times, ours[0]))
                print(f"{name:<16} {tool:<16} {t * 1e3:>10.1f}ms {t / ours_time:>6.2f}x {paired:>6.2f}x"
                      f" {median:>16.8g} {(median - ours_median) / ours_median:>+17.2e}"
                      f" {best:>14.8g} {(best - ours_best) / ours_best:>+17.2e}")
            print(f"{'':<16} {'times (ms)':<16} " + "; ".join(
                f"{tool} " + " ".join(f"{t * 1e3:.1f}" for t in results[tool][0]) for tool in results))
            print(f"{'':<16} {'iterations':<16} " + "; ".join(
                f"{tool} " + " ".join(str(i) for i in results[tool][2][:len(seeds)]) for tool in results))
        print("ratio = tool's median time / pacstream's (> 1: pacstream is faster); paired = median over"
              " the fits of the tool's time / pacstream's time for the same seed and round; 'rel. to"
              " pacstream' = (tool inertia - pacstream inertia) / pacstream inertia (> 0: pacstream's"
              " is lower); times are listed round by round, seed by seed")
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
