"""A node trains the bundled policy; SIGKILLed mid-training, it resumes from its checkpoint. With
the generator as a thread or a process, and (marked cuda, skipped without a GPU) on a GPU with
the generator process in its own CUDA context and a static decode."""
import signal
import sqlite3

import psutil
import pytest

from swarmnode.store.checkpoints import latest_checkpoint
from tests.integration.conftest import alive, child_pids, status_json, wait_until


@pytest.fixture(params=["thread", "process", pytest.param("cuda", marks=pytest.mark.cuda)])
def training_config(request, tmp_path, local_config):
    path = tmp_path / "training.yaml"
    model = "name_or_path: bundled:tiny-policy"
    if request.param == "cuda":
        model += "\n  device: cuda\n  decode: static"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", model)
        + "\ntraining:\n  local_rollouts: 8\n  samples_per_prompt: 8\n  eval_every: 5\n  eval_size: 16\n"
          f"  checkpoint_every: 5\n  generator: {'thread' if request.param == 'thread' else 'process'}\n"
    )
    return path


def multiprocessing_children(pid: int) -> list[psutil.Process]:
    """The daemon's multiprocessing children: the generator (training.generator: process) and its resource tracker."""
    return [c for c in psutil.Process(pid).children(recursive=True) if "multiprocessing" in " ".join(c.cmdline())]


def test_node_trains_checkpoints_and_resumes_after_sigkill(make_swarm, training_config):
    swarm = make_swarm(1, training_config)
    node = swarm.nodes[0]
    as_process = "generator: process" in training_config.read_text()
    training = wait_until(lambda: (t := status_json(node.home)["training"])["running"] and (t["policy_version"] or 0) >= 6 and t,
                          timeout=180, what="the node to train past version 5")
    assert training["model"] == "bundled:tiny-policy" and training["heldout_accuracy"] is not None
    assert training["generate_tokens_per_s"] > 0 and training["steps"] >= 6
    assert status_json(node.home)["model_fingerprint"]
    gpu = training["gpu_memory"]
    on_gpu = "device: cuda" in training_config.read_text()
    assert (gpu is not None and gpu["device"] == "cuda" and 0 < gpu["in_use_bytes"] <= gpu["total_bytes"]) == on_gpu
    checkpoints = node.home.root / "checkpoints"
    saved = wait_until(lambda: latest_checkpoint(checkpoints), timeout=60, what="a checkpoint")
    saved_version = int(saved.name[1:])
    with sqlite3.connect(node.home.root / "metrics.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM metrics WHERE name = 'reward_mean'").fetchone()[0] >= 5

    p2pd = child_pids(node.home)
    spawned = multiprocessing_children(node.process.pid)
    assert len([c for c in spawned if "spawn_main" in " ".join(c.cmdline())]) == (1 if as_process else 0)
    swarm.kill(0, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid) for pid in p2pd + [c.pid for c in spawned]), timeout=10,
               what="p2pd and the generator process to die with the node")
    swarm.restart(0)
    resumed = wait_until(lambda: (t := status_json(node.home)["training"])["policy_version"] is not None and t,
                         timeout=120, what="training to resume")
    assert resumed["policy_version"] >= saved_version
    assert "resumed from v" in node.log_path.read_text()
