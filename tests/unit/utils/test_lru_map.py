"""utils/lru_map.py: the bounded map behind per-peer state (least recently used out first, protected entries last)."""
from swarmnode.utils.lru_map import LRUMap


def test_lru_map_evicts_least_recently_used_and_counts():
    m = LRUMap(2)
    m["a"], m["b"] = 1, 2
    assert m.get("a") == 1  # a is now the most recent
    m["c"] = 3
    assert list(m) == ["a", "c"] and m.evicted == 1
    assert m.setdefault("d", lambda: 4) == 4 and list(m) == ["c", "d"] and m.evicted == 2


def test_lru_map_evicts_protected_entries_last():
    m = LRUMap(2, protect=lambda v: v == "keep")
    m["a"], m["b"] = "keep", "x"
    m["c"] = "y"  # a is the oldest, but protected: b goes
    assert list(m) == ["a", "c"]
    m2 = LRUMap(1, protect=lambda v: True)
    m2["a"], m2["b"] = 1, 2  # all protected: the oldest goes after all
    assert list(m2) == ["b"]
