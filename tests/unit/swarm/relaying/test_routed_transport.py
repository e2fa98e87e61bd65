"""swarm/relaying/routed_transport.py: reserve, forward and deliver between three in-memory transports
(the real ones are tested end to end in tests/integration/test_nodes_behind_nat_share.py)."""
import asyncio

import pytest

from swarmnode.protocol import relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_UNKNOWN
from swarmnode.swarm.relaying.routed_transport import MAX_COUNTED_FAILURES, RESERVE_FULL, DirectTry, RoutedTransport
from swarmnode.swarm.transports.base import RequestFailed, Transport


class MemoryTransport(Transport):
    """Peers in one dict; a request works where `can_dial` allows it or a connection exists
    (made by an earlier request in either direction), like libp2p over a NAT."""

    def __init__(self, net: dict, name: str, can_dial: set):
        self.net, self.name, self.can_dial, self.handlers, self.dialled = net, name, can_dial, {}, []
        self.punched = []
        net[name] = self

    peer_id = property(lambda self: self.name)

    async def start(self): ...
    async def stop(self): ...
    def child_processes(self): return []
    async def multiaddrs(self): return []
    async def join(self, maddr, timeout): ...

    async def connect(self, peer_id, maddrs, timeout):
        self.dialled.append((peer_id, maddrs))
        if peer_id in self.net.get("public", ()):
            self.can_dial.add(peer_id)
    def routing_table_size(self): return 0
    def dht_time(self): return 0.0
    async def store(self, key, subkey, value, expiration): return True
    async def get(self, key, *, nearest_holders=False): return []

    async def remote_ip(self, peer_id):
        return "127.0.0.1"

    async def punch_hole(self, peer_id, relays, timeout):
        """Where the net says "punchable", a punch leaves a connection, like DCUtR."""
        self.punched.append((peer_id, relays))
        if self.net.get("punchable"):
            self.net.setdefault("connections", set()).add(frozenset((self.name, peer_id)))
        return bool(self.net.get("punchable"))

    async def serve(self, protocol, handler):
        self.handlers[protocol] = handler

    async def request(self, peer_id, protocol, payload, timeout):
        connections = self.net.setdefault("connections", set())
        if peer_id not in self.can_dial and frozenset((self.name, peer_id)) not in connections:
            raise RequestFailed(f"{protocol} to {peer_id}: routing: not found", "routing: not found")
        connections.add(frozenset((self.name, peer_id)))
        return await self.net[peer_id].handlers[protocol](payload, self.name)


class Records:
    """What each peer's record says (a PeerRoutes): the test fills it in as records would arrive."""

    def __init__(self):
        self.relays, self.addresses = {}, {}

    def route_of(self, peer):
        return (REACHABILITY_PRIVATE, self.relays[peer]) if peer in self.relays else (REACHABILITY_UNKNOWN, ())

    def addresses_of(self, peer):
        return self.addresses.get(peer, [])


def routed(net, name, can_dial):
    return RoutedTransport(MemoryTransport(net, name, can_dial), routes=Records(), relay_capacity=1,
                           reservation_ttl_s=60, relay_timeout_cap_s=10, max_forwards=4, requests_per_s=100,
                           burst=100, max_tracked_peers=16)


async def reserve_on_relay(transport):
    """The relay's answer to `transport`'s reservation request."""
    raw = await transport.request("relay", relay_messages.RELAY_RESERVE_PROTOCOL, relay_messages.reserve_request(), 5)
    return relay_messages.parse_reserve_response(raw)


@pytest.fixture
def swarm():
    net = {}
    alice, relay, bob, carol = (routed(net, "alice", {"relay"}), routed(net, "relay", set()),
                                routed(net, "bob", {"relay"}), routed(net, "carol", {"relay"}))

    async def start():
        for t in (alice, relay, bob, carol):
            await t.start()

            async def echo(payload, remote, me=t.peer_id):
                return f"{me} got {payload.decode()} from {remote}".encode()
            await t.serve("/test/1", echo)
    asyncio.run(start())
    return alice, relay, bob, carol


def test_two_nodes_behind_nat_talk_through_a_relay(swarm):
    alice, relay, bob, carol = swarm

    async def scenario():
        relay.offer_relaying(True)
        granted = await reserve_on_relay(bob)
        assert granted.granted and granted.ttl_s == 60
        bob.use_relays({"relay"})
        with pytest.raises(RequestFailed, match="routing: not found"):  # no route in bob's record yet
            await alice.request("bob", "/test/1", b"hi", 5)
        alice.routes.relays["bob"] = ("relay",)
        # the origin the relay authenticated reaches bob's handler
        assert await alice.request("bob", "/test/1", b"hi", 5) == b"bob got hi from alice"
        assert relay.counters.forwarded == 1 and bob.counters.delivered == 1
        assert alice.snapshot()["failed_requests"]["bob"]["last_reason"] == "routing: not found"
        # the relay is full (capacity 1): carol's reservation is refused and counted
        refused = await reserve_on_relay(carol)
        assert not refused.granted and refused.reason == RESERVE_FULL and relay.reservations.refused == 1
        # its load, against its bounds, for status
        assert relay.snapshot()["relay_load"] == {"reservations": 1, "capacity": 1, "refused_full": 1,
                                                  "forwards_in_flight": 0, "max_forwards": 4,
                                                  "forwards_last_minute": 1}
        # nothing is forwarded to a peer without a reservation
        carol.routes.relays["alice"] = ("relay",)
        with pytest.raises(RequestFailed, match="holds no reservation"):
            await carol.request("alice", "/test/1", b"hi", 5)
        await asyncio.sleep(0)  # let the background direct ping (it fails: NAT) finish

    asyncio.run(scenario())


