"""status/prometheus_swarm.py: the daemon's state as a one-hot gauge, peers by state and
reachability, this node's reachability and relays, and relay load, as the document has them."""
from tests.unit.status.helpers import NETWORK, RELAY_LOAD, status, training_status, scrape_lines


def test_the_daemon_state_is_one_hot():
    doc = status()
    doc["state"] = "failed"
    text = scrape_lines(doc)
    assert 'swarmnode_node_state{state="failed"} 1.0' in text
    assert [line for line in text if line.startswith("swarmnode_node_state{") and line.endswith(" 1.0")] == [
        'swarmnode_node_state{state="failed"} 1.0']
    assert 'swarmnode_node_state{state="running"} 0.0' in text


def test_peers_are_counted_by_state_and_reachability():
    doc = status()
    doc["peers"] = [{"state": "running", "reachability": "public"}, {"state": "running", "reachability": "private"},
                    {"state": "joining", "reachability": "private"}]
    text = scrape_lines(doc)
    for line in ("swarmnode_peers 3.0", 'swarmnode_peers_by_state{state="running"} 2.0',
                 'swarmnode_peers_by_state{state="joining"} 1.0', 'swarmnode_peers_by_state{state="stopping"} 0.0',
                 'swarmnode_peers_by_reachability{reachability="private"} 2.0',
                 'swarmnode_peers_by_reachability{reachability="unknown"} 0.0'):
        assert line in text, line


def test_join_state():
    doc = status()
    doc["join"] = {"initial_peers": ["/ip4/127.0.0.1/tcp/1/p2p/x"], "joined": False, "attempts": 4, "last_error": "x"}
    text = scrape_lines(doc)
    assert {"swarmnode_join_joined 0.0", "swarmnode_join_attempts 4.0", "swarmnode_join_initial_peers 1.0"} <= set(text)


def test_join_attempts_are_a_gauge_they_start_over_when_the_node_joins_again():
    doc = status()
    doc["join"] = {"initial_peers": ["/ip4/127.0.0.1/tcp/1/p2p/x"], "joined": False, "attempts": 0,
                   "last_error": "lost every peer"}  # what the join loop sets when every peer is gone
    text = scrape_lines(doc)
    assert "# TYPE swarmnode_join_attempts gauge" in text and "swarmnode_join_attempts 0.0" in text
    assert not [line for line in text if line.startswith("swarmnode_join_attempts_total")]


def test_peers_of_another_window_are_counted():
    doc = status()
    assert "swarmnode_other_window_peers 0.0" in scrape_lines(doc)
    doc["other_window_peers"] = [{"peer_id": f"12D3KooWOther{i}", "window_s": 10.0, "expires_in_s": 50.0}
                                 for i in range(2)]
    assert "swarmnode_other_window_peers 2.0" in scrape_lines(doc)


def test_a_private_node_without_relays_shows_as_such():
    text = scrape_lines(status(network={**NETWORK, "relays": []}))
    assert 'swarmnode_network_reachability{reachability="private"} 1.0' in text
    assert 'swarmnode_network_reachability{reachability="public"} 0.0' in text
    assert "swarmnode_network_relays 0.0" in text


def test_relay_load_and_forwarding():
    text = scrape_lines(training_status())
    for line in ("swarmnode_relay_reservations 3.0", "swarmnode_relay_capacity 32.0",
                 "swarmnode_relay_refused_full_total 4.0", "swarmnode_relay_forwards_in_flight 1.0",
                 "swarmnode_relay_max_forwards 128.0", "swarmnode_relay_forwards_last_minute 40.0",
                 "swarmnode_relay_forwarded_requests_total 7.0", "swarmnode_relay_forwarded_bytes_total 70000.0",
                 "swarmnode_relay_forwards_failed_total 0.0", "swarmnode_dht_gets_total 100.0"):
        assert line in text, line
    assert RELAY_LOAD["reservations"] == 3


def test_libp2p_counters_are_left_out_on_hivemind():
    assert not [line for line in scrape_lines(training_status()) if line.startswith("swarmnode_network_hole_punches")]
