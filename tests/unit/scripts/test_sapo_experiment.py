"""scripts/experiments/sapo_experiment.py and testing/experiments/sapo_results.py: the runs' configs and plan, and the summary
arithmetic on hand-made runs."""
import pytest

from swarmnode.testing.experiments import sapo_results

from tests.helpers import load_script


def load(name):
    return load_script(f"scripts/experiments/{name}.py")


@pytest.fixture(scope="module")
def exp():
    return load("sapo_experiment")


@pytest.fixture(scope="module")
def res():
    return sapo_results


BASE = {"training": {"data_seed": 1000, "local_rollouts": 8, "external_rollouts": 8, "tasks": ["sum2"]},
        "rollouts": {"share": True}}


def test_alone_shares_nothing_and_no_split_merges_summaries(exp):
    args = exp.parse_args(["--rounds", "100", "--evals", "4", "--set", "training.lr=2e-4", "--group-scale", "1"])
    alone = exp.run_config(BASE, args, 8, 0, exp.ALONE)
    shared = exp.run_config(BASE, args, 2, 6, "own_need")
    assert alone["rollouts"]["share"] is False and alone["training"]["external_rollouts"] == 0
    assert shared["rollouts"]["share"] is True and shared["training"]["external_selection"] == "own_need"
    assert (shared["training"]["local_rollouts"], shared["training"]["external_rollouts"]) == (2, 6)
    for cfg in (alone, shared):
        assert cfg["summaries"]["enabled"] is False
        assert cfg["training"]["tasks"] == ["sum2", "sum3"]
        assert cfg["training"]["eval_every"] == 25 and cfg["training"]["eval_size"] == 256
        assert float(cfg["training"]["lr"]) == 2e-4  # the node config reads "2e-4" as a float
    assert BASE["training"]["tasks"] == ["sum2"]  # the base is copied, not changed


def test_plan_runs_8_0_once_per_seed_and_every_split_before_the_next(exp):
    args = exp.parse_args(["--seeds", "0", "1", "--splits", "8/0,4/4", "--selections", "nonzero_advantage,own_need"])
    assert exp.plan(args) == [("8/0", "alone", 0), ("8/0", "alone", 1),
                              ("4/4", "nonzero_advantage", 0), ("4/4", "own_need", 0),
                              ("4/4", "nonzero_advantage", 1), ("4/4", "own_need", 1)]


def node(i, own, final, initial, everything=None):
    tasks = {"a": initial, "b": initial, "mean": initial}
    return {"node": i, "model": f"m{i % 2}", "cumulative_reward": sum(own), "own_reward_per_round": own,
            "cumulative_reward_all_rollouts": sum(everything or own),
            "initial_heldout": tasks, "final_heldout": {"a": final, "b": final, "mean": final},
            "external_trained_by_task": {"a": 1}}


def run(split, selection, seed, finals, own):
    return {"split": split, "selection": selection, "seed": seed, "seconds": 1.0,
            "nodes": [node(i, own, f, 0.1 * (i + 1)) for i, f in enumerate(finals)]}


def test_summary_by_hand(exp, res):
    runs = [run("8/0", "alone", 0, [0.2, 0.3], [0.1] * 10), run("8/0", "alone", 1, [0.4, 0.3], [0.1] * 10),
            run("4/4", "nonzero_advantage", 0, [0.5, 0.5], [0.2] * 10),
            run("4/4", "nonzero_advantage", 1, [0.5, 0.7], [0.2] * 10),
            run("4/4", "own_need", 0, [0.6, 0.6], [0.3] * 10), run("4/4", "own_need", 1, [0.6, 0.6], [0.3] * 10)]
    args = exp.parse_args(["--seeds", "0", "1", "--splits", "8/0,4/4", "--nodes", "2",
                           "--selections", "nonzero_advantage,own_need"])
    s = res.summarise(runs, args, "cmd")
    alone, paper = s["selections"]["nonzero_advantage"]["8/0"], s["configs"]["4/4"]
    assert s["configs"] is s["selections"]["nonzero_advantage"]
    assert alone["cumulative_reward"] == pytest.approx(1.0) and alone["selection"] == "alone"
    assert paper["cumulative_reward"] == pytest.approx(2.0) and paper["vs_8_0"] == pytest.approx(2.0)
    # held-out: nodes start at 0.1 and 0.2 (mean 0.15); 8/0 ends at mean(0.25, 0.35) = 0.3
    assert alone["initial_heldout_accuracy"] == pytest.approx(0.15)
    assert alone["final_heldout_accuracy_mean"] == pytest.approx(0.3)
    assert alone["final_heldout_half_range"] == pytest.approx(0.05)
    assert paper["final_heldout_accuracy_mean"] == pytest.approx(0.55)
    assert paper["per_node"][1]["final_heldout"]["mean"] == pytest.approx(0.6)
    assert paper["per_node"][0]["external_trained_by_task"] == {"a": 2}  # summed over seeds
    g = s["goals"]
    assert g["alone_heldout_gain_points"] == pytest.approx(15.0)
    assert g["nonzero_advantage_4_4_vs_8_0_cumulative"] == pytest.approx(2.0)
    assert g["own_need_vs_nonzero_advantage_4_4_cumulative"] == pytest.approx(1.5)
    assert g["own_need_minus_nonzero_advantage_4_4_heldout_points"] == pytest.approx(5.0)
    # The weakest node starts lowest (node 0, 0.1); alone it ends at mean(0.2, 0.4) = 0.3.
    w = s["weakest_node"]
    assert w["node"] == 0 and w["alone_final_heldout"]["mean"] == pytest.approx(0.3)
    assert w["with_sharing"]["own_need"]["4/4"]["gain_vs_alone_points"] == pytest.approx(30.0)


