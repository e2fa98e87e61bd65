"""cli/bootstrap_view.py: `swarmnode status` of a bootstrap node shows what it serves (peers, peer
records, routing table, relay load, rejects) and no training; every node's status shows the
swarm's parameters (name, window, protocol) and names peers of another window."""
from swarmnode.cli.bootstrap_view import relay_text, swarm_parameters_text
from swarmnode.cli.headline import headline_view, join_text
from swarmnode.cli.status_text import problems
from swarmnode.cli.render import status_view
from tests.unit.cli.helpers import ADDRESSES, peer, realistic_status
from tests.unit.cli.test_headline import REPR, rows_on_a_terminal, screen

RELAY_LOAD = {"reservations": 3, "capacity": 256, "refused_full": 0, "forwards_in_flight": 1, "max_forwards": 512,
              "forwards_last_minute": 42}


def bootstrap_status(**changes) -> dict:
    """A bootstrap node (no model, no initial peers) relaying for 3 nodes, with 5 peers."""
    doc = realistic_status(rollouts=None, summaries=None, peers=[peer(i) for i in range(5)], routing_table_size=5,
                           join={"initial_peers": [], "joined": True, "attempts": 0, "last_error": None},
                           role="bootstrap", window_s=30.0, window=56_789_012, protocol_versions=[1, 2],
                           messages={"accepted": {"peer_record": 1200}, "rejected": {"unknown_key": 188},
                                     "rejected_by_sender": {}},
                           network={"transport": "hivemind", "reachability": "public", "relaying": True,
                                    "relayed_for": ["a", "b", "c"], "relay_load": RELAY_LOAD})
    doc["training"] = {**doc["training"], "model": None, "phase": "no model configured", "running": False}
    doc.update(changes)
    return doc


def flat(renderable) -> str:
    return " ".join(" ".join(screen(renderable)).split())


def test_the_headline_of_a_bootstrap_node_shows_what_it_serves_and_no_training():
    lines = screen(headline_view(bootstrap_status()))
    assert rows_on_a_terminal(lines) <= 22 and not REPR.search("\n".join(lines))
    text = " ".join(" ".join(lines).split())
    assert all(len(line) <= 80 and "…" not in line for line in lines if line != ADDRESSES[0])
    for expected in ("swarm swarmnode-local, swarm.window_s 30 s, protocol 1-2",
                     "peers 5 (running 5); routing table 5", "records 5 held, 1200 accepted since start",
                     "relay 3/256 reservations, 1/512 forwards in flight, 42 last minute",
                     "messages 1200 accepted, 188 rejected (unknown_key 188)"):
        assert expected in text, expected
    assert "training" not in text and "model" not in text and "staleness" not in text


def test_the_full_view_of_a_bootstrap_node_has_no_training_rows():
    text = flat(status_view(bootstrap_status()))
    assert "not running yet" not in text and "policy version" not in text
    for expected in ("role bootstrap node", "bootstrap node swarm swarmnode-local, swarm.window_s 30 s",
                     "(window 56789012 now)", "peer records 5 held, 1200 accepted since start; routing table 5",
                     "relay 3/256 reservations",
                     "rejected 188 (unknown_key 188)", "peers (5;", ADDRESSES[0]):
        assert expected in text, expected


def test_a_node_without_a_model_shows_no_rows_of_figures_it_cannot_have():
    doc = realistic_status(rollouts=None)
    doc["training"] = {**doc["training"], "model": None, "phase": "no model configured"}
    text = flat(status_view(doc))
    assert "not running yet" not in text and "phase no model configured" in text and "role node" in text


def test_relaying_not_started_says_why():
    doc = bootstrap_status(network={"reachability": "unknown", "relaying": False})
    assert relay_text(doc) == "not relaying (peers have not dialled it back yet)"
    assert relay_text(bootstrap_status(network={"reachability": "private"})) == "not relaying (behind NAT)"
    full = bootstrap_status(network={"relaying": True, "relay_load": {**RELAY_LOAD, "refused_full": 7}})
    assert relay_text(full).endswith("42 last minute, 7 refused (full)")


def test_every_node_shows_the_swarms_parameters():
    doc = realistic_status(protocol_versions=[1, 1], window_s=10.0, window=7)
    assert swarm_parameters_text(doc) == "swarmnode-local, swarm.window_s 10 s, protocol 1"
    assert "swarm swarmnode-local, swarm.window_s 10 s, protocol 1 (window 7 now)" in flat(status_view(doc))
    assert "swarm swarmnode-local, swarm.window_s 10 s, protocol 1" in flat(headline_view(doc))


def test_peers_of_another_window_are_a_problem_naming_both_windows():
    doc = realistic_status(window_s=30.0, other_window_peers=[{"peer_id": "a", "window_s": 10.0, "expires_in_s": 20.0},
                                                             {"peer_id": "b", "window_s": 10.0, "expires_in_s": 9.0}])
    assert ("2 peers run another swarm.window_s (10 s; this node 30 s): every node of a swarm must share it "
            "(swarmnode status --json: other_window_peers)") in problems(doc)
    assert not any("window_s" in p for p in problems(realistic_status()))


def test_a_join_not_confirmed_by_any_record_is_not_called_joined():
    doc = realistic_status(peers=[])
    assert join_text(doc) == "reached an initial peer; no peer record yet"
    assert join_text(realistic_status()) == "joined through 1 initial peer"
