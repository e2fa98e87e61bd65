"""A heterogeneous swarm on one machine: `swarmnode run --slowdown 3` makes a node 3x slower for
real, and both nodes publish the speeds they measure from their real work in their PeerRecords.

Two real daemons train the bundled tiny policy (no rollout sharing or summaries: this is about
measuring and publishing speed); node1 runs with --slowdown 3. Each node's status shows the
other's measured generation tokens/s and train samples/s, and node1's own train samples/s is well
below node0's (a loose bound on a ratio, never an absolute speed: the machine is shared).
"""
import pytest

from swarmnode.node.local_swarm import LocalSwarm
from tests.integration.conftest import status_json, wait_until

SLOWDOWN = 3.0


@pytest.fixture
def speed_config(tmp_path, local_config):
    path = tmp_path / "speed.yaml"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 4\n  samples_per_prompt: 4\n  eval_every: 1000\n  eval_size: 4\n"
          "  checkpoint_every: 1000\n  threads: 1\n"
          "\nrollouts:\n  share: false\n\nsummaries:\n  enabled: false\n"
    )
    return path


def peer_figures(status, peer_id):
    return next((p for p in status["peers"] if p["peer_id"] == peer_id), None)


def test_a_slowed_node_measures_and_publishes_its_lower_speed(tmp_path, speed_config):
    swarm = LocalSwarm(tmp_path / "swarm", 2, speed_config,
                       node_args=lambda i: ["--slowdown", str(SLOWDOWN)] if i == 1 else [])
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = [status_json(h)["peer_id"] for h in homes]

        def both_measured_and_seen():
            statuses = [status_json(h) for h in homes]
            if min(s["training"]["steps"] or 0 for s in statuses) < 8:  # a few observations in each EMA
                return None
            seen = [peer_figures(statuses[i], ids[1 - i]) for i in range(2)]
            if not all(p and p["generate_tokens_per_s"] > 0 and p["train_samples_per_s"] > 0 for p in seen):
                return None
            return statuses, seen

        statuses, seen = wait_until(both_measured_and_seen, timeout=150, interval=1.0,
                                    what="both nodes to train 8 steps and see each other's measured speeds")

    own = [s["training"] for s in statuses]
    assert own[1]["slowdown"] == SLOWDOWN and own[0]["slowdown"] == 1.0
    assert all(t["generate_tokens_per_s"] > 0 and t["seconds_per_step"] > 0 for t in own)
    # What each node publishes is what it measured (records are a couple of seconds behind).
    assert all(s["capability"]["train_samples_per_s"] > 0 for s in statuses)
    assert all(p["seconds_per_step"] > 0 and p["capability"]["generate_tokens_per_s"] > 0 for p in seen)
    # Slowed 3x, node1 delivers about a third of node0's samples/s; 0.7 leaves room for a shared machine.
    assert own[1]["train_samples_per_s"] < 0.7 * own[0]["train_samples_per_s"], own
    assert own[1]["generate_tokens_per_s"] < 0.7 * own[0]["generate_tokens_per_s"], own
