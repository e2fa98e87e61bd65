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


def test_a_node_that_exited_with_an_error_shows_as_failed_and_counts_as_finished(tmp_path):
    from swarmnode.node.local_swarm import LocalSwarm, exited_row

    assert exited_row("node1", 1) == {"name": "node1", "error": "failed (exit 1)", "exited": True, "exit_code": 1}
    assert exited_row("node1", 0)["error"] == "not running"
    assert exited_row("node1", -15)["error"] == "not running"  # stopped by a signal: no failure of its own
    swarm = LocalSwarm(tmp_path, 2, tmp_path / "c.yaml")
    done = {"name": "node0", "state": "running", "training": {"phase": "done"}}
    assert swarm.training_done([done, exited_row("node1", 1)])
    assert not swarm.training_done([done, {"name": "node1", "error": "not answering"}])
