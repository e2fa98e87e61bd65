#!/usr/bin/env bash
# The main demo: a local swarm of 3 real node processes on 127.0.0.1, each training the bundled
# tiny policy and sharing rollouts with the others (SAPO, 8 local + 8 external groups per step),
# with a live table. Creates .venv and installs what is missing. Ctrl-C stops every node.
# Extra arguments go to `swarmnode swarm local` (e.g. --nodes 4, --rounds 300, --duration 120).
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
rm -rf runs/demo  # a fresh swarm each time (the homes keep checkpoints that would resume)
exec "$VENV/bin/swarmnode" swarm local --nodes 3 --root runs/demo --config configs/local-train.yaml "$@"
