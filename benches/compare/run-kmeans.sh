#!/usr/bin/env bash
# k-means side by side with scikit-learn (batch) and River (sequential): see kmeans.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/kmeans.py" "$@"
