#!/usr/bin/env bash
# k-means side by side with scikit-learn, scikit-learn-intelex and faiss (batch) and River
# (sequential): see kmeans.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# pacstream's Python package too, so that it is timed in process around its fit call, as the
# Python peers are.
(cd "$REPO_DIR/crates/pacstream-py" &&
    VIRTUAL_ENV="$(dirname "$(dirname "$PYTHON")")" PATH="$(dirname "$PYTHON"):$PATH" \
        maturin develop --release --quiet)
exec "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/kmeans.py" "$@"
