"""The core classes: equality with the command line on shipped data, snapshots that resume
bit for bit, batch = one at a time, and the refusal of every array it cannot read as rows."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

import pacstream as ps

REPO = Path(__file__).resolve().parents[4]
DATA = REPO / "data"


def cli() -> Path:
    """The command line built from the same sources (the test script builds it)."""
    path = Path(os.environ.get("PACSTREAM_CLI", REPO / "target" / "release" / "pacstream"))
    assert path.exists(), f"build the command line first: cargo build --release -p pacstream-cli ({path})"
    return path


def load(name: str) -> tuple[list[str], np.ndarray]:
    with open(DATA / name) as handle:
        header = [h.strip('"') for h in handle.readline().strip().split(",")]
    return header, np.loadtxt(DATA / name, delimiter=",", skiprows=1, ndmin=2)


def run_cli(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "rounds.jsonl"
    subprocess.run([str(cli()), *args, "-o", str(out), "-q"], check=True, cwd=DATA)
    return [json.loads(line) for line in out.read_text().splitlines()]


def column(records: list[dict], key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else r[key] for r in records], dtype=np.float64)


# --- the same numbers as the command line -------------------------------------------------


def test_sequential_kmeans_matches_the_command_line_bit_for_bit(tmp_path):
    records = run_cli(tmp_path, "kmeans", "--online", "--k", "3", "--seed", "3", "xclara.csv")
    _, X = load("xclara.csv")
    learner = ps.SequentialKMeans(3, seed=3)
    out = learner.learn_many(X)
    assert len(records) == len(X) == learner.n_rounds
    np.testing.assert_array_equal(out["loss"], column(records, "loss"))
    np.testing.assert_array_equal(out["cumulative_loss"], column(records, "cumulative_loss"))
    labels = np.array([-1 if r["label"] is None else r["label"] for r in records])
    np.testing.assert_array_equal(out["label"], labels)


def test_ewa_adahedge_matches_the_command_line_bit_for_bit(tmp_path):
    records = run_cli(
        tmp_path, "experts", "--rule", "ewa", "--adahedge", "--outcome", "DAX", "eustock-forecasts.csv"
    )
    header, table = load("eustock-forecasts.csv")
    outcomes = np.ascontiguousarray(table[:, header.index("DAX")])
    advice = np.ascontiguousarray(np.delete(table, header.index("DAX"), axis=1))
    ewa = ps.EWA(advice.shape[1], learning_rate="adahedge")
    out = ewa.learn_many(advice, outcomes)
    np.testing.assert_array_equal(out["prediction"], column(records, "prediction"))
    np.testing.assert_array_equal(out["loss"], column(records, "loss"))
    np.testing.assert_array_equal(out["regret"], column(records, "regret"))
    assert ewa.cumulative_loss == records[-1]["cumulative_loss"]
    assert ewa.bound == records[-1]["regret_bound"]


def test_weighted_majority_matches_the_command_line(tmp_path):
    records = run_cli(tmp_path, "experts", "--rule", "wm", "--beta", "0.8", "--outcome", "up", "eustock-updown.csv")
    header, table = load("eustock-updown.csv")
    outcomes = np.ascontiguousarray(table[:, header.index("up")])
    advice = np.ascontiguousarray(np.delete(table, header.index("up"), axis=1))
    wm = ps.WeightedMajority(advice.shape[1], beta=0.8)
    out = wm.learn_many(advice, outcomes)
    np.testing.assert_array_equal(out["prediction"], column(records, "prediction"))
    np.testing.assert_array_equal(out["loss"], column(records, "loss"))


# --- snapshots ------------------------------------------------------------------------------


def stream(n=400, d=2, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0] * d, [6.0] * d, [0.0] + [6.0] * (d - 1)])
    return np.ascontiguousarray(centres[rng.integers(0, 3, n)] + rng.normal(size=(n, d)))


POINT_LEARNERS = {
    "sequential-kmeans": lambda: ps.SequentialKMeans(3, init_size=20, reassignment_ratio=0.05, seed=4),
    "paco": lambda: ps.Paco(max_k=5, warmup=20, iterations=30, seed=4),
    "curve": lambda: ps.PrincipalCurve(warmup=20, seed=4),
}


@pytest.mark.parametrize("name", sorted(POINT_LEARNERS))
@pytest.mark.parametrize("how", ["pickle", "json", "deepcopy"])
def test_a_snapshot_resumes_bit_for_bit(name, how):
    X = stream(300)
    straight = POINT_LEARNERS[name]()
    straight.learn_many(X[:150])
    if how == "pickle":
        resumed = pickle.loads(pickle.dumps(straight))
    elif how == "json":
        resumed = type(straight).from_json(straight.to_json())
    else:
        resumed = copy.deepcopy(straight)
    assert type(resumed) is type(straight)
    a = straight.learn_many(X[150:])
    b = resumed.learn_many(X[150:])
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert straight.cumulative_loss == resumed.cumulative_loss
    assert straight.to_json() == resumed.to_json()


@pytest.mark.parametrize(
    "make",
    [
        lambda: ps.Hedge(4, sample=True, seed=3),
        lambda: ps.RandomizedWeightedMajority(4, seed=3),
        lambda: ps.FPL(4, 1.0, learning_rate=0.5, seed=3),
        lambda: ps.EWA(4, loss="pinball:0.3"),
    ],
    ids=["hedge", "rwm", "fpl", "ewa"],
)
def test_an_aggregator_snapshot_resumes_bit_for_bit(make):
    rng = np.random.default_rng(1)
    advice = rng.random((200, 4)).round()
    outcomes = rng.random(200).round()
    straight = make()
    straight.learn_many(advice[:100], outcomes[:100])
    resumed = pickle.loads(pickle.dumps(straight))
    a = straight.learn_many(advice[100:], outcomes[100:])
    b = resumed.learn_many(advice[100:], outcomes[100:])
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_array_equal(straight.weights, resumed.weights)


def test_kmeans_pickles_with_its_fit():
    X = stream(200)
    fit = ps.KMeans(3, seed=2).fit(X)
    back = pickle.loads(pickle.dumps(fit))
    np.testing.assert_array_equal(back.centres, fit.centres)
    np.testing.assert_array_equal(back.predict(X), fit.predict(X))


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '{"learner": 3, "totals": {}}', "null", '"x"'],
)
def test_a_corrupt_snapshot_raises_value_error(text):
    for cls in (ps.SequentialKMeans, ps.Paco, ps.PrincipalCurve, ps.Hedge, ps.KMeans):
        with pytest.raises(ValueError):
            cls.from_json(text)


def test_an_inconsistent_snapshot_raises_value_error():
    learner = ps.SequentialKMeans(2, init_size=4)
    learner.learn_many(stream(20))
    state = json.loads(learner.to_json())
    state["learner"]["counts"] = state["learner"]["counts"][:1]
    with pytest.raises(ValueError, match="snapshot"):
        ps.SequentialKMeans.from_json(json.dumps(state))
    hedge = ps.Hedge(3)
    state = json.loads(hedge.to_json())
    state["params"]["n_experts"] = 5
    with pytest.raises(ValueError, match="snapshot"):
        ps.Hedge.from_json(json.dumps(state))


# --- batch = one at a time ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(POINT_LEARNERS))
def test_learn_many_equals_repeated_learn_one(name):
    X = stream(200)
    batch, single = POINT_LEARNERS[name](), POINT_LEARNERS[name]()
    out = batch.learn_many(X)
    records = [single.learn_one(list(x)) for x in X]
    losses = np.array([np.nan if r["loss"] is None else r["loss"] for r in records])
    np.testing.assert_array_equal(out["loss"], losses)
    assert batch.to_json() == single.to_json()


def test_aggregator_learn_many_equals_repeated_learn_one_with_sleeping_experts():
    rng = np.random.default_rng(5)
    advice = rng.random((150, 3))
    outcomes = rng.random(150)
    awake = rng.random((150, 3)) < 0.7
    awake[:, 0] = True
    batch, single = ps.Hedge(3, loss="absolute"), ps.Hedge(3, loss="absolute")
    out = batch.learn_many(advice, outcomes, awake)
    steps = [single.learn_one(a, y, m) for a, y, m in zip(advice, outcomes, awake)]
    np.testing.assert_array_equal(out["loss"], [s["loss"] for s in steps])
    np.testing.assert_array_equal(batch.weights, single.weights)
    # a sleeping expert is charged nothing
    asleep = ps.Hedge(2)
    asleep.learn_one([0.0, 5.0], 0.0, [True, False])
    assert asleep.expert_losses[1] == 0.0


# --- arrays it cannot read as rows, and bad values --------------------------------------------


def test_fortran_order_is_refused_not_misread():
    X = stream(50, d=3)
    learner = ps.SequentialKMeans(2, init_size=4)
    with pytest.raises(ValueError, match="C-contiguous"):
        learner.learn_many(np.asfortranarray(X))
    assert learner.n_rounds == 0
    with pytest.raises(ValueError, match="C-contiguous"):
        learner.learn_many(X[:, ::2].copy(order="F"))
    with pytest.raises(ValueError, match="C-contiguous"):
        learner.learn_many(X[::2])  # strided rows
    # the same points in C order are accepted, and give what one-at-a-time gives
    learner.learn_many(np.ascontiguousarray(np.asfortranarray(X)))
    assert learner.n_rounds == 50


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, object])
def test_other_dtypes_are_refused_with_a_type_error(dtype):
    X = stream(20).astype(dtype)
    with pytest.raises(TypeError, match="float64"):
        ps.SequentialKMeans(2).learn_many(X)


def test_wrong_shapes_and_types():
    learner = ps.SequentialKMeans(2, init_size=4)
    with pytest.raises(ValueError, match="2-D"):
        learner.learn_many(np.zeros(5))
    with pytest.raises(TypeError, match="NumPy array"):
        learner.learn_many([[1.0, 2.0]])
    with pytest.raises(TypeError):
        learner.learn_one("ab")
    learner.learn_one([1.0, 2.0])
    with pytest.raises(ValueError, match="expected 2 values, found 3"):
        learner.learn_one([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="row 0: expected 2 values, found 3"):
        learner.learn_many(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="outcomes"):
        ps.EWA(2).learn_many(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="awake"):
        ps.EWA(2).learn_many(np.zeros((3, 2)), np.zeros(3), np.ones((3, 3), dtype=bool))


def test_a_bad_row_raises_names_it_and_keeps_the_rows_before():
    X = stream(30)
    X[17, 1] = np.nan
    learner = ps.SequentialKMeans(2, init_size=4)
    with pytest.raises(ValueError, match="row 17: value NaN in column 1"):
        learner.learn_many(X)
    assert learner.n_rounds == 17
    before = learner.to_json()
    with pytest.raises(ValueError, match="not finite"):
        learner.learn_one([np.inf, 0.0])
    assert learner.to_json() == before, "an error leaves the learner unchanged"


def test_a_one_dimensional_strided_point_is_read_through_its_strides():
    learner, other = ps.SequentialKMeans(1, init_size=1), ps.SequentialKMeans(1, init_size=1)
    wide = np.arange(6.0)
    learner.learn_one(wide[::2])
    other.learn_one([0.0, 2.0, 4.0])
    assert learner.to_json() == other.to_json()


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: ps.SequentialKMeans(0), "n_clusters"),
        (lambda: ps.SequentialKMeans(2, reassignment_ratio=-1.0), "reassignment_ratio"),
        (lambda: ps.KMeans(2, n_init=0), "n_init"),
        (lambda: ps.KMeans(2, init="nope"), "init"),
        (lambda: ps.Paco(max_k=0), "max_k"),
        (lambda: ps.Paco(radius="big"), "radius"),
        (lambda: ps.PrincipalCurve(explore=0.0), "explore"),
        (lambda: ps.WeightedMajority(3, beta=1.5), "beta"),
        (lambda: ps.Hedge(3, learning_rate=-1.0), "eta"),
        (lambda: ps.Hedge(3, learning_rate="fast"), "learning_rate"),
        (lambda: ps.EWA(3, loss="pinball:2"), "tau"),
        (lambda: ps.FPL(3, 1.0), "eta"),
    ],
)
def test_a_bad_setting_raises_value_error_naming_it(make, name):
    with pytest.raises(ValueError, match=name):
        make()


# --- what the model says ------------------------------------------------------------------


def test_hedge_regret_stays_within_its_bound_and_the_best_expert_wins():
    rng = np.random.default_rng(3)
    losses = rng.random((500, 4))
    losses[:, 2] *= 0.5
    hedge = ps.Hedge(4, loss_bound=1.0, learning_rate="anytime")
    out = hedge.learn_many_losses(np.ascontiguousarray(losses))
    assert hedge.best_expert == 2
    assert hedge.regret == out["regret"][-1]
    assert 0 < hedge.regret <= hedge.bound
    assert hedge.guarantee["kind"] == "bound"
    assert np.argmax(hedge.weights) == 2
    assert hedge.summary(["a", "b", "c", "d"])["best_expert"] == "c"


def test_paco_reports_its_hindsight_comparison_and_bound():
    paco = ps.Paco(max_k=4, warmup=20, iterations=50, seed=2)
    rng = np.random.default_rng(1)
    x = np.where(np.arange(120) % 2 == 0, -4.0, 4.0) + 0.3 * rng.normal(size=120)
    paco.learn_many(np.ascontiguousarray(x[:, None]))
    report = paco.hindsight(restarts=3, seed=1)
    assert (report["predicted_rows"], report["warmup_rows"]) == (100, 20)
    assert [f["n_clusters"] for f in report["fits"]] == [1, 2, 3, 4]
    assert report["bound"]["kind"] == "bound"
    assert paco.n_clusters == 2


def test_principal_curve_projects_onto_its_vertices():
    t = np.linspace(0.0, 1.0, 400)
    X = np.ascontiguousarray(np.c_[t, 0.5 * t])
    curve = ps.PrincipalCurve(warmup=20, seed=1)
    curve.learn_many(X)
    vertices = curve.vertices
    projected = curve.project(np.ascontiguousarray(vertices))
    np.testing.assert_allclose(projected["squared_distance"], 0.0, atol=1e-20)
    np.testing.assert_array_equal(projected["points"], vertices)
    assert projected["arc_length"][0] == 0.0
    assert np.all(np.diff(projected["arc_length"]) >= 0.0)


def test_kmeans_fits_predicts_and_transforms():
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    fit = ps.KMeans(2, seed=1).fit(X)
    assert fit.inertia == 1.0
    assert fit.inertia_on(X) == 1.0
    assert fit.labels[0] == fit.labels[1] != fit.labels[2] == fit.labels[3]
    np.testing.assert_array_equal(fit.predict(X), fit.labels)
    assert fit.transform(X).shape == (4, 2)
    with pytest.raises(ValueError, match="not fitted"):
        ps.KMeans(2).predict(X)


def test_a_bad_round_of_a_batch_is_named_and_the_rounds_before_stay_learned():
    advice = np.ones((6, 2))
    outcomes = np.zeros(6)
    outcomes[3] = np.nan
    ewa = ps.EWA(2)
    with pytest.raises(ValueError, match="round 3: .*outcome NaN is not finite"):
        ewa.learn_many(advice, outcomes)
    assert ewa.n_rounds == 3
    losses = np.zeros((4, 2))
    losses[2, 1] = np.nan
    hedge = ps.Hedge(2)
    with pytest.raises(ValueError, match="row 2: value NaN in column 1"):
        hedge.learn_many_losses(losses)
    assert hedge.n_rounds == 2


def test_learn_many_releases_the_gil():
    import threading
    import time

    X = stream(300)
    learner = ps.Paco(max_k=5, warmup=10, iterations=3000, seed=1)
    inside = threading.Event()
    done = threading.Event()

    def work():
        inside.set()
        learner.learn_many(X)
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    inside.wait()
    stamps = []
    while not done.is_set():
        stamps.append(time.perf_counter())
    thread.join()
    duration = stamps[-1] - stamps[0]
    assert duration > 0.05, "the batch should take a while"
    # With the GIL held for the whole batch, this thread would stall for all of it.
    assert np.max(np.diff(stamps)) < 0.5 * duration


def test_the_readme_python_example_runs(monkeypatch, capsys):
    text = (REPO / "README.md").read_text()
    blocks = text.split("```python\n")[1:]
    assert blocks, "the README has a Python example"
    monkeypatch.chdir(REPO)
    for block in blocks:
        exec(compile(block.split("```")[0], "README.md", "exec"), {})
    assert "[[" in capsys.readouterr().out


# --- every setting of the library reaches Python ------------------------------------------

# The constructor keyword of a setting whose Python name differs from the library's.
ALIASES = {"memory": "window", "k": "n_clusters", "decay": "decay_half_life"}


@pytest.mark.parametrize(
    "make",
    [lambda: ps.SequentialKMeans(3), lambda: ps.Paco(), lambda: ps.PrincipalCurve(), lambda: ps.KMeans(3)],
    ids=["sequential-kmeans", "paco", "curve", "kmeans"],
)
def test_every_setting_the_library_reports_is_a_constructor_keyword(make):
    import inspect

    learner = make()
    keywords = set(inspect.signature(type(learner)).parameters)
    missing = [name for name in learner.settings if ALIASES.get(name, name) not in keywords]
    assert not missing, f"settings of the library with no keyword: {missing}"


def test_the_new_settings_reach_the_library():
    paco = ps.Paco(summation="point-by-point", proposal="paper", radius="auto")
    assert paco.settings["summation"] == "PointByPoint" and paco.settings["proposal"] == "Paper"
    curve = ps.PrincipalCurve(
        estimator="paper", alpha=0.5, eta_scale=10.0, local_vertices=8, max_candidates=64,
        bin_side=0.25, max_atoms=512, radius=3.0,
    )
    expected = {"estimator": "Paper", "alpha": 0.5, "eta_scale": 10.0, "local_vertices": 8,
                "max_candidates": 64, "bin_side": 0.25, "max_atoms": 512, "radius": {"Given": 3.0}}
    assert {k: curve.settings[k] for k in expected} == expected
    X = stream(300)
    lloyd = ps.KMeans(3, algorithm="lloyd", seed=1).fit(X)
    hamerly = ps.KMeans(3, algorithm="hamerly", stopping="centre-shift", seed=1).fit(X)
    np.testing.assert_allclose(lloyd.centres, hamerly.centres)
    # Hartigan's moves (the default) from the same Lloyd run: never a higher inertia, and a
    # lower one on these overlapping clusters.
    plain = ps.KMeans(6, refinement="none", seed=1).fit(X)
    moved = ps.KMeans(6, refinement="hartigan", seed=1).fit(X)
    assert moved.inertia <= plain.inertia
    assert ps.KMeans(6, seed=1).fit(X).inertia == moved.inertia
    for make, name in [
        (lambda: ps.Paco(summation="sometimes"), "summation"),
        (lambda: ps.PrincipalCurve(estimator="best"), "estimator"),
        (lambda: ps.PrincipalCurve(radius="big"), "radius"),
        (lambda: ps.KMeans(3, algorithm="elkan"), "algorithm"),
        (lambda: ps.KMeans(3, stopping="never"), "stopping"),
        (lambda: ps.KMeans(3, refinement="elkan"), "refinement"),
        (lambda: ps.PrincipalCurve(local_vertices=1), "local_vertices"),
    ]:
        with pytest.raises(ValueError, match=f"`{name}`"):
            make()