def test_tail_mean_is_the_last_fifth(res):
    assert res.tail_mean([0.0] * 8 + [1.0, 0.5]) == pytest.approx(0.75)


@pytest.fixture(scope="module")
def sim():
    return load("sapo_sim")


def test_sim_enters_peers_groups_as_the_intake_does(sim):
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup

    group = ScoredGroup(ref=TaskRef("sum2", 1000, 3), prompt_token_ids=[1, 2], completion_token_ids=[[5], [6]],
                        behavior_logprobs=[[-0.5], [-1.0]], rewards=[1.0, 0.0], policy_version=40)
    same = sim.as_peer_group(group, 2, same_model=True, receiver_version=7)
    other = sim.as_peer_group(group, 2, same_model=False, receiver_version=7)
    # The receiver's clock, never the sender's version; log-probs only from the same start model.
    assert (same.source, same.policy_version, same.behavior_logprobs) == ("peer2", 7, [[-0.5], [-1.0]])
    assert (other.source, other.policy_version, other.behavior_logprobs) == ("peer2", 7, None)
    assert not same.is_local and group.is_local


def test_sim_runs_a_mixed_swarm_and_takes_peers_groups(sim, tmp_path):
    out = tmp_path / "sim.jsonl"
    assert sim.main(["--nodes", "2", "--rounds", "2", "--split", "2/2", "--eval-every", "2", "--eval-size", "2",
                     "--selection", "uniform", "--threads", "1", "--out", str(out)]) == 0
    import json
    run = json.loads(out.read_text())
    assert [n["model"] for n in run["nodes"]] == ["bundled:tiny-policy", "bundled:tiny-sum3"]  # the mixed swarm
    for node in run["nodes"]:
        assert [r for r, _ in node["curve"]] == [0, 2] and len(node["own_reward"]) == 2
        # round 1 has no peers' groups yet; round 2 draws J = 2 of the peer's 2 from round 1
        assert sum(node["external_by_task"].values()) == 2


def test_sim_summary_by_start_model_by_hand(sim):
    run = {"nodes": [
        {"model": "a", "own_reward": [0.1, 0.3], "curve": [[0, {"sum2": 0.2, "mean": 0.2}], [9, {"sum2": 0.4, "mean": 0.4}]]},
        {"model": "b", "own_reward": [0.0, 0.0], "curve": [[0, {"sum2": 0.0, "mean": 0.0}], [9, {"sum2": 0.1, "mean": 0.1}]]},
        {"model": "a", "own_reward": [0.5, 0.5], "curve": [[0, {"sum2": 0.2, "mean": 0.2}], [9, {"sum2": 0.2, "mean": 0.2}]]},
    ]}
    s = sim.by_model(run)
    assert s["a"]["nodes"] == 2 and s["a"]["cumulative_reward"] == pytest.approx((0.4 + 1.0) / 2)
    assert s["a"]["initial"]["sum2"] == pytest.approx(0.2) and s["a"]["final"]["sum2"] == pytest.approx(0.3)
    assert s["b"] == {"nodes": 1, "cumulative_reward": 0.0, "initial": {"sum2": 0.0, "mean": 0.0},
                      "final": {"sum2": 0.1, "mean": 0.1}}


def test_group_scale_multiplies_both_quotas_and_keeps_the_split_label(exp):
    args = exp.parse_args(["--group-scale", "4"])
    cfg = exp.run_config(BASE, args, 4, 4, "nonzero_advantage")
    assert (cfg["training"]["local_rollouts"], cfg["training"]["external_rollouts"]) == (16, 16)
    alone = exp.run_config(BASE, args, 8, 0, exp.ALONE)
    assert (alone["training"]["local_rollouts"], alone["training"]["external_rollouts"]) == (32, 0)
    assert exp.settings(args)["group_scale"] == 4  # --resume never mixes runs of two scales


def test_a_shaped_selection_label_sets_the_foreign_text_objective(exp):
    args = exp.parse_args([])
    shaped = exp.run_config(BASE, args, 4, 4, "nonzero_advantage+shaped")
    plain = exp.run_config(BASE, args, 4, 4, "nonzero_advantage")
    assert shaped["training"]["external_selection"] == "nonzero_advantage"
    assert shaped["training"]["foreign_text_objective"] == "shaped"
    # the paper's protocol, even over a base config that ships the variants on
    on = {"training": {**BASE["training"], "external_positive_only": True, "foreign_text_objective": "shaped"}}
    paper = exp.run_config(on, args, 4, 4, "nonzero_advantage")["training"]
    assert (paper["external_positive_only"], paper["foreign_text_objective"]) == (False, "plain")
    assert plain["training"]["foreign_text_objective"] == "plain"
    both = exp.run_config(BASE, args, 4, 4, "own_need+positive+shaped")["training"]
    assert (both["external_selection"], both["external_positive_only"], both["foreign_text_objective"]) == (
        "own_need", True, "shaped")
    with pytest.raises(ValueError):
        exp.run_config(BASE, args, 4, 4, "nonzero_advantage+bogus")
    with pytest.raises(SystemExit):  # refused before any run starts
        exp.parse_args(["--selections", "nonzero_advantage,nonzero_advantage+bogus"])


def test_table_labels_fit_80_columns(res):
    assert res.short_label("nonzero_advantage+positive") == "nonzero+pos"
    assert res.short_label("own_need+shaped") == "own_need+shp" and res.short_label("alone") == "alone"
