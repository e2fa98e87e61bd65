"""Contract cases on requests between peers: serve / request / remote_ip / connect, and the
rate limits RoutedTransport applies at the boundary, on top of a transport of each kind.

Each case is `async def case(kind, workdir)`, run in an interpreter of its own (run_case.py).
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import time
from pathlib import Path

import pytest

from swarmnode.protocol import relay_messages
from swarmnode.protocol.codec import P2PD_MAX_MESSAGE_BYTES
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_UNKNOWN
from swarmnode.swarm.relaying.routed_transport import RoutedTransport
from swarmnode.swarm.transports.base import RequestFailed, Transport
from tests.contract.transports import free_port, make_node, start_all, stop_all

ECHO = "swarmnode/contract/echo"
RAISES = "swarmnode/contract/raises"
UNSERVED = "swarmnode/contract/unserved"
TIMEOUT_S = 10.0
FAILURE_TIMEOUT_S = 5.0  # a failing request must give up within this (plus slack)
# The largest answer the node sends: a sealed gradient summary (codec's cap for it, 64 KiB under
# p2pd's 4 MiB message cap). Requests are small (fetch cursors, relayed requests). Random
# bytes, so nothing compresses them away.
LARGEST_ANSWER_BYTES = P2PD_MAX_MESSAGE_BYTES - 64 * 1024
CONCURRENT = 20


class Echo:
    """Answers `<its name> got <payload> from <requester>`; remembers who asked."""

    def __init__(self, name: str):
        self.name = name
        self.requesters: list[str] = []

    async def __call__(self, payload: bytes, requester: str) -> bytes:
        self.requesters.append(requester)
        if payload.startswith(b"send "):  # "send N": N bytes back, as a large answer
            return random_bytes(int(payload[5:]))
        if len(payload) > 1024:  # large payloads come back reversed: proof the handler read them whole
            return payload[::-1]
        return f"{self.name} got ".encode() + payload + f" from {requester}".encode()


async def fail_handler(payload: bytes, requester: str) -> bytes:
    raise ValueError("this handler always fails")


async def expect_request_failed(transport: Transport, peer_id: str, protocol: str, what: str) -> str:
    """The request raises RequestFailed within its timeout (plus slack), with a short one-line reason."""
    started = time.monotonic()
    with pytest.raises(RequestFailed) as info:
        await transport.request(peer_id, protocol, b"hello", FAILURE_TIMEOUT_S)
    elapsed = time.monotonic() - started
    reason = info.value.reason
    assert elapsed < FAILURE_TIMEOUT_S + 3.0, f"a request to {what} took {elapsed:.1f}s (timeout {FAILURE_TIMEOUT_S}s)"
    assert reason and "\n" not in reason and len(reason) <= 200, f"a request to {what}: reason not one short line: {reason!r}"
    return reason


async def full_maddr(transport: Transport, port: int) -> str:
    return next(m for m in await transport.multiaddrs() if f"/tcp/{port}/" in m)


async def requests_and_connect(kind: str, workdir: Path) -> None:
    """A serves; B joins A and requests (small, largest, failing, concurrent); A sees B at
    127.0.0.1; C, a stranger to both, connects to A by a bare address and to B by a full one."""
    nodes = [make_node(workdir / name) for name in ("a", "b", "c")]
    stranger = make_node(workdir / "stranger")
    transports = await start_all([n.open(kind) for n in nodes])
    try:
        a, b, c = transports
        echoes = [Echo(name) for name in "abc"]
        for transport, echo in zip(transports, echoes):
            await transport.serve(ECHO, echo)
        await a.serve(RAISES, fail_handler)
        await b.join(await full_maddr(a, nodes[0].port), TIMEOUT_S)

        answer = await b.request(a.peer_id, ECHO, b"ping", TIMEOUT_S)
        assert answer == f"a got ping from {b.peer_id}".encode(), f"unexpected answer {answer[:200]!r}"
        assert echoes[0].requesters == [b.peer_id], f"A's handler saw requesters {echoes[0].requesters}"
        seen_at = await a.remote_ip(b.peer_id)
        assert seen_at == "127.0.0.1", f"A sees B's connection come from {seen_at!r}, not 127.0.0.1"

        await large_payloads(b, a.peer_id)

        await expect_request_failed(b, a.peer_id, UNSERVED, "an unserved protocol")
        await expect_request_failed(b, a.peer_id, RAISES, "a handler that raises")
        await expect_request_failed(b, stranger.peer_id, ECHO, "an unknown peer")
        payloads = [f"request {i}".encode() for i in range(CONCURRENT)]
        answers = await asyncio.gather(*(b.request(a.peer_id, ECHO, p, 30.0) for p in payloads))
        assert answers == [b"a got " + p + f" from {b.peer_id}".encode() for p in payloads], "concurrent answers differ"

        await connect_both_ways(c, a, b, nodes[0].port, nodes[1].port)
        await expect_connect_failed(c, stranger.peer_id, f"/ip4/127.0.0.1/tcp/{free_port()}")
    finally:
        await stop_all(transports)


def random_bytes(n: int) -> bytes:
    return random.Random(n).randbytes(n)


async def large_payloads(b: Transport, a_peer: str) -> None:
    """The largest answer the node sends arrives intact; a request of a full 4 MiB (over p2pd's
    cap with its framing, over the libp2p transport's request cap) either round-trips or fails
    as RequestFailed within its timeout, never hangs."""
    answer = await b.request(a_peer, ECHO, f"send {LARGEST_ANSWER_BYTES}".encode(), 60.0)
    assert answer == random_bytes(LARGEST_ANSWER_BYTES), f"the largest answer came back changed ({len(answer)} bytes)"
    full = os.urandom(4 * 2**20)
    started = time.monotonic()
    try:
        answer = await b.request(a_peer, ECHO, full, 30.0)
    except RequestFailed as e:
        assert time.monotonic() - started < 33.0 and "\n" not in e.reason, f"4 MiB failed slowly or at length: {e.reason!r}"
    else:
        assert answer == full[::-1], "a 4 MiB payload came back changed"


async def connect_both_ways(c: Transport, a: Transport, b: Transport, a_port: int, b_port: int) -> None:
    """connect() with a bare multiaddr and with one ending in /p2p/<peer id>; requests then work."""
    await c.connect(a.peer_id, [f"/ip4/127.0.0.1/tcp/{a_port}"], TIMEOUT_S)
    await c.connect(b.peer_id, [await full_maddr(b, b_port)], TIMEOUT_S)
    assert await c.request(a.peer_id, ECHO, b"x", TIMEOUT_S) == f"a got x from {c.peer_id}".encode()
    assert await c.request(b.peer_id, ECHO, b"y", TIMEOUT_S) == f"b got y from {c.peer_id}".encode()


async def expect_connect_failed(c: Transport, peer_id: str, maddr: str) -> None:
    started = time.monotonic()
    with pytest.raises(RequestFailed) as info:
        await c.connect(peer_id, [maddr], FAILURE_TIMEOUT_S)
    assert time.monotonic() - started < FAILURE_TIMEOUT_S + 3.0, "a connect to a dead port outlived its timeout"
    assert "\n" not in info.value.reason and len(info.value.reason) <= 200, f"reason: {info.value.reason!r}"


class NoRecords:
    """No peer's record is known (a PeerRoutes): every peer is dialled directly."""

    def route_of(self, peer_id: str) -> tuple[int, tuple[str, ...]]:
        return REACHABILITY_UNKNOWN, ()

    def addresses_of(self, peer_id: str) -> list[str]:
        return []


def routed(inner: Transport) -> RoutedTransport:
    """The node's wrapping, with a burst of 3 forwards per peer and (next to) no refill."""
    return RoutedTransport(inner, routes=NoRecords(), relay_capacity=2, reservation_ttl_s=60.0,
                           relay_timeout_cap_s=10.0, max_forwards=8, requests_per_s=0.001, burst=3,
                           max_tracked_peers=64)


async def rate_limits_at_the_boundary(kind: str, workdir: Path) -> None:
    """RoutedTransport over this kind: A relays for C; B's forwards beyond its burst are refused
    and counted; B's dial-back requests beyond theirs get no answer; a delivery from a peer that
    is not C's relay is refused and counted. The limits key on the requester id the transport
    reports, so a transport that reports it wrong fails here."""
    nodes = [make_node(workdir / name) for name in ("a", "b", "c")]
    a, b, c = transports = await start_all([routed(n.open(kind)) for n in nodes])
    try:
        a.offer_relaying(True)
        a_maddr = await full_maddr(a, nodes[0].port)
        await b.join(a_maddr, TIMEOUT_S)
        await c.join(a_maddr, TIMEOUT_S)
        await c.serve(ECHO, Echo("c"))
        c.use_relays({a.peer_id})
        granted = relay_messages.parse_reserve_response(await c.request(
            a.peer_id, relay_messages.RELAY_RESERVE_PROTOCOL, relay_messages.reserve_request(), TIMEOUT_S))
        assert granted is not None and granted.granted, f"A refused C's reservation: {granted}"

        outcomes = [await forward_via(b, a, c.peer_id, f"f{i}".encode()) for i in range(5)]
        assert outcomes[:3] == [f"c got f{i} from {b.peer_id}".encode() for i in range(3)], outcomes
        assert outcomes[3:] == ["relay busy", "relay busy"], outcomes
        assert (a.counters.forwarded, a.counters.forwards_refused) == (3, 2), dataclasses.asdict(a.counters)

        await dialbacks_over_burst(b, a, nodes[1].port)
        await b.connect(c.peer_id, [await full_maddr(c, nodes[2].port)], TIMEOUT_S)
        sneak = relay_messages.delivery(b.peer_id, ECHO, b"sneak")
        refused = relay_messages.parse_answer(await b.request(c.peer_id, relay_messages.RELAY_DELIVER_PROTOCOL, sneak,
                                                              TIMEOUT_S))
        assert refused is not None and refused.error == "not a relay of this node", refused
        assert c.counters.deliveries_refused == 1 and c.counters.delivered == 3, dataclasses.asdict(c.counters)
    finally:
        await stop_all(transports)


async def forward_via(requester: Transport, relay: Transport, target: str, payload: bytes) -> bytes | str:
    """What the relay answered to a forward: the target's payload, or the relay's error."""
    raw = await requester.request(relay.peer_id, relay_messages.RELAY_FORWARD_PROTOCOL,
                                  relay_messages.forward(target, ECHO, payload, 5000), TIMEOUT_S)
    answer = relay_messages.parse_answer(raw)
    assert answer is not None, f"the relay's answer does not parse: {raw[:100]!r}"
    return answer.error or answer.payload


async def dialbacks_over_burst(b: RoutedTransport, a: RoutedTransport, b_port: int) -> None:
    """Three dial-backs are answered (A reaches B's port at 127.0.0.1), the fourth is not."""
    answers = []
    for _ in range(4):
        raw = await b.request(a.peer_id, relay_messages.DIALBACK_PROTOCOL, relay_messages.dialback_request([b_port]),
                              TIMEOUT_S)
        answers.append(relay_messages.parse_dialback_response(raw, [b_port]) if raw else None)
    assert answers[:3] == [("127.0.0.1", [b_port])] * 3, f"dial-back answers: {answers}"
    assert answers[3] is None, f"the dial-back over the burst was answered: {answers[3]}"
    assert a.counters.dialbacks_answered == 3, dataclasses.asdict(a.counters)
