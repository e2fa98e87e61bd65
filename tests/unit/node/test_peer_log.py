"""node/peer_log.py: a line when a peer joins and when it leaves, a bounded number under a flood,
and a peer of another base named once."""
import logging

from swarmnode.node.peer_log import MAX_NAMED, PeerLog
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.swarm.peers import PeerEntry, short_id

OWN_BASE, OTHER_BASE = "a1c04df6ea1c2c67", "0123456789abcdef"


def entry(i: int, base: str = OWN_BASE) -> PeerEntry:
    record = peer_record_pb2.PeerRecord(peer_id=f"12D3KooW{i:044d}", software_version="0.1.0", base_fingerprint=base,
                                        state=peer_record_pb2.NODE_STATE_RUNNING)
    return PeerEntry(record=record, first_seen=float(i), last_seen=float(i))


def test_joins_and_leaves_once_each_with_a_short_id():
    peers, one, two = PeerLog(), entry(1), entry(2)
    pid = one.peer_id
    assert short_id(pid) == f"{pid[:8]}…{pid[-6:]}" and len(short_id(pid)) == 15
    assert peers.lines([one], [], OWN_BASE) == [f"peer {short_id(pid)} joined (swarmnode 0.1.0, running; 1 peer now)"]
    assert peers.lines([one], [], OWN_BASE) == []  # a refreshed record is no news
    assert peers.lines([one, two], [], OWN_BASE) == [f"peer {short_id(two.peer_id)} joined (swarmnode 0.1.0, running; 2 peers now)"]
    assert peers.lines([two], [pid], OWN_BASE) == [f"peer {short_id(pid)} left (its record expired; 1 peer now)"]
    assert peers.lines([], [], OWN_BASE) == [
        f"peer {short_id(two.peer_id)} left (dropped: the peer table is full (limits.max_peers); 0 peers now)"]


def test_a_flood_of_identities_costs_a_bounded_number_of_lines():
    flood = [entry(i) for i in range(50)]
    lines = PeerLog().lines(flood, [], OWN_BASE)
    assert len(lines) == MAX_NAMED + 1 and lines[-1] == f"{50 - MAX_NAMED} more peers joined (50 peers now)"


def test_a_peer_of_another_base_is_named_once_and_stays(caplog):
    peers, other = PeerLog(), entry(7, OTHER_BASE)
    no_model = entry(8, base="")
    # Until this node knows its own base (its model is loading), nobody is named.
    assert len(peers.lines([other, no_model], [], "")) == 2
    with caplog.at_level(logging.INFO, logger="swarmnode.peers"):
        peers.update([other, no_model], [], OWN_BASE)
        peers.update([other, no_model], [], OWN_BASE)
    assert [r.getMessage() for r in caplog.records] == [
        f"peer {short_id(other.peer_id)} started from other base weights (base {OTHER_BASE}, this node's {OWN_BASE}): "
        "rollouts are shared with it (re-scored by the receiver), gradient summaries are not exchanged with it"]
    many = [entry(i, OTHER_BASE) for i in range(10, 10 + 2 * MAX_NAMED)]
    assert sum("other base" in line for line in peers.lines(many, [], OWN_BASE)) == MAX_NAMED  # the rest next time
    assert sum("other base" in line for line in peers.lines(many, [], OWN_BASE)) == MAX_NAMED
    assert not any("other base" in line for line in peers.lines(many, [], OWN_BASE))


def incompatible(i: int, versions=(3, 4)):
    from swarmnode.swarm.peers import IncompatiblePeer

    return IncompatiblePeer(f"12D3KooW{i:044d}", versions, "0.2.0", timestamp=float(i), expires_at=float(i) + 10)


