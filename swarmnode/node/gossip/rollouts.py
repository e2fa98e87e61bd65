"""Rollout gossip on the node's event loop: share this node's batches, fetch and check peers'.

Publish: each generated batch is sealed and kept in a RolloutOutbox; a small signed
announcement (the batch-id range) goes into the DHT under the current window's rollouts key
with this node's peer id as subkey. Fetch: the node reads the current and previous windows'
announcements to find peers, only every rollouts.discover_interval_s or when a known one is
about to lapse (a DHT read is a multi-hop lookup and a signature check per value; a direct
request to a known peer costs far less), and asks each peer for the batches it has not seen
over a direct libp2p request. Each fetch asks the peer to hold it until it has a batch newer
than our cursor (rollouts.long_poll_s), so an idle peer costs one request per long-poll rather
than one per fetch interval; a peer that answers nothing at once (an older version, or one out
of held slots) is backed off the same way. A response's batches are checked, re-scored and
stored in one worker thread (node/gossip/rollout_batches.py). Every rejection strikes the
sender's standing (node/gossip/standings.py).

What a peer may cost this node is bounded (config `limits`, docs/security.md): requests it may
make of this node and batches taken from it per second (token buckets per verified peer id),
peers fetched from at once, and per-peer state (LRU).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from swarmnode.config import NodeConfig
from swarmnode.node.dht_reads import newest_per_peer, read_spread
from swarmnode.node.gossip.announcements import Announcer
from swarmnode.node.gossip.fetcher import PeerFetcher
from swarmnode.node.gossip.rollout_batches import FetchTally, RolloutReceiver
from swarmnode.node.gossip.server import PeerServer, Waiters
from swarmnode.node.gossip.standings import PeerStandings, StandingCounters
from swarmnode.node.training.service import TrainingService
from swarmnode.protocol.codec import RejectReason, VersionedSigner
from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement, build_rollout_announcement, seal_rollout_batch
from swarmnode.swarm.key_layout import KeyLayout
from swarmnode.swarm.shards import MAX_FETCH_PEERS, MIN_FETCH_PEERS, fetch_round_size, pick_fetch_peers
from swarmnode.swarm.peers import RecordIntake
from swarmnode.swarm.gossip.rollout_bookkeeping import (
    ROLLOUT_LIMIT_KEYS,
    ROLLOUT_PROTOCOL,
    HeldRequests,
    RolloutOutbox,
    announcements_due,
    rollout_fetch_request,
    idle_exponent_cap,
    parse_rollout_fetch_request,
    parse_rollout_fetch_response,
    split_informative,
)
from swarmnode.swarm.transports.base import RequestFailed, Transport
from swarmnode.swarm.windows import key_kind, rollouts_key, rollouts_shard_key, window_index
from swarmnode.trainer.rollout_export import groups_to_batch
from swarmnode.trainer.selection import draws_only_informative

log = logging.getLogger("swarmnode.gossip")


@dataclass(slots=True)
class RolloutCounters:
    """The status `rollouts` counters this object counts (the standings and the fetcher count the rest)."""

    batches_published: int = 0
    groups_published: int = 0
    bytes_published: int = 0
    announcements: int = 0
    batches_fetched: int = 0
    bytes_fetched: int = 0
    groups_accepted: int = 0
    groups_skipped_other_task: int = 0
    fetch_failures: int = 0
    store_errors: int = 0
    fetch_requests: int = 0
    fetches_deferred: int = 0
    empty_fetches: int = 0
    requests_served: int = 0
    requests_held: int = 0
    announcement_reads: int = 0

    def add(self, tally: FetchTally) -> None:
        """One fetch response's batches, taken by the receiver."""
        self.batches_fetched += tally.batches_fetched
        self.bytes_fetched += tally.bytes_fetched
        self.groups_accepted += tally.groups_accepted
        self.groups_skipped_other_task += tally.groups_skipped_other_task
        self.store_errors += tally.store_errors


