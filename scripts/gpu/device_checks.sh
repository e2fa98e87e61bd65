#!/usr/bin/env bash
# The GPU checks and benchmarks of docs/experiments/gpu.md ("Next"), for a lent GPU machine:
# run from the repository root there, with .whl carried (scripts/gpu/carry_wheels.sh made it
# here). The parts run in the order given, default all, the goals first:
#
#   async   swarmnode bench async on the 0.5B shape (bf16, 64 x 8 x 128), decode static
#   decode  bench_generation.py: the loop, model.generate and the static decode on the same batch
#   tests   pytest -m cuda: tests/cuda and the GPU daemon's SIGKILL-and-resume test
#   swarm   swarm local: one GPU daemon beside two CPU daemons for $SWARM_SECONDS (default
#           120), then scripts/gpu/swarm_rates.py (steps/s and samples/s, GPU over CPU)
#
# Each part writes its command (<part>.cmd), its output (<part>.log) and its figures into
# $WORK (default /tmp/swarmnode-gpu), and after each part all of it is packed into one file,
# $OUT/device-checks.tar.gz (a device call brings back a few files only). Each part is
# stopped at its own limit ($PART_TIMEOUT overrides them all), so one slow part leaves the
# others their time; a failing part does not stop the next. `async decode tests` take at
# most 540 s plus ~30 s of setup: one call of a 15-minute lease. `swarm` (at most 240 s)
# goes in a second call if the lease has time left. Then, here:
# scripts/gpu/collect_results.py <each call's device-checks.tar.gz> --session <name>.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/swarmnode-gpu-out}
WORK=${WORK:-/tmp/swarmnode-gpu}
mkdir -p "$OUT" "$WORK"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "installing the carried wheels failed (run scripts/gpu/carry_wheels.sh here first)"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 WORK
# What the parts import, checked first: a module missing from the image and from .whl ends
# the run here in one line instead of failing each part.
python3 -c "import hivemind, reasoning_gym, pytest, swarmnode.cli.app, swarmnode.trainer.bench" \
  || { echo "a module the checks need is missing: add its wheel to scripts/gpu/carry_wheels.sh"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$WORK/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$WORK/gpu.txt"

part() {  # name, time limit (s), command line (run by bash -c; written to $WORK/<name>.cmd)
  local name=$1 limit=${PART_TIMEOUT:-$2} command=$3
  echo "== $name: $command"
  echo "$command" > "$WORK/$name.cmd"
  local start=$SECONDS
  timeout "$limit" bash -c "$command" > "$WORK/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$WORK/$name.log"
  echo "== $name: exit $rc after $((SECONDS - start)) s (limit $limit s)"
  tar czf "$OUT/device-checks.tar.gz" -C "$WORK" .
}

# Single-quoted: $WORK and $SWARM_SECONDS stay as written in the .cmd files, bash -c expands them.
ASYNC='python3 -m swarmnode bench async --device cuda --dtype bfloat16 --model-shape 0.5b --prompts 64 --samples 8 --max-new-tokens 128 --steps 5 --repeats 1 --decode static --json'
DECODE='python3 scripts/bench/bench_generation.py --model-shape 0.5b --device cuda --dtype bfloat16 --prompts 64 --samples 8 --max-new-tokens 128 --repeats 2 --decodes loop,generate,static --json $WORK/generation.json'
TESTS='python3 -m pytest -q -p no:cacheprovider -m cuda tests/cuda tests/integration/test_node_trains_and_resumes_after_sigkill.py'
# The nodes' homes stay outside $WORK (databases, checkpoints); their last statuses come in.
SWARM='python3 -m swarmnode swarm local --nodes 3 --devices cuda,cpu --config configs/local-train.yaml --duration $SWARM_SECONDS --root /tmp/swarmnode-gpu-swarm && cp /tmp/swarmnode-gpu-swarm/summary.json $WORK/swarm-summary.json && python3 scripts/gpu/swarm_rates.py $WORK/swarm-summary.json --json $WORK/swarm-rates.json'
export SWARM_SECONDS=${SWARM_SECONDS:-120}

for which in "${@:-async decode tests swarm}"; do
  for p in $which; do
    case $p in
      async) part async 240 "$ASYNC" ;;
      decode) part decode 150 "$DECODE" ;;
      tests) part tests 150 "$TESTS" ;;
      swarm) part swarm $((SWARM_SECONDS + 120)) "$SWARM" ;;
      *) echo "unknown part $p (async, decode, tests, swarm)"; exit 2 ;;
    esac
  done
done
echo "== packed: $OUT/device-checks.tar.gz; next, here: python3 scripts/gpu/collect_results.py <it> --session <name>"
