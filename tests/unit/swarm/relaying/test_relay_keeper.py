"""swarm/relaying/relay_keeper.py: which public peers a node behind NAT reserves on, and renewing."""
import asyncio
import random

from swarmnode.protocol import PeerRecord, relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC
from swarmnode.swarm.peers import PeerTable
from swarmnode.swarm.relaying.relay_book import Reservations, relay_order
from swarmnode.swarm.relaying.relay_keeper import SKIP_S, RelayKeeper, renewal_delay
from swarmnode.swarm.relaying.routed_transport import RESERVE_FULL
from swarmnode.swarm.transports.base import RequestFailed


class Transport:
    """Grants a reservation on every peer in `grants` (-> ttl) unless `books` holds that peer's
    Reservations (then as a relay would: refused when full); tracks the relays it is told of and
    whom it asked."""

    def __init__(self, grants, books=None):
        self.grants, self.my_relays, self.circuits = grants, frozenset(), []
        self.books, self.asked = books or {}, []

    def use_relays(self, relays):
        self.my_relays = frozenset(relays)

    async def request(self, peer, protocol, payload, timeout):
        assert protocol == relay_messages.RELAY_RESERVE_PROTOCOL
        self.asked.append(peer)
        if peer not in self.grants:
            raise RequestFailed("unreachable")
        if peer in self.books and not self.books[peer].reserve("me", now=0.0):
            return relay_messages.reserve_response(False, 0.0, RESERVE_FULL)
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


def test_initial_peers_lose_their_lead_once_a_few_other_public_peers_are_known():
    public = {f"pub{i}": (REACHABILITY_PUBLIC, False) for i in range(6)}
    table = table_of({"boot": (REACHABILITY_PUBLIC, False), **public})
    keeper = RelayKeeper(Transport({}), "me", table.entries, ["boot"], random.Random(1))
    assert keeper.candidates(set()) == relay_order("me", ["boot", *public], ["boot"])
    assert sorted(keeper.candidates(set())) == ["boot", *sorted(public)]  # boot still eligible
    homes = [RelayKeeper(Transport({}), f"home{i}", table.entries, ["boot"], random.Random(1)) for i in range(50)]
    assert len({home.candidates(set())[0] for home in homes}) >= 5  # homes do not all start at the same relay


def test_a_full_relay_is_passed_over_in_the_same_round_and_left_alone_a_while():
    relays = {f"r{i}": (REACHABILITY_PUBLIC, False) for i in range(5)}
    now = [0.0]
    first = relay_order("me", relays)[0]
    full = Reservations(capacity=0, ttl_s=60)
    transport = Transport({r: 60.0 for r in relays}, books={first: full})
    keeper = RelayKeeper(transport, "me", table_of(relays).entries, [], random.Random(1), clock=lambda: now[0])
    kept = asyncio.run(keeper.keep(2))
    assert transport.asked[0] == first and full.refused == 1
    assert len(kept.granted) == 2 and first not in kept.granted  # the next two candidates, in the same round
    assert keeper.skipped() == {first: "full"}
    transport.my_relays, transport.asked = frozenset(), []  # both reservations lost: ask again
    asyncio.run(keeper.keep(2))
    assert first not in transport.asked  # a full relay is not asked again round after round
    now[0] = SKIP_S["full"] * 2 + 1  # its skip is over (at most twice SKIP_S)
    assert keeper.candidates(set())[0] == first and keeper.skipped() == {}


def test_a_round_asks_a_bounded_number_of_candidates_and_skips_those_that_failed():
    relays = {f"r{i}": (REACHABILITY_PUBLIC, False) for i in range(10)}
    transport = Transport({})  # nobody answers
    keeper = RelayKeeper(transport, "me", table_of(relays).entries, [], random.Random(1), clock=lambda: 0.0)
    kept = asyncio.run(keeper.keep(2))
    assert kept.granted == {} and len(transport.asked) == 2 + 3  # wanted + EXTRA_TRIES
    first_round, transport.asked = set(transport.asked), []
    asyncio.run(keeper.keep(2))
    assert len(transport.asked) == 5 and not set(transport.asked) & first_round  # the other five
    assert set(keeper.skipped().values()) == {"failed"}
