"""What the attacks share: their registry, personas serving crafted batches, raw messages that
builders would refuse to make, and stores straight into the victim's DHT node."""
from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from swarmnode.identity import NodeIdentity
from swarmnode.protocol.codec import PROTOCOL_VERSION, MessageKind, seal, signing_bytes
from swarmnode.protocol.generated import envelope_pb2, peer_record_pb2, rollout_batch_pb2
from swarmnode.protocol.rollout_messages import seal_rollout_batch
from swarmnode.testing.hostile.personas import HostilePeer, Outbox, Persona

# Batches whose point is not their log-probs claim another model: the victim then re-scores their
# text under its own policy, and the base model's log-probs (which a trained victim no longer
# shares) cannot be held against them.
FOREIGN_MODEL = "0123456789abcdef"
LOG5 = math.log(5.0)  # behaviour log-probs this far below the truth put exp(prox - behav) at the cap 5
BIG_INTS = (2**53 + 1, 2**63, 2**64 - 1)
TEN_YEARS_S = 10 * 365 * 86400.0
FIRST_BATCH_ID = 1001
FLOOD_RECORD_TTL_S = 100.0  # under limits.max_record_ttl_s (120 by default): as long as a value may live


@dataclass(frozen=True)
class Expectation:
    all_of: tuple[str, ...] = ()  # every one of these rejection reasons is counted
    any_of: tuple[str, ...] = ()  # at least one of these is
    limits: tuple[str, ...] = ()  # these status["limits"] counters grow

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.all_of + self.any_of


AttackFn = Callable[[HostilePeer, argparse.Namespace], Awaitable[dict[str, Any]]]
ATTACKS: dict[str, AttackFn] = {}
EXPECTED: dict[str, Expectation] = {}


def attack(name: str, expect: Expectation) -> Callable[[AttackFn], AttackFn]:
    def register(fn: AttackFn) -> AttackFn:
        ATTACKS[name] = fn
        EXPECTED[name] = expect
        return fn

    return register


# -- helpers -------------------------------------------------------------------------------------


class Batches:
    """Numbered batches of one persona, honest by default; keyword arguments override fields."""

    def __init__(self, peer: HostilePeer, persona: Persona, version: int, first_id: int = FIRST_BATCH_ID,
                 model_fingerprint: str | None = None):
        self.peer, self.persona, self.version, self.next_id = peer, persona, version, first_id
        self.model_fingerprint = model_fingerprint

    def __call__(self, groups: list[rollout_batch_pb2.RolloutGroup] | None = None, *, batch_id: int | None = None,
                 signer: Any = None, mutate: Callable[[rollout_batch_pb2.RolloutBatch], None] | None = None,
                 **fields: Any) -> tuple[int, bytes]:
        if batch_id is None:
            batch_id, self.next_id = self.next_id, self.next_id + 1
        c, p = self.peer.crafter, self.persona
        args = dict(batch_id=batch_id, window=p.window(), policy_version=self.version, created_at=p.now(),
                    model_fingerprint=self.model_fingerprint)
        args.update(fields)
        batch = c.batch(groups if groups is not None else [c.group()], **args)
        if mutate is not None:
            mutate(batch)
        return batch_id, seal_rollout_batch(signer or p.identity, batch)


async def start(peer: HostilePeer, name: str) -> tuple[Persona, int]:
    """A fresh persona for one attack, and the victim's policy version (0 if it cannot be read)."""
    p = await peer.new_persona(name)
    version = await peer.victim_version(p)
    return p, version or 0


async def serve(p: Persona, items: list[tuple[int, bytes]], args: argparse.Namespace, *, linger: float = 2.0,
                announce: tuple[int, int] | None = None) -> Outbox:
    """Serve `items` to the victim until it has taken all of them (then `linger`) or --seconds.

    The announcement names one batch id (the lowest): a node fetches only the last few batches
    of a peer it has not met, so a one-id range makes it ask for everything after it."""
    outbox = Outbox(p, items)
    p.serve_fn = outbox
    first = outbox.items[0][0]
    p.announce_range = announce or (first, first)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline and not outbox.all_delivered:
        await asyncio.sleep(0.2)
    await asyncio.sleep(max(0.0, min(linger, deadline - time.monotonic())))
    return outbox


def result(p: Persona, *extra_ids: str, sent: Counter | None = None, **details: Any) -> dict[str, Any]:
    total = Counter(p.sent)
    if sent:
        total.update(sent)
    details.setdefault("victim_requests", sum(p.requests_by_peer.values()))
    return {"peer_ids": [p.peer_id, *extra_ids], "sent": dict(total), "details": details}


async def finish(p: Persona, out: dict[str, Any]) -> dict[str, Any]:
    await p.stop()
    return out


def raw_envelope(identity: Any, kind: int, body: bytes, protocol_version: int = PROTOCOL_VERSION) -> bytes:
    """An envelope signed over whatever it carries (no size or type checks)."""
    return envelope_pb2.SignedEnvelope(
        protocol_version=protocol_version, kind=kind, sender_id=identity.peer_id, sender_public_key=identity.public_key,
        body=body, signature=identity.sign(signing_bytes(protocol_version, kind, identity.peer_id, body)),
    ).SerializeToString()


def raw_record(identity: NodeIdentity, swarm: str, now: float, **fields: Any) -> bytes:
    """A signed PeerRecord of `identity` with any fields overridden (capability.* and device.* too)."""
    record = peer_record_pb2.PeerRecord(
        peer_id=identity.peer_id, public_key=identity.public_key, peer_id_binding=identity.bind_signing_key(),
        software_version="0.1.0", protocol_version=PROTOCOL_VERSION, swarm=swarm, multiaddrs=["/ip4/127.0.0.1/tcp/1"],
        device=peer_record_pb2.DeviceInfo(kind="cpu"), state=peer_record_pb2.NODE_STATE_RUNNING,
        timestamp=now, expires_at=now + 8.0,
    )
    for name, value in fields.items():
        target, attr = record, name
        if "." in name:
            part, attr = name.split(".", 1)
            target = getattr(record, part)
        setattr(target, attr, value)
    return seal(identity, MessageKind.PEER_RECORD, record)


def raw_announcement(identity: NodeIdentity, window: int, now: float, **fields: Any) -> bytes:
    message = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=identity.peer_id, window=window, first_batch_id=1, last_batch_id=1, timestamp=now, expires_at=now + 8.0,
        peer_id_binding=identity.bind_signing_key(),
    )
    for name, value in fields.items():
        setattr(message, name, value)
    return seal(identity, MessageKind.ROLLOUT_ANNOUNCEMENT, message)


async def store_everywhere(p: Persona, victim: str, values: list[tuple[str, str, bytes, float]]) -> Counter:
    """Store each value straight into the victim's DHT node and through the DHT (which reaches
    this persona's own node too, from where the victim's reads find it; on libp2p the store
    through the DHT also pushes it on the swarm's GossipSub topic). Returns outcomes.

    The rejection an attack expects is counted when the victim's record policy judges a value,
    which both kinds do as it is stored into the victim (and again, from its verdict cache,
    when read), so the attacks' expectations are the same for both (persona_transport.py)."""
    outcomes: Counter = Counter()
    verdicts = await p.store_direct(victim, values)
    for ok in verdicts or [None] * len(values):
        outcomes["victim_stored" if ok else ("victim_refused" if ok is not None else "victim_no_answer")] += 1
    for key, subkey, value, expiration in values:
        outcomes["dht_stored" if await p.store(key, subkey, value, expiration) else "dht_refused"] += 1
    return outcomes
