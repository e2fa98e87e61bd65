"""status/prometheus_families.py: nulls are left out, a state set shows an unexpected state too,
counts by label keep the labels always asked for, and per-value counts become cumulative buckets."""
from swarmnode.status.prometheus_families import by_label, cumulative, from_table, one_hot


def samples(family) -> dict:
    return {tuple(s.labels.values()): s.value for s in family.samples}


def test_a_null_value_leaves_its_series_out():
    table = {"a": ("x_a", "gauge", "A"), "b": ("x_b", "counter", "B")}
    assert [f.name for f in from_table({"a": None, "b": 3}, table)] == ["x_b"]


def test_a_state_set_shows_an_unexpected_state():
    assert samples(one_hot("x", "X", "state", ["on", "off"], "odd")) == {("on",): 0, ("off",): 0, ("odd",): 1}


def test_counts_by_label_keep_the_labels_always_asked_for():
    assert samples(by_label("x", "gauge", "X", "k", {"b": 2}, always=["a", "b"])) == {("a",): 0, ("b",): 2}


def test_counts_per_value_become_cumulative_buckets():
    assert cumulative({"0": 2, "3": 1, "20": 1}, [0, 1, 4]) == {"buckets": {"0": 2, "1": 2, "4": 3}, "count": 4,
                                                                "sum": 23.0}
