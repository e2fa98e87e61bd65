"""RelayKeeper: the relay reservations a node behind NAT keeps on public peers.

Which peers to ask (public, not in client mode) and in what order: each home by a draw of its
own (relay_book.py's `relay_order`, rendezvous hashing), so that homes spread over the public
peers instead of all filling the initial peers (bootstrap nodes) first; initial peers lead only
while a home knows fewer than three other public peers. Asking each one (reserve or renew, and
a circuit slot with it): a relay that refuses (full: "no free reservation") is passed over for
the next candidate in the same round and left alone for a while (`SKIP_S`), as is one that does
not answer. Which relays the node's record names, and when to renew. node/network.py runs a
round while the node cannot be dialled; the transport learns the relays held after each round
(`RoutedTransport.use_relays`).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable

from swarmnode.protocol import relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PUBLIC
from swarmnode.protocol.limits import MAX_RELAYS
from swarmnode.swarm.peers import PeerEntry, short_id
from swarmnode.swarm.relaying.relay_book import Skips, relay_order
from swarmnode.swarm.relaying.routed_transport import RESERVE_FULL, RoutedTransport
from swarmnode.swarm.transports.base import RequestFailed

RESERVE_TIMEOUT_S = 10.0
EXTRA_TRIES = 3  # candidates asked in a round beyond the reservations missing (refusals, failures)
# How long a relay is left alone, by why (each stretched by a random 1-2x, so that homes refused
# together do not come back together): full until reservations there may have expired (a minute
# after their last renewal); not relaying (relay_service off, not public after all) for longer;
# no answer briefly (the fault may be this node's own connection).
# A relay that refused for another reason is most often one that just (re)started and does not
# know yet that it can be dialled: asked again as soon as one that did not answer (a restarted
# initial peer left alone for minutes kept a home without any relay).
SKIP_S = {"full": 60.0, "refused": 20.0, "failed": 20.0}


@dataclass(frozen=True)
class KeptRelays:
    """One round's outcome: every relay held (-> the seconds it granted) and those new in it."""

    granted: dict[str, float]
    new: list[str]


def renewal_delay(granted: dict[str, float]) -> float:
    """Seconds until the next round: a third of the shortest life a relay granted (3 s if none)."""
    return max(1.0, min(granted.values()) / 3) if granted else 3.0


class RelayKeeper:
    def __init__(self, transport: RoutedTransport, self_id: str, peers: Callable[[], list[PeerEntry]],
                 initial_peer_ids: list[str], rng: random.Random, clock: Callable[[], float] = time.monotonic):
        self.transport = transport
        self.self_id = self_id
        self._peers = peers
        self._initial = initial_peer_ids
        self._rng = rng
        self._clock = clock
        self.skips = Skips()

    def named(self) -> tuple[str, ...]:
        """The relays a record names: initial peers (bootstrap nodes, dedicated relays) first, as
        requesters try them in order. (Reservations spread, so an initial peer carries the
        forwarding of its share of homes, not of every home.)"""
        return tuple(sorted(self.transport.my_relays, key=lambda p: (p not in self._initial, p)))[:MAX_RELAYS]

    def skipped(self) -> dict[str, str]:
        """Relays left alone now (short id -> "full", "refused" or "failed"), for status."""
        return {short_id(relay): why for relay, why in self.skips.snapshot(self._clock()).items()}

    def release(self) -> None:
        """Hold no reservation (the node can be dialled, or wants no relay)."""
        self.transport.use_relays(())

    async def keep(self, wanted: int, on_new: Callable[[str], None] = lambda relay: None) -> KeptRelays:
        """Renew the reservations held, reserve on new relays up to `wanted` (`on_new` hears of each
        as it is granted), and tell the transport."""
        granted: dict[str, float] = {}
        for relay in list(self.transport.my_relays):
            if (ttl := await self.reserve(relay)) is not None:
                granted[relay] = ttl
        new: list[str] = []
        tries = max(0, wanted - len(granted)) + EXTRA_TRIES
        for relay in self.candidates(set(granted)):
            if len(granted) >= wanted or tries == 0:
                break
            tries -= 1
            if (ttl := await self.reserve(relay)) is not None:
                granted[relay] = ttl
                new.append(relay)
                on_new(relay)
        self.transport.use_relays(granted)
        return KeptRelays(granted, new)

    def candidates(self, held: set[str]) -> list[str]:
        """Public peers that offer relaying, not held and not left alone now, in this node's order
        (`relay_order`: its own draw; initial peers first only while it knows few others)."""
        now = self._clock()
        public = [e.peer_id for e in self._peers() if e.record.reachability == REACHABILITY_PUBLIC
                  and not e.record.client_mode and e.peer_id != self.self_id]
        ranked = relay_order(self.self_id, public, self._initial)
        return [p for p in ranked if p not in held and not self.skips.skipped(p, now)]

    async def reserve(self, relay: str) -> float | None:
        """Reserve (or renew) on `relay`: the seconds it granted, or None if it refused or failed
        (then it is left alone for a while). With the reservation, a circuit slot there too
        (libp2p: peers punch holes through it)."""
        try:
            raw = await self.transport.request(relay, relay_messages.RELAY_RESERVE_PROTOCOL,
                                               relay_messages.reserve_request(), RESERVE_TIMEOUT_S)
        except RequestFailed:
            return self._skip(relay, "failed")
        response = relay_messages.parse_reserve_response(raw)
        if response is None:
            return self._skip(relay, "failed")
        if not response.granted:
            return self._skip(relay, "full" if response.reason == RESERVE_FULL else "refused")
        self.skips.clear(relay)
        await self.transport.reserve_circuit(relay)
        return response.ttl_s

    def _skip(self, relay: str, reason: str) -> None:
        self.skips.skip(relay, reason, self._clock() + SKIP_S[reason] * (1 + self._rng.random()))