def test_a_peer_of_other_versions_is_named_once_with_the_side_that_should_upgrade(caplog):
    newer, older, initial = incompatible(1), incompatible(2, (1, 1)), incompatible(3)
    peers = PeerLog(initial_peers=[f"/ip4/127.0.0.1/tcp/1/p2p/{initial.peer_id}"])
    assert peers.incompatible_lines([newer, initial], (1, 1)) == [
        f"peer {short_id(newer.peer_id)} (swarmnode 0.2.0) speaks protocol versions 3–4, this node 1–1: "
        "upgrade swarmnode on this node to join it"]  # the initial peer is named by the join check
    assert peers.incompatible_lines([newer, initial], (1, 1)) == []
    assert peers.incompatible_lines([older], (3, 4)) == [
        f"peer {short_id(older.peer_id)} (swarmnode 0.2.0) speaks protocol versions 1–1, this node 3–4: "
        "that peer runs an older swarmnode and should upgrade"]
    with caplog.at_level(logging.WARNING, logger="swarmnode.peers"):
        for _ in range(3):
            peers.update([], [], OWN_BASE, [newer, older, incompatible(4)])
    assert [r.getMessage() for r in caplog.records] == [
        f"peer {short_id(incompatible(4).peer_id)} (swarmnode 0.2.0) speaks protocol versions 3–4, this node 2–2: "
        "upgrade swarmnode on this node to join it"]
    flood = [incompatible(i) for i in range(10, 10 + 2 * MAX_NAMED)]
    assert len(peers.incompatible_lines(flood, (1, 1))) == MAX_NAMED  # the rest at the next call
    assert len(peers.incompatible_lines(flood, (1, 1))) == MAX_NAMED
    assert peers.incompatible_lines(flood, (1, 1)) == []


def test_a_mismatch_names_both_swarms_or_both_versions():
    from swarmnode.node.peer_log import describe_mismatch
    from swarmnode.protocol import RecordOrigin

    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-public", (1, 1)), "swarmnode-local", (1, 1))
    assert line.startswith("initial peer 12D3KooWX is in swarm 'swarmnode-public' while this node is in swarm "
                           "'swarmnode-local'")
    # Of this swarm but of other versions: the peer log's words, saying which side should upgrade.
    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-local", (2, 3)), "swarmnode-local", (1, 1))
    assert line == ("initial peer 12D3KooWX speaks protocol versions 2–3, this node 1–1: "
                    "upgrade swarmnode on this node to join it")
    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-local", (1, 1)), "swarmnode-local", (2, 3))
    assert line == ("initial peer 12D3KooWX speaks protocol versions 1–1, this node 2–3: "
                    "that peer runs an older swarmnode and should upgrade")


def test_an_initial_peer_of_another_window_is_named_with_the_window_to_set():
    from swarmnode.node.peer_log import describe_mismatch
    from swarmnode.protocol import RecordOrigin

    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-local", (1, 1), window_s=30.0), "swarmnode-local",
                             (1, 1), window_s=10.0)
    assert line == ("initial peer 12D3KooWX runs swarm.window_s 30 s, this node 10 s: set swarm.window_s: 30 "
                    "(every node of a swarm must share it)")
    # Another swarm is named first: its window is beside the point.
    line = describe_mismatch(RecordOrigin("12D3KooWX", "other", (1, 1), window_s=30.0), "swarmnode-local", (1, 1), 10.0)
    assert line.startswith("initial peer 12D3KooWX is in swarm 'other'")


def test_a_peer_of_another_window_is_named_once_and_initial_peers_are_left_to_the_join_check(caplog):
    from swarmnode.protocol import RecordOrigin

    def origin(i: int, window_s: float = 10.0) -> RecordOrigin:
        return RecordOrigin(f"12D3KooW{i:044d}", "s", (1, 1), window_s=window_s, expires_at=200.0)

    node, initial = origin(1), origin(2)
    peers = PeerLog(initial_peers=[f"/ip4/127.0.0.1/tcp/1/p2p/{initial.peer_id}"])
    with caplog.at_level(logging.WARNING, logger="swarmnode.peers"):
        for _ in range(3):
            peers.update([], [], "", other_window=[node, initial], window_s=30.0)
    assert [r.getMessage() for r in caplog.records] == [
        f"peer {short_id(node.peer_id)} runs swarm.window_s 10 s, this node 30 s: neither sees the other's records; "
        "every node of a swarm must share swarm.window_s (set the swarm's own on the node that differs)"]
    assert len(peers.other_window_lines([origin(1, 20.0)], 30.0)) == 1  # named again with its new window
    flood = [origin(i) for i in range(10, 10 + 2 * MAX_NAMED)]
    assert len(peers.other_window_lines(flood, 30.0)) == MAX_NAMED  # the rest at the next call
    assert len(peers.other_window_lines(flood, 30.0)) == MAX_NAMED
