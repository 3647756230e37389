#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Usage: python3 fuzz/seed_corpus.py [path/to/pacstream]   (default: target/release/pacstream)

The seeds are real inputs (the shipped data sets, real checkpoints and snapshots of every
streaming command, a command line per option) behind the few bytes each target reads first;
the fuzzer mutates them from there. Re-run it after a change of the checkpoint format.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
BINARY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "pacstream")


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def points_csv():
    lines = ["x,y,label"]
    for i in range(30):
        group = i % 3
        lines.append(f"{group * 5.0 + math.sin(i * 0.37)},{math.cos(i * 0.11) * 3.0 - group},{group}")
    return "\n".join(lines) + "\n"


def experts_csv():
    lines = ["y,a,b,c,b_awake"]
    for i in range(30):
        y = i % 2
        b = "" if i % 5 == 0 else str(y)
        lines.append(f"{y},{(i // 2) % 2},{b},{math.sin(i * 0.3)},{int(i % 7 != 0)}")
    return "\n".join(lines) + "\n"


def csv_reader_seeds():
    data = os.path.join(ROOT, "data")
    files = {
        "faithful": open(os.path.join(data, "faithful.csv"), "rb").read()[:2000],
        "forecasts": open(os.path.join(data, "eustock-forecasts.csv"), "rb").read()[:2000],
        "points": points_csv().encode(),
        "experts": experts_csv().encode(),
        "quoted": b'\xef\xbb\xbf"a";"b"\r\n1;2\r\n\r\n"3";4.5\r\n5;NaN\n6;\n7;1e400\n',
        "tabs": b"1\t2\n3\t4\n5\t6\t7\n",
    }
    for name, text in files.items():
        for flags in (0, 0b11, 0b100, 0b1000, 0b100000):
            for columns in (0, 1, 255):
                write("csv_reader", f"{name}-{flags}-{columns}", bytes([flags, columns]) + text)


def settings_seeds():
    # The tables' lengths, as in fuzz_targets/settings.rs: 8 shared options, then each
    # command's own.
    own = {"kmeans": 12, "paco": 18, "curve": 15, "experts": 16, "project": 0}
    for number, command in enumerate(["kmeans", "paco", "curve", "experts", "project"]):
        for outputs in (0, 0b111, 0b11101, 0b111111):
            write("settings", f"{command}-{outputs}", bytes([number, outputs]))
        for option in range(8 + own[command]):
            for value in (0, 28):
                write("settings", f"{command}-{option}-{value}", bytes([number, 0b101, option, value]))


def learner_of(command, state):
    if command == "experts":
        (inner,) = state["aggregator"].values()
        kind = next(iter(state["aggregator"]))
        return {"Wm": 3, "Rwm": 4, "Hedge": 5, "Ewa": 6, "Fpl": 7}[kind], inner
    return {"kmeans": 0, "paco": 1, "curve": 2}[command], state["learner"]


def checkpoint_seeds():
    with tempfile.TemporaryDirectory() as scratch:
        points = os.path.join(scratch, "points.csv")
        experts = os.path.join(scratch, "experts.csv")
        open(points, "w").write(points_csv())
        open(experts, "w").write(experts_csv())
        runs = [
            ("kmeans", 0, ["--k", "2", "--online", points]),
            ("kmeans", 0, ["--k", "3", "--online", "--batch-size", "4", "--plot", "f.svg", points]),
            ("paco", 1, ["--warmup", "5", "--iterations", "5", points]),
            ("paco", 1, ["--warmup", "5", "--iterations", "5", "--window", "8", "--labels", "label", points]),
            ("curve", 2, ["--warmup", "5", points]),
            ("curve", 2, ["--warmup", "5", "--window", "10", "--plot", "f.svg", points]),
            ("experts", 3, ["--rule", "hedge", "--outcome", "y", experts]),
            ("experts", 3, ["--rule", "fpl", "--eta", "1", "--loss-bound", "1", "--outcome", "y", experts]),
            ("experts", 3, ["--rule", "rwm", "--outcome", "y", "--experts", "a", experts]),
            ("experts", 3, ["--rule", "ewa", "--outcome", "y", "--plot", "f.svg", experts]),
        ]
        for number, (command, which, args) in enumerate(runs):
            ck = os.path.join(scratch, "ck.json")
            subprocess.run(
                [BINARY, command, "-q", "-o", os.path.join(scratch, "out.jsonl"),
                 "--checkpoint", ck, "--checkpoint-every", "7"] + args,
                check=True, cwd=scratch,
            )
            raw = open(ck, "rb").read()
            content = json.loads(raw)["content"]
            compact = json.dumps(content, separators=(",", ":")).encode()
            write("checkpoint", f"{command}-{number}-file", bytes([0, which]) + raw)
            write("checkpoint", f"{command}-{number}-content", bytes([1, which]) + compact)
            learner, snapshot = learner_of(command, content["state"])
            write("checkpoint", f"{command}-{number}-snapshot",
                  bytes([2, learner]) + json.dumps(snapshot, separators=(",", ":")).encode())


if __name__ == "__main__":
    csv_reader_seeds()
    settings_seeds()
    checkpoint_seeds()
    for target in ("learn_one",):
        write(target, "empty", b"")
        write(target, "zeros", bytes(64))
    print("seed corpora written to", CORPUS)
