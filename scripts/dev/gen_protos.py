#!/usr/bin/env python3
"""Regenerate swarmnode/protocol/generated/*_pb2.py from protocols/swarmnode/v1/*.proto.

protocols/ is the source of truth for every wire message; tests/unit/protocol/test_generated.py
fails when the generated modules are stale. Needs grpcio-tools (the `dev` extra).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "protocols"
PROTO_DIR = PROTO_ROOT / "swarmnode" / "v1"
OUT_DIR = ROOT / "swarmnode" / "protocol" / "generated"


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    protos = sorted(PROTO_DIR.glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        # -I protocols keeps the registered file names unique ("swarmnode/v1/x.proto") in the
        # process-wide descriptor pool; the .proto files import nothing from each other, so the
        # generated modules can live flat in one package.
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}"]
        subprocess.run(cmd + [str(p) for p in protos], check=True)
        for p in protos:
            generated = Path(tmp) / "swarmnode" / "v1" / f"{p.stem}_pb2.py"
            shutil.copyfile(generated, OUT_DIR / generated.name)
            print(f"wrote {(OUT_DIR / generated.name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
