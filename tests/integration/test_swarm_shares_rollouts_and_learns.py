"""Swarm learning with real daemons: rollouts gossiped over libp2p, checked, re-scored, trained.

Three real `swarmnode run` processes on 127.0.0.1:
- node0: the bundled tiny policy, tasks sum2 + sum3;
- node1: another model (a random tiny GPT-2 with another vocabulary: "12" is one token there),
  same tasks: its rollouts reach node0 as text, are re-tokenised and re-scored under node0's
  policy, and node0's reach node1 the same way;
- node2: the bundled policy, but a task node0 does not train (rg:count_bits): node0 skips and
  counts every group it sends and never strikes it (an honest peer may train other tasks).
"""
import shutil
import sqlite3
from pathlib import Path

import pytest

from swarmnode.node.local_swarm import LocalSwarm
from tests.helpers import save_random_gpt2_policy
from tests.integration.conftest import BOTH_TRANSPORTS, status_json, transport_env, wait_until


@pytest.fixture
def sharing_config(tmp_path, local_config):
    path = tmp_path / "sharing.yaml"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 4\n  external_rollouts: 4\n  external_wait_s: 1\n  samples_per_prompt: 4\n"
          "  eval_every: 1000\n  eval_size: 8\n  checkpoint_every: 1000\n  threads: 1\n"
          "\nrollouts:\n  fetch_interval_s: 0.5\n  announce_interval_s: 1\n  strike_limit: 5\n  ignore_s: 600\n"
    )
    return path


@BOTH_TRANSPORTS
def test_heterogeneous_swarm_shares_rollouts_and_skips_other_tasks_without_strikes(tmp_path, sharing_config, transport):
    other_model = save_random_gpt2_policy(tmp_path / "other-model")
    env = {
        1: {"SWARMNODE__MODEL__NAME_OR_PATH": str(other_model)},
        2: {"SWARMNODE__TRAINING__TASKS": "[rg:count_bits]"},
    }
    swarm = LocalSwarm(tmp_path / "swarm", 3, sharing_config, node_env=lambda i: {**env.get(i, {}), **transport_env(transport)})
    with swarm:
        swarm.start()
        ids = [status_json(n.home)["peer_id"] for n in swarm.nodes]
        assert status_json(swarm.nodes[0].home)["network"]["transport"] == transport
        home0 = swarm.nodes[0].home

        def trained_foreign():
            s = status_json(home0)
            return (s["training"]["external_trained"] and s["rollouts"]["groups_skipped_other_task"] > 10
                    and s)  # strike_limit is 5: as strikes, these would have got node2 ignored

        status = wait_until(trained_foreign, timeout=240, interval=1.0,
                            what="node0 to train on node1's rollouts and to skip node2's other-task groups")
        assert status_json(swarm.nodes[1].home)["model_fingerprint"] != status["model_fingerprint"]
        rollouts = status["rollouts"]
        assert rollouts["groups_accepted"] > 0 and rollouts["bytes_per_batch"] > 0
        rejected_by = status["messages"]["rejected_by_sender"]
        assert ids[1] not in rejected_by and ids[2] not in rejected_by  # honest peers: another model, other tasks
        senders = rollouts["senders"]
        assert senders[ids[1]]["accepted"] > 0 and not senders[ids[1]]["ignored"]
        assert senders[ids[2]]["accepted"] == 0 and not senders[ids[2]]["ignored"]
        assert rollouts["peers_ignored"] == 0
        # node1 trains on node0's text too (the other direction of the heterogeneous pair).
        wait_until(lambda: status_json(swarm.nodes[1].home)["training"]["external_trained"], timeout=120,
                   what="node1 to train on external groups")

    with sqlite3.connect(home0.root / "rollouts.sqlite") as db:
        foreign = db.execute("SELECT COUNT(*), MAX(same_model) FROM received_groups WHERE sender = ?", (ids[1],)).fetchone()
        assert foreign[0] > 0 and foreign[1] == 0  # another model: re-tokenised text, never its token ids
        assert db.execute("SELECT COUNT(*) FROM rejections WHERE sender = ?", (ids[2],)).fetchone()[0] == 0
    with sqlite3.connect(home0.root / "metrics.sqlite") as db:
        assert db.execute("SELECT MAX(value) FROM metrics WHERE name = 'external_groups'").fetchone()[0] > 0


