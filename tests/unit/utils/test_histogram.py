"""utils/histogram.py: BucketCounts counts each observation in the first bucket whose upper bound
it does not exceed (Prometheus's `le`), cumulatively, with the sum and the count."""
import threading

import pytest

from swarmnode.utils.histogram import BucketCounts


def test_observations_are_counted_cumulatively_at_or_under_each_bound():
    h = BucketCounts([0.5, 1, 5])
    for value in (0.1, 0.5, 0.7, 3, 9):
        h.observe(value)
    assert h.snapshot() == {"buckets": {"0.5": 2, "1": 3, "5": 4}, "count": 5, "sum": 13.3}


def test_an_empty_histogram_has_every_bucket_at_zero():
    assert BucketCounts([1, 2]).snapshot() == {"buckets": {"1": 0, "2": 0}, "count": 0, "sum": 0.0}


def test_observations_from_many_threads_are_all_counted():
    h = BucketCounts([1])
    threads = [threading.Thread(target=lambda: [h.observe(0.5) for _ in range(1000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.snapshot()["count"] == 4000 and h.snapshot()["buckets"]["1"] == 4000


def test_bounds_must_ascend():
    with pytest.raises(ValueError, match="ascending"):
        BucketCounts([2, 1])
