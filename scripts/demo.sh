#!/usr/bin/env bash
# The main demo: a local swarm of real node processes on 127.0.0.1 with a live status table.
# Creates .venv and installs what is missing. Ctrl-C stops every node cleanly.
# Extra arguments go to `swarmnode swarm local` (e.g. --nodes 5, --duration 60).
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
exec "$VENV/bin/swarmnode" swarm local --nodes 3 --root runs/demo "$@"
