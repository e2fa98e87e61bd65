"""A step waits for peers' groups only while a peer sends them. Two real daemons share rollouts
with a 2 s wait for the J peers' groups a step wants; node1 is SIGKILLed. node0 waited for
node1's groups while it was there; with node1 gone, every step skips the wait and node0 trains
at its lone rate (before the fix it waited the whole 2 s a step for the rest of the run).
The assertions are on the node's own counters (steps, waits, waits skipped), never on speeds.
"""
import pytest

from swarmnode.node.local_swarm import LocalSwarm
from tests.integration.conftest import status_json, wait_until

WAIT_S = 2.0


@pytest.fixture
def waiting_config(tmp_path, local_config):
    path = tmp_path / "waiting.yaml"
    text = local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
    path.write_text(
        text
        + "\ntraining:\n  local_rollouts: 8\n  external_rollouts: 8\n  external_selection: nonzero_advantage\n"
          f"  external_wait_s: {WAIT_S}\n  samples_per_prompt: 4\n  eval_every: 1000\n  eval_size: 4\n"
          "  checkpoint_every: 1000\n  threads: 1\n"
          "\nrollouts:\n  share: true\n  announce_interval_s: 1\n  fetch_interval_s: 0.5\n"
          "\nsummaries:\n  enabled: false\n"
    )
    return path


def test_a_node_whose_partner_is_gone_stops_waiting_for_it(tmp_path, waiting_config):
    swarm = LocalSwarm(tmp_path / "swarm", 2, waiting_config)
    with swarm:
        swarm.start()
        home = swarm.nodes[0].home

        def training():
            return status_json(home)["training"]

        # While node1 sends, node0's steps wait for its groups (its pool is short of 8 a step).
        wait_until(lambda: (training().get("external_waits") or 0) >= 3 and training().get("external_trained"),
                   timeout=180, interval=1, what="node0 to wait for node1's groups and train on them")
        swarm.kill(1)
        killed = training()
        # Within max(8 s, 4 waits) of node1's last group, node0 stops waiting for more (two
        # skips: a group of node1's still being checked at the kill may end the first).
        wait_until(lambda: training()["external_waits_skipped"] >= killed["external_waits_skipped"] + 2, timeout=90,
                   interval=1, what="node0 to skip waits once node1 is gone")
        before = training()
        after = wait_until(lambda: (t := training())["steps"] >= before["steps"] + 20 and t, timeout=120, interval=1,
                           what="node0 to take 20 more steps alone")
        assert after["external_waits"] == before["external_waits"], (before, after)
        assert after["external_waits_skipped"] >= before["external_waits_skipped"] + 20, (before, after)
        assert status_json(home)["state"] == "running"
