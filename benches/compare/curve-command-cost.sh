#!/usr/bin/env bash
# The cost of the whole `pacstream curve` command against the learner's own, in instructions
# (valgrind's callgrind: repeatable on a loaded machine), on the seismic data (long, lat) and
# on a noisy half circle of 2000 points; with the curve's mean squared distance. Not part of CI.
#
#   bash benches/compare/curve-command-cost.sh [OTHER_PACSTREAM_BINARY ...]
#
# Builds this checkout's binary; every binary given (for instance one built from another
# branch, in a folder of its own) is measured the same way, side by side. The learner's
# instructions are those executed inside `learn_one` (--toggle-collect); the command's, all
# of them (reading, learning, the hindsight comparators, the summary). Needs valgrind.
set -euo pipefail
compare_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$compare_dir/../.." && pwd)
(cd "$repo_dir" && cargo build --quiet --release -p pacstream-cli)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The noisy half circle: radius 1, angle uniform, Gaussian noise σ = 0.05, seed 1.
python3 - "$work/arc2000.csv" <<'PY'
import math, random, sys
random.seed(1)
with open(sys.argv[1], "w") as out:
    out.write("x,y\n")
    for _ in range(2000):
        a = math.pi * random.random()
        out.write(f"{math.cos(a) + random.gauss(0, 0.05):.6f},{math.sin(a) + random.gauss(0, 0.05):.6f}\n")
PY

instructions() {
    # The instructions callgrind collected (inside the toggled function, if one is given).
    local log="$work/callgrind.log"
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" "$@" >/dev/null 2>"$log"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | tail -1
}

printf '%-44s %-8s %16s %16s %8s %10s\n' "binary" "data" "learner (Ir)" "command (Ir)" "ratio" "MSD"
for bin in "$repo_dir/target/release/pacstream" "$@"; do
    for data in quakes arc; do
        if [ "$data" = quakes ]; then
            input=(--columns long,lat "$repo_dir/data/quakes.csv")
        else
            input=("$work/arc2000.csv")
        fi
        "$bin" curve "${input[@]}" --summary "$work/summary.json" -q
        msd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["mean_squared_distance"])' "$work/summary.json")
        learner=$(instructions --toggle-collect='*PrincipalCurveLearner*as*OnlineLearner*learn_one*' \
            "$bin" curve "${input[@]}" -q)
        command=$(instructions "$bin" curve "${input[@]}" -q)
        label=$(basename "$(dirname "$(dirname "$(dirname "$bin")")")")
    printf '%-44s %-8s %16s %16s %8.2f %10.5f\n' "$label" "$data" "$learner" "$command" \
            "$(python3 -c "print($command / $learner)")" "$msd"
    done
done