def test_a_relay_that_is_not_public_refuses_and_deliveries_come_only_from_own_relays(swarm):
    alice, relay, bob, _ = swarm

    async def scenario():
        refused = await reserve_on_relay(bob)
        assert not refused.granted and "not publicly reachable" in refused.reason
        # a peer that is not one of bob's relays cannot hand bob a request in someone else's name
        raw = await relay.request("bob", relay_messages.RELAY_DELIVER_PROTOCOL,
                                  relay_messages.delivery("alice", "/test/1", b"x"), 5)
        assert (relay_messages.parse_answer(raw).error == "not a relay of this node"
                and bob.counters.deliveries_refused == 1)

    asyncio.run(scenario())


def test_dialback_dials_the_observed_ip_and_names_only_the_open_ports():
    import socket

    net = {}
    asker, responder = routed(net, "asker", {"responder"}), routed(net, "responder", set())
    listening, closed = socket.socket(), socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: a connection is refused
    ports = [listening.getsockname()[1], closed.getsockname()[1]]

    async def scenario():
        await asker.start()
        await responder.start()
        raw = await asker.request("responder", relay_messages.DIALBACK_PROTOCOL,
                                  relay_messages.dialback_request(ports), 5)
        return relay_messages.parse_dialback_response(raw, ports)

    try:
        assert asyncio.run(scenario()) == ("127.0.0.1", [ports[0]])
    finally:
        listening.close()
        closed.close()


def test_a_public_peer_p2pd_cannot_find_is_dialled_at_its_record_addresses(swarm):
    alice, relay, _, _ = swarm
    relay.inner.net["public"] = {"relay"}
    alice.inner.can_dial.discard("relay")  # p2pd knows no address of it

    async def scenario():
        with pytest.raises(RequestFailed):  # no record yet: nothing to dial
            await alice.request("relay", "/test/1", b"hi", 5)
        alice.routes.addresses["relay"] = ["/ip4/198.18.0.10/tcp/31337/p2p/relay"]
        assert await alice.request("relay", "/test/1", b"hi", 5) == b"relay got hi from alice"
        assert alice.inner.dialled == [("relay", ["/ip4/198.18.0.10/tcp/31337/p2p/relay"])]
        assert alice.counters.dialled_by_record == 1

    asyncio.run(scenario())


def test_a_failed_direct_try_is_repeated_after_a_minute_then_doubling_up_to_five_minutes():
    # tried at t = 1000; the next try is due 60, 120, 240, 300, 300 s later after 1..5 failures
    for failures, wait in [(1, 60), (2, 120), (3, 240), (4, 300), (5, 300)]:
        tried = DirectTry(False, 1000.0, failures)
        assert not tried.due(1000.0 + wait - 0.1) and tried.due(1000.0 + wait)
    assert not DirectTry(True, 1000.0).due(1299.9) and DirectTry(True, 1000.0).due(1300.0)
    assert DirectTry(False, 1000.0, MAX_COUNTED_FAILURES).due(1300.0)  # the count stops growing there


@pytest.mark.parametrize("punchable", [True, False])
def test_a_relayed_peer_is_punched_through_its_relays_and_then_reached_directly(swarm, punchable):
    alice, relay, bob, _ = swarm
    alice.inner.net["punchable"] = punchable

    async def scenario():
        relay.offer_relaying(True)
        await reserve_on_relay(bob)
        bob.use_relays({"relay"})
        alice.routes.relays["bob"] = ("relay",)
        assert await alice.request("bob", "/test/1", b"hi", 5) == b"bob got hi from alice"  # through the relay
        await asyncio.gather(*alice._probes)  # the punch, then the direct ping
        assert alice.inner.punched == [("bob", ("relay",))]
        assert alice.snapshot()["direct_peers"] == (["bob"] if punchable else [])
        assert await alice.request("bob", "/test/1", b"again", 5) == b"bob got again from alice"
        # direct once punched; through the relay otherwise (and no second punch within a minute)
        assert relay.counters.forwarded == (1 if punchable else 2)
        assert alice.inner.punched == [("bob", ("relay",))]

    asyncio.run(scenario())
