"""node/joining.py: dialling the initial peers again."""
import asyncio
import random
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


def test_the_join_is_logged_once_when_a_peer_arrives_and_a_window_mismatch_instead_of_it(caplog):
    import logging

    from swarmnode.protocol import RecordOrigin
    from swarmnode.swarm.peers import peer_id_of

    boot = "/dns4/boot.example.org/tcp/7100/p2p/12D3KooWBoot"
    config = NodeConfig.model_validate({"swarm": {"initial_peers": [boot], "window_s": 10}})
    origins: dict[str, RecordOrigin] = {}
    intake = SimpleNamespace(origin_of=origins.get, versions=SimpleNamespace(spoken=(1, 1)))

    async def join(maddr, timeout):
        return None

    table: set[str] = set()
    joiner = Joiner(config, SimpleNamespace(join=join), table=table, intake=intake)
    with caplog.at_level(logging.INFO, logger="swarmnode"):
        assert asyncio.run(joiner._attempt(1, random.Random(0))) is None and joiner.joined
        joiner.check_initial_peers()  # reached, but no peer's record yet: no claim
        table.add("12D3KooWSomeoneElse")  # a peer found through it, before its own record
        for _ in range(3):
            joiner.check_initial_peers()
        table.add(peer_id_of(boot))
        joiner.check_initial_peers()
    assert [r.getMessage() for r in caplog.records if "joined" in r.getMessage()] == [f"joined the swarm through {boot}"]

    # A bootstrap node of another window: named once, and the node does not claim it joined.
    table.clear()
    other = Joiner(config, SimpleNamespace(join=join), table=table, intake=intake)
    origins["12D3KooWBoot"] = RecordOrigin("12D3KooWBoot", "swarmnode-public", (1, 1), window_s=30.0)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="swarmnode"):
        assert asyncio.run(other._attempt(1, random.Random(0))) is not None  # the mismatch: not joined
        for _ in range(3):
            other.check_initial_peers()
    expected = ("initial peer 12D3KooWBoot runs swarm.window_s 30 s, this node 10 s: set swarm.window_s: 30 "
                "(every node of a swarm must share it)")
    assert [r.getMessage() for r in caplog.records if "window_s" in r.getMessage()] == [expected]
    assert not other.joined and not any("joined the swarm" in r.getMessage() for r in caplog.records)


def test_a_down_initial_peer_is_warned_of_when_its_reason_changes_or_once_a_minute(caplog, monkeypatch):
    import logging

    from swarmnode.node import joining

    boot = "/dns4/boot.example.org/tcp/7100/p2p/12D3KooWBoot"
    config = NodeConfig.model_validate({"swarm": {"initial_peers": [boot]}})
    joiner = Joiner(config, SimpleNamespace(), table=set(), intake=None)
    clock = [0.0]
    monkeypatch.setattr(joining.time, "monotonic", lambda: clock[0])
    refused, timeout = "could not connect (connection refused)", "could not connect (timed out)"
    reasons = [refused] * 20 + [timeout] + [refused]
    with caplog.at_level(logging.DEBUG, logger="swarmnode"):
        for attempt, reason in enumerate(reasons, start=1):  # a retry every 4 s
            joiner._say_failed(attempt, [(boot, reason)], 4.0)
            clock[0] += 4.0
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w.split(":")[0] for w in warned] == [f"join attempt {k}" for k in (1, 2, 3, 18, 21, 22)]
    assert "check the address and port" in warned[0] and "(15 attempts since the last warning)" in warned[3]
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == len(reasons) - 6


def test_joining_again_after_losing_every_peer_tells_the_next_join_and_counts_warnings_afresh(caplog):
    import logging

    boot = "/dns4/boot.example.org/tcp/7100/p2p/12D3KooWBoot"
    config = NodeConfig.model_validate({"swarm": {"initial_peers": [boot]}})
    table: set[str] = set()

    async def join(maddr, timeout):
        return None

    joiner = Joiner(config, SimpleNamespace(join=join), table=table,
                    intake=SimpleNamespace(origin_of=lambda peer: None, versions=SimpleNamespace(spoken=(1, 1))))
    with caplog.at_level(logging.INFO, logger="swarmnode"):
        for attempt in range(1, 6):
            joiner._say_failed(attempt, [(boot, "could not connect (connection refused)")], 1.0)
        for _ in range(2):  # joined, lost every peer, joined again
            assert asyncio.run(joiner._attempt(1, random.Random(0))) is None
            table.add("12D3KooWSomeone")
            joiner.check_initial_peers()
            table.clear()
            joiner._join_again()
        joiner._say_failed(1, [(boot, "could not connect (connection refused)")], 1.0)
    messages = [r.getMessage() for r in caplog.records]
    assert sum(m == f"joined the swarm through {boot}" for m in messages) == 2
    assert messages[-1].startswith("join attempt 1:") and "since the last warning" not in messages[-1]
    assert joiner.state.attempts == 0 and not joiner.joined
