"""Builders of Prometheus metric families from parts of the status document: a table of plain
values, a one-hot state, counts by label, and a histogram from cumulative bucket counts.

A value the document holds as null is left out (the series is absent, not 0): null means "not
measured yet", and a 0 would be a wrong reading.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

# A table row: status key -> (metric name, "counter" or "gauge", HELP). A counter's name is given
# without `_total` (prometheus-client adds it to the samples).
Row = tuple[str, str, str]


def family(name: str, kind: str, help_text: str, value: float | None = None,
           labels: Iterable[str] | None = None) -> CounterMetricFamily | GaugeMetricFamily:
    make = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    if labels is not None:
        return make(name, help_text, labels=list(labels))
    return make(name, help_text, value=float(value or 0))


def from_table(values: Mapping[str, Any], table: Mapping[str, Row]) -> Iterator[Metric]:
    """One family per row whose value is present (bools as 0/1)."""
    for key, (name, kind, help_text) in table.items():
        value = values.get(key)
        if value is not None:
            yield family(name, kind, help_text, float(value))


def one_hot(name: str, help_text: str, label: str, states: Iterable[str], current: str | None) -> GaugeMetricFamily:
    """A state set as a labelled gauge: 1 for `current`, 0 for the others (`current` is added
    when not among `states`, so an unexpected value still shows)."""
    metric = GaugeMetricFamily(name, help_text, labels=[label])
    names = list(states)
    if current is not None and current not in names:
        names.append(current)
    for state in names:
        metric.add_metric([state], 1.0 if state == current else 0.0)
    return metric


def by_label(name: str, kind: str, help_text: str, label: str, counts: Mapping[str, float],
             always: Iterable[str] = ()) -> CounterMetricFamily | GaugeMetricFamily:
    """Counts by one label, sorted by label; each of `always` is there (0) even when not counted."""
    metric = family(name, kind, help_text, labels=[label])
    merged = {**dict.fromkeys(always, 0), **counts}
    for value, n in sorted(merged.items()):
        metric.add_metric([str(value)], float(n))
    return metric


def histogram(name: str, help_text: str, series: Mapping[tuple[str, ...], Mapping[str, Any]],
              labels: Iterable[str] = ()) -> HistogramMetricFamily:
    """A histogram family; `series`: label values -> {"buckets": {bound: cumulative count},
    "count": n (the +Inf bucket), "sum": s}."""
    metric = HistogramMetricFamily(name, help_text, labels=list(labels))
    for label_values, h in series.items():
        buckets = [(bound, float(n)) for bound, n in h["buckets"].items()] + [("+Inf", float(h["count"]))]
        metric.add_metric(list(label_values), buckets, float(h["sum"]))
    return metric


def cumulative(counts: Mapping[str, int], bounds: Iterable[float]) -> dict[str, Any]:
    """{"buckets", "count", "sum"} (histogram's input) from counts per exact integer value
    (status `staleness_histogram`: "versions behind" -> groups)."""
    values = {int(k): int(n) for k, n in counts.items()}
    buckets = {f"{b:g}": sum(n for v, n in values.items() if v <= b) for b in bounds}
    return {"buckets": buckets, "count": sum(values.values()), "sum": float(sum(v * n for v, n in values.items()))}
