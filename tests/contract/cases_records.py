"""Contract cases on DHT records and membership: transports join one, store, read, refuse.

Each case is `async def case(kind, workdir)`, run in an interpreter of its own (run_case.py).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from swarmnode.protocol import RejectReason
from swarmnode.swarm.peers import peer_id_of
from swarmnode.swarm.transports.base import JoinError, Transport
from swarmnode.swarm.windows import peer_records_key, window_index
from tests.contract.transports import (
    RECORD_TTL_S,
    WINDOW_S,
    Node,
    eventually,
    free_port,
    make_node,
    records_key,
    start_all,
    stop_all,
)

JOIN_TIMEOUT_S = 30.0
SPREAD_TIMEOUT_S = 45.0  # a record reaches everyone well within this on 127.0.0.1


def check_multiaddrs(maddrs: list[str], transport: Transport, port: int) -> None:
    assert maddrs, f"{transport.peer_id} gives no multiaddr"
    for maddr in maddrs:
        assert maddr.startswith("/ip"), f"{maddr!r} is not a full multiaddr"
        assert maddr.endswith(f"/p2p/{transport.peer_id}"), f"{maddr!r} does not end with /p2p/<its peer id>"
    assert any(f"/tcp/{port}/" in m for m in maddrs), f"none of {maddrs} names the port it listens on ({port})"


async def expect_join_error(transport: Transport, maddr: str, what: str) -> str:
    started = time.monotonic()
    with pytest.raises(JoinError) as info:
        await transport.join(maddr, 10.0)
    message = str(info.value)
    assert message and "\n" not in message and len(message) <= 300, f"join of {what}: not one short line: {message!r}"
    assert time.monotonic() - started < 20.0, f"join of {what} took {time.monotonic() - started:.0f}s"
    return message


async def join_errors(a: Transport, a_maddr: str, stranger: Node) -> None:
    """Joining a malformed address, oneself, or a port nothing listens on: JoinError, one line."""
    await expect_join_error(a, "not-a-multiaddr", "a malformed multiaddr")
    await expect_join_error(a, f"/ip4/127.0.0.1/tcp/{free_port()}", "a multiaddr without /p2p/")
    await expect_join_error(a, a_maddr, "its own address")
    await expect_join_error(a, f"/ip4/127.0.0.1/tcp/{free_port()}/p2p/{stranger.peer_id}", "a dead port")


async def records_and_membership(kind: str, workdir: Path) -> None:
    """Three honest transports: B and C join A; each stores its signed peer record under one key
    with its peer id as subkey, and each reads all three. A fourth, a forger whose transport
    checks nothing, joins too and stores what the policy refuses (a valid record under another
    swarm's key, its own record under B's subkey, garbage under a new subkey): no honest node
    ever reads those, and the honest nodes' policies counted each where values entered."""
    nodes = [make_node(workdir / name) for name in ("a", "b", "c")]
    forger, stranger = make_node(workdir / "forger"), make_node(workdir / "stranger")  # nobody runs the stranger
    transports = await start_all([n.open(kind) for n in nodes] + [forger.open(kind, checks_records=False)])
    try:
        honest, forging = transports[:3], transports[3]
        for node, transport in zip(nodes + [forger], transports):
            assert transport.peer_id == node.peer_id, "the transport's peer id is not its identity file's"
            check_multiaddrs(await transport.multiaddrs(), transport, node.port)
            assert abs(transport.dht_time() - time.time()) < 5.0, f"dht_time {transport.dht_time()} is far from now"
        a_maddr = next(m for m in await honest[0].multiaddrs() if f"/tcp/{nodes[0].port}/" in m)
        assert peer_id_of(a_maddr) == honest[0].peer_id
        await join_errors(honest[0], a_maddr, stranger)
        await join_all(honest[0], transports[1:], a_maddr)

        now = honest[0].dht_time()
        key, expiration = records_key(now), now + RECORD_TTL_S
        records = {node.peer_id: node.peer_record(now) for node in nodes}
        for node, transport in zip(nodes, honest):
            assert await transport.store(key, node.peer_id, records[node.peer_id], expiration), \
                f"{node.peer_id} could not store its own record"
        foreign_key = await store_refused_values(forging, forger, key, now, nodes[1], stranger)
        await eventually(lambda: everyone_reads(honest, key, records, expiration), SPREAD_TIMEOUT_S,
                         "all three honest records read by all three honest nodes")
        for name, transport in zip("abc", honest):
            assert await transport.get(foreign_key) == [], f"{name} reads a value under another swarm's key"
        await eventually(lambda: refusals_counted(nodes), SPREAD_TIMEOUT_S, "the record under another swarm's key, "
                         "the one forged under B's subkey and the garbage value counted as unknown_key, "
                         "subkey_mismatch and malformed")
    finally:
        await stop_all(transports)


async def join_all(a: Transport, others: list[Transport], a_maddr: str) -> None:
    """Everyone joins A; their routing tables, and then A's, are not empty."""
    for transport in others:
        await transport.join(a_maddr, JOIN_TIMEOUT_S)
        assert transport.routing_table_size() > 0, f"{transport.peer_id}'s routing table is empty after joining"

    async def a_knows_peers() -> bool:
        return a.routing_table_size() > 0

    await eventually(a_knows_peers, JOIN_TIMEOUT_S, "A's routing table fills")


async def store_refused_values(forging: Transport, forger: Node, key: str, now: float, victim: Node,
                               stranger: Node) -> str:
    """The forger stores a valid record of its own under another swarm's key, its record under
    the victim's subkey, and garbage under the stranger's subkey. Whether a store reports
    success is the transport's business: what counts is what honest nodes read. Returns the
    other swarm's key."""
    foreign_key = peer_records_key("another-swarm", window_index(now, WINDOW_S))
    await forging.store(foreign_key, forger.peer_id, forger.peer_record(now, swarm="another-swarm"), now + RECORD_TTL_S)
    await forging.store(key, victim.peer_id, forger.peer_record(now), now + RECORD_TTL_S)
    await forging.store(key, stranger.peer_id, b"not a peer record", now + RECORD_TTL_S)
    return foreign_key


async def everyone_reads(transports: list[Transport], key: str, records: dict[str, bytes], expiration: float) -> bool:
    """Whether every transport reads exactly `records` under `key` (a wrong value fails at once:
    no honest node may ever read the forged one, not even for a while)."""
    complete = True
    for name, transport in zip("abc", transports):
        found = {v.subkey: v for v in await transport.get(key)}
        assert set(found) <= set(records), f"{name} reads a refused value: subkeys {sorted(map(str, found))}"
        for peer, value in found.items():
            assert value.value == records[peer], f"{name} reads another value than {peer}'s record under its subkey"
            assert abs(value.expiration - expiration) < 1e-3, f"{name} reads expiration {value.expiration}, stored {expiration}"
        complete = complete and set(found) == set(records)
    return complete


async def refusals_counted(nodes: list[Node]) -> dict[str, int] | None:
    """Each refused value was counted by some honest node's policy (RecordIntake.stats): the
    transport consulted it where the value entered (the forger checks nothing itself). A host
    process checks values with its own copy of the policy and reports to the node's every 0.5 s,
    so this is polled: None until all three are counted."""
    rejected: dict[str, int] = {}
    for node in nodes:
        for reason, count in node.policy.stats.rejected.items():
            rejected[reason] = rejected.get(reason, 0) + count
    needed = (RejectReason.UNKNOWN_KEY, RejectReason.SUBKEY_MISMATCH, RejectReason.MALFORMED)
    return rejected if all(rejected.get(reason.value, 0) >= 1 for reason in needed) else None
