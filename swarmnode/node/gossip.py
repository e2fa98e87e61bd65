"""Rollout gossip on the node's event loop: share this node's batches, fetch and check peers'.

Publish: each generated batch is sealed and kept in a RolloutOutbox; a small signed
announcement (the batch-id range) goes into the DHT under the current window's rollouts key
with this node's peer id as subkey. Fetch: the node reads the current and previous windows'
announcements to find peers (every discover interval, or when a known one is about to lapse),
asks each peer for the batches it has not seen over a direct libp2p request (a long-poll: a
peer with nothing new answers when it has), verifies them and hands them to the training
service (checked and re-scored in one worker thread per response; node/rollout_fetch.py). Every
rejection is counted by reason and sender and written to SQLite; a peer past the strike limit
is ignored for a while, and its standing is saved so a restart keeps it.

What a peer may cost this node is bounded (config `limits`, docs/security.md): requests it may
make of this node and batches taken from it per second (token buckets per verified peer id),
peers fetched from at once, and per-peer state (LRU). A batch's cursor moves before anything
that can fail, so a failing store can neither replay a batch nor un-count it.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from swarmnode.config import NodeConfig
from swarmnode.identity import NodeIdentity
from swarmnode.node.rollout_fetch import RolloutFetching
from swarmnode.node.training import TrainingService
from swarmnode.protocol.codec import RejectReason
from swarmnode.protocol.rollouts import CheckedAnnouncement, build_announcement, seal_rollout_batch
from swarmnode.store.rollouts import RolloutStore
from swarmnode.store.standing import StandingRow, StandingStore
from swarmnode.swarm.bounded import LRUMap
from swarmnode.swarm.peers import MessageStats, RecordIntake
from swarmnode.swarm.ratelimit import PeerRateLimiter
from swarmnode.swarm.rollouts import ROLLOUT_PROTOCOL, HeldRequests, RolloutOutbox, SenderLedger, parse_fetch_request
from swarmnode.swarm.transport import Transport
from swarmnode.swarm.windows import rollouts_key, window_index, windows_to_read
from swarmnode.trainer.wire import groups_to_batch

log = logging.getLogger("swarmnode.gossip")
LATENCY_SAMPLES = 2048
EMPTY_FETCH_RESPONSE = b""  # an empty RolloutFetchResponse
# Counted, dropped, but not strikes: an honest peer may differ this way (another tokenizer makes
# longer completions here; its policy may drift from ours on the odd sample), and a liar gains
# nothing from either (the samples never reach the loss).
# The same goes for a batch too old (a slow peer's, or one kept since before our restart) or
# too new (a peer with a skewed clock): its cursor moves past it, so it costs nothing twice.
NOT_STRIKES = frozenset({RejectReason.TOO_LONG, RejectReason.IMPLAUSIBLE_LOGPROBS, RejectReason.EXPIRED,
                         RejectReason.FROM_FUTURE})


def _process_cpu_s(pid: int) -> float:
    """utime + stime of process `pid` in seconds (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Announced = TypeVar("Announced")


class Waiters:
    """Futures of held long-polls, all woken when a batch is added or the node stops. Futures
    are made on the running loop at each wait, so nothing here is bound to one event loop."""

    def __init__(self) -> None:
        self._futures: set[asyncio.Future] = set()

    async def wait(self, timeout: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self._futures.add(future)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            self._futures.discard(future)

    def wake(self) -> None:
        for future in self._futures:
            if not future.done():
                future.set_result(None)


async def read_newest_per_peer(transport: Transport, key_of: Callable[[int], str], window_s: float,
                               check: Callable[[list, float], Iterable[Announced]],
                               rank: Callable[[Announced], int]) -> list[Announced]:
    """The valid announcement of highest `rank` of every other peer under the current and
    previous windows' keys (`key_of(window)`), as `check` (RecordIntake) passes them."""
    newest: dict[str, Announced] = {}
    for window in windows_to_read(window_index(transport.dht_time(), window_s)):
        values = await transport.get(key_of(window))
        for a in check(values, transport.dht_time()):
            held = newest.get(a.peer_id)
            if held is None or rank(a) > rank(held):
                newest[a.peer_id] = a
    return list(newest.values())


class RolloutGossip(RolloutFetching):
    def __init__(self, config: NodeConfig, identity: NodeIdentity, transport: Transport, training: TrainingService,
                 records: RecordIntake, stats: MessageStats, home_root: Path):
        self.config = config
        self.identity = identity
        self.transport = transport
        self.training = training
        self.records = records
        self.stats = stats
        self.store = RolloutStore(home_root / "rollouts.sqlite")
        cfg, limits = config.rollouts, config.limits
        # Batch ids grow across restarts (milliseconds at start), so peers' cursors stay valid.
        self.outbox = RolloutOutbox(first_batch_id=int(time.time() * 1000), capacity=cfg.keep_batches)
        self.ledger = SenderLedger(cfg.strike_limit, cfg.strike_window_s, cfg.ignore_s, cfg.backlog_batches,
                                   max_peers=limits.max_tracked_senders)
        # Standings of up to 16x as many peers as memory holds: a restart pardons no recent offender.
        self.standings = StandingStore(home_root / "rollouts.sqlite", max_rows=16 * limits.max_tracked_senders)
        for row in self.standings.load(limits.max_tracked_senders):
            self.ledger.restore(row.peer, row.accepted, row.rejected, row.ignored_until, row.cursor)
        self.serve_limiter = PeerRateLimiter(limits.serve_requests_per_s, limits.serve_burst, limits.max_tracked_senders)
        self.accept_limiter = PeerRateLimiter(limits.accept_batches_per_s, limits.accept_burst, limits.max_tracked_senders)
        self._fetch_slots = asyncio.Semaphore(limits.max_concurrent_fetches)
        # Consecutive failed fetches per peer: a peer that times out (or stalls on purpose) is
        # asked again only after 2^failures fetch intervals, so stallers cannot hold every slot.
        self._failing: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)
        # Answers of nothing, given at once, in a row per peer: a peer that does not hold our
        # long-polls (an older version, or out of slots) is asked less often, down to one
        # request per long_poll_s, until it sends something again.
        self._idle: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)
        self.holds = HeldRequests(cfg.max_held_requests)  # peers' long-polls this node holds
        self._held_wake = Waiters()
        self._long_polls_out = 0  # this node's long-polls in flight (each holds a fetch slot)
        self._closing = False
        self._reread_announcements = False  # set when a peer's batch is signed with another key
        self._new_batch = asyncio.Event()
        self.started = time.monotonic()
        self.busy_s = 0.0  # wall time spent on gossip work (network waits included), not sleeping
        self.worker_cpu_s = 0.0  # CPU of gossip work in worker threads (sealing, checking, re-scoring)
        self._loop_cpu_start = 0.0
        self.counters = dict(batches_published=0, groups_published=0, bytes_published=0, announcements=0,
                             batches_fetched=0, bytes_fetched=0, groups_accepted=0, groups_rejected=0,
                             groups_skipped_other_task=0,
                             fetch_failures=0, peers_ignored=0, store_errors=0, fetch_waits=0,
                             fetch_requests=0, fetches_deferred=0, empty_fetches=0, requests_served=0,
                             requests_held=0, announcement_reads=0)
        self.latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)  # publish -> accepted here, seconds

    async def start(self) -> None:
        self._loop_cpu_start = time.thread_time()  # this is the event loop's thread
        await self.transport.serve(ROLLOUT_PROTOCOL, self._answer)

    async def _answer(self, request: bytes, remote: str) -> bytes:
        # `remote` is the libp2p-authenticated peer id: a peer over its rate gets an empty answer.
        if not self.serve_limiter.allow(remote, time.monotonic()):
            return EMPTY_FETCH_RESPONSE
        self.counters["requests_served"] += 1
        parsed = parse_fetch_request(request)
        if parsed is not None and parsed.wait_ms and not self.outbox.has_after(parsed.after_batch_id):
            await self._hold(remote, parsed.after_batch_id, min(parsed.wait_ms / 1000, self.config.rollouts.long_poll_s))
        return self.outbox.answer_parsed(parsed)

    async def _hold(self, remote: str, after: int, wait_s: float) -> None:
        """Keep a peer's long-poll until a batch newer than `after` is added, `wait_s` passes or
        the node stops; over the per-peer or total bound it is answered at once. A caller that
        gives up cancels this handler (hivemind relays the cancel), which frees the slot."""
        if wait_s <= 0 or self._closing or not self.holds.acquire(remote):
            return
        self.counters["requests_held"] += 1
        deadline = time.monotonic() + wait_s
        try:
            while not self._closing and not self.outbox.has_after(after):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await self._held_wake.wait(remaining)
        finally:
            self.holds.release(remote)

    def close(self) -> None:
        """Answer every held long-poll now (the daemon stops the transport next), then close the stores."""
        self._closing = True
        self._held_wake.wake()
        self.store.close()
        self.standings.close()

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
            drained = []
            while True:
                try:
                    drained.append(self.training.outgoing.get_nowait())
                except Exception:  # noqa: BLE001 - queue.Empty
                    break
            for groups in drained:
                start = time.perf_counter()
                batch_id, envelope = await asyncio.to_thread(self._seal, groups)
                self.outbox.add(batch_id, envelope)
                self.busy_s += time.perf_counter() - start
                self.counters["batches_published"] += 1
                self.counters["groups_published"] += len(groups)
                self.counters["bytes_published"] += len(envelope)
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
            ids = self.outbox.id_range()
            start = time.perf_counter()
            now = self.transport.dht_time()
            window = window_index(now, self.config.swarm.window_s)
            value = build_announcement(self.identity, window=window, first_batch_id=ids[0], last_batch_id=ids[1],
                                       model_fingerprint=self.training.fingerprint, now=now, ttl_s=cfg.announce_ttl_s)
            try:
                await self.transport.store(rollouts_key(self.config.swarm.name, window), self.identity.peer_id,
                                           value, now + cfg.announce_ttl_s)
                self.counters["announcements"] += 1
            except Exception as e:  # noqa: BLE001 - retried next interval
                log.warning("announcing rollouts failed (%s)", e)
            self.busy_s += time.perf_counter() - start
            await asyncio.sleep(cfg.announce_interval_s)

    # -- fetch (the rest is in node/rollout_fetch.py) ------------------------------------------

    async def _read_announcements(self) -> list[CheckedAnnouncement]:
        """The newest valid announcement of every other peer in the current and previous windows."""
        swarm = self.config.swarm
        return await read_newest_per_peer(self.transport, lambda w: rollouts_key(swarm.name, w), swarm.window_s,
                                          self.records.announcements, lambda a: a.announcement.last_batch_id)

    async def _reject(self, peer: str, batch_id: int | None, reasons: list[tuple[RejectReason, str]]) -> None:
        await asyncio.to_thread(self.blame, peer, batch_id, reasons)

    def blame(self, peer: str, batch_id: int | None, reasons: list[tuple[RejectReason, str]], weight: int = 1) -> None:
        """Count rejections against `peer` (a verified id), strike it `weight` times for each
        (see NOT_STRIKES), and write them down.

        Thread-safe and blocking (SQLite): called from worker threads, and from the trainer
        thread for samples it finds implausible."""
        for reason, _ in reasons:
            self.stats.reject(reason, peer)
        self.counters["groups_rejected"] += len(reasons)
        try:
            self.store.rejected(peer, batch_id, [(reason.value, detail) for reason, detail in reasons])
        except Exception as e:  # noqa: BLE001 - the counts above stand; the log says why the row is missing
            self.counters["store_errors"] += 1
            log.warning("storing rejections of %s failed (%s)", peer, e)
        strikes = weight * sum(1 for reason, _ in reasons if reason not in NOT_STRIKES)
        if strikes and self.ledger.record(peer, 0, strikes, self.transport.dht_time()):
            self.counters["peers_ignored"] += 1
            log.warning("ignoring peer %s for %gs: %d rejected groups within %gs", peer, self.config.rollouts.ignore_s,
                        self.config.rollouts.strike_limit + 1, self.config.rollouts.strike_window_s)
            self._save_standing_now(peer)

    def blame_implausible(self, senders: dict[str, int]) -> None:
        """The trainer's verdict on peers' samples whose log-probs inflate their weight."""
        for peer, samples in senders.items():
            self.blame(peer, None, [(RejectReason.IMPLAUSIBLE_LOGPROBS, f"{samples} samples")])

    def _save_standing_now(self, peer: str) -> None:
        s = self.ledger.standing(peer)
        if not (s.accepted or s.rejected):
            return  # a stranger that never delivered anything: nothing worth keeping
        try:
            self.standings.save([StandingRow(peer, s.accepted, s.rejected, s.ignored_until, s.cursor)])
        except Exception as e:  # noqa: BLE001 - memory still holds the standing
            self.counters["store_errors"] += 1
            log.warning("saving the standing of %s failed (%s)", peer, e)

    # -- status --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        latencies = list(self.latencies)
        uptime = max(1e-9, time.monotonic() - self.started)
        published = self.counters["batches_published"]
        # CPU spent on swarm I/O: the event loop's thread (gossip, peer records and the status
        # server: an upper bound for gossip), gossip work in worker threads, and p2pd.
        loop_cpu = time.thread_time() - self._loop_cpu_start
        p2pd_cpu = sum(_process_cpu_s(pid) for pid in self.transport.child_processes())
        swarm_cpu = loop_cpu + self.worker_cpu_s + p2pd_cpu
        return {
            **self.counters,
            "bytes_per_batch": round(self.counters["bytes_published"] / published, 1) if published else None,
            "latency_p50_s": _percentile(latencies, 0.50),
            "latency_p99_s": _percentile(latencies, 0.99),
            "gossip_busy_share": round(self.busy_s / uptime, 5),
            "swarm_cpu_s": round(swarm_cpu, 3),
            "swarm_cpu_breakdown_s": {"event_loop": round(loop_cpu, 3), "gossip_workers": round(self.worker_cpu_s, 3),
                                      "p2pd": round(p2pd_cpu, 3)},
            "uptime_s": round(uptime, 1),
            "gossip_time_share": round(swarm_cpu / uptime, 5),
            "senders": self.ledger.snapshot(self.transport.dht_time()),
        }

    LIMIT_KEYS = ("serve_refused", "accept_deferred", "fetch_waits", "tracked_senders", "senders_evicted", "held_refused")

    def limits_snapshot(self) -> dict[str, int]:
        """How often each per-peer bound was hit, and how much per-peer state is held (LIMIT_KEYS)."""
        return {
            "serve_refused": self.serve_limiter.refused,
            "accept_deferred": self.accept_limiter.refused,
            "fetch_waits": self.counters["fetch_waits"],
            "tracked_senders": len(self.ledger),
            "senders_evicted": self.ledger.evicted,
            "held_refused": self.holds.refused,
        }
