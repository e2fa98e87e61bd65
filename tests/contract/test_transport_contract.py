"""The transport contract: the same cases against every Transport kind (hivemind, libp2p).

Each case runs in a fresh interpreter (`python -m tests.contract.run_case`): hivemind and
libp2p cannot be imported in one process, and this pytest process may have imported either.
A case's failure comes back as its exception and traceback. Nothing here imports a transport
library; a kind that cannot be opened here is skipped with the reason (transports.why_unavailable).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.run_case import CASES
from tests.contract.transports import KINDS, why_unavailable

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
CASE_TIMEOUT_S = 240.0  # a case that hangs is killed (with its process group) after this


def run_in_fresh_interpreter(kind: str, case: str, workdir: Path) -> tuple[dict | None, str]:
    """The case's result (None if it wrote none) and the tail of its output."""
    result_file = workdir / "result.json"
    output_file = workdir / "output.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with output_file.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.contract.run_case", kind, case, str(workdir), str(result_file)],
            cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            process.wait(timeout=CASE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    tail = output_file.read_text(errors="replace")[-4000:]
    if not result_file.exists():
        return None, f"exit status {process.returncode} (killed after {CASE_TIMEOUT_S:g}s if -9)\n{tail}"
    return json.loads(result_file.read_text()), tail


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_transport_contract(kind: str, case: str, tmp_path: Path) -> None:
    reason = why_unavailable(kind)
    if reason is not None:
        pytest.skip(f"{kind} transport: {reason}")
    result, output = run_in_fresh_interpreter(kind, case, tmp_path)
    if result is None:
        pytest.fail(f"{kind}/{case} wrote no result: {output}", pytrace=False)
    if not result["ok"]:
        pytest.fail(f"{kind}/{case}: {result['error']}\n\n{result['traceback']}\ncase output:\n{output}", pytrace=False)
