"""The Prometheus series of the node itself and its place in the swarm: daemon state, join,
peers, messages, reachability, relays and the network's counters (docs/status.md, "Prometheus")."""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from swarmnode.status.prometheus_families import Row, by_label, family, from_table, one_hot

# status `state`: the PeerRecord states, and failed / serving (training failed).
NODE_STATES = ("starting", "joining", "running", "stopping", "serving", "failed")
PEER_STATES = ("starting", "joining", "running", "stopping")
REACHABILITIES = ("public", "private", "unknown")


def node_series(s: dict[str, Any]) -> Iterator[Metric]:
    """Who the node is, its state, its clock, join and peer table, and the messages it judged."""
    yield one_hot("swarmnode_node_state", "Daemon state (status `state`): 1 for the current one",
                  "state", NODE_STATES, s["state"])
    info = GaugeMetricFamily("swarmnode_node_info", "Always 1; the node's identity and versions as labels",
                             labels=["peer_id", "swarm", "role", "software_version", "protocol_version", "transport"])
    info.add_metric([s["peer_id"], s["swarm"], s.get("role", "node"), s["software_version"], str(s["protocol_version"]),
                     (s.get("network") or {}).get("transport", "")], 1.0)
    yield info
    yield family("swarmnode_start_time_seconds", "gauge", "Wall time the daemon started, seconds since the epoch",
                 s["started_at"])
    yield family("swarmnode_uptime_seconds", "gauge", "Seconds since the daemon started", s["uptime_s"])
    yield family("swarmnode_window", "gauge", "Current swarm time window", s["window"])
    yield family("swarmnode_routing_table_size", "gauge", "Peers in the DHT routing table", s["routing_table_size"])
    join = s["join"]
    yield family("swarmnode_join_joined", "gauge", "1 once the node joined the swarm through an initial peer "
                 "(or has none to join through)", join["joined"])
    # A gauge: the join loop counts from 0 again when the node loses every peer and joins again.
    yield family("swarmnode_join_attempts", "gauge", "Attempts of the latest join through the initial peers (the "
                 "one under way, or the one that took; 0 again when the node loses every peer)", join["attempts"])
    yield family("swarmnode_join_initial_peers", "gauge", "Initial peers configured (swarm.initial_peers)",
                 len(join["initial_peers"]))
    yield from peer_series(s["peers"], s.get("incompatible_peers") or [])
    yield family("swarmnode_other_window_peers", "gauge", "Peers of this swarm whose records say another "
                 "swarm.window_s (status `other_window_peers`)", len(s.get("other_window_peers") or []))
    messages = s["messages"]
    yield by_label("swarmnode_messages_accepted", "counter", "Peers' messages accepted, by kind", "kind",
                   messages["accepted"])
    yield by_label("swarmnode_messages_rejected", "counter", "Peers' messages rejected, by reason (every kind: "
                   "records, rollout groups and batches, summaries)", "reason", messages["rejected"])


def peer_series(peers: list[dict[str, Any]], incompatible: list[dict[str, Any]]) -> Iterator[Metric]:
    """The peer table by size, by the peers' own state and by their reachability."""
    yield family("swarmnode_peers", "gauge", "Peers in the peer table", len(peers))
    yield by_label("swarmnode_peers_by_state", "gauge", "Peers in the peer table, by their own state", "state",
                   Counter(p["state"] for p in peers), always=PEER_STATES)
    yield by_label("swarmnode_peers_by_reachability", "gauge", "Peers in the peer table, by the reachability "
                   "their record states", "reachability", Counter(p.get("reachability", "unknown") for p in peers),
                   always=REACHABILITIES)
    yield family("swarmnode_incompatible_peers", "gauge", "Peers whose protocol versions do not overlap this "
                 "node's (status `incompatible_peers`)", len(incompatible))


def network_series(network: dict[str, Any] | None) -> Iterator[Metric]:
    """Reachability, the relays this node uses, what relaying for others costs, and the counters
    of its requests (none on a document without `network`)."""
    if network is None:
        return
    yield one_hot("swarmnode_network_reachability", "Whether peers can dial this node: 1 for the current "
                  "verdict (public, private: behind NAT, unknown: no answer yet)", "reachability", REACHABILITIES,
                  network.get("reachability"))
    yield family("swarmnode_network_relays", "gauge", "Relay reservations this node holds on other peers "
                 "while private (0 while private: peers cannot reach it)", len(network.get("relays") or []))
    yield family("swarmnode_network_relaying", "gauge", "1 while this node relays for nodes behind NAT",
                 network.get("relaying", False))
    yield family("swarmnode_network_direct_peers", "gauge", "Peers behind NAT reached directly (not through "
                 "their relays)", len(network.get("direct_peers") or []))
    if network.get("checks") is not None:
        yield family("swarmnode_network_dialback_checks", "counter", "Dial-back rounds that got answers",
                     network["checks"])
    counters = network.get("counters") or {}
    yield from from_table({**dict.fromkeys(RELAY_COUNTERS, 0), **counters}, RELAY_COUNTERS)
    yield from from_table(counters, TRANSPORT_COUNTERS)
    yield from relay_load_series(network.get("relay_load") or {})


