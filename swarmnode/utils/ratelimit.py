"""Per-peer rate limits: token buckets keyed by verified peer id (pure: time is passed in)."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from swarmnode.utils.lru_map import LRUMap


@dataclass
class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up; a request costs one token.

        tokens(t) = min(burst, tokens(t0) + rate * (t - t0))
    """

    rate: float
    burst: float
    tokens: float
    updated: float

    def take(self, now: float, cost: float = 1.0) -> bool:
        self.tokens = min(self.burst, self.tokens + self.rate * max(0.0, now - self.updated))
        self.updated = max(self.updated, now)
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False


class PeerRateLimiter:
    """One token bucket per peer, for at most `max_peers` peers (least recently seen forgotten:
    a forgotten peer starts again with a full burst, which bounds what that buys it)."""

    def __init__(self, rate: float, burst: int, max_peers: int):
        self.rate = rate
        self.burst = float(burst)
        self._buckets: LRUMap[str, TokenBucket] = LRUMap(max_peers)
        self._lock = threading.Lock()
        self.refused = 0

    def allow(self, peer_id: str, now: float) -> bool:
        with self._lock:
            bucket = self._buckets.setdefault(peer_id, lambda: TokenBucket(self.rate, self.burst, self.burst, now))
            ok = bucket.take(now)
            if not ok:
                self.refused += 1
            return ok

    def __len__(self) -> int:
        return len(self._buckets)


class ConcurrencySlots:
    """At most `per_peer` things in flight per peer and `total` in all (e.g. request streams a
    node answers at once). Entries exist only while a peer holds a slot, so the map is bounded by
    `total`. Not thread-safe: one event loop owns it."""

    def __init__(self, total: int, per_peer: int):
        self.total = total
        self.per_peer = per_peer
        self._held: dict[str, int] = {}
        self._in_use = 0

    def acquire(self, peer_id: str) -> bool:
        held = self._held.get(peer_id, 0)
        if held >= self.per_peer or self._in_use >= self.total:
            return False
        self._held[peer_id] = held + 1
        self._in_use += 1
        return True

    def release(self, peer_id: str) -> None:
        held = self._held.get(peer_id, 0)
        if held <= 0:
            return
        self._in_use -= 1
        if held == 1:
            del self._held[peer_id]
        else:
            self._held[peer_id] = held - 1

    def __len__(self) -> int:
        return self._in_use
