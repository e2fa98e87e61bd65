"""scripts/experiments/summary_experiment.py: the arms' configs and the steps-to-target arithmetic."""
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def exp():
    return load_script("scripts/experiments/summary_experiment.py")


BASE = {"training": {"data_seed": 1000, "local_rollouts": 8, "external_rollouts": 8, "external_wait_s": 2, "lr": 1e-4},
        "rollouts": {"share": True}}


def configs(exp, *argv):
    args = exp.parse_args(list(argv))
    return args, {arm: exp.arm_config(BASE, arm, args) for arm in exp.ARMS}


def test_independent_disables_summaries_and_sharing(exp):
    _, cfg = configs(exp)
    c = cfg["independent"]
    assert c["summaries"]["enabled"] is False
    assert c["rollouts"]["share"] is False and c["training"]["external_rollouts"] == 0
    assert c["training"]["local_rollouts"] == 8


def test_summaries_without_sharing_and_with(exp):
    _, cfg = configs(exp, "--prompts", "8")
    c, d = cfg["summaries"], cfg["summaries+rollouts"]
    assert c["summaries"]["enabled"] is True and c["rollouts"]["share"] is False
    assert c["training"]["external_rollouts"] == 0 and c["training"]["local_rollouts"] == 8
    assert d["summaries"]["enabled"] is True and d["rollouts"]["share"] is True
    assert (d["training"]["local_rollouts"], d["training"]["external_rollouts"], d["training"]["external_wait_s"]) == (4, 4, 2.0)
    assert cfg["lone"]["summaries"]["enabled"] is True and cfg["lone"]["rollouts"]["share"] is False


def test_every_arm_same_steps_and_eval(exp):
    args, cfg = configs(exp, "--steps", "123", "--eval-every", "7", "--eval-size", "9", "--tasks", "sum2",
                        "--lr", "0.001", "--set", "summaries.outer_lr=1.5")
    for c in cfg.values():
        t = c["training"]
        assert (t["max_steps"], t["eval_every"], t["eval_size"], t["tasks"], t["threads"], t["lr"]) == (123, 7, 9, ["sum2"], 1, 0.001)
        assert t["checkpoint_every"] > 123
        assert c["summaries"]["outer_lr"] == 1.5
    assert BASE["training"]["external_rollouts"] == 8  # the base is not changed
    assert exp.arm_nodes("lone", args) == 1 and exp.arm_nodes("summaries", args) == args.nodes


def test_node_data_seeds_equal_across_arms(exp):
    args, cfg = configs(exp)
    for seed in (0, 1):
        streams = {arm: exp.node_data_seeds(c, seed, exp.arm_nodes(arm, args)) for arm, c in cfg.items()}
        assert streams["independent"] == streams["summaries"] == streams["summaries+rollouts"]
        assert streams["lone"] == streams["summaries"][:1]
        assert len(set(streams["summaries"])) == args.nodes
    assert exp.node_data_seeds(cfg["lone"], 0, 1) != exp.node_data_seeds(cfg["lone"], 1, 1)


def test_steps_to_target_uses_a_trailing_mean(exp):
    curve = [[0, 0.0], [10, 0.5], [20, 0.6], [30, 0.2], [40, 0.7], [50, 0.7]]
    assert exp.last_mean(curve) == pytest.approx(0.5333, abs=1e-4)
    assert exp.steps_to_target(curve, 0.5) == 40  # (0.6 + 0.2 + 0.7) / 3; 30: 0.433
    assert exp.steps_to_target(curve, 0.9) is None
    assert exp.steps_to_target(curve, None) is None


def test_read_curve_keys_evaluations_by_local_step(exp, tmp_path):
    from swarmnode.store.metrics import MetricsStore

    store = MetricsStore(tmp_path / "metrics.sqlite")
    store.record(0, {"heldout_accuracy/mean": 0.1}, when=100.0)
    for step, version in ((1, 1), (2, 1), (3, 2)):  # step 2 trained nothing: the version stayed
        store.record(version, {"step": step}, when=100.0 + step)
    store.record(2, {"heldout_accuracy/mean": 0.3}, when=104.0)
    store.record(2, {"heldout_accuracy/mean": 0.3}, when=105.0)  # the final evaluation, same weights
    store.close()
    curve, span = exp.read_curve(tmp_path / "metrics.sqlite")
    assert curve == [[0, 0.1], [3, 0.3]] and span == (100.0, 105.0)


def test_a_node_reaches_its_own_final_accuracy(exp):
    curve = [[0, 0.0469], [10, 0.125], [20, 0.2188], [30, 0.0938]]  # last 3: 0.145867, target 0.1459
    assert exp.steps_to_target(curve, exp.last_mean(curve)) == 30