def test_swarm_local_rounds_trains_shares_and_stops(tmp_path, sharing_config):
    """`swarmnode swarm local --rounds R`, as a user runs it: N daemons train R steps, then all stop.
    It runs from a folder that holds a `swarmnode/` of its own, as a home folder holding the clone
    does: the daemons must import the installed package, not the working folder's."""
    import json
    import subprocess
    import sys

    root = tmp_path / "local"
    home_folder = tmp_path / "home"
    (home_folder / "swarmnode").mkdir(parents=True)
    (home_folder / "swarmnode" / "__init__.py").write_text("raise ImportError('the working folder was imported')\n")
    console_script = Path(sys.executable).parent / "swarmnode"
    proc = subprocess.run(
        [str(console_script) if console_script.exists() else shutil.which("swarmnode"), "swarm", "local", "--nodes", "2", "--rounds", "8",
         "--root", str(root), "--config", str(sharing_config)],
        capture_output=True, text=True, timeout=300, cwd=home_folder,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # on a line of its own (rich wraps the rest of it at 80 columns)
    assert any(line.startswith("stopped 2 nodes") for line in proc.stdout.splitlines()), proc.stdout[-300:]
    rows = json.loads((root / "summary.json").read_text())
    assert [r["training"]["phase"] for r in rows] == ["done", "done"]
    assert all(r["training"]["steps"] == 8 for r in rows)
    assert all(r["rollouts"]["groups_published"] >= 8 * 4 for r in rows)
    for i in range(2):  # every daemon exited (the homes' runtime files are gone) and kept its metrics
        assert not (root / f"node{i}" / "run" / "runtime.json").exists()
        with sqlite3.connect(root / f"node{i}" / "metrics.sqlite") as db:
            assert db.execute("SELECT COUNT(*) FROM metrics WHERE name = 'local_reward_mean'").fetchone()[0] == 8


def test_swarm_local_rounds_without_a_model_is_one_line(tmp_path, local_config):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "swarmnode", "swarm", "local", "--rounds", "3", "--root", str(tmp_path),
                           "--config", str(local_config)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--rounds needs a config that trains a model" in proc.stderr


def test_a_node_weak_at_a_task_trains_on_peers_groups_of_it(tmp_path, sharing_config):
    """node0 starts from the letter-counting specialist (same architecture and tokenizer as the
    bundled sums policy, other weights) and never solves a sum itself: its own sum2 groups are
    all wrong, so alone it has nothing to learn from. node1, the sums policy, solves some. With
    `own_need` node0 takes node1's sum2 groups, as text (another base: its log-probs are not
    node0's, and an honest different model is neither dropped as implausible nor struck)."""
    env = {0: {"SWARMNODE__MODEL__NAME_OR_PATH": "bundled:tiny-letters", "SWARMNODE__TRAINING__TASKS": "[sum2]",
               "SWARMNODE__TRAINING__EXTERNAL_SELECTION": "own_need"},
           1: {"SWARMNODE__TRAINING__TASKS": "[sum2]"}}
    swarm = LocalSwarm(tmp_path / "swarm", 2, sharing_config, node_env=lambda i: env[i])
    with swarm:
        swarm.start()
        ids = [status_json(n.home)["peer_id"] for n in swarm.nodes]
        home0 = swarm.nodes[0].home

        def trained_on_peers_sums():
            s = status_json(home0)
            return (s["training"]["external_trained_by_task"] or {}).get("sum2", 0) >= 8 and s

        status = wait_until(trained_on_peers_sums, timeout=240, interval=1.0,
                            what="the letters node to train on 8 of the sums node's sum2 groups")
        assert status["model_fingerprint"] == status_json(swarm.nodes[1].home)["model_fingerprint"]
        assert status["training"]["own_success"]["sum2"] < 0.1  # it is weak at sums: why it takes them
        assert ids[1] not in status["messages"]["rejected_by_sender"]
        assert status["rollouts"]["senders"][ids[1]]["accepted"] > 0
    with sqlite3.connect(home0.root / "rollouts.sqlite") as db:
        taken = db.execute("SELECT COUNT(*), MAX(same_model) FROM received_groups WHERE sender = ?", (ids[1],)).fetchone()
        assert taken[0] > 0 and taken[1] == 0  # other initial weights: text, not token ids and log-probs
    with sqlite3.connect(home0.root / "metrics.sqlite") as db:
        assert db.execute("SELECT MAX(value) FROM metrics WHERE name = 'external_groups'").fetchone()[0] > 0
