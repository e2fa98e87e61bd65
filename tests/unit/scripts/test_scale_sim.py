"""scripts/bench/scale_sim.py: its DHT cost model by hand on 2 nodes / 1 shard, and a tiny run."""
import json

from tests.helpers import load_script

sim = load_script("scripts/bench/scale_sim.py")


def test_two_nodes_one_shard_by_hand():
    # N = 2: one round, one visit (the other node), which holds the key's dictionary.
    assert sim.lookup_rounds(2) == 1
    assert sim.visits_latest(2) == sim.visits_first_fresh(2) == 1
    # 2 announcements of 400 B, each + 80 B of DHT framing: a 960 B dictionary; 1 neighbour (60 B).
    get = sim.get_cost(2, 2, 400, latest=True)
    assert (get.out_bytes, get.in_bytes, get.requests, get.entries) == (200, 60 + 960, 1, 2 + 2)
    # A store: the same traversal (1 find, answered with neighbour + dictionary), then the value
    # to min(5 replicas, 1 other node): 400 + 80 + 200 B of store request.
    store = sim.store_cost(2, 2, 400, holder_share=1.0)
    assert (store.out_bytes, store.in_bytes, store.requests, store.entries) == (200 + 680, 1020, 2, 2)


def test_visits_grow_like_a_kademlia_lookup():
    assert sim.visits_latest(100) == 24  # 20 + 4 x (2 - 1): log2(100 / 20) = 2.3 bits, one more round
    assert sim.visits_first_fresh(100) == 8
    assert sim.visits_latest(100_000) == 32  # rounds 1 + ceil(12.3 / 4.3) = 4
    assert sim.visits_first_fresh(100_000) == 16


def test_a_tiny_run_writes_its_figures(tmp_path):
    out = tmp_path / "scale_sim.json"
    assert sim.main(["--ns", "10", "40", "--trials", "50", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["simulated"] is True
    rows = {r["n"]: r for r in result["rows"]}
    assert rows[10]["shard_bits"] == 0 and rows[40]["shard_bits"] == 2  # 40 / 4 = 10 <= 16 < 40 / 2
    for row in rows.values():
        for arm in ("today", "sharded"):
            assert row[arm]["busiest_bytes"] >= row[arm]["median_bytes"] > 0
            assert row[arm]["p_rollouts"] == 1.0
    assert rows[40]["sharded"]["bytes"] < rows[40]["today"]["bytes"]
