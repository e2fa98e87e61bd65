"""scripts/bench/bootstrap_cost.py (and testing/experiments/process_samples.py): the figures of a phase from its RSS samples and CPU seconds,
and one node's part of a window that sampled two."""
import pytest

from swarmnode.testing.experiments.process_samples import phase_figures

from tests.helpers import load_script

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def bench():
    return load_script("scripts/bench/bootstrap_cost.py")


def test_phase_figures_are_mean_and_max_rss_and_cpu_percent_per_process_and_in_all():
    figures = phase_figures({"daemon": [80 * MIB, 84 * MIB], "p2pd": [60 * MIB, 64 * MIB]},
                                  {"daemon": 0.6, "p2pd": 1.2}, wall_s=60.0)
    assert figures["rss_mib"] == {"daemon": {"mean": 82.0, "max": 84.0}, "p2pd": {"mean": 62.0, "max": 64.0},
                                  "total": {"mean": 144.0, "max": 148.0}}
    assert figures["cpu_percent"] == {"daemon": 1.0, "p2pd": 2.0, "total": 3.0}


def test_one_nodes_part_has_its_own_total(bench):
    both = phase_figures({"boot daemon": [80 * MIB], "boot p2pd": [60 * MIB], "node0 daemon": [400 * MIB]},
                               {"boot daemon": 0.6, "boot p2pd": 0.6, "node0 daemon": 30.0}, wall_s=60.0)
    assert bench._part(both, "boot ") == {
        "rss_mib": {"daemon": {"mean": 80.0, "max": 80.0}, "p2pd": {"mean": 60.0, "max": 60.0},
                    "total": {"mean": 140.0, "max": 140.0}},
        "cpu_percent": {"daemon": 1.0, "p2pd": 1.0, "total": 2.0}}
