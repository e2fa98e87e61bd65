"""What becomes of the rollout batches fetched from a peer: each envelope is opened and checked
in order, the peer's cursor moves past it before anything that can fail (so a failing store
can neither replay a batch nor un-count it), and its groups are handed to training (checked and
re-scored by trainer/intake.py) and stored. One worker thread per response, never the event
loop."""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from swarmnode.config import NodeConfig
from swarmnode.node.gossip.fetcher import PeerFetcher
from swarmnode.node.gossip.standings import ROLLOUT_GROUP, PeerStandings
from swarmnode.node.training.boundary import SwarmInputs
from swarmnode.protocol.codec import Rejected, RejectReason
from swarmnode.protocol.signed_values import age_problem
from swarmnode.protocol.rollout_messages import open_rollout_batch
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions
from swarmnode.utils.histogram import BucketCounts
from swarmnode.utils.lru_map import LRUMap
from swarmnode.trainer.intake import IntakeResult

log = logging.getLogger("swarmnode.gossip")
LATENCY_SAMPLES = 2048
# Publish-to-accepted latency buckets, seconds: from a batch fetched at once to one a window or more late.
LATENCY_BUCKETS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


@dataclass(slots=True)
class FetchTally:
    """What taking one response's batches adds to the rollout counters, and the CPU it took."""

    batches_fetched: int = 0
    bytes_fetched: int = 0
    groups_accepted: int = 0
    groups_skipped_other_task: int = 0
    store_errors: int = 0
    cpu_s: float = 0.0


class RolloutReceiver:
    """Takes a peer's fetched batches (blocking: run it on a worker thread)."""

    def __init__(self, config: NodeConfig, clock: Callable[[], float], inputs: SwarmInputs,
                 standings: PeerStandings, fetcher: PeerFetcher, versions: ProtocolVersions = THIS_RELEASE):
        self.config = config
        self.clock = clock  # DHT time
        self.inputs = inputs  # peers' batches go to the trainer thread through it
        self.standings = standings
        self.fetcher = fetcher  # its per-peer accept rate
        self.versions = versions  # the protocol versions this node opens peers' batches in
        self._reread = False  # a peer's batch was signed with another key: read announcements again
        self._reread_lock = threading.Lock()
        self.latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)  # publish -> accepted here, seconds
        self.latency_buckets = BucketCounts(LATENCY_BUCKETS_S)  # the same, every batch since start
        # The same per sender (how long a batch takes over each path: direct, relayed), bounded.
        self._sender_latencies: LRUMap[str, deque] = LRUMap(config.limits.max_tracked_senders)
        self._latency_lock = threading.Lock()  # several worker threads take batches at once

    def latencies_by_sender(self) -> dict[str, list[float]]:
        with self._latency_lock:
            return {peer: list(samples) for peer, samples in self._sender_latencies.items()}

    def request_reread(self) -> None:
        """Ask the next fetch round to read the announcements again (any thread)."""
        with self._reread_lock:
            self._reread = True

    def take_reread_request(self) -> bool:
        """Whether a re-read was asked for since the last call (the request is consumed)."""
        with self._reread_lock:
            wanted, self._reread = self._reread, False
        return wanted

    def take(self, peer: str, public_key: bytes, envelopes: list[bytes], after: int) -> FetchTally:
        """Check a response's envelopes in order and hand their groups to training; returns
        counter increments for the event loop to add, and `cpu_s` spent checking and re-scoring."""
        tally = FetchTally()
        for envelope in envelopes:
            # Over its rate, the rest waits for the next fetch: the cursor stays where it is.
            if self.standings.ledger.ignored(peer, self.clock()) or not self.fetcher.accepts(peer):
                break
            after = self._take_batch(peer, public_key, envelope, after, tally)
        if tally.batches_fetched:
            self.standings.save_now(peer)
        return tally

    def _take_batch(self, peer: str, public_key: bytes, envelope: bytes, after: int, tally: FetchTally) -> int:
        """Check one fetched envelope and hand its groups to training; returns the new cursor."""
        tally.batches_fetched += 1
        tally.bytes_fetched += len(envelope)
        now = self.clock()
        cpu = time.thread_time()
        try:
            batch, _ = open_rollout_batch(envelope, served_by=peer, public_key=public_key,
                                              versions=self.versions.spoken)
        except Rejected as r:
            if r.reason is RejectReason.KEY_BINDING:
                self.request_reread()  # it may have a new key: read its announcement next round
            self.standings.blame(peer, None, [(r.reason, r.detail)])
            return after
        finally:
            tally.cpu_s += time.thread_time() - cpu
        if batch.batch_id <= after:  # a peer may not serve old batches as new
            self.standings.blame(peer, batch.batch_id, [(RejectReason.REPLAYED, f"batch {batch.batch_id} <= {after}")])
            return after
        # The cursor moves first: whatever fails below, this batch is never taken again.
        self.standings.ledger.advance(peer, batch.batch_id)
        problem = age_problem(batch.created_at, now=now, max_age_s=self.config.limits.max_batch_age_s)
        if problem is not None:
            self.standings.blame(peer, batch.batch_id, [problem])
            return batch.batch_id
        cpu = time.thread_time()
        result = self.inputs.receive(batch, peer)
        tally.cpu_s += time.thread_time() - cpu
        latency = max(0.0, self.clock() - batch.created_at)
        self.latencies.append(latency)
        self.latency_buckets.observe(latency)
        with self._latency_lock:
            self._sender_latencies.setdefault(peer, lambda: deque(maxlen=LATENCY_SAMPLES // 4)).append(latency)
        if result.groups:
            self._store(peer, batch.batch_id, result, tally)
        tally.groups_skipped_other_task += result.skipped_other_task
        self.standings.ledger.record(peer, len(result.groups), 0, now)
        if result.rejected:
            self.standings.blame(peer, batch.batch_id, result.rejected)
        return batch.batch_id

    def _store(self, peer: str, batch_id: int, result: IntakeResult, tally: FetchTally) -> None:
        tally.groups_accepted += len(result.groups)
        for _ in result.groups:
            self.standings.stats.accept(ROLLOUT_GROUP)
        try:
            self.standings.received.accepted(peer, batch_id, result.groups, result.same_model)
        except Exception as e:  # noqa: BLE001 - a full disk must not replay or un-count the batch
            tally.store_errors += 1
            log.warning("storing groups of batch %d from %s failed (%s)", batch_id, peer, e)
