"""scripts/bench/scale_bench.py's pure parts: a node's figures from two samples (status documents,
CPU seconds, p2pd's syscall bytes), the machine's busy share, the log-log slope and the table's rows."""
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("scripts/bench/scale_bench.py")


def status(accepted: dict, rejected: dict, over_cap: int = 0, peers: int = 0, counters: dict | None = None) -> dict:
    return {"messages": {"accepted": accepted, "rejected": rejected, "rejected_by_sender": {}},
            "limits": {"values_over_key_cap": over_cap, "peers": peers},
            "network": {"counters": counters or {}}, "peers": [{"peer_id": f"p{i}"} for i in range(peers)],
            "routing_table_size": peers}


def test_counter_deltas_are_what_each_counter_grew_and_a_new_one_counts_from_zero(bench):
    before = status({"peer_record": 10}, {}, over_cap=1, counters={"failed_requests": 2})
    after = status({"peer_record": 70}, {"malformed": 3}, over_cap=1, counters={"failed_requests": 5})
    assert bench.counter_deltas(before, after) == {"accepted/peer_record": 60, "network/failed_requests": 3,
                                                   "rejected/malformed": 3, "values_over_key_cap": 0}


def test_io_bytes_are_what_p2pds_syscall_counters_grew(bench):
    before = {"p2pd": (1000, 2000), "daemon": (100, 200)}
    after = {"p2pd": (6000, 9000), "daemon": (2100, 1200)}
    assert bench.io_bytes(before, after) == (5000, 7000)
    assert bench.io_bytes(before, after, "daemon") == (2000, 1000)


def test_node_figures_from_two_samples_thirty_seconds_apart(bench):
    before = bench.Sample(100.0, status({"peer_record": 10}, {}, peers=3), {"daemon": 1.0, "p2pd": 2.0},
                          {"daemon": (100, 200), "p2pd": (1000, 2000)})
    counted = {"dht_gets": 40, "dht_stores": 5, "dht_entries_judged": 300}
    after = bench.Sample(130.0, status({"peer_record": 70}, {"malformed": 3}, peers=3, counters=counted),
                         {"daemon": 1.3, "p2pd": 2.6},
                         {"daemon": (2100, 1200), "p2pd": (6000, 9000)})
    f = bench.node_figures(before, after)
    assert f["seconds"] == 30.0
    assert f["cpu_percent"] == {"daemon": pytest.approx(1.0), "p2pd": pytest.approx(2.0), "total": pytest.approx(3.0)}
    assert f["records_per_min"] == 120.0  # 60 records in 30 s
    assert f["rejected_per_min"] == 6.0
    # p2pd read 5000 B and wrote 7000 B in 30 s: 24,000 B a minute
    assert (f["p2pd_mb_per_min"], f["p2pd_read_mb_per_min"], f["p2pd_written_mb_per_min"]) == (0.024, 0.01, 0.014)
    assert (f["peers"], f["routing_table_size"]) == (3, 3)
    assert (f["dht_requests_per_min"], f["entries_per_min"]) == (90.0, 600.0)  # 45 requests, 300 entries in 30 s
    assert bench.headline(f) == {"cpu_percent": pytest.approx(3.0), "records_per_min": 120.0, "p2pd_mb_per_min": 0.024,
                                 "dht_requests_per_min": 90.0, "entries_per_min": 600.0}


def test_machine_share_is_the_busy_part_of_all_cores(bench):
    before = {"user": 10.0, "system": 5.0, "idle": 80.0, "iowait": 5.0, "guest": 1.0}
    after = {"user": 20.0, "system": 10.0, "idle": 85.0, "iowait": 5.0, "guest": 3.0}
    # 20 s of core time passed (guest is inside user), 5 of them idle
    assert bench.machine_share(before, after) == 0.75


def node(cpu: float, records: float, mb: float, requests: float = 10.0, entries: float = 100.0) -> dict:
    return {"cpu_percent": {"total": cpu}, "records_per_min": records, "p2pd_mb_per_min": mb,
            "dht_requests_per_min": requests, "entries_per_min": entries}


def test_spread_slopes_and_table_rows(bench):
    small = [node(2.0, 60, 1.0), node(4.0, 70, 3.0), node(3.0, 80, 2.0)]
    large = [node(8.0, 250, 4.0), node(9.0, 240, 8.0), node(7.0, 260, 8.0), node(8.5, 250, 8.0)]
    assert bench.spread_of(small) == {"cpu_percent": {"median": 3.0, "max": 4.0},
                                      "records_per_min": {"median": 70, "max": 80},
                                      "p2pd_mb_per_min": {"median": 2.0, "max": 3.0},
                                      "dht_requests_per_min": {"median": 10.0, "max": 10.0},
                                      "entries_per_min": {"median": 100.0, "max": 100.0}}
    runs = [{"nodes": 4, "layout": "one-key", "join_s": 9.4, "nodes_cores": 0.09, "machine_cpu_share": 0.1234,
             "per_node": bench.spread_of(small)},
            {"nodes": 16, "layout": "one-key", "join_s": 92.0, "nodes_cores": 1.83, "machine_cpu_share": 0.85,
             "per_node": bench.spread_of(large)}]
    # medians 3 -> 8.25 (x2.75), 70 -> 250 (x3.57), 2 -> 8 (x4), flat requests and entries over a fourfold N
    assert bench.slopes(runs) == {"cpu_percent": 0.73, "records_per_min": 0.918, "p2pd_mb_per_min": 1.0,
                                  "dht_requests_per_min": 0.0, "entries_per_min": 0.0}
    assert bench.slopes_by_layout(runs) == {"one-key": bench.slopes(runs)}
    # busiest: max/median CPU, 4/3 and 9/8.25
    assert bench.table_rows(runs) == [["4", "one-key", "9", "3.00", "70.0", "2.00", "10.0", "100", "1.3x", "0.09/12%"],
                                      ["16", "one-key", "92", "8.25", "250", "8.00", "10.0", "100", "1.1x", "1.83/85%"]]
    # A third run on a saturated machine (95% busy) is marked and left out of the slopes.
    saturated = {"nodes": 32, "join_s": 20.0, "nodes_cores": 1.98, "machine_cpu_share": 0.95,
                 "per_node": bench.spread_of(small)}
    assert bench.slopes([*runs, saturated]) == bench.slopes(runs)
    assert bench.table_rows([saturated])[0][0] == "32*"
    assert bench.slopes([runs[0], saturated]) == {k: None for k in bench.FIGURES}
    assert bench.slope_row("sharded", {"cpu_percent": 0.73, "records_per_min": None, "p2pd_mb_per_min": 1.0,
                                       "dht_requests_per_min": 0.1, "entries_per_min": 0.2}) == [
        "slope", "sharded", "", "0.73", "-", "1.00", "0.10", "0.20", "", ""]


def test_node_config_applies_overrides_to_a_copy(bench):
    base = {"records": {"poll_interval_s": 1}, "swarm": {"window_s": 10}}
    cfg = bench.node_config(base, ["records.poll_interval_s=2", "swarm.layout=sharded"])
    assert cfg == {"records": {"poll_interval_s": 2}, "swarm": {"window_s": 10, "layout": "sharded"}}
    assert base == {"records": {"poll_interval_s": 1}, "swarm": {"window_s": 10}}
