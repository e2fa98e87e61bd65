"""Hostile gradient summaries, served by a real peer process (issue 11, item 4).

Every persona of a run with summary attacks names the victim's base fingerprint in its
PeerRecord (swarmnode/testing/hostile/personas.py), so the victim sees a same-base peer: it publishes its own
summaries, and from then on (it needs its own norm to judge a peer's) fetches the summaries
that same-base peers announce. Each attack here runs on a fresh persona, announces its crafted
summaries one at a time under the swarm's summaries key (a new summary id each: the victim
fetches an id once) and serves them on SUMMARY_PROTOCOL when the victim asks.

The summaries are made with the real compressor over the bundled policy's parameter shapes and
then corrupted (swarmnode/testing/hostile/summary_crafting.py), sealed with the persona's real identity;
each passes the wire's structural checks and is refused by the victim's model checks:

- summary_non_finite: a chunk scale of NaN, of +Inf, of -Inf            -> non_finite
- summary_bad_tensor: a 2-D shape flattened (same numel), a tensor left
  out, a tensor under an unknown name                                   -> bad_tensor
- summary_huge_norm: valid scales x 1e4, every scale 65504              -> norm_too_large
- summary_wrong_base: a valid summary of another base (announced as the victim's) -> wrong_base
- summary_garbage: a response that does not decode, an envelope of random bytes,
  a valid summary with a broken signature                               -> malformed, bad_signature
- summary_oversized: an announcement of 2^40 bytes (never fetched)      -> oversized
- summary_until_ignored: all of the above in turn, a new one whenever the victim took the last,
  until it stops fetching (the persona is ignored: rollouts.strike_limit + 1 strikes)

An attack offers at most three summaries, so a victim with rollouts.strike_limit >= 3 takes
them all before it ignores the persona (summary_until_ignored excepted).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from swarmnode.protocol.generated import envelope_pb2
from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.summary_messages import build_summary_announcement, check_summary_announcement, seal_summary
from swarmnode.swarm.windows import windows_to_read
from swarmnode.testing.hostile.keys import summaries_key
from swarmnode.testing.hostile.crafting import Expectation, attack, finish, result
from swarmnode.testing.hostile.personas import ANNOUNCE_TTL_S, HostilePeer, Persona, say
from swarmnode.testing.hostile.summary_crafting import CORRUPTIONS, corrupted, make_summary

FIRST_SUMMARY_ID = 5001
VICTIM_SUMMARY_WAIT_S = 180.0  # the victim publishes once it has trained every_steps steps with us around
OVERSIZED_BYTES = 2**40
OVERSIZED_WAIT_S = 4.0  # an oversized announcement is never fetched: give the victim's fetch loop time to see it


@dataclass
class Offer:
    """One summary a persona announces (`size` bytes, of base `base`) and serves as `response`."""

    name: str
    summary_id: int
    response: bytes
    size: int
    base: str
    fetched: bool = True  # whether the victim should ask for it (an oversized one it never asks for)


class SummaryServer:
    """A persona's summary outbox: answers fetches by id, announces the current offer."""

    def __init__(self, peer: HostilePeer, p: Persona):
        self.peer, self.p = peer, p
        self.offers: dict[int, Offer] = {}
        self.current: Offer | None = None
        self.requested: Counter = Counter()  # summary id -> requests from the victim
        self.next_id = FIRST_SUMMARY_ID
        p.summary_fn = self.answer
        p.summary_announcement = self.announcement

    def answer(self, request: bytes, remote: str) -> bytes:
        try:
            summary_id = pb.SummaryFetchRequest.FromString(request).summary_id
        except Exception:  # noqa: BLE001 - whatever it asked, answer "not held"
            return b""
        if remote == self.peer.victim_id:
            self.requested[summary_id] += 1
        offer = self.offers.get(summary_id)
        return offer.response if offer is not None else b""

    def announcement(self, now: float, window: int) -> bytes:
        o = self.current
        assert o is not None
        return build_summary_announcement(self.p.identity, window=window, summary_id=o.summary_id, base_fingerprint=o.base,
                                          size_bytes=o.size, now=now, ttl_s=ANNOUNCE_TTL_S)

    # -- crafting ----------------------------------------------------------------------------------

    def summary(self, summary_id: int, *, corruption: str | None = None) -> pb.GradientSummary:
        s = pb.GradientSummary()
        s.CopyFrom(honest_summary(self.peer))
        s.summary_id, s.created_at, s.window = summary_id, self.p.now(), self.p.window()
        return corrupted(corruption, s) if corruption else s

    def offer(self, name: str) -> Offer:
        """A new offer: a corruption of CORRUPTIONS, or one of the garbage kinds below."""
        summary_id, self.next_id = self.next_id, self.next_id + 1
        base, fetched = self.peer.base_fingerprint, True
        if name in CORRUPTIONS:
            envelope = seal_summary(self.p.identity, self.summary(summary_id, corruption=name))
            response = wrap(envelope)
        elif name == "undecodable":
            response = b"\xff" * 64
        elif name == "junk_envelope":
            response = wrap(os.urandom(300))
        elif name == "bad_signature":
            env = envelope_pb2.SignedEnvelope.FromString(seal_summary(self.p.identity, self.summary(summary_id)))
            env.signature = bytes([env.signature[0] ^ 1]) + env.signature[1:]
            response = wrap(env.SerializeToString())
        elif name == "oversized":
            response, fetched = wrap(seal_summary(self.p.identity, self.summary(summary_id))), False
        else:
            raise ValueError(f"unknown summary offer {name!r}")
        size = OVERSIZED_BYTES if name == "oversized" else len(response)
        o = Offer(name, summary_id, response, size, base, fetched)
        self.offers[summary_id] = o
        return o

    # -- serving -----------------------------------------------------------------------------------

    async def serve(self, o: Offer, wait_s: float) -> bool:
        """Announce `o` now (and every second after) and wait until the victim fetched it, or
        `wait_s`; returns whether it did. An offer the victim never fetches waits OVERSIZED_WAIT_S."""
        self.current = o
        await self.p.announce_summary()
        deadline = time.monotonic() + (min(wait_s, OVERSIZED_WAIT_S) if not o.fetched else wait_s)
        while time.monotonic() < deadline:
            if self.requested[o.summary_id]:
                await asyncio.sleep(0.3)  # the victim checks and counts it
                return True
            await asyncio.sleep(0.1)
        return bool(self.requested[o.summary_id])

    def details(self) -> dict[str, Any]:
        return {"offered": {o.summary_id: o.name for o in self.offers.values()},
                "fetched": {o.summary_id: o.name for o in self.offers.values() if self.requested[o.summary_id]}}


