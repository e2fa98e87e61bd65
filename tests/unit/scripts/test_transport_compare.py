"""scripts/bench/transport_compare.py: the per-arm figures from hand-made status documents,
polls and logs, the libp2p/hivemind ratios, and the config both arms run."""
import argparse

import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("scripts/bench/transport_compare.py")


def test_latency_is_the_median_of_node_p50s_and_the_largest_p99(bench):
    gossip = [{"latency_p50_s": 1.0, "latency_p99_s": 3.0}, {"latency_p50_s": 2.0, "latency_p99_s": 9.0},
              {"latency_p50_s": 4.0, "latency_p99_s": 5.0}, {"latency_p50_s": None}]
    assert bench.swarm_latency_s(gossip) == {"latency_p50_s": 2.0, "latency_p99_s": 9.0}
    assert bench.swarm_latency_s([{}]) == {"latency_p50_s": None, "latency_p99_s": None}


def test_gossip_shares_are_means_over_nodes_per_second_of_uptime(bench):
    gossip = [{"gossip_time_share": 0.10, "uptime_s": 100.0,
               "swarm_cpu_breakdown_s": {"event_loop": 2.0, "gossip_workers": 1.0, "transport": 7.0}},
              {"gossip_time_share": 0.20, "uptime_s": 50.0,
               "swarm_cpu_breakdown_s": {"event_loop": 4.0, "gossip_workers": 1.0, "transport": 5.0}}]
    # event loop: (2/100 + 4/50) / 2 = 0.05; workers: (0.01 + 0.02) / 2; transport: (0.07 + 0.10) / 2
    assert bench.gossip_shares(gossip) == {"gossip_time_share": 0.15, "share_event_loop": 0.05,
                                           "share_gossip_workers": 0.015, "share_transport": 0.085}


def test_rss_is_mean_and_max_of_node_peaks_leaving_out_unread_nodes(bench):
    assert bench.rss_figures([500.0, 600.0, None, 700.0]) == {"rss_mean_mib": 600.0, "rss_max_mib": 700.0}
    assert bench.rss_figures([None]) == {"rss_mean_mib": None, "rss_max_mib": None}


def test_first_peer_counts_joiners_only_and_names_nodes_that_never_saw_one(bench):
    launched = {0: 100.0, 1: 110.0, 2: 110.5, 3: 111.0, 4: 111.0}
    first_peer = {0: 120.0, 1: 115.0, 2: 118.5, 3: 113.0}  # node 4 never listed a peer
    figures = bench.first_peer_figures(launched, first_peer)
    assert figures == {"first_peer_p50_s": 5.0, "first_peer_max_s": 8.0,
                       "first_peer_s_by_node": {0: 20.0, 1: 5.0, 2: 8.0, 3: 2.0}, "never_saw_a_peer": [4]}


def test_ratios_are_an_arm_over_hivemind_and_none_without_both(bench):
    hivemind = {"latency_p50_s": 2.0, "rss_mean_mib": 600.0, "idle_cpu_percent": 0.0}
    libp2p = {"latency_p50_s": 3.0, "rss_mean_mib": 450.0, "idle_cpu_percent": 5.0, "first_peer_p50_s": 4.0}
    ratio = bench.ratios(hivemind, libp2p)
    assert ratio["latency_p50_s"] == 1.5 and ratio["rss_mean_mib"] == 0.75
    assert ratio["idle_cpu_percent"] is None and ratio["first_peer_p50_s"] is None
    assert set(ratio) == {key for key, _, _ in bench.FIGURES}


def test_log_findings_count_levels_and_tracebacks_and_keep_distinct_lines(bench):
    log = "\n".join([
        "2026-01-01 10:00:00 INFO swarmnode: started",
        "2026-01-01 10:00:01 WARNING swarmnode: lost every peer",
        "2026-01-01 10:00:02 WARNING swarmnode: lost every peer",
        "2026-01-01 10:00:03 ERROR swarmnode.gossip: fetch failed",
        "Traceback (most recent call last):",
        "2026-01-01 10:00:04 CRITICAL swarmnode: training failed",
    ])
    assert bench.log_findings(log) == {"errors": 2, "warnings": 2, "tracebacks": 1, "first": [
        "WARNING swarmnode: lost every peer", "ERROR swarmnode.gossip: fetch failed", "CRITICAL swarmnode: training failed"]}
    assert bench.log_findings(log, keep=1)["first"] == ["WARNING swarmnode: lost every peer"]


def test_the_arms_run_one_config_but_for_the_transport(bench):
    base = {"network": {"transport": "hivemind", "p2pd_startup_timeout_s": 30}, "training": {"local_rollouts": 8},
            "rollouts": {"share": False}}
    args = argparse.Namespace(steps=40, seed=2, set=["training.lr=0.0002"])
    hivemind, libp2p, process = (bench.arm_config(base, t, args) for t in ("hivemind", "libp2p", "libp2p-process"))
    assert base["network"]["transport"] == "hivemind" and base["training"] == {"local_rollouts": 8}
    assert (hivemind["network"]["transport"], libp2p["network"]["transport"]) == ("hivemind", "libp2p")
    assert "libp2p_host" not in hivemind["network"] and libp2p["network"]["libp2p_host"] == "thread"
    assert process["network"]["transport"] == "libp2p" and process["network"]["libp2p_host"] == "process"
    assert {**libp2p, "network": None} == {**hivemind, "network": None} == {**process, "network": None}
    assert hivemind["training"]["max_steps"] == 40 and hivemind["training"]["data_seed"] == 1000 + 2 * 100_000
    assert hivemind["training"]["lr"] == 0.0002 and hivemind["rollouts"]["share"] is True


def test_arms_are_named_from_the_known_ones(bench):
    assert bench.parse_args(["--arms", "hivemind,libp2p-process"]).arms == ["hivemind", "libp2p-process"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--arms", "hivemind,quic"])
