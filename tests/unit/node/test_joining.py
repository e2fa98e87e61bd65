"""node/joining.py: dialling the initial peers again."""
import asyncio
from types import SimpleNamespace

from swarmnode.config import NodeConfig
from swarmnode.node.joining import Joiner
from swarmnode.swarm.transports.base import JoinError


def test_initial_peers_without_a_record_are_dialled_again_and_a_failure_stops_nothing():
    """A restarted bootstrap node knows nobody: the joined nodes dial it again (every
    network.join_backoff_max_s), but not the initial peers whose records they hold."""
    known, restarted, down = "12D3KooWKnown", "12D3KooWRestarted", "12D3KooWDown"
    dialled = []

    async def join(maddr, timeout):
        dialled.append(maddr.rsplit("/", 1)[-1])
        if down in maddr:
            raise JoinError("could not connect (connection refused)")

    config = NodeConfig.model_validate({"swarm": {"initial_peers": [
        f"/dns4/boot{i}.example.org/tcp/7100/p2p/{peer}" for i, peer in enumerate((known, down, restarted))]}})
    joiner = Joiner(config, SimpleNamespace(join=join), table={known}, intake=None)
    asyncio.run(joiner.reach_absent_initial_peers())
    assert dialled == [down, restarted]
