"""Prometheus metrics, collected from the node's status document at scrape time.

Reading the same snapshot the JSON endpoint serves keeps one source of truth: no counter is
incremented in two places. Every series is listed in docs/status.md ("Prometheus"); counters are
only what this process counted from 0 and never sets back (a count restored from a checkpoint,
or one that starts over, is a gauge), and a null in the document leaves its series out.
The series themselves are built by prometheus_swarm.py (node, peers, network) and
prometheus_work.py (training, rollouts, storage, limits); the summaries' are here.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from swarmnode.status.prometheus_families import Row, by_label, from_table
from swarmnode.status.prometheus_swarm import network_series, node_series
from swarmnode.status.prometheus_work import rollouts_series, storage_series, training_series


class StatusCollector(Collector):
    def __init__(self, snapshot: Callable[[], dict[str, Any]]):
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        yield from node_series(s)
        yield from network_series(s.get("network"))
        yield from training_series(s.get("training") or {})
        yield from rollouts_series(s.get("rollouts"))
        yield from summaries_series(s.get("summaries") or {})
        yield from storage_series(s.get("storage") or {}, s.get("limits") or {})


def summaries_series(summaries: dict[str, Any]) -> Iterator[Metric]:
    """Gradient summaries (status `summaries`): counters of what was sent, fetched, merged,
    rejected and skipped (by reason) and dropped, peers by trust, and gauges of sizes and the
    last merge's age."""
    yield from from_table(summaries, SUMMARIES)
    yield by_label("swarmnode_summaries_rejected", "counter", "Peers' gradient summaries rejected, by reason",
                   "reason", summaries.get("rejected") or {})
    yield by_label("swarmnode_summaries_skipped", "counter", "Peers' gradient summaries judged and not merged, "
                   "by reason", "reason", summaries.get("skipped") or {})
    # By standing, not by peer: a label per identity would let a flood of identities grow the series.
    trust = [t["trust"] for t in (summaries.get("trust") or {}).values()]
    yield by_label("swarmnode_summaries_judged_peers", "gauge", "Same-base peers whose summaries were judged, by "
                   "their trust: full (1), partial (between), none (0)", "trust",
                   {"full": sum(t >= 1.0 for t in trust), "partial": sum(0.0 < t < 1.0 for t in trust),
                    "none": sum(t <= 0.0 for t in trust)})


def _summaries_row(key: str, kind: str, help_text: str, name: str | None = None) -> tuple[str, Row]:
    return key, (f"swarmnode_summaries_{name or key}", kind, help_text)


SUMMARIES: dict[str, Row] = dict([
    _summaries_row("sent", "counter", "Gradient summaries this node sealed and offered to peers"),
    _summaries_row("fetched", "counter", "Peers' gradient summaries fetched"),
    _summaries_row("merged", "counter", "Peers' gradient summaries merged into this node's weights"),
    _summaries_row("skipped_other_base", "counter", "Peers' gradient summaries not fetched: another base-weights "
                   "fingerprint"),
    _summaries_row("stale_dropped", "counter", "Peers' gradient summaries dropped unmerged for exceeding "
                   "summaries.max_staleness"),
    # The counter is this process's outer steps: `outer_steps` continues the checkpoint's count.
    _summaries_row("outer_steps_this_run", "counter", "Outer optimizer steps this daemon took since it started",
                   "outer_steps"),
    _summaries_row("outer_steps", "gauge", "Outer optimizer steps of this home's training, across restarts "
                   "(continues the checkpoint's count)", "outer_steps_across_restarts"),
    _summaries_row("merge_seconds", "counter", "Seconds spent compressing, checking and merging gradient summaries"),
    _summaries_row("merge_cpu_seconds", "counter", "CPU seconds of that work (the wall seconds include waiting "
                   "for a busy core)"),
    _summaries_row("down_weighted", "counter", "Peers' gradient summaries merged at less than full weight "
                   "(trust under 1)"),
    _summaries_row("clipped", "counter", "Peers' gradient summaries clipped to 2x the norm of this node's own delta"),
    _summaries_row("harmful", "counter", "Peers' gradient summaries that struck their sender (harmful or repeated)"),
    _summaries_row("active", "gauge", "1 while a peer with the same base weights is in the swarm"),
    _summaries_row("bytes_per_summary", "gauge", "Mean sealed size of this node's summaries on the wire, bytes"),
    _summaries_row("dense_bytes", "gauge", "Bytes of the dense fp32 weight delta (4 x parameters)"),
    _summaries_row("compression_ratio", "gauge", "dense_bytes / bytes_per_summary"),
    _summaries_row("last_merge_age_s", "gauge", "Seconds since the last merge of a peer's summary",
                   "last_merge_age_seconds"),
    _summaries_row("partners_last", "gauge", "Peers' summaries merged at the last outer step"),
    _summaries_row("agreement_scale", "gauge", "The |cos| with this node's own direction a peer's summary needs "
                   "to count as full agreement"),
])


def make_registry(snapshot: Callable[[], dict[str, Any]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(snapshot))
    return registry
