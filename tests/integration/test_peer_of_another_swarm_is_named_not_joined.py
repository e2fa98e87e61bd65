"""A node given the address of a node of another swarm says so in one line, once, and its
status does not claim it joined (it used to log "joined" and then sit at 0 peers)."""
from swarmnode.node.local_swarm import LocalSwarm
from tests.integration.conftest import status_json, wait_until


def test_initial_peer_of_another_swarm_is_named_once(tmp_path, local_config):
    swarm = LocalSwarm(tmp_path / "swarm", 2, local_config,
                       node_env=lambda index: {"SWARMNODE__SWARM__NAME": "other-swarm"} if index == 0 else {})
    with swarm:
        swarm.start()
        foreign, node = swarm.nodes
        foreign_id = status_json(foreign.home)["peer_id"]
        expected = (f"initial peer {foreign_id} is in swarm 'other-swarm' while this node is in swarm "
                    "'swarmnode-local'")

        def mismatch_lines() -> list[str]:
            return [line for line in node.log_path.read_text().splitlines() if expected in line]

        wait_until(mismatch_lines, timeout=60, what="the line naming both swarms")
        # A few more of the foreign node's records (each refused as an unknown key) and polls later:
        status = wait_until(lambda: (s := status_json(node.home))["messages"]["rejected"].get("unknown_key", 0) >= 3 and s,
                            timeout=60, what="more records of the other swarm refused")
        assert status["join"]["joined"] is False and expected in status["join"]["last_error"]
        assert status["state"] == "joining" and status["peers"] == []
        assert len(mismatch_lines()) == 1, "said once"
        assert "joined the swarm through" not in node.log_path.read_text()
        assert "\n" not in mismatch_lines()[0]
