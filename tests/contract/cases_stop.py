"""Contract case: a transport stopped in a process that lives on (a test's, the hostile peer's
personas) leaves no connection behind that looks alive to its peers and never answers.

The case is `async def case(kind, workdir)`, run in an interpreter of its own (run_case.py).
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.contract.transports import RECORD_TTL_S, eventually, make_node, records_key, start_all, stop_all

TIMEOUT_S = 10.0
# A store once a peer has stopped takes this long at most: a connection left open to it would
# make each DHT query that asks it wait out its timeout (py-libp2p's: 10 s per query, 20-40 s
# per store, measured).
STORE_AFTER_STOP_S = 5.0


async def stop_closes_connections(kind: str, workdir: Path) -> None:
    """B joins A and stores its record; B stops, this process goes on: A's connection to B
    closes, and A's stores and reads no longer wait on B."""
    node_a, node_b = make_node(workdir / "a"), make_node(workdir / "b")
    a, b = await start_all([node_a.open(kind), node_b.open(kind)])
    try:
        a_maddr = next(m for m in await a.multiaddrs() if f"/tcp/{node_a.port}/" in m)
        await b.join(a_maddr, TIMEOUT_S)
        now = time.time()
        assert await b.store(records_key(now), node_b.peer_id, node_b.peer_record(now), now + RECORD_TTL_S)
        assert await a.remote_ip(node_b.peer_id) == "127.0.0.1", "A does not see B connected after B joined it"
        await b.stop()

        async def disconnected() -> bool:
            return await a.remote_ip(node_b.peer_id) is None

        await eventually(disconnected, TIMEOUT_S, "A's connection to the stopped B is closed")
        for attempt in range(2):
            now = time.time()
            started = time.monotonic()
            await a.store(records_key(now), node_a.peer_id, node_a.peer_record(now), now + RECORD_TTL_S)
            await a.get(records_key(now))
            elapsed = time.monotonic() - started
            assert elapsed < STORE_AFTER_STOP_S, f"A's store and read {attempt + 1} after B stopped took {elapsed:.1f}s"
    finally:
        await stop_all([a, b])


async def a_helper_process_that_dies_is_a_failure(kind: str, workdir: Path) -> None:
    """A transport whose helper process (hivemind's p2pd, libp2p's host process) dies says so in
    one line (the node stops on it rather than run on without a network), and a request then
    fails as a request, not as a hang. A transport without a helper process has nothing to kill."""
    node_a = make_node(workdir / "a")
    (a,) = await start_all([node_a.open(kind)])
    try:
        children = a.child_processes()
        if not children:
            assert kind == "libp2p", f"a {kind} transport names no helper process"
            return
        assert a.failure() is None
        os.kill(children[0], signal.SIGKILL)

        async def failed() -> bool:
            return a.failure() is not None

        await eventually(failed, TIMEOUT_S, "the transport to say its helper process died")
        assert "\n" not in a.failure() and "no network" in a.failure(), a.failure()
        started = time.monotonic()
        try:
            await a.request(node_a.peer_id[:-1] + "x", "swarmnode/v1/none", b"?", 5.0)
        except Exception:  # noqa: BLE001 - any failure will do; it must come, and soon
            pass
        assert time.monotonic() - started < 10.0, "a request to a dead helper process hung"
    finally:
        await stop_all([a])
