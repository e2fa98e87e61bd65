"""Three real nodes find each other; a SIGKILLed node leaves no process and rejoins with its identity."""
import signal
import subprocess
import sys

from swarmnode.home import NodeHome, init_home
from tests.integration.conftest import alive, child_pids, peer_ids, status_json, wait_until


def test_three_nodes_see_each_other_then_one_is_killed_and_rejoins(make_swarm):
    swarm = make_swarm(3)
    homes = [n.home for n in swarm.nodes]
    ids = [status_json(h)["peer_id"] for h in homes]
    assert len(set(ids)) == 3

    # Within 30 s each node's `status --json` lists the other two.
    def everyone_sees_everyone():
        return all(peer_ids(status_json(h)) == set(ids) - {ids[i]} for i, h in enumerate(homes))

    wait_until(everyone_sees_everyone, timeout=30, what="every node to list the other two")
    status = status_json(homes[1])
    assert all(isinstance(m, str) and m.endswith(ids[1]) for m in status["multiaddrs"])
    assert status["training"]["running"] is False

    # SIGKILL node 2: its p2pd must die with it, and the others drop it after its record expires.
    p2pd = child_pids(homes[2])
    assert p2pd and all(alive(pid) for pid in p2pd)
    swarm.kill(2, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid) for pid in p2pd), timeout=10, what="p2pd of the killed node to exit")
    wait_until(
        lambda: all(ids[2] not in peer_ids(status_json(h)) for h in homes[:2]),
        timeout=30, what="the killed node to leave both peer tables",
    )

    # Restart with the same home: same peer id, and the swarm sees it again.
    swarm.restart(2)
    assert status_json(homes[2])["peer_id"] == ids[2]
    wait_until(everyone_sees_everyone, timeout=30, what="the restarted node to rejoin")


def test_sigint_and_sigterm_stop_cleanly(make_swarm):
    swarm = make_swarm(2)
    for node, sig in zip(swarm.nodes, (signal.SIGINT, signal.SIGTERM)):
        p2pd = child_pids(node.home)
        node.process.send_signal(sig)
        assert node.process.wait(timeout=30) == 0
        assert not any(alive(pid) for pid in p2pd)
        assert not node.home.runtime_file.exists()
        log = node.log_path.read_text()
        assert "Traceback" not in log and "stopped" in log


def test_client_mode_node_joins_and_is_seen(make_swarm, tmp_path):
    swarm = make_swarm(1)
    bootstrap = swarm.nodes[0].home
    client_home = NodeHome(tmp_path / "client")
    init_home(client_home.root, swarm.config_path.read_text())
    with open(tmp_path / "client.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "swarmnode", "run", "--home", str(client_home.root), "--client-mode",
             *sum((["--initial-peer", m] for m in status_json(bootstrap)["multiaddrs"]), [])],
            stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: client_home.runtime_file.exists(), timeout=60, what="the client node to start")
        client_id = wait_until(lambda: status_json(client_home)["peer_id"], timeout=10)
        boot_id = status_json(bootstrap)["peer_id"]
        wait_until(lambda: client_id in peer_ids(status_json(bootstrap)), timeout=30, what="bootstrap to see the client")
        wait_until(lambda: boot_id in peer_ids(status_json(client_home)), timeout=30, what="client to see bootstrap")
        status = status_json(client_home)
        assert status["client_mode"] is True and status["join"]["joined"] is True
        assert [p["client_mode"] for p in status_json(bootstrap)["peers"]] == [True]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
