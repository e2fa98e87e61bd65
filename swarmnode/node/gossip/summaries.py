"""Gradient-summary gossip on the node's event loop: publish this node's summaries, fetch,
check and hand over peers'.

Publish: each summary the trainer makes (every summaries.every_steps steps, while a same-base
peer is in the swarm) is sealed and kept in a SummaryOutbox; a small signed SummaryAnnouncement
(summary id, base fingerprint, size) goes into the DHT under the current window's summaries key.
Fetch: every fetch interval the node reads the announcements and, from same-base peers with a
newer summary, asks for at most summaries.partners_per_step per outer step of its own (drawn at
random among them) over a direct libp2p request: only what the next outer step will merge is
fetched and checked, however large the swarm. Every check (signature, size, base,
names, shapes, dtypes, finite values, norm bound) runs before the summary reaches the outer
loop's inbox; a rejection is counted by reason and strikes the sender as a bad rollout does
(one ledger per peer: a peer ignored for bad summaries is ignored for rollouts too).
Trust: the outer step judges every summary it takes (summaries/trust.py); here its verdicts
are counted for status, a harmful or repeated summary strikes its sender, and each judged
peer's trust is saved with its standing (so a restart pardons no one). Peers trusted too little
to be merged are fetched last.

The per-peer machinery (fetch tasks, slots, rates, standings) is rollouts' as well
(node/gossip/fetcher.py, server.py, announcements.py, standings.py); this file says what
differs: which peers to ask, what to ask, how to check a summary and where it goes.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import math
import random
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol

from swarmnode.config import NodeConfig
from swarmnode.node.dht_reads import newest_per_peer, read_spread
from swarmnode.node.gossip.announcements import Announcer
from swarmnode.node.gossip.fetcher import PeerFetcher
from swarmnode.node.gossip.server import PeerServer
from swarmnode.node.gossip.standings import GRADIENT_SUMMARY, PeerStandings
from swarmnode.node.training.service import OutgoingSummary, TrainingService
from swarmnode.protocol.codec import Rejected, RejectReason, VersionedSigner
from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.signed_values import age_problem
from swarmnode.protocol.summary_messages import CheckedSummaryAnnouncement, build_summary_announcement, open_summary, seal_summary
from swarmnode.summaries import (
    CompressionConfig,
    OuterResult,
    Received,
    check_summary,
    dense_bytes,
    fetch_allowance,
    gap_coded,
)
from swarmnode.summaries.trust import REPEATED
from swarmnode.utils.lru_map import LRUMap
from swarmnode.swarm.key_layout import KeyLayout
from swarmnode.swarm.peers import RecordIntake
from swarmnode.swarm.gossip.summary_outbox import SUMMARY_PROTOCOL, SummaryOutbox, parse_summary_fetch_response, summary_fetch_request
from swarmnode.swarm.transports.base import RequestFailed, Transport
from swarmnode.swarm.windows import summaries_key, summaries_shard_key, window_index

log = logging.getLogger("swarmnode.summaries")
# A summary is made every H steps (seconds apart at the least): more often than this from one
# peer is a flood, fetched later.
ACCEPT_SUMMARIES_PER_S = 0.5
ACCEPT_BURST = 2
SUMMARY_STRIKES_TO_IGNORE = 4  # harmful summaries within rollouts.strike_window_s that get a peer ignored
# A peer trusted too little to be merged is fetched after the trusted ones, except in this share
# of fetch rounds: an honest peer that drew one unlucky verdict must get another hearing.
EXPLORE_SHARE = 0.25


class SummaryOuterLoop(Protocol):
    """What summary gossip uses of the outer loop (node/training/outer_access.py implements it)."""

    @property
    def built(self) -> bool: ...
    def max_norm(self, ratio: float) -> float | None: ...
    def put(self, received: Received) -> None: ...
    def waiting(self) -> int: ...
    def stale_dropped(self) -> int: ...
    def clock(self) -> int: ...
    def shapes(self) -> dict[str, tuple[int, ...]]: ...
    def compression(self) -> CompressionConfig: ...
    def robust(self) -> bool: ...
    def merges(self, peer: str) -> bool: ...
    def saved_trust(self, peers: list[str]) -> list[tuple[str, float, int]]: ...
    def agreement_scale(self) -> float | None: ...
    def trust_snapshot(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class SummaryCounters:
    """This node's summary traffic, as status.summaries shows it."""

    sent: int = 0
    bytes_sent: int = 0
    fetched: int = 0
    accepted: int = 0
    skipped_other_base: int = 0
    fetch_failures: int = 0


