#!/usr/bin/env python3
"""How long the worker threads of one run slept, and how often (Linux, needs `perf`).

    python3 benches/dataflow/sleeps.py LABEL COMMAND [ARGS...]

for example

    python3 benches/dataflow/sleeps.py "experts --key, 2 threads" target/release/pacstream \
        experts keyed.csv --rule hedge --outcome y --key key --quiet --workers 2

Records the scheduler's switches of the run (`perf record -e sched:sched_switch`) and, per
timely worker thread, sums the time from each voluntary sleep (switched out in state S or D)
to the thread's next run. On a quiet machine that is the time a worker waited for the
others at the end of a round; on a busy one it also holds the time its peer waited for a
core, so read the count of sleeps there, not their length.
"""

import collections
import re
import subprocess
import sys
import tempfile

SWITCH = re.compile(
    r"\s(\d+\.\d+):\s+sched:sched_switch: prev_comm=(.*?) prev_pid=(\d+) .*?"
    r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)"
)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    label, command = sys.argv[1], sys.argv[2:]
    with tempfile.NamedTemporaryFile(suffix=".data") as data:
        subprocess.run(
            ["perf", "record", "-e", "sched:sched_switch", "-o", data.name, "--"] + command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        script = subprocess.run(
            ["perf", "script", "-i", data.name], capture_output=True, text=True, check=True
        ).stdout
    asleep_since = {}
    slept = collections.Counter()
    sleeps = collections.Counter()
    first, last = {}, {}
    for line in script.splitlines():
        m = SWITCH.search(line)
        if not m:
            continue
        t = float(m.group(1))
        prev_comm, prev_pid, state, next_comm, next_pid = m.group(2, 3, 4, 5, 6)
        if prev_comm.startswith("timely:work"):
            last[prev_comm] = t
            if state[0] in "SD":
                asleep_since[prev_pid] = (t, prev_comm)
        if next_comm.startswith("timely:work"):
            first.setdefault(next_comm, t)
            if next_pid in asleep_since:
                since, name = asleep_since.pop(next_pid)
                slept[name] += t - since
                sleeps[name] += 1
    for name in sorted(first):
        print(
            f"{label}: {name} asleep {slept[name]:.2f} s in {sleeps[name]} sleeps, "
            f"alive {last[name] - first[name]:.2f} s"
        )


if __name__ == "__main__":
    main()