def wrap(envelope: bytes) -> bytes:
    return pb.SummaryFetchResponse(envelope=envelope).SerializeToString()


def honest_summary(peer: HostilePeer) -> pb.GradientSummary:
    """A valid summary of the victim's base over the bundled policy's parameters (made once)."""
    cached = getattr(peer, "_honest_summary", None)
    if cached is None:
        c = peer.crafter
        shapes = {name: tuple(p.shape) for name, p in c.model.named_parameters()}
        cached = make_summary(shapes, base_fingerprint=peer.base_fingerprint, model_fingerprint=c.model_fingerprint)
        peer._honest_summary = cached  # type: ignore[attr-defined]
    return cached


async def victim_publishes(peer: HostilePeer, p: Persona) -> bool:
    """Whether the victim has announced a summary of our base: it has its own norm, so it fetches ours."""
    for window in windows_to_read(p.window()):
        try:
            values = await p.transport.get(summaries_key(p.swarm, window, peer.base_fingerprint))
        except Exception:  # noqa: BLE001
            continue
        for v in values:
            if v.subkey != peer.victim_id:
                continue
            try:
                a = check_summary_announcement(v.value, subkey=v.subkey, now=p.now())
            except Exception:  # noqa: BLE001
                continue
            if a.announcement.base_fingerprint == peer.base_fingerprint:
                return True
    return False


async def start_summaries(peer: HostilePeer, name: str) -> tuple[Persona, SummaryServer]:
    """A fresh persona with a summary server, once the victim fetches summaries at all."""
    p = await peer.new_persona(name)
    if not getattr(peer, "victim_publishes", False):
        deadline = time.monotonic() + VICTIM_SUMMARY_WAIT_S
        while not await victim_publishes(peer, p):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the victim announced no summary of base {peer.base_fingerprint} "
                                   f"within {VICTIM_SUMMARY_WAIT_S:.0f}s (is it training the same base?)")
            await asyncio.sleep(1.0)
        say(f"the victim publishes summaries of base {peer.base_fingerprint}")
        peer.victim_publishes = True  # type: ignore[attr-defined]
    return p, SummaryServer(peer, p)


