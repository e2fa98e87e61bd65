"""swarm/relaying/relay_keeper.py: which public peers a node behind NAT reserves on, and renewing."""
import asyncio
import random

from swarmnode.protocol import PeerRecord, relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC
from swarmnode.swarm.peers import PeerTable
from swarmnode.swarm.relaying.relay_keeper import RelayKeeper, renewal_delay
from swarmnode.swarm.transports.base import RequestFailed


class Transport:
    """Grants a reservation on every peer in `grants` (-> ttl); tracks the relays it is told of."""

    def __init__(self, grants):
        self.grants, self.my_relays, self.circuits = grants, frozenset(), []

    def use_relays(self, relays):
        self.my_relays = frozenset(relays)

    async def request(self, peer, protocol, payload, timeout):
        assert protocol == relay_messages.RELAY_RESERVE_PROTOCOL
        if peer not in self.grants:
            raise RequestFailed("unreachable")
        return relay_messages.reserve_response(True, self.grants[peer])

    async def reserve_circuit(self, relay):
        self.circuits.append(relay)
        return True


def table_of(records):
    table = PeerTable("me")
    for i, (peer, (reach, client)) in enumerate(records.items()):
        table.offer(PeerRecord(peer_id=peer, swarm="s", timestamp=1.0 + i, expires_at=100.0, reachability=reach,
                               client_mode=client), now=1.0)
    return table


def test_public_serving_peers_are_reserved_on_initial_peers_first_and_renewed():
    table = table_of({"pub": (REACHABILITY_PUBLIC, False), "boot": (REACHABILITY_PUBLIC, False),
                      "client": (REACHABILITY_PUBLIC, True), "nat": (REACHABILITY_PRIVATE, False)})
    transport = Transport({"pub": 60.0, "boot": 30.0, "client": 60.0, "nat": 60.0})
    keeper = RelayKeeper(transport, "me", table.entries, ["boot"], random.Random(1))
    assert keeper.candidates(set()) == ["boot", "pub"]
    kept = asyncio.run(keeper.keep(1))
    assert kept.new == ["boot"] and transport.my_relays == {"boot"} and renewal_delay(kept.granted) == 10.0
    kept = asyncio.run(keeper.keep(2))  # renews boot, adds pub
    assert kept.new == ["pub"] and kept.granted == {"boot": 30.0, "pub": 60.0} and keeper.named() == ("boot", "pub")
    keeper.release()
    assert transport.my_relays == frozenset() and renewal_delay({}) == 3.0
