"""testing/experiments/figures.py: the shared figures, worked out by hand."""
import pytest

from swarmnode.testing.experiments.figures import arm_curve, last_mean, loglog_slope, spread, swarm_latency_s


def test_last_mean_averages_the_last_three_evaluations():
    assert last_mean([[0, 0.1], [10, 0.2], [20, 0.3], [30, 0.7]]) == 0.4
    assert last_mean([]) is None


def test_spread_over_seeds():
    assert spread([0.2, 0.4]) == {"mean": 0.3, "min": 0.2, "max": 0.4, "std": 0.1414, "by_seed": [0.2, 0.4]}
    assert spread([0.5])["std"] == 0.0


def test_arm_curve_interpolates_each_node_onto_the_grid():
    runs = [{"nodes": [{"curve": [[0, 0.0], [10, 1.0]]}]}, {"nodes": [{"curve": [[0, 0.2], [10, 0.2]]}]}]
    assert arm_curve(runs, steps=10, every=5) == {"steps": [0, 5, 10], "mean": [0.1, 0.35, 0.6],
                                                  "min": [0.0, 0.2, 0.2], "max": [0.2, 0.5, 1.0]}


def test_swarm_latency_is_the_median_p50_and_the_largest_p99():
    gossip = [{"latency_p50_s": 0.1, "latency_p99_s": 0.5}, {"latency_p50_s": 0.3, "latency_p99_s": 0.9}, {}]
    assert swarm_latency_s(gossip) == {"latency_p50_s": 0.2, "latency_p99_s": 0.9}
    assert swarm_latency_s([]) == {"latency_p50_s": None, "latency_p99_s": None}


@pytest.mark.parametrize("points, slope", [
    ([(8, 2.0), (16, 4.0), (32, 8.0)], 1.0),        # y grows like N
    ([(32, 8.0), (8, 2.0)], 1.0),                   # in any order: first and last N
    ([(8, 5.0), (16, 9.0), (32, 5.0)], 0.0),        # only the ends count
    ([(8, 4.0), (32, 2.0)], -0.5),                  # halves over a fourfold N
    ([(4, 3.0), (16, 12.0)], 1.0),
    ([(8, 0.0), (32, 2.0)], None),                  # no log of 0
    ([(8, 2.0)], None),
    ([(8, 2.0), (8, 3.0)], None),
])
def test_loglog_slope_first_to_last(points, slope):
    assert loglog_slope(points) == slope
