"""scripts/experiments/heterogeneity_experiment.py and testing/experiments/heterogeneity_results.py: the arms' configs, the
node records of older statuses, and the results arithmetic on hand-made curves."""
import io
import sqlite3

import pytest
from rich.console import Console

from swarmnode.testing.experiments import heterogeneity_results

from tests.helpers import load_script


def load(name):
    return load_script(f"scripts/experiments/{name}.py")


@pytest.fixture(scope="module")
def res():
    return heterogeneity_results


@pytest.fixture(scope="module")
def exp():
    return load("heterogeneity_experiment")


# -- time to target ------------------------------------------------------------------------------

CURVE = [[0, 0.1], [10, 0.2], [20, 0.16], [30, 0.2], [40, 0.3]]


def test_time_to_target_needs_two_evaluations_to_average_there(res):
    # means of consecutive pairs: 0.15 (t=10), 0.18 (t=20), 0.18 (t=30), 0.25 (t=40)
    assert res.time_to_target(CURVE, 0.18) == 20  # 0.2 alone at t=10 is not enough
    assert res.time_to_target(CURVE, 0.15) == 10
    assert res.time_to_target(CURVE, 0.25) == 40
    assert res.time_to_target(CURVE, 0.26) is None
    assert res.time_to_target(CURVE, None) is None
    assert res.time_to_target([[0, 0.9]], 0.5) is None  # one evaluation is no mean of two
    assert res.time_to_target(CURVE, 0.2, window=1) == 10


def test_swarm_time_is_the_last_node_and_none_if_any_never(res):
    assert res.swarm_time_to_target([20, 40, 30]) == 40
    assert res.swarm_time_to_target([20, None]) is None
    assert res.swarm_time_to_target([]) is None


def test_default_target_and_accuracies(res):
    runs = [{"nodes": [{"curve": [[0, 0.1], [5, 0.3]]}, {"curve": [[-2, 0.2]]}]}, {"nodes": [{"curve": []}]}]
    assert res.default_target(runs, 0.05) == pytest.approx(0.2)  # mean(0.1, 0.2) + 0.05
    assert res.initial_accuracy(CURVE) == 0.1
    assert res.final_accuracy(CURVE) == pytest.approx(0.25)  # mean(0.2, 0.3)
    assert res.final_accuracy([]) is None


def test_seed_ratio_and_its_bounds(res):
    exact = res.seed_ratio(100.0, 200.0, 480.0)
    assert exact["ratio"] == pytest.approx(0.5) and exact["upper_bound"] is False
    bound = res.seed_ratio(120.0, None, 480.0)  # fixed never: its budget, so 120/480 is an upper bound
    assert bound["ratio"] == pytest.approx(0.25) and bound["upper_bound"] is True and bound["fixed_never_reached"]
    assert res.seed_ratio(None, 200.0, 480.0)["ratio"] is None
    m = res.mean_ratio([exact, bound])
    assert m["mean"] == pytest.approx(0.375) and m["half_range"] == pytest.approx(0.125) and m["upper_bound"] is True
    assert res.mean_ratio([exact, res.seed_ratio(None, 200.0, 480.0)])["mean"] is None
    assert res.mean_ratio([exact])["half_range"] == 0


# -- trained shares ------------------------------------------------------------------------------

def test_share_trained_counts_other_nodes_only(res):
    nodes = [{"peer_id": "A", "groups_generated": 10, "external_trained_by_sender": {"B": 4, "C": 0, "A": 99}},
             {"peer_id": "B", "groups_generated": 20, "external_trained_by_sender": {"A": 3}},
             {"peer_id": "C", "groups_generated": 0, "external_trained_by_sender": {"A": 2, "B": 6}},
             {"peer_id": "D", "groups_generated": 8, "external_trained_by_sender": None}]
    # A: (3 + 2) / 10 (its own 99 does not count); B: (4 + 6) / 20; C made nothing; D: 0 / 8
    assert res.share_trained(nodes) == [pytest.approx(0.5), pytest.approx(0.5), None, 0.0]
    older = [{"peer_id": "A", "groups_generated": 10}, {"peer_id": "B", "groups_generated": 5}]
    assert res.share_trained(older) == [None, None]  # no node reports what it trained


def test_slow_fast_share_ratio(res):
    # slowest (4x: nodes 2 and 3) mean 0.3 over fastest (1x: node 0) 0.8
    assert res.slow_fast_share_ratio([0.8, 0.5, 0.2, 0.4], [1, 2, 4, 4]) == pytest.approx(0.375)
    assert res.slow_fast_share_ratio([0.8, 0.5], [2, 2]) is None
    assert res.slow_fast_share_ratio([0.0, 0.5], [1, 4]) is None
    assert res.slow_fast_share_ratio([0.4, None], [1, 4]) is None


