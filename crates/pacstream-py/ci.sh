#!/usr/bin/env bash
# The Python package's tests, on a clean clone: a virtual environment of its own (under
# target/, so that `cargo clean` removes it), the pinned test requirements, the extension
# built in release mode and installed into it, then pytest over the tests, the doctests
# and the peers' own check suites (River's check_estimator, scikit-learn's
# parametrize_with_checks). The equality tests run the command line built from the same
# sources.
#
#   PACSTREAM_PY_VENV   where to make the virtual environment (default target/python-venv)
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd ../.. && pwd)"
venv="${PACSTREAM_PY_VENV:-$root/target/python-venv}"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-test.txt

cargo build --release -p pacstream-cli
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --quiet

PACSTREAM_CLI="$root/target/release/pacstream" "$venv/bin/python" -m pytest -q \
    python/tests --doctest-modules python/pacstream
