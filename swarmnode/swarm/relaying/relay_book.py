"""Relaying's state, no I/O: the reservations a public node holds for nodes behind NAT, the
route a request takes to a peer, and the failures of requests per peer.

Why an application-level relay: p2pd's circuit relay v2 (hivemind 1.1.12) cuts every relayed
connection after 128 KiB or 2 minutes (go-libp2p's default limits win over the configured
ones), waits up to 3 minutes for a reservation, and announces circuit addresses only through
relays with public IPs. A node behind NAT instead keeps the connection it opened to a public
peer; that peer forwards requests to it over that connection and brings back its answers. What
is forwarded is the swarm's own signed messages, checked by their final receiver.
"""
from __future__ import annotations

from dataclasses import dataclass

from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE
from swarmnode.utils.lru_map import LRUMap


class Reservations:
    """Peers this node relays for: at most `capacity`, each until `ttl_s` after its last request."""

    def __init__(self, capacity: int, ttl_s: float):
        self.capacity = capacity
        self.ttl_s = ttl_s
        self._until: dict[str, float] = {}
        self.refused = 0

    def _expire(self, now: float) -> None:
        for peer in [p for p, until in self._until.items() if until <= now]:
            del self._until[peer]

    def reserve(self, peer: str, now: float) -> bool:
        """Grant or renew `peer`'s reservation; refused (and counted) when full."""
        self._expire(now)
        if peer not in self._until and len(self._until) >= self.capacity:
            self.refused += 1
            return False
        self._until[peer] = now + self.ttl_s
        return True

    def holds(self, peer: str, now: float) -> bool:
        return self._until.get(peer, 0.0) > now

    def peers(self, now: float) -> list[str]:
        self._expire(now)
        return sorted(self._until)


def route(reachability: int, relays: tuple[str, ...], self_id: str, reserved_here: bool) -> tuple[str, ...]:
    """The relays a request to a peer goes through, in order; () means dial the peer directly.

    Directly, unless the peer says it cannot be dialled (PRIVATE) and names relays: then
    through those relays, except when the peer holds a reservation here (it keeps a
    connection open to this node, so this node reaches it directly)."""
    if reserved_here or reachability != REACHABILITY_PRIVATE:
        return ()
    return tuple(r for r in relays if r != self_id)


@dataclass
class RequestFailures:
    count: int = 0
    last_reason: str = ""
    last_at: float = 0.0
    logged_at: float = float("-inf")


class FailureLog:
    """Failed requests per peer (bounded), and whether a failure is due a log line: at most one
    per peer per `log_every_s`, so a dead peer costs a line now and then, not one per fetch."""

    def __init__(self, capacity: int, log_every_s: float):
        self._peers: LRUMap[str, RequestFailures] = LRUMap(capacity)
        self.log_every_s = log_every_s

    def failed(self, peer: str, reason: str, now: float) -> bool:
        """Count a failure; True when it should be logged."""
        entry = self._peers.setdefault(peer, RequestFailures)
        entry.count += 1
        entry.last_reason, entry.last_at = reason, now
        if now - entry.logged_at >= self.log_every_s:
            entry.logged_at = now
            return True
        return False

    def snapshot(self, limit: int = 16) -> dict[str, dict]:
        """The `limit` peers with the most failures: count, last reason, when."""
        items = sorted(self._peers.items(), key=lambda kv: -kv[1].count)[:limit]
        return {peer: {"count": e.count, "last_reason": e.last_reason, "last_at": e.last_at} for peer, e in items}