def test_staleness_and_bytes(res):
    merged = res.merge_counts([{"0": 3, "1": 1}, None, {"1": 2, "2": 2}])
    assert merged == {"0": 3, "1": 3, "2": 2}
    s = res.staleness_summary(merged)
    assert s["groups"] == 8 and s["shares"] == {"0": 0.375, "1": 0.375, "2": 0.25}
    assert s["mean_tau"] == pytest.approx(0.875)  # (0*3 + 1*3 + 2*2) / 8
    assert res.staleness_summary({})["mean_tau"] is None
    assert res.wire_bytes([{"bytes_fetched": 100}, {"bytes_fetched": None}, {"bytes_fetched": 50}]) == 150
    assert res.wire_bytes([{}]) is None


def test_spread_is_half_range(res):
    assert res.spread([1.0, 3.0, None]) == {"mean": 2.0, "half_range": 1.0, "by_seed": [1.0, 3.0, None]}
    assert res.spread([None])["mean"] is None


# -- the whole summary ---------------------------------------------------------------------------

def node(i, curve, peer, generated, trained, **extra):
    return {"node": i, "slowdown": [1.0, 4.0][i], "peer_id": peer, "curve": curve, "groups_generated": generated,
            "external_trained_by_sender": trained, "steps": 10 * (2 - i), "bytes_fetched": 1000 * (i + 1), **extra}


def run(arm, seed, nodes):
    return {"arm": arm, "seed": seed, "budget_s": 480.0, "seconds": 500.0, "nodes": nodes}


def hand_runs():
    fast_sched = [[0, 0.2], [60, 0.3], [120, 0.3]]   # 0.25 at t=60
    slow_sched = [[0, 0.2], [100, 0.25], [200, 0.3]]  # 0.225, then 0.275 at t=200
    sched = lambda seed: run("scheduler", seed, [
        node(0, fast_sched, "a", 10, {"b": 2}, generator_idle_share=0.1, trainer_idle_share=0.3,
             staleness_external={"0": 1, "1": 1}),
        node(1, slow_sched, "b", 4, {"a": 5}, generator_idle_share=0.3, trainer_idle_share=0.5,
             staleness_external={"1": 2})])
    return [
        sched(0), sched(1),
        run("fixed", 0, [node(0, [[0, 0.2], [100, 0.3], [200, 0.3]], "a", 10, {"b": 1}),   # 100
                         node(1, [[0, 0.2], [300, 0.3], [400, 0.3]], "b", 4, {"a": 5})]),  # 300
        run("fixed", 1, [node(0, [[0, 0.2], [100, 0.3]], "a", 10, {"b": 1}),
                         node(1, [[0, 0.2], [480, 0.2]], "b", 4, {"a": 5})]),              # never
    ]


def test_summary_by_hand(res):
    s = res.summarise(hand_runs(), arms=["scheduler", "fixed"], seeds=[0, 1], target_gain=0.05, command="cmd")
    assert s["target"] == pytest.approx(0.25)  # every node starts at 0.2
    sched, fixed = s["results"]["scheduler"], s["results"]["fixed"]
    assert sched["swarm_time_to_target_s"]["by_seed"] == [200, 200]
    assert fixed["swarm_time_to_target_s"]["by_seed"] == [300, None]
    # seed 0: 200 / 300; seed 1: 200 / 480 (fixed never: its budget, an upper bound)
    assert s["time_to_target_ratio_by_seed"]["0"]["ratio"] == pytest.approx(0.6667)
    assert s["time_to_target_ratio_by_seed"]["1"]["ratio"] == pytest.approx(0.4167)
    assert s["time_to_target_ratio"] == pytest.approx(0.5417)
    assert s["time_to_target_ratio_half_range"] == pytest.approx(0.125)
    assert s["time_to_target_ratio_is_upper_bound"] is True
    assert s["seeds"] == [0, 1]
    # shares: scheduler a = 5/10, b = 2/4 -> slow/fast 1.0; fixed b = 1/4 -> 0.5
    assert sched["slow_fast_share_ratio"]["mean"] == pytest.approx(1.0)
    assert fixed["slow_fast_share_ratio"]["mean"] == pytest.approx(0.5)
    assert sched["per_node"][1]["share_trained"]["mean"] == pytest.approx(0.5)
    assert s["goals"]["time_to_target_ratio"]["met"] is True and s["goals"]["time_to_target_ratio"]["upper_bound"]
    assert s["goals"]["slow_fast_trained_share"]["met"] is True
    assert sched["generator_idle_share"]["mean"] == pytest.approx(0.2)  # mean(0.1, 0.3), both seeds alike
    assert sched["trainer_idle_share"]["mean"] == pytest.approx(0.4)
    assert sched["staleness_external"]["counts"] == {"0": 2, "1": 6}  # two seeds of {"0": 1, "1": 3}
    assert sched["staleness_external"]["mean_tau"] == pytest.approx(0.75)
    assert fixed["staleness_external"]["groups"] == 0 and fixed["generator_idle_share"]["mean"] is None
    assert sched["wire_bytes"]["mean"] == 3000 and sched["wire_bytes_per_s"]["mean"] == pytest.approx(6.25)
    assert fixed["runs"]["1"]["never_reached"] == [1]
    assert sched["per_node"][0]["time_to_target_s"]["mean"] == 60


