"""The attack classes: one small coroutine each, `ATTACKS[name](peer, args) -> result`.

A result is {"peer_ids": identities the attack used (its persona's first), "sent": {kind: count},
"details": {...}}. `EXPECTED[name]` says what the victim's status must show for it: rejection
reasons (`messages.rejected` keys) that must all be counted, reasons of which at least one must
be, and `limits` counters that must move.

Attacks that serve batches run on a fresh persona (identity + p2pd) each: it announces a range,
serves its crafted batches to the victim's fetches, and stops once the victim has taken them
all (plus a short linger) or after --seconds. Floods take all of --seconds.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import time
from collections import Counter
from typing import Any, Callable

from swarmnode.identity import NodeIdentity, SigningKey
from swarmnode.protocol.codec import PROTOCOL_VERSION, MessageKind
from swarmnode.protocol.generated import envelope_pb2, rollout_batch_pb2
from swarmnode.swarm.gossip.rollout_bookkeeping import MAX_BATCHES_PER_FETCH
from swarmnode.testing.hostile.keys import peer_records_key, rollouts_key
from swarmnode.testing.hostile.groups import ITEM_SEED
from swarmnode.testing.hostile.personas import HostilePeer, throwaway_identity
from swarmnode.testing.hostile import floods  # noqa: F401 - registers the flood attacks
from swarmnode.testing.hostile import summary_attacks  # noqa: F401 - registers the summary attacks
from swarmnode.testing.hostile.crafting import (  # noqa: F401 - ATTACKS and EXPECTED are this module's API
    ATTACKS,
    EXPECTED,
    FIRST_BATCH_ID,
    FLOOD_RECORD_TTL_S,
    FOREIGN_MODEL,
    BIG_INTS,
    LOG5,
    TEN_YEARS_S,
    Batches,
    Expectation,
    attack,
    finish,
    raw_announcement,
    raw_envelope,
    raw_record,
    result,
    serve,
    start,
    store_everywhere,
)

REPLAY_GRACE_S = 20.0  # how much longer a replayer serves while the victim has fetched no replay

# -- the attacks -----------------------------------------------------------------------------------


@attack("int_overflow", Expectation(all_of=("out_of_range",)))
async def int_overflow(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Integers at 2^53+1, 2^63 and 2^64-1 in every integer field of a served batch (policy
    version, window, task seed and index, batch id), and announcements with batch ids >= 2^53."""
    p, version = await start(peer, "int-overflow")
    c, b = peer.crafter, Batches(peer, p, version)
    items = []
    for v in BIG_INTS:
        items.append(b(policy_version=v))
        items.append(b(window=v))
        items.append(b([c.task_group("sum2", v, 0)]))
        items.append(b([c.task_group("sum3", ITEM_SEED, v)]))
    items += [b(batch_id=v) for v in BIG_INTS]  # last: a victim taking 2^63 as a cursor would refuse all else
    now, window = p.now(), p.window()
    liars = [throwaway_identity() for _ in range(3)]
    ranges = [(2**53 + 1, 2**53 + 5), (1, 2**63), (2**63, 2**64 - 1)]
    values = [(rollouts_key(p.swarm, window), ident.peer_id,
               raw_announcement(ident, window, now, first_batch_id=lo, last_batch_id=hi), now + 8.0)
              for ident, (lo, hi) in zip(liars, ranges)]
    stores = await store_everywhere(p, peer.victim_id, values)
    outbox = await serve(p, items, args)
    return await finish(p, result(p, *(i.peer_id for i in liars), batches=len(items), delivered=len(outbox.delivered),
                                  announcement_stores=dict(stores)))


