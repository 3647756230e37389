#!/usr/bin/env python3
"""The per-row cost of timely's exchange, separated from the cluster's start-up.

Runs `pacstream dataflow kmeans` (data-parallel mini-batch k-means) on 1 x 1 and 1 x 2
(processes x worker threads) and on 2 x 1 and 4 x 1 processes on loopback, and
`pacstream experts --key` (keyed Hedge, 10^5 keys x 10 experts) on 1 x 1, 1 x 2, 2 x 1 and 1 x 4,
each at two stream lengths. The slope between the two lengths is the cost per row; the
intercept is what does not grow with the rows (start-up, connecting the processes, and
for keyed learners building and summarising the 10^5 learners). Wall-clock seconds are
from the first process's start to the last one's exit; CPU seconds are user + system of
all the processes (os.wait4), which a busy machine inflates far less than the wall clock.
Then one keyed run with checkpoints gives the checkpoint's size and time.

    python3 benches/dataflow/exchange.py            # builds target/release/pacstream first
    python3 benches/dataflow/exchange.py --quick    # 10x fewer rows (a smoke test)
    python3 benches/dataflow/exchange.py --repeat 7 # 7 rounds, then the medians and ratios

With `--repeat N` every round runs every configuration at both lengths (after one unmeasured
run of each, which takes the first touches of a new process's memory and of the files), and
the script ends with each configuration's median per-row cost and the speed-up against
1 x 1: the median over the rounds of the ratio of the two slopes (rows per second, the
start-up and the per-key summary left out), and of the two whole large runs (start-up,
summary and its write included), each ratio taken within one round so that the host's drift
between rounds cancels.

The CSV files (about 600 MB at full size) are written under a temporary directory in /tmp
and deleted at the end. Every configuration's summary is compared with 1 x 1's (the
results are the same bits whatever the cluster); a difference stops the script.
"""

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "release" / "pacstream"

KMEANS_CONFIGS = [(1, 1), (1, 2), (2, 1), (4, 1)]
KEYED_CONFIGS = [(1, 1), (1, 2), (2, 1), (1, 4)]
KEYS = 100_000
EXPERTS = 10


