"""Contract cases on pushed values: a transport with push (libp2p's GossipSub) tells its watchers
of a peer's new value without being asked, and refuses (and counts) what its policy refuses; a
transport without push (hivemind) never calls a watcher. A shard's entries are pushed to the
nodes of that shard only."""
from __future__ import annotations

import asyncio
from pathlib import Path

from swarmnode.swarm.windows import peer_records_shard_key, window_index
from tests.contract.cases_records import JOIN_TIMEOUT_S, store_refused_values
from tests.contract.transports import (
    RECORD_TTL_S,
    SWARM,
    WINDOW_S,
    eventually,
    make_node,
    records_key,
    start_all,
    stop_all,
)

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


async def shard_pushes_reach_the_shard_only(kind: str, workdir: Path) -> None:
    """libp2p: an entry under a shard's key is pushed on the shard's topic (shard_topics.py), to
    the nodes that store under that shard (B) and not to a node that stores under the key of
    one per window only (C), which still reads it from the DHT; C hears that key's pushes on the
    swarm-wide topic. hivemind has no push (pushed_values_reach_watchers): nothing to check."""
    if kind == "hivemind":
        return
    a, b, c = make_node(workdir / "a"), make_node(workdir / "b"), make_node(workdir / "c")
    transports = await start_all([a.open(kind), b.open(kind), c.open(kind)])
    try:
        ta, tb, tc = transports
        a_maddr = next(m for m in await ta.multiaddrs() if f"/tcp/{a.port}/" in m)
        await tb.join(a_maddr, JOIN_TIMEOUT_S)
        await tc.join(a_maddr, JOIN_TIMEOUT_S)
        heard_b: list[tuple[str, str]] = []
        heard_c: list[tuple[str, str]] = []
        tb.watch_pushes(lambda key, subkey: heard_b.append((key, subkey)))
        tc.watch_pushes(lambda key, subkey: heard_c.append((key, subkey)))
        now = ta.dht_time()
        shard_key, one_key = peer_records_shard_key(SWARM, window_index(now, WINDOW_S), 0, 0), records_key(now)
        assert await tb.store(shard_key, b.peer_id, b.peer_record(now), now + RECORD_TTL_S)  # B joins the topic
        assert await tc.store(one_key, c.peer_id, c.peer_record(now), now + RECORD_TTL_S)
        await asyncio.sleep(2.0)  # B's subscription reaches A; GossipSub's heartbeat is 1 s

        async def heard_a() -> bool:  # A stores as a node does, again and again
            assert await ta.store(shard_key, a.peer_id, a.peer_record(now), now + RECORD_TTL_S)
            assert await ta.store(one_key, a.peer_id, a.peer_record(now), now + RECORD_TTL_S)
            return (shard_key, a.peer_id) in heard_b and (one_key, a.peer_id) in heard_c

        await eventually(heard_a, PUSH_TIMEOUT_S, "B to hear A's shard push and C its push on the swarm topic")

        async def c_reads_the_shard() -> bool:
            return {v.subkey for v in await tc.get(shard_key)} == {a.peer_id, b.peer_id}

        await eventually(c_reads_the_shard, PUSH_TIMEOUT_S, "C to read the shard's entries from the DHT")
        await asyncio.sleep(3.0)
        assert all(key != shard_key for key, _ in heard_c), f"a shard's push reached a node not in it: {heard_c}"
        assert (one_key, a.peer_id) in heard_b  # every node stays on the swarm-wide topic
    finally:
        await stop_all(transports)
