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


def test_a_mismatch_names_both_swarms_or_both_versions():
    from swarmnode.node.daemon import describe_mismatch
    from swarmnode.protocol import RecordOrigin

    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-public", (1, 1)), "swarmnode-local", (1, 1))
    assert line.startswith("initial peer 12D3KooWX is in swarm 'swarmnode-public' while this node is in swarm "
                           "'swarmnode-local'")
    # Of this swarm but of other versions: the peer log's words, saying which side should upgrade.
    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-local", (2, 3)), "swarmnode-local", (1, 1))
    assert line == ("initial peer 12D3KooWX speaks protocol versions 2–3, this node 1–1: "
                    "upgrade swarmnode on this node to join it")
    line = describe_mismatch(RecordOrigin("12D3KooWX", "swarmnode-local", (1, 1)), "swarmnode-local", (2, 3))
    assert line == ("initial peer 12D3KooWX speaks protocol versions 1–1, this node 2–3: "
                    "that peer runs an older swarmnode and should upgrade")
