"""Contract case: a node's process is SIGKILLed and started again with the same identity and
port; it leaves nothing running behind and its peer reaches it again.

The case is `async def case(kind, workdir)`, run in an interpreter of its own (run_case.py);
the node it kills runs in a process of its own below that (holder.py).
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from swarmnode.swarm.transports.base import RequestFailed, Transport
from tests.contract.holder import ECHO
from tests.contract.transports import alive, eventually, make_node, start_all, stop_all

READY_TIMEOUT_S = 60.0
TIMEOUT_S = 10.0
REPO_ROOT = Path(__file__).resolve().parents[2]


class Holder:
    """A holder.py process: one transport with a fixed identity and port, until SIGKILL."""

    def __init__(self, kind: str, node_dir: Path, port: int, generation: int, join_maddr: str):
        self.ready_file = node_dir.parent / f"ready-{generation}.json"
        self.log = (node_dir.parent / f"holder-{generation}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.contract.holder", kind, str(node_dir), str(port), str(generation),
             join_maddr, str(self.ready_file)],
            cwd=REPO_ROOT, stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.ready: dict = {}

    async def wait_ready(self) -> dict:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.ready_file.exists():
            if self.process.poll() is not None:
                raise AssertionError(f"the holder exited ({self.process.returncode}) before it was ready: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the holder was not ready within {READY_TIMEOUT_S:g}s: {self.log_tail()}")
            await asyncio.sleep(0.2)
        self.ready = json.loads(self.ready_file.read_text())
        return self.ready

    def log_tail(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-2000:]

    def descendants(self) -> list[int]:
        return [p.pid for p in psutil.Process(self.process.pid).children(recursive=True)]

    async def kill(self) -> list[int]:
        """SIGKILL the holder; the pids of what it had started, all of which must go with it."""
        left = sorted(set(self.descendants()) | set(self.ready.get("child_pids", [])))
        os.kill(self.process.pid, signal.SIGKILL)
        await asyncio.to_thread(self.process.wait)
        self.log.close()
        return left


async def restart_after_sigkill(kind: str, workdir: Path) -> None:
    """B runs here; A runs in a holder process, is SIGKILLed (nothing it started survives) and
    comes back with the same identity and port; B's requests reach the new A and B reads A's
    new record."""
    node_a = make_node(workdir / "a")
    node_b = make_node(workdir / "b")
    (b,) = await start_all([node_b.open(kind)])
    holders: list[Holder] = []
    try:
        b_maddr = next(m for m in await b.multiaddrs() if f"/tcp/{node_b.port}/" in m)
        for generation in (1, 2):
            holder = Holder(kind, workdir / "a", node_a.port, generation, b_maddr)
            holders.append(holder)
            ready = await holder.wait_ready()
            assert ready["peer_id"] == node_a.peer_id, "the holder runs another identity than its key file's"
            assert ready["stored"], f"generation {generation} could not store its record"
            await reached_again(b, node_a.peer_id, generation, ready["key"], base64.b64decode(ready["record"]))
            if kind in ("hivemind", "libp2p-process"):
                assert ready["child_pids"], f"a {kind} transport names no child process (its p2pd, its host)"
            left = await holder.kill()
            await eventually(lambda: none_alive(left), 15.0, f"processes {left} the killed holder started are gone")
    finally:
        for holder in holders:
            if holder.process.poll() is None:
                await holder.kill()
        await stop_all([b])


async def none_alive(pids: list[int]) -> bool:
    return not any(alive(pid) for pid in pids)


async def reached_again(b: Transport, a_peer: str, generation: int, key: str, record: bytes) -> None:
    """B's request is answered by this generation of A, and B reads the record it stored."""

    async def answered() -> bytes:
        try:
            return await b.request(a_peer, ECHO, b"hello", TIMEOUT_S)
        except RequestFailed:
            return b""

    answer = await eventually(answered, 45.0, f"B's request answered by generation {generation}")
    assert answer == f"generation {generation} answers {b.peer_id}: hello".encode(), f"answer {answer!r}"

    async def record_read() -> bool:
        found = {v.subkey: v.value for v in await b.get(key)}
        return found.get(a_peer) == record

    await eventually(record_read, 45.0, f"B reads the record generation {generation} stored")
