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


def make_registry(snapshot: Callable[[], dict[str, Any]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(snapshot))
    return registry
