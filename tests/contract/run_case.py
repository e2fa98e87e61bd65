"""Runs one transport contract case in this (fresh) interpreter and writes how it went.

    python -m tests.contract.run_case KIND CASE WORKDIR RESULT_FILE

RESULT_FILE gets JSON {"ok": bool, "error": "<type>: <message>", "traceback": "..."}: the
pytest side (test_transport_contract.py) turns a failure into a test failure that reads like
one raised in the test itself. A fresh interpreter per case is what lets each case import its
own transport library (hivemind and libp2p cannot share a process).
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
import traceback
from pathlib import Path
from typing import Awaitable, Callable

from tests.contract.cases_push import pushed_values_reach_watchers, shard_pushes_reach_the_shard_only
from tests.contract.cases_records import records_and_membership
from tests.contract.cases_requests import rate_limits_at_the_boundary, requests_and_connect
from tests.contract.cases_restart import restart_after_sigkill
from tests.contract.cases_start import start_on_a_taken_port_fails_in_one_line
from tests.contract.cases_stop import a_helper_process_that_dies_is_a_failure, stop_closes_connections

Case = Callable[[str, Path], Awaitable[None]]
CASES: dict[str, Case] = {
    "records_and_membership": records_and_membership,
    "requests_and_connect": requests_and_connect,
    "restart_after_sigkill": restart_after_sigkill,
    "rate_limits_at_the_boundary": rate_limits_at_the_boundary,
    "pushed_values_reach_watchers": pushed_values_reach_watchers,
    "shard_pushes_reach_the_shard_only": shard_pushes_reach_the_shard_only,
    "start_on_a_taken_port_fails_in_one_line": start_on_a_taken_port_fails_in_one_line,
    "stop_closes_connections": stop_closes_connections,
    "a_helper_process_that_dies_is_a_failure": a_helper_process_that_dies_is_a_failure,
}


def run(kind: str, case: str, workdir: Path) -> dict:
    try:
        asyncio.run(CASES[case](kind, workdir))
    except BaseException as e:  # noqa: BLE001 - every way a case fails is reported to the test
        lines = traceback.format_exception(e)
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": "".join(lines)}
    return {"ok": True, "error": "", "traceback": ""}


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    kind_arg, case_arg, workdir_arg, result_arg = sys.argv[1:5]
    result = run(kind_arg, case_arg, Path(workdir_arg))
    Path(result_arg).write_text(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)