def load():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def write_kmeans_csv(path, rows, block):
    """`rows` rows of 5 columns around 8 centres: a block of `block` rows repeated."""
    rng = random.Random(1)
    lines = []
    for i in range(block):
        c = (i % 8) * 3.0
        lines.append(",".join(f"{c + j + rng.random():.6f}" for j in range(5)))
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write("a,b,c,d,e\n")
        for _ in range(rows // block):
            f.write(text)


def write_keyed_csv(path, rows):
    """`rows` rows: a key cycling over 10^5 keys, 10 experts' advice and the outcome."""
    rng = random.Random(2)
    block = 100_000
    lines = []
    for i in range(block):
        y = rng.random()
        advice = [y + (j + 1) * 0.02 * (rng.random() - 0.5) for j in range(EXPERTS)]
        lines.append(",".join([f"k{i % KEYS}"] + [f"{a:.4f}" for a in advice] + [f"{y:.4f}"]))
    text = "\n".join(lines) + "\n"
    header = ",".join(["key"] + [f"e{j}" for j in range(EXPERTS)] + ["y"])
    with open(path, "w") as f:
        f.write(header + "\n")
        for _ in range(rows // block):
            f.write(text)


def run_cluster(args, processes, workers, work):
    """Runs `args` on processes x workers; returns (wall seconds, CPU seconds of all
    processes, summary bytes written by process 0)."""
    summary = work / f"summary-{processes}x{workers}.json"
    extra = ["--workers", str(workers), "--summary", str(summary)]
    children = []
    start = time.perf_counter()
    if processes == 1:
        children.append(subprocess.Popen([str(BIN)] + args + extra, stdout=subprocess.DEVNULL))
    else:
        hostfile = work / "hosts"
        hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in free_ports(processes)))
        for i in range(processes):
            cluster = ["--processes", str(processes), "--process", str(i), "--hostfile", str(hostfile)]
            children.append(
                subprocess.Popen(
                    [str(BIN)] + args + extra + cluster,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    cpu = 0.0
    for child in children:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.exit(f"{args} on {processes} x {workers} failed ({child.returncode})")
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.perf_counter() - start
    text = summary.read_bytes()
    summary.unlink()
    return wall, cpu, text


def measure(name, args_of, sizes, configs, work, table, rounds):
    """Runs every configuration at both sizes, `rounds` times; appends rows to `table` and
    returns {config: [(small wall, large wall, slope wall), ...]} per round."""
    per_round = {config: [] for config in configs}
    if rounds > 1:
        for processes, workers in configs:
            run_cluster(args_of(sizes[0]), processes, workers, work)
    for _ in range(rounds):
        for processes, workers in configs:
            figures = []
            for rows in sizes:
                args = args_of(rows)
                wall, cpu, text = run_cluster(args, processes, workers, work)
                reference = table.setdefault(("summary", name, rows), text)
                if text != reference:
                    sys.exit(f"{name}: the summary on {processes} x {workers} differs from 1 x 1's")
                figures.append((rows, wall, cpu))
            (n0, w0, c0), (n1, w1, c1) = figures
            slope_wall = (w1 - w0) / (n1 - n0)
            slope_cpu = (c1 - c0) / (n1 - n0)
            per_round[(processes, workers)].append((w0, w1, slope_wall))
            table.setdefault("rows", []).append(
                (
                    name,
                    f"{processes} x {workers}",
                    f"{w0:.2f} / {w1:.2f}",
                    f"{c0:.2f} / {c1:.2f}",
                    f"{slope_wall * 1e9:.0f}",
                    f"{slope_cpu * 1e9:.0f}",
                    f"{w0 - slope_wall * n0:.2f}",
                    f"{c0 - slope_cpu * n0:.2f}",
                    load(),
                )
            )
            print(" | ".join(table["rows"][-1]), flush=True)
    return per_round


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def speed_ups(name, per_round):
    """Prints, per configuration, the medians over the rounds and the paired ratios."""
    base = per_round[(1, 1)]
    for config, figures in per_round.items():
        slope_ratios = [b[2] / f[2] for b, f in zip(base, figures) if f[2] > 0]
        whole_ratios = [b[1] / f[1] for b, f in zip(base, figures)]
        print(
            f"{name} | {config[0]} x {config[1]} | {median([f[2] for f in figures]) * 1e9:.0f} | "
            f"{median([f[1] for f in figures]):.2f} | "
            f"{median(slope_ratios):.2f} ({min(slope_ratios):.2f}–{max(slope_ratios):.2f}) | "
            f"{median(whole_ratios):.2f} ({min(whole_ratios):.2f}–{max(whole_ratios):.2f})"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer rows (a smoke test)")
    parser.add_argument("--no-build", action="store_true", help="use target/release/pacstream as it is")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="rounds of every configuration (medians and paired ratios at the end)")
    options = parser.parse_args()
    if not options.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "pacstream-cli"], cwd=ROOT, check=True)
    scale = 10 if options.quick else 1
    kmeans_sizes = [1_000_000 // scale, 10_000_000 // scale]
    keyed_sizes = [1_000_000 // scale, 3_000_000 // scale]
    work = Path(tempfile.mkdtemp(prefix="pacstream-exchange-", dir="/tmp"))
    try:
        print(f"load average before: {load()}  (processes x workers on this machine: {os.cpu_count()} cores)")
        t = time.perf_counter()
        kmeans_csv = {n: work / f"kmeans-{n}.csv" for n in kmeans_sizes}
        for n, path in kmeans_csv.items():
            write_kmeans_csv(path, n, 100_000 // scale)
        keyed_csv = {n: work / f"keyed-{n}.csv" for n in keyed_sizes}
        for n, path in keyed_csv.items():
            write_keyed_csv(path, n)
        print(f"data written in {time.perf_counter() - t:.1f} s", flush=True)
        header = (
            "pattern | P x W | wall s (small / large) | CPU s (small / large) | "
            "wall ns/row | CPU ns/row | wall intercept s | CPU intercept s | load after"
        )
        print(header)
        print("|".join("---" for _ in header.split("|")))
        table = {}

        def kmeans_args(rows):
            return ["dataflow", "kmeans", str(kmeans_csv[rows]), "--columns", "a,b,c,d,e",
                    "--k", "8", "--batch-size", "65536", "--chunk-size", "8192"]

        def keyed_args(rows):
            return ["experts", str(keyed_csv[rows]), "--rule", "hedge", "--outcome", "y",
                    "--key", "key", "--quiet"]

        names = (f"k-means {kmeans_sizes[0]:.0e}/{kmeans_sizes[1]:.0e} rows",
                 f"keyed Hedge {keyed_sizes[0]:.0e}/{keyed_sizes[1]:.0e} rows")
        rounds = max(options.repeat, 1)
        kmeans_rounds = measure(names[0], kmeans_args, kmeans_sizes, KMEANS_CONFIGS, work, table, rounds)
        keyed_rounds = measure(names[1], keyed_args, keyed_sizes, KEYED_CONFIGS, work, table, rounds)
        if rounds > 1:
            print(f"\nmedians of {rounds} rounds; speed-up = 1 x 1's figure / this one's, "
                  "paired within a round (median, range); load " + load())
            print("pattern | P x W | wall ns/row | large run wall s | speed-up per row (slope) | "
                  "speed-up of the whole large run")
            print("---|---|---|---|---|---")
            speed_ups(names[0], kmeans_rounds)
            speed_ups(names[1], keyed_rounds)

        # A checkpoint of every key's learner: its size and the time it adds.
        rows = keyed_sizes[0]
        base = ["dataflow", "keyed", str(keyed_csv[rows]), "--key", "key", "--rule", "hedge",
                "--epoch-size", str(rows // 4)]
        wall0, cpu0, _ = run_cluster(base, 1, 1, work)
        checkpoints = work / "checkpoints"
        wall1, cpu1, _ = run_cluster(base + ["--checkpoint-dir", str(checkpoints),
                                             "--checkpoint-every", "1"], 1, 1, work)
        files = list(checkpoints.iterdir())
        size = max(f.stat().st_size for f in files)
        print(
            f"checkpoint of {KEYS} keyed Hedge learners ({EXPERTS} experts): {size / 1e6:.1f} MB, "
            f"{size / KEYS:.0f} bytes per key; 4 checkpoints added {wall1 - wall0:.2f} s wall, "
            f"{cpu1 - cpu0:.2f} s CPU ({(cpu1 - cpu0) / 4:.2f} s CPU each); load {load()}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
