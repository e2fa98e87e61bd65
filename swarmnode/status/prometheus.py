"""Prometheus metrics, collected from the node's status document at scrape time.

Reading the same snapshot the JSON endpoint serves keeps one source of truth: no counter is
incremented in two places.
"""
from __future__ import annotations

from typing import Any, Callable

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


class StatusCollector(Collector):
    def __init__(self, snapshot: Callable[[], dict[str, Any]]):
        self._snapshot = snapshot

    def collect(self):
        s = self._snapshot()
        yield GaugeMetricFamily("swarmnode_uptime_seconds", "Seconds since the daemon started", value=s["uptime_s"])
        yield GaugeMetricFamily("swarmnode_peers", "Peers in the peer table", value=len(s["peers"]))
        yield GaugeMetricFamily("swarmnode_window", "Current swarm time window", value=s["window"])
        yield GaugeMetricFamily(
            "swarmnode_routing_table_size", "Peers in the DHT routing table", value=s["routing_table_size"]
        )
        accepted = CounterMetricFamily("swarmnode_messages_accepted", "Messages accepted", labels=["kind"])
        for kind, n in s["messages"]["accepted"].items():
            accepted.add_metric([kind], n)
        yield accepted
        rejected = CounterMetricFamily("swarmnode_messages_rejected", "Messages rejected", labels=["reason"])
        for reason, n in s["messages"]["rejected"].items():
            rejected.add_metric([reason], n)
        yield rejected
        training = s.get("training") or {}
        for key, help_text in TRAINING_GAUGES.items():
            if training.get(key) is not None:
                yield GaugeMetricFamily(f"swarmnode_training_{key}", help_text, value=training[key])
        storage = s.get("storage") or {}
        for key, help_text in STORAGE_GAUGES.items():
            if storage.get(key) is not None:
                yield GaugeMetricFamily(f"swarmnode_storage_{key}", help_text, value=storage[key])
        yield from summaries_metrics(s.get("summaries") or {})
        yield from relay_metrics((s.get("network") or {}).get("relay_load") or {})


def relay_metrics(load: dict[str, Any]):
    """What relaying for nodes behind NAT costs (status `network.relay_load`), against its bounds."""
    for key, help_text in RELAY_GAUGES.items():
        if load.get(key) is not None:
            yield GaugeMetricFamily(f"swarmnode_relay_{key}", help_text, value=load[key])
    if load.get("refused_full") is not None:
        yield CounterMetricFamily("swarmnode_relay_refused_full", "Relay reservations refused: all "
                                  "network.relay_capacity taken", value=load["refused_full"])


def summaries_metrics(summaries: dict[str, Any]):
    """Gradient summaries (status `summaries`): counters of what was sent, fetched, merged,
    rejected (by reason) and dropped, and gauges of sizes and the last merge's age."""
    for key, help_text in SUMMARIES_COUNTERS.items():
        if summaries.get(key) is not None:
            yield CounterMetricFamily(f"swarmnode_summaries_{key}", help_text, value=summaries[key])
    rejected = CounterMetricFamily("swarmnode_summaries_rejected", "Peers' gradient summaries rejected", labels=["reason"])
    for reason, n in sorted((summaries.get("rejected") or {}).items()):
        rejected.add_metric([reason], n)
    yield rejected
    skipped = CounterMetricFamily("swarmnode_summaries_skipped", "Peers' gradient summaries judged and not merged",
                                  labels=["reason"])
    for reason, n in sorted((summaries.get("skipped") or {}).items()):
        skipped.add_metric([reason], n)
    yield skipped
    # By standing, not by peer: a label per identity would let a flood of identities grow the series.
    peers = GaugeMetricFamily("swarmnode_summaries_judged_peers", "Same-base peers whose summaries were judged, by their "
                              "trust: full (1), partial (between), none (0)", labels=["trust"])
    trust = [t["trust"] for t in (summaries.get("trust") or {}).values()]
    for label, n in (("full", sum(t >= 1.0 for t in trust)), ("partial", sum(0.0 < t < 1.0 for t in trust)),
                     ("none", sum(t <= 0.0 for t in trust))):
        peers.add_metric([label], n)
    yield peers
    for key, (name, help_text) in SUMMARIES_GAUGES.items():
        value = summaries.get(key)
        if value is not None:
            yield GaugeMetricFamily(f"swarmnode_summaries_{name}", help_text, value=float(value))


TRAINING_GAUGES = {
    "policy_version": "Policy version of the local trainer",
    "steps": "Training steps taken",
    "reward_mean": "Mean reward of recent training batches",
    "heldout_accuracy": "Greedy accuracy on held-out task items",
    "generate_tokens_per_s": "Tokens generated per second of generation (smoothed, slowdown included)",
    "train_samples_per_s": "Samples trained per second of training (smoothed, slowdown included)",
    "seconds_per_step": "Wall seconds between two training steps (smoothed)",
    "slowdown": "training.slowdown: the node runs this many times slower than it could",
    "dropped_stale": "Rollout groups dropped for exceeding the staleness bound",
}

STORAGE_GAUGES = {
    "rollouts_bytes": "Bytes on disk of rollouts.sqlite (with its WAL)",
    "metrics_bytes": "Bytes on disk of metrics.sqlite (with its WAL)",
    "checkpoint_failures": "Checkpoint writes that failed in a row",
}


RELAY_GAUGES = {
    "reservations": "Nodes behind NAT this node holds relay reservations for",
    "capacity": "network.relay_capacity: the most reservations it holds",
    "forwards_in_flight": "Requests it is forwarding for those nodes now",
    "max_forwards": "network.relay_max_forwards: the most forwards at once",
    "forwards_last_minute": "Requests it took on forwarding in the last minute",
}

SUMMARIES_COUNTERS = {
    "sent": "Gradient summaries this node sealed and offered to peers",
    "fetched": "Peers' gradient summaries fetched",
    "merged": "Peers' gradient summaries merged into this node's weights",
    "skipped_other_base": "Peers' gradient summaries not fetched: another base-weights fingerprint",
    "stale_dropped": "Peers' gradient summaries dropped unmerged for exceeding summaries.max_staleness",
    "outer_steps": "Outer optimizer steps taken",
    "merge_seconds": "Seconds spent compressing, checking and merging gradient summaries",
    "merge_cpu_seconds": "CPU seconds of that work (the wall seconds include waiting for a busy core)",
    "down_weighted": "Peers' gradient summaries merged at less than full weight (trust under 1)",
    "clipped": "Peers' gradient summaries clipped to 2x the norm of this node's own delta",
    "harmful": "Peers' gradient summaries that struck their sender (harmful or repeated)",
}

SUMMARIES_GAUGES = {  # status key -> (metric name after swarmnode_summaries_, help)
    "active": ("active", "1 while a peer with the same base weights is in the swarm"),
    "bytes_per_summary": ("bytes_per_summary", "Mean sealed size of this node's summaries on the wire, bytes"),
    "dense_bytes": ("dense_bytes", "Bytes of the dense fp32 weight delta (4 x parameters)"),
    "compression_ratio": ("compression_ratio", "dense_bytes / bytes_per_summary"),
    "last_merge_age_s": ("last_merge_age_seconds", "Seconds since the last merge of a peer's summary"),
    "partners_last": ("partners_last", "Peers' summaries merged at the last outer step"),
    "agreement_scale": ("agreement_scale", "The |cos| with this node's own direction a peer's summary needs to count as full agreement"),
}


def make_registry(snapshot: Callable[[], dict[str, Any]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(snapshot))
    return registry
