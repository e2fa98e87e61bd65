"""node/network.py: the line a node logs about its reachability, and whom it asks."""
from swarmnode.config.model import NodeConfig
from swarmnode.node.network import NetworkService, describe
from swarmnode.protocol import PeerRecord
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC, REACHABILITY_UNKNOWN
from swarmnode.swarm.peers import PeerTable
from swarmnode.swarm.relaying.reachability import Verdict


def test_describe_says_what_to_give_out_or_what_to_do():
    public = describe(Verdict(REACHABILITY_PUBLIC, "198.18.0.77", 4001), ["/ip4/198.18.0.77/tcp/4001/p2p/x"], [])
    assert public == "reachable from outside (198.18.0.77): others can join through /ip4/198.18.0.77/tcp/4001/p2p/x"
    private = describe(Verdict(REACHABILITY_PRIVATE, "198.18.0.101", None), [], ["/ip4/0.0.0.0/tcp/4001"])
    assert "peers see it at 198.18.0.101" in private and "forward TCP 4001" in private
    assert "network.announce_maddrs" in private
    assert "unknown" in describe(Verdict(REACHABILITY_UNKNOWN, "", None), [], [])


class _Transport:
    peer_id = "me"
    my_relays: set = set()


def _table_with(reachabilities: dict[str, int]) -> PeerTable:
    table = PeerTable("me")
    for i, (peer, reach) in enumerate(reachabilities.items()):
        table.offer(PeerRecord(peer_id=peer, swarm="s", timestamp=1.0 + i, expires_at=100.0, reachability=reach), now=1.0)
    return table


def test_public_peers_are_asked_first_and_initial_peers_before_others_alike():
    table = _table_with({"p1": REACHABILITY_PUBLIC, "u1": REACHABILITY_UNKNOWN, "n1": REACHABILITY_PRIVATE,
                         "u2": REACHABILITY_UNKNOWN})
    service = NetworkService(NodeConfig(), "me", _Transport(), table.entries, initial_peer_ids=["u2"])
    assert service._probe_candidates() == ["p1", "u2", "u1"]
    assert NetworkService(NodeConfig(), "me", _Transport(), PeerTable("me").entries, ["x"])._probe_candidates() == []


def test_a_forced_reachability_is_taken_as_is():
    config = NodeConfig.model_validate({"network": {"reachability": "public"}})
    service = NetworkService(config, "me", _Transport(), PeerTable("me").entries, [])
    assert service.forced and service.reachability == REACHABILITY_PUBLIC and service.relays() == ()


def test_initial_peers_come_first_among_the_relays_a_record_names():
    class Transport(_Transport):
        my_relays = {"a-public-peer", "z-bootstrap"}

    config = NodeConfig.model_validate({"network": {"reachability": "private"}})
    service = NetworkService(config, "me", Transport(), PeerTable("me").entries, ["z-bootstrap"])
    assert service.relays() == ("z-bootstrap", "a-public-peer")