async def offer_all(peer: HostilePeer, name: str, offers: list[str], args: argparse.Namespace) -> dict[str, Any]:
    p, server = await start_summaries(peer, name)
    deadline = time.monotonic() + args.seconds * len(offers)
    for kind in offers:
        await server.serve(server.offer(kind), max(0.5, deadline - time.monotonic()))
    await asyncio.sleep(0.5)
    return await finish(p, result(p, **server.details()))


# -- the attacks -------------------------------------------------------------------------------------


@attack("summary_non_finite", Expectation(all_of=("non_finite",)))
async def summary_non_finite(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Valid summaries but for one float16 chunk scale: NaN, +Inf, -Inf."""
    return await offer_all(peer, "summary-non-finite", ["nan_scale", "inf_scale", "neg_inf_scale"], args)


@attack("summary_bad_tensor", Expectation(all_of=("bad_tensor",)))
async def summary_bad_tensor(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """The largest tensor with its shape flattened (same element count: the wire's lengths
    hold), left out, or under a name the model does not have."""
    return await offer_all(peer, "summary-bad-tensor", ["flat_shape", "missing_tensor", "unknown_tensor"], args)


@attack("summary_huge_norm", Expectation(all_of=("norm_too_large",)))
async def summary_huge_norm(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Finite summaries far over the victim's norm bound: every scale x 1e4, every scale 65504."""
    return await offer_all(peer, "summary-huge-norm", ["huge_norm", "max_scales"], args)


@attack("summary_wrong_base", Expectation(all_of=("wrong_base",)))
async def summary_wrong_base(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """A valid summary whose base_fingerprint is another base's, announced as the victim's base."""
    return await offer_all(peer, "summary-wrong-base", ["wrong_base"], args)


@attack("summary_garbage", Expectation(all_of=("malformed", "bad_signature")))
async def summary_garbage(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """A fetch response that does not decode, one whose envelope is random bytes, and a valid
    summary whose signature has one bit flipped."""
    return await offer_all(peer, "summary-garbage", ["undecodable", "junk_envelope", "bad_signature"], args)


@attack("summary_oversized", Expectation(all_of=("oversized",)))
async def summary_oversized(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """An announcement of a 2^40-byte summary (over any limits.max_summary_bytes): never fetched."""
    return await offer_all(peer, "summary-oversized", ["oversized"], args)


UNTIL_IGNORED = ("nan_scale", "flat_shape", "huge_norm", "wrong_base", "undecodable", "unknown_tensor",
                 "inf_scale", "bad_signature", "missing_tensor", "max_scales", "junk_envelope")
QUIET_S = 5.0  # no fetch for this long while a new summary is announced: the victim ignores us


@attack("summary_until_ignored", Expectation(any_of=("non_finite", "bad_tensor", "norm_too_large", "wrong_base",
                                                      "malformed", "bad_signature")))
async def summary_until_ignored(peer: HostilePeer, args: argparse.Namespace) -> dict[str, Any]:
    """Bad summaries of every kind in turn, a new one as soon as the victim took the last, until
    the victim stops fetching them (QUIET_S without a fetch: it ignores this persona) or 4 x --seconds."""
    p, server = await start_summaries(peer, "summary-until-ignored")
    deadline = time.monotonic() + 4 * args.seconds + QUIET_S
    i, quiet = 0, False
    while time.monotonic() < deadline:
        o = server.offer(UNTIL_IGNORED[i % len(UNTIL_IGNORED)])
        i += 1
        if not await server.serve(o, min(QUIET_S, max(0.5, deadline - time.monotonic()))):
            quiet = True
            break
    return await finish(p, result(p, quiet=quiet, **server.details()))


SUMMARIES = ("summary_non_finite", "summary_bad_tensor", "summary_huge_norm", "summary_wrong_base", "summary_garbage",
             "summary_oversized", "summary_until_ignored")
