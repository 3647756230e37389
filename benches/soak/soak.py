#!/usr/bin/env python3
"""Soak benchmark: long streams through every streaming command, peak memory by length.

Each command reads a stream generated on the fly into its standard input (10^5, 10^6 and
10^7 rows by default), writes its per-round records to a file that is discarded, saves a
checkpoint every 100,000 rows and a summary at the end; the script records the wall time and
the peak resident set size of the process (its VmHWM, polled from /proc while it runs). In window
mode memory must not grow with the stream: the three peaks should agree.

Usage (from the repository root, after `cargo build --release -p pacstream-cli`):

    python3 benches/soak/soak.py                       # every command, 1e5, 1e6, 1e7 rows
    python3 benches/soak/soak.py --rows 100000 --commands paco curve

Needs nothing but Python 3 (the rows come from a fixed pool of 65,536 rows of each
distribution, drawn with replacement by a seeded generator, so that Python is never the
bottleneck).
"""

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "target", "release", "pacstream")
BLOCK = 20_000
POOL = 65_536


def pool_clusters(rng):
    """Three Gaussian clusters in the plane."""
    centres = [(-4.0, 0.0), (3.0, 3.0), (2.0, -5.0)]
    rows = []
    for _ in range(POOL):
        cx, cy = rng.choice(centres)
        rows.append(f"{cx + rng.gauss(0, 1):.4f},{cy + rng.gauss(0, 1):.4f}")
    return "x,y", rows


def pool_curve(rng):
    """Noisy points along a sine arc."""
    rows = []
    for _ in range(POOL):
        s = rng.uniform(0, 2 * math.pi)
        rows.append(f"{s + rng.gauss(0, 0.1):.4f},{math.sin(s) + rng.gauss(0, 0.1):.4f}")
    return "x,y", rows


def pool_experts(rng):
    """An outcome and four forecasters of it, one of them asleep one round in ten."""
    rows = []
    for _ in range(POOL):
        y = rng.gauss(0, 1)
        late = "" if rng.random() < 0.1 else f"{y + rng.gauss(0, 0.5):.4f}"
        rows.append(
            f"{y:.4f},{y + rng.gauss(0, 0.2):.4f},{y + rng.gauss(0, 1):.4f},{late},{-y:.4f}"
        )
    return "y,good,noisy,late,contrary", rows


# The commands and the settings that make 10^7 rows feasible on two cores (stated in
# docs/benchmarks.md).
COMMANDS = {
    "kmeans": (pool_clusters, ["kmeans", "--k", "3", "--online"]),
    "paco": (
        pool_clusters,
        ["paco", "--window", "100", "--iterations", "5", "--max-k", "10", "--warmup", "100"],
    ),
    "curve": (pool_curve, ["curve", "--window", "100", "--max-candidates", "32"]),
    "experts": (pool_experts, ["experts", "--rule", "ewa", "--outcome", "y"]),
}


def high_water_kib(pid):
    """The peak resident set of process `pid` so far (VmHWM, KiB), 0 once it has gone.

    Read from /proc while the process runs, not from `wait4`: the `ru_maxrss` of a child
    started from Python includes the resident set of the Python process it was forked from
    (Linux carries the high-water mark across `exec`), which would hide the command's own.
    """
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def soak(command, rows, seed=1):
    make_pool, args = COMMANDS[command]
    rng = random.Random(seed)
    header, pool = make_pool(rng)
    with tempfile.TemporaryDirectory() as scratch:
        argv = [BINARY] + args + [
            "-", "-q",
            "-o", os.path.join(scratch, "rounds.csv"),
            "--summary", os.path.join(scratch, "summary.json"),
            "--checkpoint", os.path.join(scratch, "ck.json"),
            "--checkpoint-every", "100000",
        ]
        started = time.monotonic()
        child = subprocess.Popen(argv, stdin=subprocess.PIPE)
        peak = 0
        child.stdin.write((header + "\n").encode())
        left = rows
        while left > 0:
            block = min(BLOCK, left)
            child.stdin.write(("\n".join(rng.choices(pool, k=block)) + "\n").encode())
            left -= block
            # The records are not what is measured: keep the scratch disk from filling.
            out = os.path.join(scratch, "rounds.csv")
            if os.path.exists(out) and os.path.getsize(out) > (1 << 30):
                os.truncate(out, 0)
            peak = max(peak, high_water_kib(child.pid))
        child.stdin.close()
        while child.poll() is None:
            peak = max(peak, high_water_kib(child.pid))
            time.sleep(0.01)
        seconds = time.monotonic() - started
        if child.returncode != 0:
            sys.exit(f"{command} on {rows} rows failed with {child.returncode}")
        return seconds, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    options = parser.parse_args()
    if not os.path.exists(BINARY):
        sys.exit(f"build the binary first: cargo build --release -p pacstream-cli ({BINARY})")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| command | settings | rows | wall time | rows/s | peak RSS |")
    print("|---|---|---|---|---|---|")
    for command in options.commands:
        for rows in options.rows:
            seconds, peak_kib = soak(command, rows)
            settings = " ".join(COMMANDS[command][1][1:])
            print(
                f"| {command} | `{settings}` | {rows:,} | {seconds:.1f} s "
                f"| {rows / seconds:,.0f} | {peak_kib / 1024:.1f} MiB |",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
