#!/usr/bin/env bash
# The GPU checks and benchmarks of docs/experiments/gpu.md ("Next"), for a lent GPU machine:
# run from the repository root there, with .whl carried (scripts/gpu/carry_wheels.sh made it
# here). Each part's output goes to $OUT/<part>.log (and its JSON beside it); the parts run in
# the order given, default all:
#
#   tests   pytest -m cuda: tests/cuda and the GPU daemon's SIGKILL-and-resume test
#   async   swarmnode bench async on the 0.5B shape (bf16, 64 x 8 x 128), decode static
#   decode  bench_generation.py: the loop, model.generate and the static decode on the same batch
#
# Each part is stopped after $PART_TIMEOUT seconds (default 240), so one slow part leaves the
# others their time; a failing part does not stop the next.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/swarmnode-gpu}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "installing the carried wheels failed (run scripts/gpu/carry_wheels.sh here first)"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/gpu.txt"

part() {
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  timeout "${PART_TIMEOUT:-240}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$OUT/$name.log"
  echo "== $name: exit $rc after $((SECONDS - start)) s"
}

for which in "${@:-tests async decode}"; do
  for p in $which; do
    case $p in
      tests) part tests python3 -m pytest -q -p no:cacheprovider -m cuda tests/cuda \
               tests/integration/test_node_trains_and_resumes_after_sigkill.py ;;
      async) part async python3 -m swarmnode bench async --device cuda --dtype bfloat16 --model-shape 0.5b \
               --prompts 64 --samples 8 --max-new-tokens 128 --steps 5 --repeats 1 --decode static --json ;;
      decode) part decode python3 scripts/bench/bench_generation.py --model-shape 0.5b --device cuda --dtype bfloat16 \
               --prompts 64 --samples 8 --max-new-tokens 128 --repeats 2 --decodes loop,generate,static \
               --json "$OUT/generation.json" ;;
      *) echo "unknown part $p (tests, async, decode)"; exit 2 ;;
    esac
  done
done
