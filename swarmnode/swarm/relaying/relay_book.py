"""Relaying's state, no I/O: the reservations a public node holds for nodes behind NAT (and the
forwards it took on lately), the order a node behind NAT asks relays in and the relays it leaves
alone for a while, the route a request takes to a peer, and the failures of requests per peer.

Why an application-level relay: p2pd's circuit relay v2 (hivemind 1.1.12) cuts every relayed
connection after 128 KiB or 2 minutes (go-libp2p's default limits win over the configured
ones), waits up to 3 minutes for a reservation, and announces circuit addresses only through
relays with public IPs. A node behind NAT instead keeps the connection it opened to a public
peer; that peer forwards requests to it over that connection and brings back its answers. What
is forwarded is the swarm's own signed messages, checked by their final receiver.
"""
from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from typing import Collection, Iterable

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


class RecentCount:
    """Events in the last `span_s` seconds, counted in `slots` slots of time (so to within a
    slot's width): memory bounded whatever the rate."""

    def __init__(self, span_s: float = 60.0, slots: int = 6):
        self._width = span_s / slots
        self._slots = slots
        self._counts: deque[list[int]] = deque()  # [slot number, events in it], oldest first

    def _trim(self, slot: int) -> None:
        while self._counts and self._counts[0][0] <= slot - self._slots:
            self._counts.popleft()

    def add(self, now: float, n: int = 1) -> None:
        slot = int(now // self._width)
        self._trim(slot)
        if self._counts and self._counts[-1][0] == slot:
            self._counts[-1][1] += n
        else:
            self._counts.append([slot, n])

    def total(self, now: float) -> int:
        self._trim(int(now // self._width))
        return sum(n for _, n in self._counts)


SPREAD_FROM = 3  # other relays a home must know before initial peers lose their lead


def rendezvous(home: str, relay: str) -> int:
    """The home's draw for a relay: the same every time (rounds, restarts), independent across homes."""
    return int.from_bytes(hashlib.blake2b(f"{home}\x00{relay}".encode(), digest_size=8).digest(), "big")


def relay_order(home: str, relays: Iterable[str], initial: Collection[str] = (),
                spread_from: int = SPREAD_FROM) -> list[str]:
    """The order `home` asks `relays` in: highest draw first (rendezvous hashing), so that homes
    spread over the relays they know, each asking its own few first, instead of all filling the
    same ones. Initial peers (bootstrap nodes) come first only while the home knows fewer than
    `spread_from` other relays (the fallback of a home that knows little else); then they are
    drawn like the rest."""
    ranked = sorted(set(relays), key=lambda r: (rendezvous(home, r), r), reverse=True)
    if sum(r not in initial for r in ranked) < spread_from:
        ranked.sort(key=lambda r: r not in initial)  # stable: each group keeps its order
    return ranked


class Skips:
    """Relays a home leaves alone until a time (one that refused, or failed): bounded, the
    least recently skipped forgotten first (a forgotten relay is only asked again)."""

    def __init__(self, capacity: int = 64):
        self._until: LRUMap[str, tuple[float, str]] = LRUMap(capacity)

    def skip(self, relay: str, reason: str, until: float) -> None:
        self._until[relay] = (until, reason)

    def clear(self, relay: str) -> None:
        self._until.pop(relay)

    def skipped(self, relay: str, now: float) -> bool:
        entry = self._until.peek(relay)
        if entry is not None and entry[0] <= now:
            self._until.pop(relay)
            return False
        return entry is not None

    def snapshot(self, now: float) -> dict[str, str]:
        """Relay -> why, for those skipped now."""
        return {relay: reason for relay, (until, reason) in self._until.items() if until > now}


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
