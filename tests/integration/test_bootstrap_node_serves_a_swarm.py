"""`swarmnode bootstrap` serves a swarm: two nodes given a dead address and the bootstrap node's
/dns4 address find each other through it; the bootstrap node, SIGKILLed and started again with
its home, comes back with the same peer id and port and the nodes see it again; it never loads
torch (a training node maps libtorch, hundreds of MiB); its /metrics show its state, peers and
relay load and no training series."""
import signal
import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from swarmnode.home import NodeHome
from swarmnode.identity import SigningKey, peer_id_from_ed25519
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.status.client import status_url_for_home
from swarmnode.testing.bootstrap_node import BootstrapNode, free_tcp_port
from tests.integration.conftest import alive, child_pids, peer_ids, status_json, wait_until

TORCH_LIBRARY = "libtorch"  # libtorch.so / libtorch_cpu.so / libtorch_python.so, mapped once torch is imported


def maps_torch(pid: int) -> bool:
    with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
        return TORCH_LIBRARY in f.read()


def test_torch_shows_in_the_maps_of_a_process_that_imports_it():
    """The check below would find torch if it were loaded (not a test that cannot fail)."""
    code = f"import os, torch; print({TORCH_LIBRARY!r} in open(f'/proc/{{os.getpid()}}/maps').read())"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.strip() == "True"


def assert_bootstrap_metrics(home: NodeHome) -> None:
    """Its /metrics: running, two peers, relay load, and no training series but `running` 0 and the phase."""
    with urllib.request.urlopen(f"{status_url_for_home(home)}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("swarmnode_node_state", (("state", "running"),))] == 1
    assert samples[("swarmnode_peers", ())] == 2
    assert samples[("swarmnode_training_running", ())] == 0
    assert samples[("swarmnode_training_phase", (("phase", "no_model"),))] == 1
    assert ("swarmnode_relay_reservations", ()) in samples and ("swarmnode_relay_forwarded_bytes_total", ()) in samples
    assert not [name for name, _ in samples if name.startswith(("swarmnode_rollouts_", "swarmnode_training_steps"))]


def test_nodes_join_through_a_bootstrap_node_that_restarts_with_its_identity(tmp_path, local_config):
    boot = BootstrapNode(NodeHome(tmp_path / "boot"), free_tcp_port(), local_config)
    dead = f"/ip4/127.0.0.1/tcp/{free_tcp_port()}/p2p/{peer_id_from_ed25519(SigningKey.generate().public_bytes)}"
    swarm = None
    try:
        boot.start()
        boot_id = boot.peer_id
        assert boot.address in boot.stdout_path.read_text()  # the address printed for users
        assert not maps_torch(boot.process.pid)

        # Each node is given a dead peer and the bootstrap node's /dns4/localhost/tcp/<port>/p2p/<id>.
        swarm = LocalSwarm(tmp_path / "nodes", 2, local_config, join_through_first=False,
                           extra_args=["--initial-peer", dead, "--initial-peer", boot.address])
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = [status_json(h)["peer_id"] for h in homes]

        def everyone_sees_everyone():
            return (all(peer_ids(status_json(h)) == {ids[1 - i], boot_id} for i, h in enumerate(homes))
                    and peer_ids(status_json(boot.home)) == set(ids))

        wait_until(everyone_sees_everyone, timeout=30, what="the nodes to find each other through the bootstrap node")
        assert all(status_json(h)["join"]["joined"] for h in homes)
        assert_bootstrap_metrics(boot.home)

        # SIGKILL: its p2pd dies with it, and the nodes drop it once its record expires.
        p2pd = child_pids(boot.home)
        boot.kill(signal.SIGKILL)
        wait_until(lambda: not any(alive(pid) for pid in p2pd), timeout=10, what="the bootstrap node's p2pd to exit")
        wait_until(lambda: all(boot_id not in peer_ids(status_json(h)) for h in homes), timeout=30,
                   what="the killed bootstrap node to leave both peer tables")

        # Started again with its home: same peer id and port, and the swarm finds it again.
        runtime = boot.start()
        assert runtime["peer_id"] == boot_id
        assert any(f"/tcp/{boot.port}/p2p/{boot_id}" in m for m in runtime["multiaddrs"])
        wait_until(everyone_sees_everyone, timeout=30, what="the nodes to see the restarted bootstrap node again")
        assert not maps_torch(boot.process.pid)
    finally:
        if swarm is not None:
            swarm.stop()
        boot.stop()
