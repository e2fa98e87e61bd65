"""RelayKeeper: the relay reservations a node behind NAT keeps on public peers.

Which peers to ask (public, not in client mode, initial peers first), asking each one (reserve
or renew, and a circuit slot with it), which relays the node's record names, and when to renew.
node/network.py runs a round while the node cannot be dialled; the transport learns the relays
held after each round (`RoutedTransport.use_relays`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from swarmnode.protocol import relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PUBLIC
from swarmnode.protocol.limits import MAX_RELAYS
from swarmnode.swarm.peers import PeerEntry
from swarmnode.swarm.relaying.routed_transport import RoutedTransport
from swarmnode.swarm.transports.base import RequestFailed

RESERVE_TIMEOUT_S = 10.0


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
                 initial_peer_ids: list[str], rng: random.Random):
        self.transport = transport
        self.self_id = self_id
        self._peers = peers
        self._initial = initial_peer_ids
        self._rng = rng

    def named(self) -> tuple[str, ...]:
        """The relays a record names: initial peers (bootstrap nodes, dedicated relays) first, as
        requesters try them in order."""
        return tuple(sorted(self.transport.my_relays, key=lambda p: (p not in self._initial, p)))[:MAX_RELAYS]

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
        new = []
        for relay in self.candidates(set(granted))[: max(0, wanted - len(granted))]:
            if (ttl := await self.reserve(relay)) is not None:
                granted[relay] = ttl
                new.append(relay)
                on_new(relay)
        self.transport.use_relays(granted)
        return KeptRelays(granted, new)

    def candidates(self, held: set[str]) -> list[str]:
        """Public peers that offer relaying, initial peers (bootstrap nodes) first."""
        entries = [e for e in self._peers() if e.record.reachability == REACHABILITY_PUBLIC
                   and not e.record.client_mode and e.peer_id not in held and e.peer_id != self.self_id]
        ids = [e.peer_id for e in entries]
        self._rng.shuffle(ids)
        return sorted(ids, key=lambda p: p not in self._initial)

    async def reserve(self, relay: str) -> float | None:
        """Reserve (or renew) on `relay`: the seconds it granted, or None if it refused or failed.
        With the reservation, a circuit slot there too (libp2p: peers punch holes through it)."""
        try:
            raw = await self.transport.request(relay, relay_messages.RELAY_RESERVE_PROTOCOL,
                                               relay_messages.reserve_request(), RESERVE_TIMEOUT_S)
        except RequestFailed:
            return None
        response = relay_messages.parse_reserve_response(raw)
        if response is None or not response.granted:
            return None
        await self.transport.reserve_circuit(relay)
        return response.ttl_s
