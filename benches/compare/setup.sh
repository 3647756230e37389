#!/usr/bin/env bash
# Creates benches/compare/.venv with the peers of requirements.txt (once) and builds the
# pacstream binary in release mode. Sourced by the run-*.sh scripts.
set -euo pipefail
compare_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$compare_dir/../.." && pwd)
venv="$compare_dir/.venv"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$compare_dir/requirements.txt" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet -r "$compare_dir/requirements.txt"
    cp "$compare_dir/requirements.txt" "$venv/requirements.txt"
fi
(cd "$repo_dir" && cargo build --quiet --release -p pacstream-cli)
export PACSTREAM_BIN="$repo_dir/target/release/pacstream"
export PYTHON="$venv/bin/python"
export REPO_DIR="$repo_dir"