@dataclass(slots=True)
class JudgedCounts:
    """The outer steps' verdicts on merged summaries (trainer thread), as status.summaries shows them."""

    down_weighted: int = 0
    clipped: int = 0
    harmful: int = 0


class SummaryGossip:
    """Gradient summaries: this node's served, same-base peers' fetched into the outer loop."""

    def __init__(self, config: NodeConfig, identity: VersionedSigner, transport: Transport, training: TrainingService,
                 outer: SummaryOuterLoop, records: RecordIntake, standings: PeerStandings, *,
                 layout: KeyLayout | None = None):
        self.config = config
        self.identity = identity
        self.transport = transport
        self.training = training  # fingerprints, the summaries it makes (outputs), same-base peers (inputs)
        self.outer = outer
        self.records = records
        self.standings = standings  # one standing per peer, shared with rollouts
        limits = config.limits
        self.outbox = SummaryOutbox(config.summaries.keep_summaries)
        self.server = PeerServer(SUMMARY_PROTOCOL, limits, self._answer)
        layout = layout or KeyLayout.of(identity.peer_id, identity.versions)
        # Sharded by base: a node reads only its own base's shards, sized by how many share it.
        self.keys = layout.spread(functools.partial(summaries_key, config.swarm.name), self._shard_key)
        self.announcer = Announcer(transport, identity, self.keys, config.swarm.window_s, what="a summary", logger=log)
        self.fetcher = PeerFetcher(limits, accept_per_s=ACCEPT_SUMMARIES_PER_S, accept_burst=ACCEPT_BURST,
                                   what="a summary", logger=log)
        self._last_fetched: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)  # peer -> newest summary id taken
        self._other_base: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)  # peer -> summary id counted
        self._next_id = int(time.time() * 1000)  # grows across restarts, like rollout batch ids
        self._new_summary = asyncio.Event()
        self._budget_clock, self._started = -1, 0  # fetches started during this node's outer step _budget_clock
        self.rejected: Counter[str] = Counter()
        self.counters = SummaryCounters()
        # The outer step's verdicts (trainer thread), for status.
        self.skipped: Counter[str] = Counter()
        self.judged = JudgedCounts()
        self._verdict_lock = threading.Lock()
        self.check_seconds = 0.0  # sealing and checking summaries, wall
        self.check_cpu_seconds = 0.0  # the same, CPU time of the worker threads doing it
        self._rng = random.Random()

    async def start(self) -> None:
        await self.server.start(self.transport)

    async def _answer(self, request: bytes, remote: str) -> bytes:
        """A peer's fetch, within its rate (self.server)."""
        return self.outbox.answer(request)

    # -- publish -------------------------------------------------------------------------------

    def _seal(self, outgoing: OutgoingSummary, summary_id: int) -> tuple[bytes, bytes]:
        with self._timed():
            return self._seal_summary(outgoing, summary_id)

    def _seal_summary(self, outgoing: OutgoingSummary, summary_id: int) -> tuple[bytes, bytes]:
        """The summary sealed with gap-coded offsets (announced) and with uint16 ones (for nodes
        of an earlier release, which do not read the first; b"" when that one is over the cap)."""
        now = self.transport.dht_time()
        compression = self.outer.compression()  # the settings the tensors were made with
        chunk, per_chunk = compression.chunk_size, compression.per_chunk
        summary = pb.GradientSummary(
            model_fingerprint=self.training.fingerprint, base_fingerprint=self.training.base_fingerprint,
            base_version=outgoing.base_version, step_start=outgoing.step_start, step_end=outgoing.step_end,
            scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK, tensors=outgoing.tensors, chunk_size=chunk, per_chunk=per_chunk,
            window=window_index(now, self.config.swarm.window_s), num_samples=min(outgoing.num_samples, 2**32 - 1),
            created_at=now, summary_id=summary_id,
        )
        try:
            older = seal_summary(self.identity, summary)
        except ValueError:  # over the body cap with uint16 offsets (the gap-coded one fits: checked at start)
            older = b""  # peers of an earlier release are answered "not held"
        summary.scheme = pb.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS
        del summary.tensors[:]
        summary.tensors.extend(gap_coded(outgoing.tensors, chunk, per_chunk))
        return seal_summary(self.identity, summary), older

    async def publish_loop(self) -> None:
        while True:
            outgoing = self.training.outputs.take_summary()
            if outgoing is None:
                await asyncio.sleep(0.2)
                continue
            self._next_id += 1
            envelope, older = await asyncio.to_thread(self._seal, outgoing, self._next_id)
            self.outbox.add(self._next_id, envelope, older)
            self.counters.sent += 1
            self.counters.bytes_sent += len(envelope)
            self._new_summary.set()

    async def announce_loop(self) -> None:
        """Announce the newest summary at once, then every announce interval while it is held."""
        cfg = self.config.summaries
        while True:
            newest = self.outbox.newest()
            if newest is None:
                self._new_summary.clear()
                await self._new_summary.wait()
                continue
            await self.announcer.announce(functools.partial(self._announcement, *newest), cfg.announce_ttl_s)
            self._new_summary.clear()
            try:
                await asyncio.wait_for(self._new_summary.wait(), cfg.announce_interval_s)
            except TimeoutError:
                pass

    def _announcement(self, summary_id: int, size: int, window: int, now: float) -> bytes:
        return build_summary_announcement(self.identity, window=window, summary_id=summary_id,
                                          base_fingerprint=self.training.base_fingerprint, size_bytes=size,
                                          now=now, ttl_s=self.config.summaries.announce_ttl_s)

    # -- fetch ---------------------------------------------------------------------------------

    async def fetch_loop(self) -> None:
        """Every fetch interval, start fetches (a task per peer, PeerFetcher) of what the next
        outer step will merge: at most summaries.partners_per_step per outer step of this node."""
        self._budget_clock, self._started = -1, 0
        await self.fetcher.run(lambda: self.config.summaries.fetch_interval_s, self._fetch_round)

    async def _fetch_round(self, round_no: int) -> None:
        if self.outer.max_norm(self.config.limits.summary_max_norm_ratio) is None:
            return  # nothing to merge into yet, or too few own summaries to judge a peer's norm by
        if self._allowance() == 0:
            return  # this outer step has its partners already: no DHT read
        try:
            announcements = await self._read_announcements()
        except Exception as e:  # noqa: BLE001 - one bad read must not stop gossip
            log.warning("reading summary announcements failed (%s)", e)
            return
        allowance = self._allowance()  # again: the outer step may have moved during the read
        candidates = fetch_order(self._fetchable(announcements), self.outer.merges, self._rng)
        for a in candidates[:allowance]:
            self._started += 1
            self.fetcher.start(a.peer_id, functools.partial(self._fetch_from, a))

    def _allowance(self) -> int:
        """Fetches this outer step may still start (fetch_allowance; the count restarts with each outer step)."""
        if self.outer.clock() != self._budget_clock:
            self._budget_clock, self._started = self.outer.clock(), 0
        return fetch_allowance(self.config.summaries.partners_per_step, self._started, self.outer.waiting())

    def _fetchable(self, announcements: list[CheckedSummaryAnnouncement]) -> list[CheckedSummaryAnnouncement]:
        """Announcements of a same-base peer's summary newer than the last one taken from it,
        from a peer neither ignored nor already being fetched from. Other bases are counted."""
        now = self.transport.dht_time()
        out = []
        for a in announcements:
            m = a.announcement
            if m.base_fingerprint != self.training.base_fingerprint:
                if self._other_base.get(a.peer_id) != m.summary_id:  # counted once per summary
                    self._other_base[a.peer_id] = m.summary_id
                    self.counters.skipped_other_base += 1
                continue
            if (self.fetcher.busy(a.peer_id) or m.summary_id <= (self._last_fetched.get(a.peer_id) or 0)
                    or self.standings.ledger.ignored(a.peer_id, now)):
                continue
            out.append(a)
        return out

    async def _read_announcements(self) -> list[CheckedSummaryAnnouncement]:
        """The newest valid summary announcement of every other peer in the current and previous windows."""
        reading_window, found = await read_spread(self.transport, self.keys, self.config.swarm.window_s)
        self.records.refuse_misplaced(found.misplaced)
        self.keys.observe(found.peers_per_shard, reading_window)
        checked = self.records.summary_announcements(found.values, self.transport.dht_time())
        return newest_per_peer(checked, lambda a: a.announcement.summary_id)

    def _shard_key(self, window: int, bits: int, shard: int) -> str:
        return summaries_shard_key(self.config.swarm.name, window, self.training.base_fingerprint, bits, shard)

    async def _fetch_from(self, a: CheckedSummaryAnnouncement) -> None:
        peer, m = a.peer_id, a.announcement
        if not self.fetcher.accepts(peer):
            return  # announced more often than summaries are made: later
        # The id moves first: whatever fails below, this summary is not fetched again.
        self._last_fetched[peer] = m.summary_id
        if m.size_bytes > self.config.limits.max_summary_bytes:
            await self._reject(peer, RejectReason.OVERSIZED, f"announced {m.size_bytes} bytes")
            return
        try:
            response = await self.transport.request(peer, SUMMARY_PROTOCOL, summary_fetch_request(m.summary_id),
                                                    self.config.summaries.fetch_timeout_s)
        except RequestFailed as e:
            self.counters.fetch_failures += 1
            log.debug("%s", e)
            return
        envelope = parse_summary_fetch_response(response)
        if envelope is None:
            await self._reject(peer, RejectReason.MALFORMED, "fetch response does not decode")
            return
        if not envelope:
            return  # it no longer holds that summary: nothing wrong
        self.counters.fetched += 1
        if len(envelope) > self.config.limits.max_summary_bytes:
            await self._reject(peer, RejectReason.OVERSIZED, f"{len(envelope)} bytes")
            return
        max_norm = self.outer.max_norm(self.config.limits.summary_max_norm_ratio)
        try:
            received = await asyncio.to_thread(self._check, envelope, peer, a.public_key, m.summary_id, max_norm)
        except Rejected as r:
            await self._reject(peer, r.reason, r.detail)
            return
        self.outer.put(received)
        self.counters.accepted += 1
        self.standings.stats.accept(GRADIENT_SUMMARY)

    def _check(self, envelope: bytes, peer: str, public_key: bytes, summary_id: int, max_norm: float) -> Received:
        """Open, check and decode a fetched summary (worker thread). Raises `Rejected`."""
        with self._timed():
            summary, _ = open_summary(envelope, served_by=peer, public_key=public_key,
                                      versions=self.identity.versions.spoken)
            if summary.summary_id != summary_id:
                raise Rejected(RejectReason.REPLAYED, f"asked for summary {summary_id}, got {summary.summary_id}", peer)
            problem = age_problem(summary.created_at, now=self.transport.dht_time(),
                                  max_age_s=self.config.limits.max_batch_age_s)
            if problem is not None:
                raise Rejected(*problem, peer)
            tensors, norm = check_summary(summary, sender=peer, base_fingerprint=self.training.base_fingerprint,
                                          shapes=self.outer.shapes(), max_norm=max_norm)
            # An all-zero summary (an idle peer) is no evidence and no repeat: no digest.
            return Received(peer, tensors, norm, self.outer.clock(), time.monotonic(),
                            values_digest(tensors) if norm > 0 else None, summary.created_at)

    @contextlib.contextmanager
    def _timed(self):
        """Adds the wall and CPU time of the block (run on a worker thread) to the summary work."""
        start, cpu_start = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.check_seconds += time.perf_counter() - start
            self.check_cpu_seconds += time.thread_time() - cpu_start

    async def _reject(self, peer: str, reason: RejectReason, detail: str) -> None:
        self.rejected[reason.value] += 1
        await asyncio.to_thread(self.standings.blame, peer, None, [(reason, f"summary: {detail}")],
                                kind=GRADIENT_SUMMARY)

    # -- trust ---------------------------------------------------------------------------------

    def take_verdicts(self, result: OuterResult) -> None:
        """The outer step's verdicts on peers' summaries (trainer thread; blocking: SQLite):
        counted for status, a harmful or repeated summary strikes its sender, and every judged
        peer's trust is saved with its standing."""
        if not self.outer.robust():
            return  # the plain mean: trust is shown, never acted on
        with self._verdict_lock:
            tally_verdicts(result, self.skipped, self.judged)
        for v in result.verdicts:
            log.debug("judged the summary of %s made at %s: agreement %.4g, evidence %+.2f, trust %.2f, %s", v.peer,
                      "?" if v.sent_at is None else f"{v.sent_at:.3f}", v.agreement, v.evidence, v.trust,
                      v.skipped or "merged")
        # A summary is judged once an outer step, seconds to minutes apart: each strike weighs
        # enough that SUMMARY_STRIKES_TO_IGNORE of them within rollouts.strike_window_s ignore the peer.
        weight = math.ceil((self.config.rollouts.strike_limit + 1) / SUMMARY_STRIKES_TO_IGNORE)
        for v in result.verdicts:
            if v.harmful:
                reason = RejectReason.REPEATED_SUMMARY if v.skipped == REPEATED else RejectReason.HARMFUL_SUMMARY
                self.standings.blame(v.peer, None, [(reason, f"summary: agreement {v.agreement:.3g} with this "
                                                             f"node's own direction, trust {v.trust:.2f}")], weight,
                                     kind=GRADIENT_SUMMARY)
        try:
            self.standings.save_trust(self.outer.saved_trust([v.peer for v in result.verdicts]))
        except Exception as e:  # noqa: BLE001 - memory still holds the trust
            log.warning("saving peers' summary trust failed (%s)", e)

    # -- status --------------------------------------------------------------------------------

    def _verdict_counts(self) -> dict[str, Any]:
        with self._verdict_lock:  # the trainer thread adds to them
            return {"skipped": dict(self.skipped), **asdict(self.judged)}

    def snapshot(self) -> dict[str, Any]:
        counters = self.training.outer_snapshot()
        sent = self.counters.sent
        per_summary = round(self.counters.bytes_sent / sent, 1) if sent else None
        dense = dense_bytes(self.outer.shapes()) if self.outer.built else 0
        last = counters.get("last_merge_at")
        return {
            "enabled": self.config.summaries.enabled,
            "active": self.training.inputs.same_base_peers() > 0,
            "base_fingerprint": self.training.base_fingerprint,
            "sent": sent,
            "merged": counters["merged"],
            "fetched": self.counters.fetched,
            "rejected": dict(self.rejected),
            "skipped_other_base": self.counters.skipped_other_base,
            "stale_dropped": self.outer.stale_dropped(),
            "bytes_per_summary": per_summary,
            "dense_bytes": dense,
            "compression_ratio": round(dense / per_summary, 1) if per_summary else None,
            "outer_steps": counters["outer_steps"],
            "outer_steps_this_run": counters["outer_steps_this_run"],
            "last_merge_age_s": round(time.monotonic() - last, 1) if last is not None else None,
            "merge_seconds": round(counters["merge_seconds"] + self.check_seconds, 3),
            "merge_cpu_seconds": round(counters["merge_cpu_seconds"] + self.check_cpu_seconds, 3),
            "partners_last": counters["partners_last"],
            "robust_merge": self.config.summaries.robust_merge,
            **self._verdict_counts(),
            "agreement_scale": None if (scale := self.outer.agreement_scale()) is None else round(scale, 5),
            "trust": self.outer.trust_snapshot(),
        }


