"""PeerPenalties: what this node holds against each peer, read by the transport's thread.

The transport is built before the standings that judge peers (node/gossip/standings.py, on a
node that trains), and reads penalties from its own thread (libp2p's GossipSub peer scores):
this board is built first, handed to both, and answers 0 until the standings are built.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Protocol


class PenaltySource(Protocol):
    def gossip_penalty(self, peer: str, now: float) -> float:
        """What this node holds against `peer` at `now` (wall-clock seconds)."""


class PeerPenalties:
    """Thread-safe: `penalty` (a transport's PeerPenalty) from any thread, `judged_by` once."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._lock = threading.Lock()
        self._source: PenaltySource | None = None

    def judged_by(self, source: PenaltySource) -> None:
        """From now on, penalties are what `source` holds against each peer."""
        with self._lock:
            self._source = source

    def penalty(self, peer_id: str) -> float:
        with self._lock:
            source = self._source
        return source.gossip_penalty(peer_id, self._clock()) if source is not None else 0.0
