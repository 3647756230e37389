#!/usr/bin/env bash
# The Python package's tests, on a clean clone: a virtual environment of its own (under
# target/, so that `cargo clean` removes it), the pinned test requirements, the extension
# built in release mode and installed into it, then pytest over the tests, the doctests
# and the peers' own check suites (River's check_estimator, scikit-learn's
# parametrize_with_checks). The equality tests run the command line built from the same
# sources.
#
# Then the abi3 wheel that `maturin build --release` makes is installed into a fresh
# virtual environment of its own (target/python-wheel-venv, made anew each run) and
# imported from there (smoke_wheel.py).
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

# The command line the equality tests run: built by the same command as the Rust tests
# (the README runs them first), so that it is already there and nothing is compiled again; a
# plain `cargo build -p pacstream-cli` would resolve other features and rebuild it and most
# of its dependencies.
cargo test --workspace --release --no-run --quiet
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --quiet

PACSTREAM_CLI="$root/target/release/pacstream" "$venv/bin/python" -m pytest -q \
    python/tests --doctest-modules python/pacstream

wheels="$root/target/wheels"
rm -f "$wheels"/pacstream-*.whl
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin build --release --quiet --out "$wheels"
wheel_venv="$root/target/python-wheel-venv"
rm -rf "$wheel_venv"
python3 -m venv "$wheel_venv"
"$wheel_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$wheels"/pacstream-*-abi3-*.whl
(cd "$wheel_venv" && "$wheel_venv/bin/python" "$root/crates/pacstream-py/smoke_wheel.py")