@attack("long_completion", Expectation(all_of=("too_long",)))
async def long_completion(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Same-model completions of 8192 token ids (and of max_new_tokens + 1 = 9), and another
    model's completions whose text re-tokenises to 512 tokens (and 16384 characters)."""
    p, version = await start(peer, "long-completion")
    c, b = peer.crafter, Batches(peer, p, version)
    rng = __import__("random").Random(7)

    def same_model(length: int) -> rollout_batch_pb2.RolloutGroup:
        group = c.group()
        for completion in group.completions:
            ids = [rng.randrange(0, c.eos) for _ in range(length - 1)] + [c.eos]
            completion.token_ids[:] = ids
            completion.logprobs[:] = [-5.0] * length
            completion.text = ""
        return group

    def foreign(chars: int) -> rollout_batch_pb2.RolloutGroup:
        group = c.group()
        for j, completion in enumerate(group.completions):
            completion.text = str(j + 1) * chars  # digits: one byte token each here, numbers everywhere
            del completion.token_ids[:]
            del completion.logprobs[:]
        return group

    other_model = FOREIGN_MODEL
    items = [b([same_model(8192)]), b([same_model(9)]), b([foreign(512)], model_fingerprint=other_model),
             b([foreign(17)], model_fingerprint=other_model), b([foreign(16_384)], model_fingerprint=other_model)]
    outbox = await serve(p, items, args)
    return await finish(p, result(p, batches=len(items), delivered=len(outbox.delivered),
                                  bytes=sum(len(e) for _, e in items)))


@attack("future", Expectation(all_of=("from_future",)))
async def future(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Batches made an hour ahead with policy version 10^9, and each of the two alone."""
    p, version = await start(peer, "future")
    b = Batches(peer, p, version)
    ahead = p.now() + 3600.0
    items = [b(created_at=ahead, policy_version=10**9), b(created_at=ahead), b(policy_version=10**9),
             b(window=p.window() + 360)]
    outbox = await serve(p, items, args)
    return await finish(p, result(p, batches=len(items), delivered=len(outbox.delivered)))


@attack("long_lifetime", Expectation(any_of=("lifetime", "dht_expiration")))
async def long_lifetime(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """A PeerRecord and an announcement that claim ten years of life, stored for ten years in the
    DHT, and the same claims stored for a minute."""
    p = await peer.new_persona("long-lifetime")
    now, window = p.now(), p.window()
    ids = [throwaway_identity() for _ in range(4)]
    far = now + TEN_YEARS_S
    values = [
        (peer_records_key(p.swarm, window), ids[0].peer_id, p.peer_record(ids[0], ttl_s=TEN_YEARS_S, now=now), far),
        (peer_records_key(p.swarm, window), ids[1].peer_id, p.peer_record(ids[1], ttl_s=TEN_YEARS_S, now=now), now + 60.0),
        (rollouts_key(p.swarm, window), ids[2].peer_id, p.announcement(1, 1, ids[2], ttl_s=TEN_YEARS_S, now=now), far),
        (rollouts_key(p.swarm, window), ids[3].peer_id, p.announcement(1, 1, ids[3], ttl_s=TEN_YEARS_S, now=now), now + 60.0),
    ]
    stores = await store_everywhere(p, peer.victim_id, values)
    await asyncio.sleep(min(args.seconds, 4.0))  # the victim's polls read them from the DHT too
    return await finish(p, result(p, *(i.peer_id for i in ids), stores=dict(stores)))


@attack("replay", Expectation(all_of=("replayed",)))
async def replay(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Two valid batches, taken by the victim; then the same two again on every fetch, whatever
    cursor it asks after, until the victim has been served a replay (a fetch lost on the way,
    as libp2p's streams sometimes are on a busy machine, must not leave it nothing to judge)."""
    p, version = await start(peer, "replay")
    b = Batches(peer, p, version, model_fingerprint=FOREIGN_MODEL)
    items = [b(), b()]
    outbox = await serve(p, items, argparse.Namespace(seconds=args.seconds / 2), linger=1.0)
    honest_delivered = len(outbox.delivered)
    outbox.replay = True
    replay_start = p.sent["batch_envelopes"]
    await asyncio.sleep(args.seconds / 2)
    deadline = time.monotonic() + REPLAY_GRACE_S
    while p.sent["batch_envelopes"] == replay_start and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)  # the victim judges what it was served
    return await finish(p, result(p, batches=len(items), honest_delivered=honest_delivered,
                                  replayed_envelopes=p.sent["batch_envelopes"] - replay_start))


@attack("wrong_key", Expectation(all_of=("key_binding", "sender_mismatch")))
async def wrong_key(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Batches signed with another node key than the announced one (same peer id), batches
    signed by another identity entirely, and real batches of other nodes (the victim's own and
    its peers', fetched from them) relayed as this persona's."""
    p, version = await start(peer, "wrong-key")
    b = Batches(peer, p, version, model_fingerprint=FOREIGN_MODEL)
    impostor = NodeIdentity(SigningKey.generate(), p.identity.p2p_key, p.identity.p2p_identity_path)
    stranger = throwaway_identity()
    items = [b(signer=impostor), b(signer=impostor), b(signer=stranger), b(signer=stranger)]
    relayed: Counter = Counter()
    others = [pid for pid in (await p.announcements()) if pid != p.peer_id]
    for pid in [peer.victim_id] + [x for x in others if x != peer.victim_id][:3]:
        for envelope in await p.fetch_latest(pid, 2):
            items.append((b.next_id, envelope))  # the victim orders by our numbering; the batch says otherwise
            b.next_id += 1
            relayed["victim" if pid == peer.victim_id else "other"] += 1
    outbox = await serve(p, items, args)
    return await finish(p, result(p, stranger.peer_id, batches=len(items), delivered=len(outbox.delivered),
                                  relayed=dict(relayed)))


@attack("lying_logprobs", Expectation(all_of=("implausible_logprobs",)))
async def lying_logprobs(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Valid same-model groups (true prompts, varied rewards) whose behaviour log-probs are the
    truth minus log 5 on every token: importance weight exp(prox - behav) at the cap 5 throughout.
    A new batch on every fetch, at the victim's current policy version (re-read every 2 s) so it
    is fresh enough to be trained on."""
    p, version = await start(peer, "lying-logprobs")
    c, b = peer.crafter, Batches(peer, p, version)
    state = {"groups": 0}

    def answer(after: int, max_batches: int, remote: str) -> bytes:
        if remote != peer.victim_id:
            return p.respond([])
        b.next_id = max(b.next_id, after + 1)
        _, envelope = b([c.group(logprob_shift=-LOG5) for _ in range(4)])
        state["groups"] += 4
        return p.respond([envelope])

    async def track_version() -> None:
        while True:
            await asyncio.sleep(2.0)
            v = await peer.victim_version(p)
            if v is not None:
                b.version = v

    p.serve_fn = answer
    p.announce_range = (FIRST_BATCH_ID, FIRST_BATCH_ID)
    tracker = asyncio.create_task(track_version())
    await asyncio.sleep(args.seconds)
    tracker.cancel()
    return await finish(p, result(p, lying_groups=state["groups"], last_version=b.version))


FLOAT_VALUES = (math.nan, math.inf, -math.inf, 1e30, -1e30, 3.4e38)


def _set_floats(field: str, value: float) -> Callable[[rollout_batch_pb2.RolloutBatch], None]:
    def mutate(batch: rollout_batch_pb2.RolloutBatch) -> None:
        if field in ("created_at", "temperature", "top_p", "all"):
            for name in (("created_at", "temperature", "top_p") if field == "all" else (field,)):
                setattr(batch, name, value)
        for group in batch.groups:
            for completion in group.completions:
                if field in ("logprobs", "all"):
                    completion.logprobs[:] = [value] * len(completion.token_ids)
                if field in ("reported_reward", "all"):
                    completion.reported_reward = value

    return mutate


@attack("bad_floats", Expectation(any_of=("invalid_field", "out_of_range", "from_future")))
async def bad_floats(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """NaN, +-Inf, 1e30, -1e30 and 3.4e38 in every float field of a batch at once, then field by
    field (logprobs, reported_reward, created_at, temperature, top_p); and peer records with
    the same in their times and capability figures."""
    p, version = await start(peer, "bad-floats")
    b = Batches(peer, p, version)
    items = [b(mutate=_set_floats("all", v)) for v in FLOAT_VALUES]
    for field in ("logprobs", "reported_reward", "created_at", "temperature", "top_p"):
        items += [b(mutate=_set_floats(field, v)) for v in (math.nan, -math.inf, 1e30, -1e30, 3.4e38)]
    now, window = p.now(), p.window()
    ids = [throwaway_identity() for _ in range(5)]
    records = [
        raw_record(ids[0], p.swarm, now, **{"capability.matmul_gflops": math.nan}),
        raw_record(ids[1], p.swarm, now, **{"capability.generate_tokens_per_s": 3.4e38}),
        raw_record(ids[2], p.swarm, now, timestamp=1e30, expires_at=3.4e38),
        raw_record(ids[3], p.swarm, now, expires_at=math.inf),
        raw_record(ids[4], p.swarm, now, **{"device.memory_bytes": 2**64 - 1}),
    ]
    key = peer_records_key(p.swarm, window)
    stores = await store_everywhere(p, peer.victim_id, [(key, i.peer_id, r, now + 8.0) for i, r in zip(ids, records)])
    outbox = await serve(p, items, args)
    return await finish(p, result(p, *(i.peer_id for i in ids), batches=len(items), delivered=len(outbox.delivered),
                                  record_stores=dict(stores)))


@attack("garbage", Expectation(all_of=("malformed",)))
async def garbage(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Fetch responses that do not decode, that are over the size cap or hold too many envelopes,
    and envelopes of random bytes, truncated, of the wrong kind, of another protocol version, or
    with a broken signature."""
    p, version = await start(peer, "garbage")
    b = Batches(peer, p, version)
    _, good = b()
    env = envelope_pb2.SignedEnvelope.FromString(good)
    env.signature = bytes([env.signature[0] ^ 1]) + env.signature[1:]
    bad_signature = env.SerializeToString()
    future_version = raw_envelope(p.identity, int(MessageKind.ROLLOUT_BATCH), env.body, protocol_version=PROTOCOL_VERSION + 1)
    junk = [os.urandom(300), b"\xff" * 200, good[: len(good) // 2], p.peer_record(), bad_signature, future_version,
            raw_envelope(p.identity, int(MessageKind.ROLLOUT_BATCH), os.urandom(500))]

    def wrap(envelopes: list[bytes]) -> bytes:
        return rollout_batch_pb2.RolloutFetchResponse(envelopes=envelopes).SerializeToString()

    responses = [
        ("undecodable", b"\xff" * 64),
        ("junk_envelopes", wrap(junk)),
        ("oversized", wrap([os.urandom(3 * 1024 * 1024)])),
        ("too_many", wrap([b"\x00"] * (MAX_BATCHES_PER_FETCH + 1))),
    ]
    served: Counter = Counter()

    def answer(after: int, max_batches: int, remote: str) -> bytes:
        name, data = responses[sum(served.values()) % len(responses)]
        served[name] += 1
        p.sent["fetch_responses"] += 1
        p.sent["batch_envelopes"] += len(junk) if name == "junk_envelopes" else 0
        return data

    p.serve_fn = answer
    p.announce_range = (FIRST_BATCH_ID, FIRST_BATCH_ID)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline and len(served) < len(responses):
        await asyncio.sleep(0.2)
    await asyncio.sleep(max(0.0, min(1.5, deadline - time.monotonic())))
    return await finish(p, result(p, responses=dict(served)))



# -- selections ----------------------------------------------------------------------------------

# What `--attack all` runs, in this order: the cheap single-identity classes first, floods last
# (identity_flood evicts per-sender state by design, so whatever should be attributed comes first).
ALL = ("int_overflow", "long_completion", "future", "long_lifetime", "replay", "wrong_key", "lying_logprobs",
       "bad_floats", "garbage", "announce_flood", "request_flood", "identity_flood")
# `--attack summaries`: the gradient-summary attacks (swarmnode/testing/hostile/summary_attacks.py), not in
# ALL: they need a victim that trains the bundled policy's base and publishes summaries.
# A background mix for reward-curve runs: the payload attacks and the two cheap floods.
MIXED = ("lying_logprobs", "bad_floats", "replay", "wrong_key", "garbage", "int_overflow", "request_flood",
         "announce_flood", "long_completion", "future")


def expand(spec: str) -> list[str]:
    names: list[str] = []
    for part in (s.strip() for s in spec.split(",")):
        if part == "all":
            names += ALL
        elif part == "mixed":
            names += MIXED
        elif part == "summaries":
            names += summary_attacks.SUMMARIES
        elif part in ATTACKS:
            names.append(part)
        elif part:
            raise SystemExit(f"unknown attack {part!r}; known: {', '.join(ATTACKS)}, all, mixed, summaries")
    return names
