"""scripts/bench/scale_bench_at.py's pure parts: one scale_bench run's figures (median node) and each
run's helper CPU over the first commit's mean."""
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("scripts/bench/scale_bench_at.py")


def node(daemon: float, helper: float, refused: int = 0) -> dict:
    return {"cpu_percent": {"daemon": daemon, "p2pd": helper, "total": daemon + helper},
            "counters": {"network/pushed_entries_refused": refused}}


def run(*nodes: dict, lapsed: int = 0) -> dict:
    return {"node_figures": list(nodes), "nodes_cores": 0.9, "listings_lapsed": lapsed, "join_s": 15.0}


def test_a_runs_figures_are_its_median_nodes(script):
    figures = script.run_figures(run(node(0.4, 12.0, 3), node(0.3, 10.0), node(0.5, 14.0, 9), lapsed=2))
    assert figures == {"daemon_cpu": 0.4, "helper_cpu": 12.0, "nodes_cores": 0.9, "listings_lapsed": 2,
                       "join_s": 15.0, "pushes_refused": 3}


def test_each_runs_helper_cpu_is_read_against_the_first_commits_mean(script):
    results = [{"commit": "a", "figures": {"helper_cpu": 12.0}}, {"commit": "b", "figures": {"helper_cpu": 9.0}},
               {"commit": "a", "figures": {"helper_cpu": 8.0}}]
    assert script.helper_ratios(results) == [1.2, 0.9, 0.8]  # a's mean is 10.0
