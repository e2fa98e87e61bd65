"""Helpers for tests that start real `swarmnode run` processes (hivemind DHT + p2pd) on 127.0.0.1."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import pytest

from swarmnode.config import bundled_config_path
from swarmnode.home import NodeHome, read_runtime
from swarmnode.node.local_swarm import LocalSwarm

pytestmark = pytest.mark.integration


def status_json(home: NodeHome) -> dict[str, Any]:
    """What a user gets from `swarmnode status --json --home HOME`."""
    proc = subprocess.run(
        [sys.executable, "-m", "swarmnode", "status", "--json", "--home", str(home.root)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def peer_ids(status: dict[str, Any]) -> set[str]:
    return {p["peer_id"] for p in status["peers"]}


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.5, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def child_pids(home: NodeHome) -> list[int]:
    return [c["pid"] for c in read_runtime(home).get("children", [])]


def p2pd_of(home: NodeHome) -> list[psutil.Process]:
    """Every running p2pd started with this home's libp2p identity (found by its command line)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "p2pd" in cmdline and str(home.p2p_identity) in cmdline and alive(proc.pid):
            found.append(proc)
    return found


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# The integration tests that matter run on both transports (one swarm, one transport).
BOTH_TRANSPORTS = pytest.mark.parametrize("transport", ["hivemind", "libp2p"])


def transport_env(transport: str) -> dict[str, str]:
    """The environment that puts a daemon on `transport` (network.transport)."""
    return {"SWARMNODE__NETWORK__TRANSPORT": transport}


@pytest.fixture
def local_config() -> Path:
    return bundled_config_path("local.yaml")


@pytest.fixture
def make_swarm(tmp_path, local_config):
    """Start a LocalSwarm of N real daemons; every process is stopped after the test."""
    swarms: list[LocalSwarm] = []

    def make(size: int, config: Path | None = None) -> LocalSwarm:
        swarm = LocalSwarm(tmp_path / f"swarm{len(swarms)}", size, config or local_config)
        swarms.append(swarm)
        swarm.start()
        return swarm

    yield make
    for swarm in swarms:
        swarm.stop()


@pytest.fixture
def internet():
    """An emulated internet (network namespaces, NAT routers; see swarmnode/testing/internet),
    torn down after the test; skipped with its one reason where it cannot be built."""
    from swarmnode.testing.internet import Internet, why_unavailable

    reason = why_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Internet() as net:
        yield net