def relay_load_series(load: dict[str, Any]) -> Iterator[Metric]:
    """What relaying for nodes behind NAT costs (status `network.relay_load`), against its bounds."""
    yield from from_table(load, RELAY_LOAD)


# status network.counters a node counts whatever its transport (a key appears there once > 0).
RELAY_COUNTERS: dict[str, Row] = {
    "forwarded": ("swarmnode_relay_forwarded_requests", "counter", "Requests this node relayed for nodes behind NAT"),
    "forwarded_bytes": ("swarmnode_relay_forwarded_bytes", "counter", "Bytes of those requests, both ways"),
    "forwards_failed": ("swarmnode_relay_forwards_failed", "counter", "Requests it relayed that failed"),
    "forwards_refused": ("swarmnode_relay_forwards_refused", "counter", "Requests refused for relaying: over a "
                         "requester's rate or network.relay_max_forwards"),
    "relayed_requests": ("swarmnode_network_relayed_requests", "counter", "Requests this node sent through a relay"),
    "delivered": ("swarmnode_network_delivered_requests", "counter", "Requests relays brought to this node"),
    "deliveries_refused": ("swarmnode_network_deliveries_refused", "counter", "Deliveries refused: from a peer that "
                           "is not this node's relay"),
    "failed_requests": ("swarmnode_network_failed_requests", "counter", "This node's requests to peers that failed"),
    "direct_upgrades": ("swarmnode_network_direct_upgrades", "counter", "Peers behind NAT that answered a direct ping"),
    "dialbacks_answered": ("swarmnode_network_dialbacks_answered", "counter", "Peers' dial-back requests answered"),
}

# status network.counters one transport has (left out with the other).
TRANSPORT_COUNTERS: dict[str, Row] = {
    "dht_gets": ("swarmnode_dht_gets", "counter", "DHT reads this node started (hivemind transport)"),
    "dht_stores": ("swarmnode_dht_stores", "counter", "DHT stores this node started (hivemind transport)"),
    "dht_entries_read": ("swarmnode_dht_entries_read", "counter", "Values those reads brought back"),
    "dht_entries_judged": ("swarmnode_dht_entries_judged", "counter", "DHT values judged by this node's validator"),
    "pushed_entries": ("swarmnode_network_pushed_entries", "counter", "Entries received on GossipSub and kept "
                       "(libp2p transport)"),
    "pushed_entries_refused": ("swarmnode_network_pushed_entries_refused", "counter", "Entries received on "
                               "GossipSub and refused by this node's checks"),
    "pubsub_streams_ended_on_bad_rpcs": ("swarmnode_network_pubsub_streams_ended_on_bad_rpcs", "counter",
                                         "Peers' pubsub streams ended on an RPC that did not parse or could "
                                         "not be handled"),
    "streams_refused": ("swarmnode_network_streams_refused", "counter", "Request streams answered busy"),
    "requests_too_large": ("swarmnode_network_requests_too_large", "counter", "Request streams reset unread: "
                           "over 256 KiB"),
    "hole_punches_tried": ("swarmnode_network_hole_punches_tried", "counter", "Hole punches (DCUtR) started "
                           "or answered"),
    "hole_punches_succeeded": ("swarmnode_network_hole_punches_succeeded", "counter", "Hole punches that ended "
                               "with a direct connection"),
}

RELAY_LOAD: dict[str, Row] = {
    "reservations": ("swarmnode_relay_reservations", "gauge", "Nodes behind NAT this node holds relay "
                     "reservations for (homes it serves)"),
    "capacity": ("swarmnode_relay_capacity", "gauge", "network.relay_capacity: the most reservations it holds"),
    "refused_full": ("swarmnode_relay_refused_full", "counter", "Relay reservations refused: all "
                     "network.relay_capacity taken"),
    "forwards_in_flight": ("swarmnode_relay_forwards_in_flight", "gauge", "Requests it is forwarding for those "
                           "nodes now"),
    "max_forwards": ("swarmnode_relay_max_forwards", "gauge", "network.relay_max_forwards: the most forwards at once"),
    "forwards_last_minute": ("swarmnode_relay_forwards_last_minute", "gauge", "Requests it took on forwarding in "
                             "the last minute"),
}
