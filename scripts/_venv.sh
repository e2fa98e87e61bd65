# Sourced by scripts/test.sh and scripts/demo.sh: make .venv and install what is missing.
# torch comes first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
TORCH_VERSION="${SWARMNODE_TORCH_VERSION:-2.13.0}"

# pip on these machines warns about every missing local index folder; keep real errors only.
quiet_pip() {
  PYTHONWARNINGS=ignore "$PY" -m pip "$@" 2>&1 | { grep -v -e "^WARNING: Location" || true; }
}

if [ ! -x "$PY" ]; then
  echo "[setup] creating $VENV"
  python3 -m venv "$VENV"
  quiet_pip install --quiet --upgrade pip
fi
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[setup] installing torch==$TORCH_VERSION"
  quiet_pip install --quiet "torch==$TORCH_VERSION"
fi
STAMP="$VENV/.swarmnode-install-stamp"
WANT="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
# hivemind and libp2p cannot share one process: each is checked in its own
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! "$PY" -c "import swarmnode, hivemind" 2>/dev/null \
    || ! "$PY" -c "import libp2p" 2>/dev/null; then
  echo "[setup] installing swarmnode and its dependencies into $VENV"
  quiet_pip install --quiet -e "$ROOT[dev,experiments]"  # experiments: the plotting scripts' matplotlib
  echo "$WANT" > "$STAMP"
fi
