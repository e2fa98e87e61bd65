"""The fetch half of RolloutGossip (node/gossip.py): find peers, long-poll them, check and take their batches.

Peers are found in the DHT's rollout announcements, read only every rollouts.discover_interval_s
or when a known peer's announcement is about to lapse (a DHT read is a multi-hop lookup and a
signature check per value; a direct request to a known peer costs far less). Each fetch asks the
peer to hold it until it has a batch newer than our cursor (rollouts.long_poll_s), so an idle
peer costs one request per long-poll rather than one per fetch interval; a peer that answers
nothing at once (an older version, or one out of held slots) is backed off the same way. A
response's batches are checked, re-scored and stored in one worker thread, not a thread hop
per batch and step, and never on the event loop.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter

from swarmnode.node.training import fetch_ahead_steps
from swarmnode.protocol.codec import Rejected, RejectReason
from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement as CheckedAnnouncement
from swarmnode.protocol.rollout_messages import open_rollout_batch
from swarmnode.protocol.signed_values import age_problem
from swarmnode.swarm.rollout_bookkeeping import ROLLOUT_PROTOCOL, announcements_due, idle_exponent_cap, skip_fetch
from swarmnode.swarm.rollout_bookkeeping import parse_rollout_fetch_response as parse_fetch_response
from swarmnode.swarm.rollout_bookkeeping import rollout_fetch_request as fetch_request
from swarmnode.swarm.transport import RequestFailed

log = logging.getLogger("swarmnode.gossip")


class RolloutFetching:
    """Mixed into RolloutGossip, whose state (config, transport, ledger, limiters, counters,
    `blame`, `_save_standing_now`, `_read_announcements`) these methods use."""

    async def fetch_loop(self) -> None:
        """Ask known peers for new batches every fetch interval; read the DHT's announcements
        only to find new peers (every discover interval) or before a known one lapses: a direct
        request to a peer costs far less than a DHT lookup.

        Each peer is fetched by a task of its own, and a peer whose last fetch is still running
        (a held long-poll, or a stalled answer) is skipped: a peer that stalls its answers slows
        only itself, never the fetches from the others. This loop owns those tasks and cancels
        them when it stops."""
        cfg = self.config.rollouts
        known: dict[str, CheckedAnnouncement] = {}
        last_read = -float("inf")
        inflight: dict[str, asyncio.Task] = {}
        rounds = 0
        idle_cap = idle_exponent_cap(cfg.long_poll_s, cfg.fetch_interval_s)
        try:
            while True:
                rounds += 1
                await asyncio.sleep(cfg.fetch_interval_s)
                if not self.training.ready or self.config.training.external_rollouts == 0:
                    continue
                if not self.training.external_wanted():
                    self.counters["fetches_deferred"] += 1  # the pool holds enough: fetch fresh ones later
                    continue
                start = time.perf_counter()
                last_read = await self._refresh_known(known, last_read)
                now = self.transport.dht_time()
                for a in known.values():
                    if a.peer_id in inflight or a.announcement.expires_at <= now or self.ledger.ignored(a.peer_id, now):
                        continue
                    if skip_fetch(rounds, self._failing.get(a.peer_id) or 0, self._idle.get(a.peer_id) or 0, idle_cap):
                        continue  # backing off a peer whose fetches keep failing or that has nothing
                    task = asyncio.create_task(self._fetch_slot(a))
                    inflight[a.peer_id] = task
                    task.add_done_callback(lambda _, peer=a.peer_id: inflight.pop(peer, None))
                self.busy_s += time.perf_counter() - start
        finally:
            tasks = list(inflight.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _refresh_known(self, known: dict[str, CheckedAnnouncement], last_read: float) -> float:
        """Drop lapsed announcements from `known` and, when due, merge the DHT's in; returns the
        DHT time of the last read. Merged, not replaced: a read that came back short (a DHT
        answer refused whole) must not forget peers whose announcements are still valid."""
        cfg = self.config.rollouts
        now = self.transport.dht_time()
        for peer in [p for p, a in known.items() if a.announcement.expires_at <= now]:
            del known[peer]
        expiries = [a.announcement.expires_at for a in known.values()]
        if not (self._reread_announcements or announcements_due(now, last_read, expiries, cfg.discover_interval_s,
                                                                cfg.announce_interval_s)):
            return last_read
        self._reread_announcements = False
        try:
            known.update((a.peer_id, a) for a in await self._read_announcements())
            self.counters["announcement_reads"] += 1
            return now
        except Exception as e:  # noqa: BLE001 - one bad read must not stop gossip
            log.warning("reading rollout announcements failed (%s)", e)
            return last_read

    async def _fetch_slot(self, a: CheckedAnnouncement) -> None:
        """Fetch from one peer once one of limits.max_concurrent_fetches slots is free."""
        if self._fetch_slots.locked():
            self.counters["fetch_waits"] += 1
        start = time.perf_counter()
        try:
            async with self._fetch_slots:
                await self._fetch_from(a)
        except Exception as e:  # noqa: BLE001 - one peer's bad round must not stop the others
            log.warning("fetching rollouts from %s failed (%s: %s)", a.peer_id, type(e).__name__, e)
        self.busy_s += time.perf_counter() - start

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
        if fetch_ahead_steps(self.config) > 0:
            return fetch_request(after, max_batches=cfg.backlog_batches, wait_ms=int(wait_s * 1000), newest=True)
        return fetch_request(after, wait_ms=int(wait_s * 1000))

    async def _fetch_from(self, a: CheckedAnnouncement) -> None:
        peer = a.peer_id
        cursor = self.ledger.standing(peer).cursor
        # A new peer: its recent backlog only. A known one: whatever is newer than the cursor
        # (the announcement read may be older than the peer's newest batch).
        after = cursor if cursor is not None else self.ledger.start_after(peer, a.announcement.first_batch_id, a.announcement.last_batch_id)
        if after is None:
            return
        wait_s = self._long_poll_s()
        self._long_polls_out += wait_s > 0
        self.counters["fetch_requests"] += 1
        asked = time.monotonic()
        try:
            response = await self.transport.request(peer, ROLLOUT_PROTOCOL, self._fetch_request(after, wait_s),
                                                    self.config.rollouts.fetch_timeout_s + wait_s)
        except RequestFailed as e:
            self.counters["fetch_failures"] += 1
            self._failing[peer] = (self._failing.get(peer) or 0) + 1
            log.debug("%s", e)
            return
        finally:
            self._long_polls_out -= wait_s > 0
        self._failing.pop(peer)
        envelopes = parse_fetch_response(response)
        if envelopes is None:
            await self._reject(peer, None, [(RejectReason.MALFORMED, "fetch response does not decode")])
            return
        self._note_idle(peer, bool(envelopes), wait_s, time.monotonic() - asked)
        if envelopes:
            tally = await asyncio.to_thread(self._take_batches, peer, a.public_key, envelopes, after)
            self.worker_cpu_s += tally.pop("cpu_s", 0.0)
            for key, value in tally.items():
                self.counters[key] += value

    def _note_idle(self, peer: str, delivered: bool, wait_s: float, took_s: float) -> None:
        """Count a long-poll answered at once with nothing (the peer does not hold it); any
        batch, or an answer that came only after holding, ends the streak."""
        if delivered or not wait_s or took_s >= wait_s / 2:
            self._idle.pop(peer)
            if not delivered:
                self.counters["empty_fetches"] += 1
            return
        self.counters["empty_fetches"] += 1
        self._idle[peer] = (self._idle.get(peer) or 0) + 1

    def _take_batches(self, peer: str, public_key: bytes, envelopes: list[bytes], after: int) -> Counter:
        """Check a response's envelopes in order and hand their groups to training (blocking: one
        worker thread per response, not one hop per batch); returns counter increments for the
        event loop to add, and `cpu_s` spent checking and re-scoring."""
        tally: Counter = Counter()
        for envelope in envelopes:
            # Over its rate, the rest waits for the next fetch: the cursor stays where it is.
            if self.ledger.ignored(peer, self.transport.dht_time()) or not self.accept_limiter.allow(peer, time.monotonic()):
                break
            after = self._take_batch(peer, public_key, envelope, after, tally)
        if tally["batches_fetched"]:
            self._save_standing_now(peer)
        return tally

    def _take_batch(self, peer: str, public_key: bytes, envelope: bytes, after: int, tally: Counter) -> int:
        """Check one fetched envelope and hand its groups to training; returns the new cursor."""
        tally["batches_fetched"] += 1
        tally["bytes_fetched"] += len(envelope)
        now = self.transport.dht_time()
        cpu = time.thread_time()
        try:
            batch, _ = open_rollout_batch(envelope, served_by=peer, public_key=public_key)
        except Rejected as r:
            if r.reason is RejectReason.KEY_BINDING:
                self._reread_announcements = True  # it may have a new key: read its announcement next round
            self.blame(peer, None, [(r.reason, r.detail)])
            return after
        finally:
            tally["cpu_s"] += time.thread_time() - cpu
        if batch.batch_id <= after:  # a peer may not serve old batches as new
            self.blame(peer, batch.batch_id, [(RejectReason.REPLAYED, f"batch {batch.batch_id} <= {after}")])
            return after
        # The cursor moves first: whatever fails below, this batch is never taken again.
        self.ledger.advance(peer, batch.batch_id)
        problem = age_problem(batch.created_at, now=now, max_age_s=self.config.limits.max_batch_age_s)
        if problem is not None:
            self.blame(peer, batch.batch_id, [problem])
            return batch.batch_id
        cpu = time.thread_time()
        result = self.training.receive(batch, peer)
        tally["cpu_s"] += time.thread_time() - cpu
        self.latencies.append(max(0.0, self.transport.dht_time() - batch.created_at))
        if result.groups:
            tally["groups_accepted"] += len(result.groups)
            for _ in result.groups:
                self.stats.accept("rollout_group")
            try:
                self.store.accepted(peer, batch.batch_id, result.groups, result.same_model)
            except Exception as e:  # noqa: BLE001 - a full disk must not replay or un-count the batch
                tally["store_errors"] += 1
                log.warning("storing groups of batch %d from %s failed (%s)", batch.batch_id, peer, e)
        tally["groups_skipped_other_task"] += result.skipped_other_task
        self.ledger.record(peer, len(result.groups), 0, now)
        if result.rejected:
            self.blame(peer, batch.batch_id, result.rejected)
        return batch.batch_id
