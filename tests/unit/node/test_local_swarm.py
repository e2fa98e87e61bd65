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
