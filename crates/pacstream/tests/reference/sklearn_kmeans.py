"""Reference inertias of scikit-learn's KMeans for the batch k-means tests.

Writes sklearn_kmeans.json beside this file: for each data set of ../data, the inertia and
centres scikit-learn's KMeans reaches (Lloyd, greedy k-means++, n_init = 10, seeds 0..4;
the lowest inertia over the seeds is kept), with the versions that produced them.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scikit-learn==1.9.1
    /tmp/venv/bin/python sklearn_kmeans.py

The tests read the JSON only; they never need Python.
"""

import json
import pathlib
import platform

import numpy as np
import sklearn
from sklearn.cluster import KMeans

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "data"

# (file, columns, k)
CASES = [
    ("iris.csv", [0, 1, 2, 3], 3),
    ("faithful.csv", [0, 1], 2),
    ("xclara.csv", [0, 1], 3),
    ("quakes.csv", [0, 1, 2], 4),
]


def load(name, columns):
    return np.loadtxt(DATA / name, delimiter=",", skiprows=1, usecols=columns)


def main():
    results = []
    for name, columns, k in CASES:
        X = load(name, columns)
        best = None
        for seed in range(5):
            model = KMeans(n_clusters=k, n_init=10, init="k-means++", algorithm="lloyd",
                           random_state=seed).fit(X)
            if best is None or model.inertia_ < best.inertia_:
                best = model
        results.append({
            "data": name,
            "columns": columns,
            "n_clusters": k,
            "inertia": float(best.inertia_),
            "centres": best.cluster_centers_.tolist(),
        })
    out = {
        "produced_by": "sklearn_kmeans.py",
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "settings": "KMeans(n_clusters=k, n_init=10, init='k-means++', algorithm='lloyd', "
                    "random_state=seed), seeds 0..4, lowest inertia kept",
        "cases": results,
    }
    (HERE / "sklearn_kmeans.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
