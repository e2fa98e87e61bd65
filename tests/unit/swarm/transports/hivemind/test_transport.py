"""swarm/transports/hivemind/transport.py: a p2pd that exits on its own is a failure the node stops on."""
from pathlib import Path
from types import SimpleNamespace

from swarmnode.swarm.transports.hivemind.transport import HivemindTransport


def test_failure_names_a_p2pd_that_exited():
    transport = HivemindTransport(identity_path=Path("id"), host_maddrs=[], announce_maddrs=[], client_mode=False,
                                  startup_timeout_s=1, use_relay=False, auto_nat=False, wait_timeout_s=1)
    assert transport.failure() is None  # not started
    transport._p2p = SimpleNamespace(_child=SimpleNamespace(returncode=None))
    assert transport.failure() is None  # running
    transport._p2p._child.returncode = -9
    assert transport.failure() == "p2pd exited (code -9): the node has no network"
