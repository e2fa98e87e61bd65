#!/usr/bin/env bash
# Run the test suite: unit + integration tests (real node processes on 127.0.0.1) in .venv, then
# the vllm backend's tests in their own venv (scripts/test_vllm.sh; skip them with
# SWARMNODE_SKIP_VLLM_TESTS=1). Creates the venvs and installs what is missing.
# Extra arguments go to the main pytest run (and skip the vllm tests).
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
source "$ROOT/scripts/_system.sh"
cd "$ROOT"
"$PY" -m pytest -q -p no:cacheprovider "$@"
if [ "$#" -eq 0 ] && [ "${SWARMNODE_SKIP_VLLM_TESTS:-0}" != "1" ]; then
  "$ROOT/scripts/test_vllm.sh"
fi
