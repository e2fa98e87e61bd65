"""Contract case on pushed values: a transport with push (libp2p's GossipSub) tells its watchers
of a peer's new value without being asked, and refuses (and counts) what its policy refuses; a
transport without push (hivemind) never calls a watcher."""
from __future__ import annotations

import asyncio
from pathlib import Path

from tests.contract.cases_records import JOIN_TIMEOUT_S, store_refused_values
from tests.contract.transports import RECORD_TTL_S, eventually, make_node, records_key, start_all, stop_all

PUSH_TIMEOUT_S = 30.0


async def pushed_values_reach_watchers(kind: str, workdir: Path) -> None:
    a, b, forger = make_node(workdir / "a"), make_node(workdir / "b"), make_node(workdir / "forger")
    stranger = make_node(workdir / "stranger")  # never runs: its subkey carries the forger's garbage
    transports = await start_all([a.open(kind), b.open(kind), forger.open(kind, checks_records=False)])
    try:
        ta, tb, tf = transports
        a_maddr = next(m for m in await ta.multiaddrs() if f"/tcp/{a.port}/" in m)
        await tb.join(a_maddr, JOIN_TIMEOUT_S)
        await tf.join(a_maddr, JOIN_TIMEOUT_S)
        heard: list[tuple[str, str]] = []
        tb.watch_pushes(lambda key, subkey: heard.append((key, subkey)))
        await asyncio.sleep(2.0)  # GossipSub builds its mesh on its heartbeat (1 s)
        now = ta.dht_time()
        key = records_key(now)
        assert await ta.store(key, a.peer_id, a.peer_record(now), now + RECORD_TTL_S)
        foreign_key = await store_refused_values(tf, forger, key, now, b, stranger)
        if kind == "hivemind":
            await asyncio.sleep(5.0)
            assert heard == [], f"hivemind has no push, yet a watcher heard {heard}"
            return

        async def b_heard_a() -> bool:
            return (key, a.peer_id) in heard

        await eventually(b_heard_a, PUSH_TIMEOUT_S, "B's watcher to hear A's record without a read")

        async def refusals_counted() -> bool:
            return tb.counters().get("pushed_entries_refused", 0) >= 2

        await eventually(refusals_counted, PUSH_TIMEOUT_S, "B to refuse and count the forger's pushes")
        assert (key, stranger.peer_id) not in heard and all(k != foreign_key for k, _ in heard), \
            f"a refused value reached B's watcher: {heard}"
        assert tb.counters()["pushed_entries"] >= 1
        assert {v.subkey for v in await tb.get(key)} == {a.peer_id}  # the forger's values never read
    finally:
        await stop_all(transports)
