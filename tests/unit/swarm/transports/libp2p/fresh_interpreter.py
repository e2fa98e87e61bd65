"""run_check: a check script run in a fresh interpreter, its last printed line read as JSON.

py-libp2p cannot be imported in a process that imported hivemind (as pytest's does), so the unit
checks that need it run here, with the repository first on PYTHONPATH."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[5]


def run_check(check: str, timeout_s: float = 120) -> dict:
    """Run `check` with this interpreter in a child process; the JSON of its last stdout line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", check], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