def test_the_ratio_at_later_targets_by_hand(res):
    s = res.summarise(hand_runs(), arms=["scheduler", "fixed"], seeds=[0, 1], target_gain=0.05)
    at = s["time_to_target_ratio_at_targets"]
    assert list(at) == ["0.2500", "0.2750", "0.3000", "0.3250", "0.3500"]  # start 0.2 + 0.05, ..., 0.15
    assert at["0.2500"]["mean"] == s["time_to_target_ratio"]  # the headline target is one of them
    # 0.275: scheduler 200 s both seeds (slow node: mean(0.25, 0.3) at t = 200); fixed seed 0:
    # 400 s (node1's mean(0.3, 0.3)), seed 1: never (its budget, 480 s: an upper bound)
    assert at["0.2750"]["scheduler_s"] == [200, 200] and at["0.2750"]["fixed_s"] == [400, None]
    assert at["0.2750"]["by_seed"] == [0.5, pytest.approx(0.4167)]
    assert at["0.2750"]["mean"] == pytest.approx(0.4583, abs=1e-4) and at["0.2750"]["upper_bound"] is True
    # 0.30: the scheduler's slow node never gets there: no ratio
    assert at["0.3000"]["mean"] is None and at["0.3000"]["scheduler_s"] == [None, None]


def test_summary_with_an_absolute_target_and_a_scheduler_that_never_gets_there(res):
    s = res.summarise(hand_runs(), arms=["scheduler", "fixed"], seeds=[0, 1], target=0.29)
    # scheduler: node1 tops out at mean(0.25, 0.3) = 0.275 -> never; no ratio, goal not met
    assert s["target"] == 0.29 and s["time_to_target_ratio"] is None
    assert s["goals"]["time_to_target_ratio"]["met"] is False
    assert "--target" in s["target_definition"]


# -- the experiment's pure parts -----------------------------------------------------------------

BASE = {"training": {"data_seed": 1000, "external_selection": "nonzero_advantage", "max_steps": 50,
                     "eval_every": 25, "eval_size": 32}, "rollouts": {"share": True}}


def test_arm_configs_differ_only_in_the_scheduler(exp):
    args = exp.parse_args(["--set", "training.lr=2e-4"])
    sched, fixed = exp.arm_config(BASE, "scheduler", args), exp.arm_config(BASE, "fixed", args)
    assert sched["scheduler"]["enabled"] is True and sched["training"]["external_selection"] == "balanced"
    assert fixed["scheduler"]["enabled"] is False and fixed["training"]["external_selection"] == "nonzero_advantage"
    for cfg in (sched, fixed):
        assert "max_steps" not in cfg["training"]
        assert cfg["training"]["eval_every_s"] == 10.0 and cfg["training"]["eval_size"] == 128
        assert float(cfg["training"]["lr"]) == 2e-4
    assert BASE["training"]["max_steps"] == 50  # the base is copied, not changed
    assert exp.node_data_seeds(sched, 1, 3) == [101000, 102000, 103000]


def test_args(exp):
    args = exp.parse_args([])
    # CPU quotas by default; the slowdowns they stand for are the fallback where quotas cannot be set.
    assert args.quotas == [0.8, 0.4, 0.2, 0.2]
    assert args.slowdowns == [1.0, 2.0, 4.0, 4.0] and args.arms == ["scheduler", "fixed"] and args.seeds == [0, 1]
    assert exp.parse_args(["--quotas", "1,0.25"]).slowdowns == [1.0, 4.0]
    plain = exp.parse_args(["--quotas", "none"])
    assert plain.quotas is None and plain.slowdowns == [1.0, 2.0, 4.0, 4.0]
    assert exp.parse_args(["--quotas", "none", "--slowdowns", "1,3"]).slowdowns == [1.0, 3.0]
    for bad in (["--arms", "scheduler,nope"], ["--quotas", "none", "--slowdowns", "1,0.5"], ["--quotas", "1,0"],
                ["--quotas", "1,x"], ["--slowdowns", "1,2"]):  # the last: 2 slowdowns for 4 quotas
        with pytest.raises(SystemExit):
            exp.parse_args(bad)


