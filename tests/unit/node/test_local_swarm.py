"""node/local_swarm.py through `swarmnode swarm local`: each node's arguments."""


def test_swarm_local_gives_node_i_the_slowdown_i_mod_count(tmp_path, monkeypatch):
    """`swarm local --slowdowns 1,2.5` runs node i with `--slowdown` slowdowns[i % 2] (no daemon starts here)."""
    from swarmnode.cli import app as cli
    from swarmnode.node import local_swarm

    launched = {}

    def fake_start(self, on_progress=None):
        launched.update({n.index: self.node_args(n.index) for n in self.nodes})
        raise local_swarm.LocalSwarmError("not starting daemons in a unit test")

    monkeypatch.setattr(local_swarm.LocalSwarm, "start", fake_start)
    assert cli.main(["swarm", "local", "--nodes", "3", "--root", str(tmp_path), "--slowdowns", "1,2.5"]) == 1
    assert launched == {0: ["--slowdown", "1.0"], 1: ["--slowdown", "2.5"], 2: ["--slowdown", "1.0"]}


def test_swarm_local_gives_node_i_the_device_i_mod_count(tmp_path, monkeypatch):
    """`swarm local --devices cuda,cpu` gives node i model.device devices[i % 2] through its
    environment (no daemon starts here; the device check is stubbed: this machine has no GPU)."""
    from swarmnode.cli import app as cli
    from swarmnode.node import local_swarm

    launched = {}

    def fake_start(self, on_progress=None):
        launched.update({n.index: self.node_env(n.index).get("SWARMNODE__MODEL__DEVICE") for n in self.nodes})
        raise local_swarm.LocalSwarmError("not starting daemons in a unit test")

    monkeypatch.setattr(local_swarm.LocalSwarm, "start", fake_start)
    from swarmnode.node import preflight

    monkeypatch.setattr(preflight, "device_problem", lambda name: None if name in ("cpu", "cuda") else "no such device")
    assert cli.main(["swarm", "local", "--nodes", "3", "--root", str(tmp_path), "--devices", "cuda,cpu"]) == 1
    assert launched == {0: "cuda", 1: "cpu", 2: "cuda"}


def test_a_node_that_exited_with_an_error_shows_as_failed_and_counts_as_finished(tmp_path):
    from swarmnode.node.local_swarm import LocalSwarm, exited_row

    assert exited_row("node1", 1) == {"name": "node1", "error": "failed (exit 1)", "exited": True, "exit_code": 1}
    assert exited_row("node1", 0)["error"] == "not running"
    assert exited_row("node1", -15)["error"] == "not running"  # stopped by a signal: no failure of its own
    swarm = LocalSwarm(tmp_path, 2, tmp_path / "c.yaml")
    done = {"name": "node0", "state": "running", "training": {"phase": "done"}}
    assert swarm.training_done([done, exited_row("node1", 1)])
    assert not swarm.training_done([done, {"name": "node1", "error": "not answering"}])


def test_a_node_that_fails_before_its_log_opens_is_named_with_its_console_output(tmp_path):
    """The node's console goes to <home>/logs/stdout.log (a real `swarmnode run` that exits at its config check)."""
    import pytest

    from swarmnode.config import bundled_config_path
    from swarmnode.node.local_swarm import LocalSwarm, LocalSwarmError

    swarm = LocalSwarm(tmp_path, 1, bundled_config_path("local.yaml"), node_env=lambda i: {"SWARMNODE__RECORDS__TTL_S": "soon"})
    with swarm, pytest.raises(LocalSwarmError) as info:
        swarm.start()
    node = swarm.nodes[0]
    assert (node.log_path, node.stdout_path) == (tmp_path / "node0" / "logs" / "node.log", tmp_path / "node0" / "logs" / "stdout.log")
    message = str(info.value)
    assert message.startswith("node0 exited with code 2: error: config error in environment variable SWARMNODE__RECORDS__TTL_S")
    assert message.endswith(f"(its output: {node.stdout_path}; its log: {node.log_path})") and "\n" not in message
