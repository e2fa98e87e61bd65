"""Flood attacks: many messages, many identities, or none at all (a stalling peer)."""
from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from typing import Any

from swarmnode.swarm.gossip.rollout_bookkeeping import ROLLOUT_PROTOCOL, parse_rollout_fetch_response, rollout_fetch_request
from swarmnode.swarm.transports.base import RequestFailed
from swarmnode.testing.hostile.keys import peer_records_key, rollouts_key
from swarmnode.testing.hostile.personas import HostilePeer, say, throwaway_identity
from swarmnode.testing.hostile.crafting import (
    FIRST_BATCH_ID,
    FLOOD_RECORD_TTL_S,
    Expectation,
    attack,
    finish,
    result,
)


@attack("stall", Expectation())
async def stall(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """A valid announcement, and fetch answers that never come (the victim's fetch times out):
    does a slow peer hold up fetches from honest ones?"""
    p = await peer.new_persona("stall")

    async def answer(after: int, max_batches: int, remote: str) -> bytes:
        await asyncio.sleep(3600.0)
        return p.respond([])

    p.serve_fn = answer
    p.announce_range = (FIRST_BATCH_ID, FIRST_BATCH_ID)
    await asyncio.sleep(args.seconds)
    return await finish(p, result(p))


@attack("announce_flood", Expectation())
async def announce_flood(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Its announcement re-signed and re-stored into the victim's DHT node as fast as it goes
    (16 stores in flight), every other one with an ever larger batch range (on libp2p each one
    also pushed on the swarm's GossipSub topic)."""
    p = await peer.new_persona("announce-flood")
    p.serve_fn = lambda after, max_batches, remote: p.respond([])
    outcomes: Counter = Counter()
    slots = asyncio.Semaphore(16)
    pending: set[asyncio.Task] = set()
    deadline = time.monotonic() + args.seconds
    i = 0

    async def one(value: bytes, key: str, expiration: float) -> None:
        try:
            item = [(key, p.peer_id, value, expiration)]
            verdicts = await p.store_direct(peer.victim_id, item)
            outcomes["stored" if verdicts and verdicts[0] else ("refused" if verdicts else "no_answer")] += 1
            await p.push(peer.victim_id, item)  # libp2p: how values reach its reads (persona_transport.py)
        finally:
            slots.release()

    while time.monotonic() < deadline:
        await slots.acquire()
        i += 1
        now = p.now()
        last = FIRST_BATCH_ID if i % 2 else FIRST_BATCH_ID + 1000 * i
        task = asyncio.create_task(one(p.announcement(FIRST_BATCH_ID, last, now=now),
                                       rollouts_key(p.swarm, p.window()), now + 8.0))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending, return_exceptions=True)
    seconds = args.seconds
    return await finish(p, result(p, stores=dict(outcomes), stores_per_s=round(i / seconds, 1)))


@attack("request_flood", Expectation(limits=("serve_refused",)))
async def request_flood(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Fetch requests to the victim as fast as they go, --concurrency in flight."""
    p = await peer.new_persona("request-flood")
    outcomes: Counter = Counter()
    slots = asyncio.Semaphore(args.concurrency)
    pending: set[asyncio.Task] = set()
    deadline = time.monotonic() + args.seconds
    started = time.monotonic()

    async def one() -> None:
        try:
            response = await p.transport.request(peer.victim_id, ROLLOUT_PROTOCOL, rollout_fetch_request(0), 5.0)
            envelopes = parse_rollout_fetch_response(response)
            outcomes["answered" if envelopes else "empty"] += 1
            outcomes["envelopes_received"] += len(envelopes or [])
        except RequestFailed:
            outcomes["failed"] += 1
        finally:
            slots.release()

    while time.monotonic() < deadline:
        await slots.acquire()
        p.sent["requests"] += 1
        task = asyncio.create_task(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending, return_exceptions=True)
    elapsed = time.monotonic() - started
    return await finish(p, result(p, outcomes=dict(outcomes), requests_per_s=round(p.sent["requests"] / elapsed, 1)))


@attack("identity_flood", Expectation())
async def identity_flood(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """--identities fresh valid identities (node key + libp2p key each), each with a signed
    PeerRecord and announcement stored straight into the victim's DHT node under the current
    window's keys, 100 values per store RPC, 4 RPCs in flight, living as long as a value may (on
    libp2p: one PUT_VALUE per value, 8 in flight per RPC's worth, and every value pushed on the
    swarm's GossipSub topic too)."""
    p = await peer.new_persona("identity-flood")
    outcomes: Counter = Counter()
    slots = asyncio.Semaphore(4)
    pending: set[asyncio.Task] = set()
    deadline = time.monotonic() + args.identity_seconds
    started = time.monotonic()
    made = 0
    chunk = 50

    async def one(values: list[tuple[str, str, bytes, float]]) -> None:
        try:
            verdicts = await p.store_direct(peer.victim_id, values)
            if verdicts is None:
                outcomes["no_answer"] += len(values)
            else:
                outcomes["stored"] += sum(1 for v in verdicts if v)
                outcomes["refused"] += sum(1 for v in verdicts if not v)
            await p.push(peer.victim_id, values)  # libp2p: how values reach its reads (persona_transport.py)
        finally:
            slots.release()

    while made < args.identities and time.monotonic() < deadline:
        await slots.acquire()
        now, window = p.now(), p.window()
        values = []
        for _ in range(min(chunk, args.identities - made)):
            ident = throwaway_identity()
            values.append((peer_records_key(p.swarm, window), ident.peer_id,
                           p.peer_record(ident, ttl_s=FLOOD_RECORD_TTL_S, now=now), now + FLOOD_RECORD_TTL_S))
            values.append((rollouts_key(p.swarm, window), ident.peer_id,
                           p.announcement(1, 1, ident, ttl_s=FLOOD_RECORD_TTL_S, now=now), now + FLOOD_RECORD_TTL_S))
            made += 1
        task = asyncio.create_task(one(values))
        pending.add(task)
        task.add_done_callback(pending.discard)
        if made % 2000 < chunk:
            say(f"identity_flood: {made} identities, {dict(outcomes)}")
    await asyncio.gather(*pending, return_exceptions=True)
    elapsed = time.monotonic() - started
    return await finish(p, result(p, identities=made, stores=dict(outcomes), seconds_storing=round(elapsed, 1),
                                  identities_per_s=round(made / max(elapsed, 1e-9), 1)))
