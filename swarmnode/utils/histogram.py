"""`BucketCounts`: a thread-safe histogram of observations in fixed buckets, counted where a
measurement is made and read as a plain dict (Prometheus-style cumulative buckets, their sum
and count), so that whoever shows it needs no state of its own."""
from __future__ import annotations

import bisect
import threading
from typing import Any, Sequence


class BucketCounts:
    """Observations counted in buckets with upper bounds `bounds` (ascending) and one above them.

    Counts only grow: the snapshot can be served as a Prometheus histogram (a counter per bucket).
    """

    def __init__(self, bounds: Sequence[float]):
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"bucket bounds must be ascending and distinct, not {list(bounds)}")
        self.bounds = tuple(float(b) for b in bounds)
        self._counts = [0] * (len(self.bounds) + 1)  # per bucket, not cumulative; the last is above every bound
        self._sum = 0.0
        self._lock = threading.Lock()  # several worker threads observe at once

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.bounds, value)  # the first bound >= value: Prometheus's `le`
        with self._lock:
            self._counts[index] += 1
            self._sum += value

    def snapshot(self) -> dict[str, Any]:
        """`buckets`: upper bound (as a string, `%g`) -> observations at or under it (cumulative);
        `count`: all observations (the +Inf bucket); `sum`: their sum."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        buckets, running = {}, 0
        for bound, n in zip(self.bounds, counts):
            running += n
            buckets[f"{bound:g}"] = running
        return {"buckets": buckets, "count": running + counts[-1], "sum": round(total, 6)}
