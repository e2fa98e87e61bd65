"""scripts/bench/gossip_share_at.py's pure parts: each node's gossip share and its parts from a
demo's summary.json, and their medians."""
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("scripts/bench/gossip_share_at.py")


def node(share: float, loop: float, workers: float, transport: float, uptime: float = 100.0,
         summary_bytes: float = 29_000.0) -> dict:
    return {"rollouts": {"gossip_time_share": share, "uptime_s": uptime,
                         "swarm_cpu_breakdown_s": {"event_loop": loop, "gossip_workers": workers, "transport": transport}},
            "summaries": {"bytes_per_summary": summary_bytes}}


def test_each_part_is_its_cpu_over_the_nodes_uptime_and_the_medians_are_per_part(script):
    summary = [node(0.057, 2.4, 1.9, 1.4), node(0.060, 2.6, 2.0, 1.4, summary_bytes=54_000.0),
               node(0.050, 2.0, 1.5, 1.5, uptime=80.0)]
    shares = script.node_shares(summary)
    assert shares[0] == {"gossip": 0.057, "event_loop": 0.024, "gossip_workers": 0.019, "transport": 0.014,
                         "bytes_per_summary": 29_000.0}
    assert shares[2]["event_loop"] == 0.025  # 2.0 s of 80 s
    assert script.medians(shares) == {"gossip": 0.057, "event_loop": 0.025, "gossip_workers": 0.019,
                                      "transport": 0.014, "bytes_per_summary": 29_000.0}
    # An older summary without the breakdown or summaries: the share alone, parts 0.
    assert script.node_shares([{"rollouts": {"gossip_time_share": 0.05}}]) == [
        {"gossip": 0.05, "event_loop": 0.0, "gossip_workers": 0.0, "transport": 0.0, "bytes_per_summary": 0.0}]
    assert script.medians([]) == {}
    old = {"rollouts": {"gossip_time_share": 0.09, "uptime_s": 100.0,
                        "swarm_cpu_breakdown_s": {"event_loop": 3.0, "gossip_workers": 2.0, "p2pd": 4.0}}}
    assert script.node_shares([old])[0]["transport"] == 0.04  # p2pd: the part's older name
