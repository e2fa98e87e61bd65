"""A bootstrap node at swarm.window_s 30 and a node at 10 (configs/local.yaml) cannot see each
other's records: both name the other window once, in the log and in status, instead of the node
claiming it joined. Stopped, the bootstrap node's home still says what it is
(`status --home` hints `swarmnode bootstrap --home`), and started with --home alone it runs with
the flags it was first given."""
import subprocess
import sys

from swarmnode.home import NodeHome
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.bootstrap_node import BootstrapNode, free_tcp_port
from tests.integration.conftest import status_json, wait_until


def lines_with(path, text: str) -> list[str]:
    return [line for line in path.read_text().splitlines() if text in line]


def test_a_bootstrap_node_of_another_window_is_named_and_remembers_its_flags(tmp_path, local_config):
    boot = BootstrapNode(NodeHome(tmp_path / "boot"), free_tcp_port(), local_config, window_s=30.0)
    swarm = None
    try:
        boot.start()
        boot_id = boot.peer_id
        swarm = LocalSwarm(tmp_path / "nodes", 1, local_config, join_through_first=False,
                           extra_args=["--initial-peer", boot.address])
        swarm.start()
        [node] = swarm.nodes
        node_id = status_json(node.home)["peer_id"]
        expected = (f"initial peer {boot_id} runs swarm.window_s 30 s, this node 10 s: set swarm.window_s: 30 "
                    "(every node of a swarm must share it)")
        wait_until(lambda: lines_with(node.log_path, expected), timeout=60, what="the node's line naming both windows")
        status = status_json(node.home)
        assert status["join"]["joined"] is False and status["join"]["last_error"] == expected
        assert "joined the swarm through" not in node.log_path.read_text()

        # The bootstrap node meets the node's records under keys of another window, and names it too.
        wait_until(lambda: lines_with(boot.log_path, "runs swarm.window_s 10 s, this node 30 s"), timeout=60,
                   what="the bootstrap node's line naming the node's window")
        boot_status = wait_until(lambda: (s := status_json(boot.home))["other_window_peers"] and s, timeout=30,
                                 what="the node in the bootstrap node's other_window_peers")
        assert [(p["peer_id"], p["window_s"]) for p in boot_status["other_window_peers"]] == [(node_id, 10.0)]
        assert boot_status["role"] == "bootstrap" and boot_status["window_s"] == 30.0
        assert len(lines_with(node.log_path, expected)) == 1, "said once"
        swarm.stop()
        swarm = None

        boot.stop()
        down = subprocess.run([sys.executable, "-m", "swarmnode", "status", "--home", str(boot.home.root)],
                              capture_output=True, text=True, timeout=60)
        assert down.returncode == 1 and f"start it with: swarmnode bootstrap --home {boot.home.root}" in down.stderr
        assert "a bootstrap node's" in down.stderr and "swarmnode run" not in down.stderr

        # With --home alone it comes back as it was: same swarm, window and port, a bootstrap node.
        runtime = boot.start(flags=False)
        assert "flags saved in" in boot.stdout_path.read_text() and "--window-s 30" in boot.stdout_path.read_text()
        again = status_json(boot.home)
        assert (again["role"], again["swarm"], again["window_s"]) == ("bootstrap", "swarmnode-local", 30.0)
        assert any(f"/tcp/{boot.port}/p2p/{boot_id}" in m for m in runtime["multiaddrs"])
    finally:
        if swarm is not None:
            swarm.stop()
        boot.stop()
