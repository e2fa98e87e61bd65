"""A node trains the bundled policy; SIGKILLed mid-training, it resumes from its checkpoint."""
import signal
import sqlite3

import pytest

from swarmnode.store.checkpoints import latest_checkpoint
from tests.integration.conftest import alive, child_pids, status_json, wait_until


@pytest.fixture
def training_config(tmp_path, local_config):
    path = tmp_path / "training.yaml"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 8\n  samples_per_prompt: 8\n  eval_every: 5\n  eval_size: 16\n"
          "  checkpoint_every: 5\n"
    )
    return path


def test_node_trains_checkpoints_and_resumes_after_sigkill(make_swarm, training_config):
    swarm = make_swarm(1, training_config)
    node = swarm.nodes[0]
    training = wait_until(lambda: (t := status_json(node.home)["training"])["running"] and (t["policy_version"] or 0) >= 6 and t,
                          timeout=180, what="the node to train past version 5")
    assert training["model"] == "bundled:tiny-policy" and training["heldout_accuracy"] is not None
    assert training["generate_tokens_per_s"] > 0 and training["steps"] >= 6
    assert status_json(node.home)["model_fingerprint"]
    checkpoints = node.home.root / "checkpoints"
    saved = wait_until(lambda: latest_checkpoint(checkpoints), timeout=60, what="a checkpoint")
    saved_version = int(saved.name[1:])
    with sqlite3.connect(node.home.root / "metrics.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM metrics WHERE name = 'reward_mean'").fetchone()[0] >= 5

    p2pd = child_pids(node.home)
    swarm.kill(0, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid) for pid in p2pd), timeout=10, what="p2pd to die with the node")
    swarm.restart(0)
    resumed = wait_until(lambda: (t := status_json(node.home)["training"])["policy_version"] is not None and t,
                         timeout=120, what="training to resume")
    assert resumed["policy_version"] >= saved_version
    assert "resumed from v" in node.log_path.read_text()