def rollout_status_counters(own: RolloutCounters, standings: StandingCounters, fetch_waits: int) -> dict[str, Any]:
    """The status `rollouts` counters in their documented order: this object's, the standings'
    (rejections in all and by reason, ignores and their own store errors) and the fetcher's slot waits."""
    c = own
    rejected = standings.groups_rejected_by_reason()
    return {
        "batches_published": c.batches_published, "groups_published": c.groups_published,
        "bytes_published": c.bytes_published, "announcements": c.announcements,
        "batches_fetched": c.batches_fetched, "bytes_fetched": c.bytes_fetched, "groups_accepted": c.groups_accepted,
        "groups_rejected": sum(rejected.values()), "groups_rejected_by_reason": rejected,
        "groups_skipped_other_task": c.groups_skipped_other_task,
        "fetch_failures": c.fetch_failures, "peers_ignored": standings.peers_ignored,
        "store_errors": c.store_errors + standings.store_errors, "fetch_waits": fetch_waits,
        "fetch_requests": c.fetch_requests, "fetches_deferred": c.fetches_deferred,
        "empty_fetches": c.empty_fetches, "requests_served": c.requests_served, "requests_held": c.requests_held,
        "announcement_reads": c.announcement_reads,
    }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class RolloutGossip:
    """Rollout batches: this node's served (long-polls held), peers' fetched into training."""

    LIMIT_KEYS = ROLLOUT_LIMIT_KEYS

    def __init__(self, config: NodeConfig, identity: VersionedSigner, transport: Transport, training: TrainingService,
                 records: RecordIntake, standings: PeerStandings, *, layout: KeyLayout | None = None):
        self.config = config
        self.identity = identity
        self.transport = transport
        self.training = training
        self.records = records
        self.standings = standings
        self.store = standings.received  # accepted groups and rejections: retention and status read it
        cfg, limits = config.rollouts, config.limits
        # Batch ids grow across restarts (milliseconds at start), so peers' cursors stay valid.
        self.outbox = RolloutOutbox(first_batch_id=int(time.time() * 1000), capacity=cfg.keep_batches)
        self.server = PeerServer(ROLLOUT_PROTOCOL, limits, self._answer)
        layout = layout or KeyLayout.of(identity.peer_id, identity.versions)
        self.keys = layout.spread(functools.partial(rollouts_key, config.swarm.name),
                                  functools.partial(rollouts_shard_key, config.swarm.name))
        self.announcer = Announcer(transport, identity, self.keys, config.swarm.window_s, what="rollouts", logger=log)
        self.fetcher = PeerFetcher(limits, accept_per_s=limits.accept_batches_per_s, accept_burst=limits.accept_burst,
                                   what="rollouts", logger=log)
        self.receiver = RolloutReceiver(config, transport.dht_time, training.inputs, standings, self.fetcher,
                                        versions=identity.versions)
        self.holds = HeldRequests(cfg.max_held_requests)  # peers' long-polls this node holds
        self._held_wake = Waiters()
        self._long_polls_out = 0  # this node's long-polls in flight (each holds a fetch slot)
        self._closing = False
        self._new_batch = asyncio.Event()
        self._known: dict[str, CheckedRolloutAnnouncement] = {}  # peers found in the DHT, by peer id
        self._last_read = -float("inf")  # DHT time of the last announcement read
        self._idle_cap = 0
        # A fetch round asks a sample of the known peers, weighted by what each delivered, and
        # asks more only while the pool stays short (swarm/shards.py's pick_fetch_peers).
        self._max_round_peers = max(MIN_FETCH_PEERS, min(MAX_FETCH_PEERS, config.limits.max_concurrent_fetches))
        self._round_peers = MIN_FETCH_PEERS
        self._rng = random.Random()
        self.started = time.monotonic()
        self.busy_s = 0.0  # wall time spent on gossip work (network waits included), not sleeping
        self.worker_cpu_s = 0.0  # CPU of gossip work in worker threads (sealing, checking, re-scoring)
        self._loop_cpu_start = 0.0
        # The transport's CPU seconds as last read: its helper process or thread reads 0 once it
        # ends, and swarm_cpu_s (a counter) must not fall back with it.
        self._transport_cpu_s = 0.0
        self.counters = RolloutCounters()

    async def start(self) -> None:
        self._loop_cpu_start = time.thread_time()  # this is the event loop's thread
        await self.server.start(self.transport)
        self.transport.watch_pushes(self._pushed)

    def _pushed(self, key: str, subkey: str) -> None:
        """A peer's value arrived by push (libp2p's GossipSub): a peer not known yet announced
        batches, so the next fetch round reads the announcements instead of waiting for the
        discovery interval."""
        if key_kind(self.config.swarm.name, key) == "rollouts" and subkey not in self._known:
            self.receiver.request_reread()

    def close(self) -> None:
        """Answer every held long-poll now (the daemon stops the transport next)."""
        self._closing = True
        self._held_wake.wake()

    # -- serve ---------------------------------------------------------------------------------

    async def _answer(self, request: bytes, remote: str) -> bytes:
        """A peer's fetch, within its rate (self.server)."""
        self.counters.requests_served += 1
        parsed = parse_rollout_fetch_request(request)
        if parsed is not None and parsed.wait_ms and not self.outbox.has_after(parsed.after_batch_id,
                                                                               parsed.informative_only):
            await self._hold(remote, parsed.after_batch_id, min(parsed.wait_ms / 1000, self.config.rollouts.long_poll_s),
                             parsed.informative_only)
        return self.outbox.answer_parsed(parsed)

    async def _hold(self, remote: str, after: int, wait_s: float, informative_only: bool = False) -> None:
        """Keep a peer's long-poll until a batch newer than `after` is added, `wait_s` passes or
        the node stops; over the per-peer or total bound it is answered at once. A caller that
        gives up cancels this handler (hivemind relays the cancel), which frees the slot."""
        if wait_s <= 0 or self._closing or not self.holds.acquire(remote):
            return
        self.counters.requests_held += 1
        deadline = time.monotonic() + wait_s
        try:
            while not self._closing and not self.outbox.has_after(after, informative_only):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await self._held_wake.wait(remaining)
        finally:
            self.holds.release(remote)

    # -- publish -------------------------------------------------------------------------------

    def _seal(self, groups) -> tuple[int, bytes]:
        cpu = time.thread_time()
        try:
            return self._seal_batch(groups)
        finally:
            self.worker_cpu_s += time.thread_time() - cpu

    def _seal_batch(self, groups) -> tuple[int, bytes]:
        t = self.config.training
        batch_id = self.outbox.next_batch_id()
        now = self.transport.dht_time()
        batch = groups_to_batch(
            groups, window=window_index(now, self.config.swarm.window_s), batch_id=batch_id,
            model_fingerprint=self.training.fingerprint, tokenizer_fingerprint=self.training.tokenizer_fingerprint,
            now=now, temperature=t.temperature, top_p=t.top_p, eos_ids=self.training.eos_ids,
            base_fingerprint=self.training.base_fingerprint,
        )
        return batch_id, seal_rollout_batch(self.identity, batch)

    async def share_loop(self) -> None:
        while True:
            drained = self.training.outputs.take_groups()
            cap = self.config.training.local_rollouts  # the configured I: a batch a fetch is sized for
            for groups, informative in (part for step in drained for part in split_informative(step, cap)):
                start = time.perf_counter()
                batch_id, envelope = await asyncio.to_thread(self._seal, groups)
                self.outbox.add(batch_id, envelope, informative)
                self.busy_s += time.perf_counter() - start
                self.counters.batches_published += 1
                self.counters.groups_published += len(groups)
                self.counters.bytes_published += len(envelope)
            if drained:
                self._new_batch.set()
                self._held_wake.wake()  # answer the peers waiting for a new batch
            await asyncio.sleep(0.1)

    async def announce_loop(self) -> None:
        """Keep this node's announcement in the DHT: at its first batch, then every announce
        interval. Peers that know this node ask it for new batches directly, so the DHT sees
        one small store per interval, not one per batch."""
        cfg = self.config.rollouts
        while True:
            if self.outbox.id_range() is None:
                await self._new_batch.wait()
            start = time.perf_counter()
            if await self.announcer.announce(functools.partial(self._announcement, *self.outbox.id_range()),
                                             cfg.announce_ttl_s):
                self.counters.announcements += 1
            self.busy_s += time.perf_counter() - start
            await asyncio.sleep(cfg.announce_interval_s)

    def _announcement(self, first: int, last: int, window: int, now: float) -> bytes:
        return build_rollout_announcement(self.identity, window=window, first_batch_id=first, last_batch_id=last,
                                  model_fingerprint=self.training.fingerprint, now=now,
                                  ttl_s=self.config.rollouts.announce_ttl_s)

    # -- fetch ---------------------------------------------------------------------------------

    async def fetch_loop(self) -> None:
        """Ask known peers for new batches every fetch interval, each peer by a task of its own
        (PeerFetcher); read the DHT's announcements only to find new peers (every discover
        interval) or before a known one lapses."""
        cfg = self.config.rollouts
        self._known, self._last_read = {}, -float("inf")
        self._idle_cap = idle_exponent_cap(cfg.long_poll_s, cfg.fetch_interval_s)
        await self.fetcher.run(lambda: self.config.rollouts.fetch_interval_s, self._fetch_round)

    async def _fetch_round(self, round_no: int) -> None:
        """Start a fetch from every known peer that is due, while training wants peers' batches."""
        if not self.training.inputs.ready or self.config.training.external_rollouts == 0:
            return
        if not self.training.inputs.external_wanted():
            self.counters.fetches_deferred += 1  # the pool holds enough: fetch fresh ones later
            self._round_peers = fetch_round_size(self._round_peers, False, maximum=self._max_round_peers)
            return
        start = time.perf_counter()
        await self._refresh_known()
        # Still short with every sampled peer already asked: ask more of them next time.
        if self.fetcher.running() >= self._round_peers:
            self._round_peers = fetch_round_size(self._round_peers, True, maximum=self._max_round_peers)
        due = self._due_peers(round_no)
        delivered = self.standings.ledger.accepted_of(list(due))
        for peer in pick_fetch_peers(list(due), delivered, self._round_peers - self.fetcher.running(), self._rng):
            self.fetcher.start(peer, functools.partial(self._fetch_from, due[peer]))
        self.busy_s += time.perf_counter() - start

    def _due_peers(self, round_no: int) -> dict[str, CheckedRolloutAnnouncement]:
        """Known peers a fetch may start from now: not busy, announced, not ignored, not backed off
        (their fetches keep failing or they have nothing)."""
        now = self.transport.dht_time()
        return {peer: a for peer, a in self._known.items()
                if not (self.fetcher.busy(peer) or a.announcement.expires_at <= now
                        or self.standings.ledger.ignored(peer, now)
                        or self.fetcher.backing_off(peer, round_no, self._idle_cap))}

    async def _refresh_known(self) -> None:
        """Drop lapsed announcements from the known peers and, when due, merge the DHT's in.
        Merged, not replaced: a read that came back short (a DHT answer refused whole) must not
        forget peers whose announcements are still valid."""
        cfg = self.config.rollouts
        now = self.transport.dht_time()
        for peer in [p for p, a in self._known.items() if a.announcement.expires_at <= now]:
            del self._known[peer]
        expiries = [a.announcement.expires_at for a in self._known.values()]
        reread = self.receiver.take_reread_request()
        if not (reread or announcements_due(now, self._last_read, expiries, cfg.discover_interval_s,
                                            cfg.announce_interval_s)):
            return
        try:
            self._known.update((a.peer_id, a) for a in await self._read_announcements())
            self.counters.announcement_reads += 1
            self._last_read = now
        except Exception as e:  # noqa: BLE001 - one bad read must not stop gossip
            log.warning("reading rollout announcements failed (%s)", e)

    async def _read_announcements(self) -> list[CheckedRolloutAnnouncement]:
        """The newest valid announcement of every other peer in the current and previous windows."""
        reading_window, found = await read_spread(self.transport, self.keys, self.config.swarm.window_s)
        self.records.refuse_misplaced(found.misplaced)
        self.keys.observe(found.peers_per_shard, reading_window)
        checked = self.records.announcements(found.values, self.transport.dht_time())
        return newest_per_peer(checked, lambda a: a.announcement.last_batch_id)

    def _long_poll_s(self) -> float:
        """How long the next fetch may wait at the peer: a held fetch keeps its slot, so at most
        half of limits.max_concurrent_fetches are long-polls and the rest stay free for peers
        that have batches (none at all with one slot)."""
        if self._long_polls_out >= self.config.limits.max_concurrent_fetches // 2:
            return 0.0
        return self.config.rollouts.long_poll_s

    def _fetch_request(self, after: int, wait_s: float) -> bytes:
        """Everything after the cursor, oldest first; or, when fetching only what this node will
        train on (rollouts.fetch_ahead_steps), the peer's newest backlog_batches: after a pause
        the cursor lags, and the batches in between would only age out of the pool."""
        cfg = self.config.rollouts
        informative = draws_only_informative(self.config.training.external_selection)
        if cfg.fetch_ahead_steps > 0:
            return rollout_fetch_request(after, max_batches=cfg.backlog_batches, wait_ms=int(wait_s * 1000), newest=True,
                                         informative_only=informative)
        return rollout_fetch_request(after, wait_ms=int(wait_s * 1000), informative_only=informative)

    async def _fetch_from(self, a: CheckedRolloutAnnouncement) -> None:
        peer = a.peer_id
        cursor = self.standings.ledger.standing(peer).cursor
        # A new peer: its recent backlog only. A known one: whatever is newer than the cursor
        # (the announcement read may be older than the peer's newest batch).
        after = cursor if cursor is not None else self.standings.ledger.start_after(
            peer, a.announcement.first_batch_id, a.announcement.last_batch_id)
        if after is None:
            return
        if not self.training.inputs.external_wanted():
            self.counters.fetches_deferred += 1  # filled while this fetch waited for a slot
            return
        wait_s = self._long_poll_s()
        self._long_polls_out += wait_s > 0
        self.counters.fetch_requests += 1
        asked = time.monotonic()
        try:
            response = await self.transport.request(peer, ROLLOUT_PROTOCOL, self._fetch_request(after, wait_s),
                                                    self.config.rollouts.fetch_timeout_s + wait_s)
        except RequestFailed as e:
            self.counters.fetch_failures += 1
            self.fetcher.failed(peer)
            log.debug("%s", e)
            return
        finally:
            self._long_polls_out -= wait_s > 0
        self.fetcher.answered(peer)
        envelopes = parse_rollout_fetch_response(response)
        if envelopes is None:
            await asyncio.to_thread(self.standings.blame, peer, None,
                                    [(RejectReason.MALFORMED, "fetch response does not decode")])
            return
        self._note_idle(peer, bool(envelopes), wait_s, time.monotonic() - asked)
        if envelopes:
            tally = await asyncio.to_thread(self.receiver.take, peer, a.public_key, envelopes, after)
            self.worker_cpu_s += tally.cpu_s
            self.counters.add(tally)

    def _note_idle(self, peer: str, delivered: bool, wait_s: float, took_s: float) -> None:
        """Count a long-poll answered at once with nothing (the peer does not hold it); any
        batch, or an answer that came only after holding, ends the streak."""
        idle = not (delivered or not wait_s or took_s >= wait_s / 2)
        self.fetcher.note_idle(peer, idle)
        if not delivered:
            self.counters.empty_fetches += 1

    # -- status --------------------------------------------------------------------------------

    def status_counters(self) -> dict[str, Any]:
        """Every status `rollouts` counter, wherever it is counted."""
        return rollout_status_counters(self.counters, self.standings.counters, self.fetcher.waits)

    def snapshot(self) -> dict[str, Any]:
        counters = self.status_counters()
        latencies = list(self.receiver.latencies)
        uptime = max(1e-9, time.monotonic() - self.started)
        published = counters["batches_published"]
        busy = self.busy_s + self.fetcher.busy_s
        # CPU spent on swarm I/O: the event loop's thread (gossip, peer records and the status
        # server: an upper bound for gossip), gossip work in worker threads, and the transport
        # (p2pd, or the libp2p transport's trio thread).
        loop_cpu = time.thread_time() - self._loop_cpu_start
        self._transport_cpu_s = transport_cpu = max(self._transport_cpu_s, self.transport.transport_cpu_s())
        swarm_cpu = loop_cpu + self.worker_cpu_s + transport_cpu
        return {
            **counters,
            "bytes_per_batch": round(counters["bytes_published"] / published, 1) if published else None,
            "latency_p50_s": _percentile(latencies, 0.50),
            "latency_p99_s": _percentile(latencies, 0.99),
            "latency_histogram": self.receiver.latency_buckets.snapshot(),
            "gossip_busy_share": round(busy / uptime, 5),
            "swarm_cpu_s": round(swarm_cpu, 3),
            "swarm_cpu_breakdown_s": {"event_loop": round(loop_cpu, 3), "gossip_workers": round(self.worker_cpu_s, 3),
                                      "transport": round(transport_cpu, 3)},
            "uptime_s": round(uptime, 1),
            "gossip_time_share": round(swarm_cpu / uptime, 5),
            "senders": self._senders_with_latency(),
        }

    def _senders_with_latency(self) -> dict[str, dict]:
        senders = self.standings.ledger.snapshot(self.transport.dht_time())
        for peer, samples in self.receiver.latencies_by_sender().items():
            if peer in senders:
                senders[peer]["latency_p50_s"] = _percentile(samples, 0.50)
                senders[peer]["latency_p99_s"] = _percentile(samples, 0.99)
        return senders

    def limits_snapshot(self) -> dict[str, int]:
        """How often each per-peer bound was hit, and how much per-peer state is held (LIMIT_KEYS)."""
        return {
            "serve_refused": self.server.limiter.refused,
            "accept_deferred": self.fetcher.accept_limiter.refused,
            "fetch_waits": self.fetcher.waits,
            "tracked_senders": len(self.standings.ledger),
            "senders_evicted": self.standings.ledger.evicted,
            "held_refused": self.holds.refused,
        }