def test_without_cgroups_the_experiment_says_so_and_slows_nodes_down(exp, monkeypatch):
    from swarmnode.testing.experiments import cpu_quota

    def unavailable(tag, root=None):
        raise cpu_quota.QuotaUnavailable("no cgroup CPU controller at /sys/fs/cgroup")

    monkeypatch.setattr(exp.CpuQuotas, "trial", staticmethod(unavailable))
    args = exp.parse_args([])
    out = io.StringIO()
    exp.check_quotas(args, Console(file=out, width=200))
    assert args.quotas is None and args.slowdowns == [1.0, 2.0, 4.0, 4.0]
    line = out.getvalue().strip()
    assert "\n" not in line and "CPU quotas unavailable" in line and "--slowdown 1,2,4,4" in line


def test_node_record_of_a_status_without_the_scheduler_fields(exp):
    status = {"peer_id": "p", "training": {"steps": 7, "slowdown": 2.0}, "rollouts": {"groups_published": 40,
                                                                                      "bytes_fetched": 9}}
    r = exp.node_record(1, 2.0, 1000, status, [[0.0, 0.2]], [0])
    assert r["groups_generated"] == 40 and r["groups_generated_source"] == "rollouts.groups_published"
    assert r["plan"] is None and r["external_trained_by_sender"] is None and r["trainer_idle_share"] is None
    assert r["bytes_fetched"] == 9 and r["steps"] == 7
    early = exp.node_record(1, 2.0, 1000, {"peer_id": "p", "training": {"groups_generated": None},
                                          "rollouts": {"groups_published": 40}}, [], [])
    assert early["groups_generated"] is None  # the field is there, not filled yet: no stand-in
    missing = exp.node_record(0, 1.0, 1000, {"name": "node0", "error": "no status"}, [], [])
    assert missing["peer_id"] is None and missing["groups_generated"] is None and missing["status_error"] == "no status"


def test_read_curve_is_seconds_since_the_clock(exp, tmp_path):
    path = tmp_path / "metrics.sqlite"
    with sqlite3.connect(str(path)) as conn:
        conn.execute("CREATE TABLE metrics (time REAL, version INTEGER, name TEXT, value REAL)")
        conn.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", [
            (1000.0, 0, "heldout_accuracy/mean", 0.2), (1000.0, 0, "heldout_accuracy/sum2", 0.3),
            (1010.5, 5, "step", 5), (1012.0, 5, "heldout_accuracy/mean", 0.25)])
    assert exp.read_curve(path, 1002.0) == ([[-2.0, 0.2], [10.0, 0.25]], [0, 5])
    assert exp.read_curve(tmp_path / "none.sqlite", 0.0) == ([], [])


def widest_line(renderable) -> int:
    """The widest line printed at 80 columns; a cell cut short (…) counts as too wide."""
    console = Console(file=io.StringIO(), width=80, record=True)
    console.print(renderable)
    text = console.export_text()
    return 81 if "…" in text else max(len(line) for line in text.splitlines())


def test_live_table_fits_80_columns_with_old_and_new_statuses(exp):
    new = {"name": "node0", "peer_id": "a", "training": {
        "slowdown": 1.0, "steps": 1234, "heldout_accuracy": 0.2345, "groups_generated": 12345,
        "plan": {"local_rollouts": 8, "external_rollouts": 8, "external_wait_s": 2.0, "steps_per_window": 3, "reason": "x"},
        "generator_idle_share": 0.12, "trainer_idle_share": 0.5, "external_trained": 9999,
        "external_trained_by_sender": {"b": 30}}}
    old = {"name": "node1", "peer_id": "b", "training": {"slowdown": 4.0, "steps": 3}, "rollouts": {"groups_published": 5}}
    rows = [new, old, {"name": "node2", "error": "not answering"}]
    assert widest_line(exp.live_table(rows, "seed 0, scheduler, 123/480 s")) <= 80
    assert widest_line(exp.live_table(rows, "seed 0, scheduler, 123/480 s", [0.8, 0.4, 0.2, 0.2])) <= 80


def test_tables_fit_80_columns(exp, res):
    s = res.summarise(hand_runs(), arms=["scheduler", "fixed"], seeds=[0, 1])
    assert widest_line(exp.tables(s)) <= 80
    caption = exp.tables(s).renderables[0].caption
    # the ratio at each target; an upper bound (a fixed run never got there) says so
    assert "by target: 25.0% <=0.54, 27.5% <=0.46, 30.0% -" in caption
