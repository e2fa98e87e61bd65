"""swarmnode/testing/internet/measure.py against hand-computed probe lines."""
import pytest

from swarmnode.testing.internet.measure import (
    first_exchange_after,
    groups_per_minute,
    join_times,
    longest_step_gap,
    percentile,
)


def line(t, peers=1, steps=0, accepted=None, up=True):
    return {"t": t, "up": up, "peers": peers, "steps": steps, "accepted": accepted or {}}


LINES = [line(10, peers=0), line(12, peers=1), line(14, accepted={"b": 8}, steps=1), line(20, accepted={"b": 16}, steps=2),
         line(30, up=False), line(40, accepted={"b": 40}, steps=3)]


def test_join_times_from_process_start():
    assert join_times(LINES, started_at=9.0) == {"to_first_peer_s": 3.0, "to_first_group_s": 5.0}
    assert join_times(LINES, started_at=50.0) == {"to_first_peer_s": None, "to_first_group_s": None}


def test_groups_per_minute_between_two_times():
    assert groups_per_minute(LINES, "b", start=14, end=44) == pytest.approx((40 - 8) * 2)
    assert groups_per_minute(LINES, "nobody", start=14, end=44) == 0
    with pytest.raises(ValueError):
        groups_per_minute(LINES, "b", 5, 5)


def test_first_exchange_after_a_heal():
    assert first_exchange_after(LINES, "b", after=21) == 40  # the unanswered line at 30 does not count
    assert first_exchange_after(LINES, "b", after=41) is None


def test_longest_step_gap_counts_an_unanswering_node_as_stalled():
    # steps change at 14, 20 and 40: gaps 6 and 20; from 40 to the end 5
    assert longest_step_gap(LINES, start=12, end=45) == 20
    assert longest_step_gap(LINES, start=12, end=80) == 40  # no step after 40


def test_percentile_nearest_rank():
    assert percentile([3.0, 1.0, 2.0, 4.0, 5.0], 0.5) == 3.0
    assert percentile([1.0, 2.0], 0.99) == 2.0
    assert percentile([], 0.5) is None
