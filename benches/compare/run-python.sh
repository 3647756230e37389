#!/usr/bin/env bash
# The Python package side by side with River and scikit-learn: python_kmeans.py (sequential
# k-means per row) and python_ewa.py (exponentially weighted averaging at N = 1,000 experts).
# Makes benches/compare/.venv-python once, with the pinned versions the package is tested
# with (crates/pacstream-py/requirements-test.txt: maturin, numpy, River, scikit-learn),
# builds the package into it in release mode, then runs both scripts (or the ones named:
# run-python.sh python_ewa.py).
set -euo pipefail
compare_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$compare_dir/../.." && pwd)
venv="$compare_dir/.venv-python"
requirements="$repo_dir/crates/pacstream-py/requirements-test.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
fi
(cd "$repo_dir/crates/pacstream-py" &&
    VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --quiet)
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(python_kmeans.py python_ewa.py python_learners.py)
for script in "${scripts[@]}"; do
    echo "== $script (load: $(cut -d' ' -f1-3 /proc/loadavg))"
    "$venv/bin/python" "$compare_dir/$script"
done
