"""swarm/relaying/reachability.py: the verdict from dial-back answers, and the addresses given out."""
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC, REACHABILITY_UNKNOWN
from swarmnode.swarm.relaying.reachability import DialBackAnswer, Verdict, decide, listening_ports, usable_multiaddrs

PEER = "12D3KooWExample"


def answer(peer, ip, *ports):
    return DialBackAnswer(peer, ip, tuple(ports))


def test_no_answer_is_unknown():
    assert decide([]) == Verdict(REACHABILITY_UNKNOWN, "", None)


def test_a_majority_that_reached_it_makes_it_public():
    verdict = decide([answer("a", "198.18.0.10", 4001), answer("b", "198.18.0.10", 4001), answer("c", "198.18.0.9")])
    assert verdict == Verdict(REACHABILITY_PUBLIC, "198.18.0.10", 4001)


def test_one_liar_among_three_cannot_flip_it_either_way():
    behind_nat = [answer("a", "198.18.0.101"), answer("b", "198.18.0.101"), answer("liar", "198.18.0.101", 4001)]
    assert decide(behind_nat).reachability == REACHABILITY_PRIVATE
    public = [answer("a", "198.18.0.10", 4001), answer("b", "198.18.0.10", 4001), answer("liar", "198.18.0.10")]
    assert decide(public).reachability == REACHABILITY_PUBLIC


def test_a_tie_is_private_and_a_single_peer_is_believed():
    assert decide([answer("a", "1.2.3.4", 1), answer("b", "1.2.3.4")]).reachability == REACHABILITY_PRIVATE
    assert decide([answer("a", "198.18.0.101")]) == Verdict(REACHABILITY_PRIVATE, "198.18.0.101", None)


def test_listening_ports_from_p2pd_addresses():
    maddrs = ["/ip4/127.0.0.1/tcp/4001/p2p/x", "/ip4/10.0.0.2/tcp/4001", "/ip6/::1/tcp/4002", "/ip4/1.2.3.4/udp/9"]
    assert listening_ports(maddrs) == [4001, 4002]


def test_public_node_gives_out_where_peers_reached_it():
    listen = ["/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.1.5/tcp/4001"]
    got = usable_multiaddrs(listen, Verdict(REACHABILITY_PUBLIC, "203.0.113.7", 4001), [], PEER)
    assert got == [f"/ip4/203.0.113.7/tcp/4001/p2p/{PEER}"]


def test_private_node_gives_out_only_what_an_operator_announced():
    listen = ["/ip4/192.168.1.5/tcp/4001"]
    verdict = Verdict(REACHABILITY_PRIVATE, "198.18.0.101", None)
    assert usable_multiaddrs(listen, verdict, [], PEER) == []
    assert usable_multiaddrs(listen, verdict, ["/dns4/me.example.org/tcp/4001"], PEER) == [
        f"/dns4/me.example.org/tcp/4001/p2p/{PEER}"]


def test_unchecked_node_gives_out_its_listening_addresses_loopback_only_when_alone():
    unknown = Verdict(REACHABILITY_UNKNOWN, "", None)
    both = ["/ip4/127.0.0.1/tcp/4001", "/ip4/198.18.0.10/tcp/4001"]
    assert usable_multiaddrs(both, unknown, [], PEER) == [f"/ip4/198.18.0.10/tcp/4001/p2p/{PEER}"]
    assert usable_multiaddrs(["/ip4/127.0.0.1/tcp/4001"], unknown, [], PEER) == [f"/ip4/127.0.0.1/tcp/4001/p2p/{PEER}"]
