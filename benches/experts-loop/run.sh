#!/bin/sh
# The experts' round loop in variants (see round_loop.c), built with gcc and run one after
# another, RUNS times each: CPU nanoseconds per round at N = 1,000, minimum and median.
# Usage: benches/experts-loop/run.sh [RUNS] [ROUNDS]
set -eu
here=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=${1:-10}
rounds=${2:-200000}
variants="library HORNER TWO PAIRED PIPELINED ONESTORE NOFLOOR NOMINMAX NOMIX TABLE"
for variant in $variants; do
  flag=""
  [ "$variant" = library ] || flag="-D$variant"
  gcc -O2 -mavx2 -mfma $flag "$here/round_loop.c" -o "$out/$variant" -lm
done
i=0
while [ $i -lt "$runs" ]; do
  for variant in $variants; do
    echo "$variant $("$out/$variant" "$rounds")" >>"$out/times"
  done
  i=$((i + 1))
done
gcc -O2 "$here/fma_peak.c" -o "$out/fma_peak"
"$out/fma_peak"
uptime
sort -k1,1 -k2,2n "$out/times" | awk '
  { v[$1, ++count[$1]] = $2; if ($3 != "ok") bad[$1] = 1 }
  END { for (k in count) { n = count[k]; printf "%-10s min %5d  median %5d ns/round%s\n", k, v[k, 1], v[k, int((n + 1) / 2)], (k in bad) ? "  (weights WRONG)" : "" } }'