def fetch_order(candidates: list[CheckedSummaryAnnouncement], merges: Callable[[str], bool],
                rng: random.Random) -> list[CheckedSummaryAnnouncement]:
    """The candidates in random order, those whose summaries would not be merged now after the
    rest (they would take a place a trusted peer's summary could have had), except that each
    such peer keeps its place with probability EXPLORE_SHARE."""
    order = list(candidates)
    rng.shuffle(order)
    order.sort(key=lambda a: not merges(a.peer_id) and rng.random() >= EXPLORE_SHARE)
    return order


def tally_verdicts(result: OuterResult, skipped: Counter, judged: JudgedCounts) -> None:
    """Add one outer step's verdicts to the status counters: skipped by reason, and merged
    summaries down-weighted (trust < 1) or clipped, and strikes (harmful)."""
    for v in result.verdicts:
        if v.skipped:
            skipped[v.skipped] += 1
        judged.harmful += v.harmful
    judged.down_weighted += sum(1 for v in result.verdicts if v.skipped is None and v.trust < 1)
    judged.clipped += sum(1 for f in result.clip_factors if f < 1)


def values_digest(tensors: dict) -> bytes:
    """sha256 of a summary's decoded values, tensor by tensor in name order: the same values
    however they were encoded or re-signed."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode() + b"\0" + tensors[name].contiguous().numpy().tobytes())
    return h.digest()
