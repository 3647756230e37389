#!/usr/bin/env bash
# Expert aggregation side by side with a vectorised NumPy Hedge and River's EWARegressor:
# see experts.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/experts.py" "$@"
