"""node/daemon.py: the status `state` of a node whose training failed."""
from types import SimpleNamespace

from swarmnode.config import NodeConfig
from swarmnode.node.daemon import Node
from swarmnode.protocol.generated import peer_record_pb2


def state_of(fatal=None, training_failure=None, keep_serving=False) -> str:
    config = NodeConfig.model_validate({"training": {"keep_serving": keep_serving}})
    node = SimpleNamespace(fatal=fatal, training_failure=training_failure, config=config,
                           state=peer_record_pb2.NODE_STATE_RUNNING)
    return Node.state_label.fget(node)


def test_failed_training_shows_in_the_state():
    assert state_of() == "running"
    assert state_of(fatal="training failed: X", training_failure="X") == "failed"
    assert state_of(training_failure="X", keep_serving=True) == "serving"


def test_a_node_without_a_model_loads_no_torch_transformers_or_trainer():
    """What `swarmnode bootstrap` runs (run_daemon defers hivemind's package imports for a node
    without a model): a Node built and asked for its status, in a fresh interpreter."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import pathlib, sys, tempfile
        from swarmnode.config import NodeConfig
        from swarmnode.home import init_home
        from swarmnode.identity import load_identity
        from swarmnode.swarm.transports.hivemind.imports import defer_hivemind_imports
        defer_hivemind_imports()
        import functools
        from swarmnode.node.daemon import Node
        from swarmnode.node.network import make_transport
        from swarmnode.node.runner import run_daemon
        home = init_home(pathlib.Path(tempfile.mkdtemp())).home
        config = NodeConfig.model_validate({"model": {"name_or_path": None}})
        node = Node(config, load_identity(home.node_key, home.p2p_identity), home,
                    functools.partial(make_transport, config, home))
        status = node.snapshot()
        loaded = sorted(m for m in ("torch", "transformers", "swarmnode.trainer", "swarmnode.node.training.service") if m in sys.modules)
        print(node.training is None, status["state"], loaded)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True starting []"


def test_a_running_node_is_joining_until_the_joiner_has_joined():
    def state(phase, joined):
        return Node.state.fget(SimpleNamespace(_phase=phase, joiner=SimpleNamespace(joined=joined)))

    assert state(peer_record_pb2.NODE_STATE_STARTING, False) == peer_record_pb2.NODE_STATE_STARTING
    assert state(peer_record_pb2.NODE_STATE_RUNNING, False) == peer_record_pb2.NODE_STATE_JOINING
    assert state(peer_record_pb2.NODE_STATE_RUNNING, True) == peer_record_pb2.NODE_STATE_RUNNING
    assert state(peer_record_pb2.NODE_STATE_STOPPING, False) == peer_record_pb2.NODE_STATE_STOPPING
