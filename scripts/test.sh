#!/usr/bin/env bash
# Run the test suite (unit + integration with real node processes on 127.0.0.1).
# Creates .venv and installs what is missing. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
exec "$PY" -m pytest -q -p no:cacheprovider "$@"
