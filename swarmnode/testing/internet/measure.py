"""What an emulated-internet run measured, read off probe lines (probe.py), no I/O.

A probe line is {"t": wall time, "up": bool, "peers": n, "steps": n, "accepted": {peer id: groups
accepted from it}, "latency": {peer id: [p50, p99]}, ...}; a node's lines are in time order.
"""
from __future__ import annotations

from typing import Any, Iterable

Line = dict[str, Any]


def first_time(lines: Iterable[Line], after: float, predicate) -> float | None:
    """The time of the first line at or after `after` for which `predicate(line)` holds."""
    for line in lines:
        if line["t"] >= after and line.get("up") and predicate(line):
            return line["t"]
    return None


def join_times(lines: list[Line], started_at: float) -> dict[str, float | None]:
    """Seconds from process start to its first peer, and to its first group from any peer."""
    first_peer = first_time(lines, started_at, lambda line: line["peers"] > 0)
    first_group = first_time(lines, started_at, lambda line: sum(line["accepted"].values()) > 0)
    return {"to_first_peer_s": None if first_peer is None else first_peer - started_at,
            "to_first_group_s": None if first_group is None else first_group - started_at}


def _accepted_at(lines: list[Line], peer: str, t: float) -> int:
    """Groups accepted from `peer` by the last answered line at or before `t` (0 before any)."""
    count = 0
    for line in lines:
        if line["t"] > t:
            break
        if line.get("up"):
            count = line["accepted"].get(peer, count)
    return count


def groups_per_minute(lines: list[Line], peer: str, start: float, end: float) -> float:
    """Groups the node accepted from `peer` per minute between `start` and `end`."""
    if end <= start:
        raise ValueError("end must be after start")
    return (_accepted_at(lines, peer, end) - _accepted_at(lines, peer, start)) * 60.0 / (end - start)


def first_exchange_after(lines: list[Line], peer: str, after: float) -> float | None:
    """When the node first accepted a new group from `peer` after time `after`."""
    before = _accepted_at(lines, peer, after)
    return first_time(lines, after, lambda line: line["accepted"].get(peer, 0) > before)


def longest_step_gap(lines: list[Line], start: float, end: float) -> float:
    """The longest time between two training-step increments of the node within [start, end]
    (a node that stops answering or stepping counts as stalled for that whole stretch)."""
    last_change, last_steps, longest = start, None, 0.0
    for line in lines:
        if not start <= line["t"] <= end:
            continue
        steps = line.get("steps") if line.get("up") else None
        if steps is not None and steps != last_steps:
            if last_steps is not None:
                longest = max(longest, line["t"] - last_change)
            last_change, last_steps = line["t"], steps
    return max(longest, end - last_change)


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by nearest rank, None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
