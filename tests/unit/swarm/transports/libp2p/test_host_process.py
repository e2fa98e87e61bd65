"""swarm/transports/libp2p/host_process.py and process_transport.py, the parts without a host: what the
host's record policy refuses and learns reaches the node's intake once, penalties come back, and a
failed request keeps its reason across the channel."""
import asyncio
import pickle

from swarmnode.protocol import RecordOrigin, RejectReason
from swarmnode.swarm.peers import IncompatiblePeer, MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.transports.base import RequestFailed
from swarmnode.swarm.transports.libp2p.host_channel import HostNews, read_frame
from swarmnode.swarm.transports.libp2p.host_process import CachedPenalties, ForwardedStats, IntakeWatch, intake_of
from swarmnode.swarm.transports.libp2p.process_transport import LibP2PProcessTransport, policy_settings


def _intake() -> RecordIntake:
    return RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0, max_values_per_key=7)


def _incompatible(peer: str, timestamp: float) -> IncompatiblePeer:
    return IncompatiblePeer(peer, (9, 9), "9.0", timestamp, timestamp + 20)


def test_the_host_forwards_its_rejections_but_counts_an_incompatible_peer_itself():
    stats = ForwardedStats()
    stats.reject(RejectReason.WRONG_SHARD, None)
    stats.reject(RejectReason.BAD_SIGNATURE, "peerA")
    stats.reject(RejectReason.INCOMPATIBLE_VERSION, "peerB")  # the node counts it from the IncompatiblePeer
    assert stats.take_rejections() == [("wrong_shard", None), ("bad_signature", "peerA")]
    assert stats.take_rejections() == []
    assert stats.rejected["incompatible_version"] == 1  # still counted on the host's side


def test_the_watch_sends_what_is_new_or_newer_once():
    intake = _intake()
    watch = IntakeWatch(intake)
    intake.foreign["f1"] = RecordOrigin("f1", "other", (1, 1), 10.0, 100.0)
    intake.incompatible["i1"] = _incompatible("i1", 5.0)
    intake.values_over_key_cap += 3
    foreign, incompatible, over_cap = watch.changes()
    assert [o.peer_id for o in foreign] == ["f1"] and [p.peer_id for p in incompatible] == ["i1"] and over_cap == 3
    assert watch.changes() == ([], [], 0)
    intake.incompatible["i1"] = _incompatible("i1", 6.0)  # a newer record of the same peer
    assert [p.timestamp for p in watch.changes()[1]] == [6.0]


def test_the_node_counts_and_keeps_the_hosts_news_as_its_own():
    intake = _intake()
    transport = LibP2PProcessTransport(identity_path="unused", host_maddrs=[], announce_maddrs=[], client_mode=False,
                                       startup_timeout_s=1, policy=intake, swarm="s")
    news = HostNews(counters={"pushed_entries": 4}, routing_table_size=3,
                    rejections=[("bad_signature", "peerA"), ("not_a_reason", "peerA")],
                    over_key_cap=2, foreign=[RecordOrigin("f1", "other", (1, 1))],
                    incompatible=[_incompatible("i1", 5.0)])
    transport._take_news(news)
    transport._take_news(HostNews(incompatible=[_incompatible("i1", 6.0)]))  # newer: kept, not counted again
    counts = intake.stats.counts()
    assert counts["rejected"] == {"bad_signature": 1, "incompatible_version": 1}
    assert counts["rejected_by_sender"]["peerA"] == {"bad_signature": 1}
    assert intake.values_over_key_cap == 2 and intake.origin_of("f1").swarm == "other"
    assert [p.timestamp for p in intake.incompatible_peers(0.0)] == [6.0]
    assert transport.counters() == {} and transport.routing_table_size() == 0  # the latest news counts


def test_penalties_go_back_for_the_connected_peers_held_something_against():
    class Held:
        def penalty(self, peer):
            return {"bad": 60.0}.get(peer, 0.0)

    async def main():
        import socket

        ours, theirs = socket.socketpair()
        reader, their_writer = await asyncio.open_unix_connection(sock=theirs)
        _, writer = await asyncio.open_unix_connection(sock=ours)
        from swarmnode.swarm.transports.libp2p.host_channel import FrameWriter

        transport = LibP2PProcessTransport(identity_path="unused", host_maddrs=[], announce_maddrs=[],
                                           client_mode=False, startup_timeout_s=1, policy=None, swarm="s",
                                           penalties=Held())
        transport._out = FrameWriter(writer)
        transport._take_news(HostNews(connected=None))  # the host could not tell: no table sent
        transport._take_news(HostNews(connected=["bad", "good"]))
        assert await read_frame(reader) == ("penalties", {"bad": 60.0})
        writer.close()
        their_writer.close()

    asyncio.run(main())
    cached = CachedPenalties()
    cached.replace({"bad": 60.0})
    assert cached.penalty("bad") == 60.0 and cached.penalty("good") == 0.0


def test_the_hosts_intake_is_built_from_the_nodes_settings():
    node_intake = _intake()
    settings = policy_settings(node_intake)
    host_intake = intake_of(settings, "me", MessageStats())
    assert (host_intake.swarm, host_intake.window_s, host_intake.max_values_per_key, host_intake.versions) == \
        ("s", 10.0, 7, node_intake.versions)
    assert policy_settings(None) is None


def test_a_failed_request_keeps_its_reason_across_the_channel():
    error = pickle.loads(pickle.dumps(RequestFailed("fetch to 12D3: timed out", "timed out")))
    assert isinstance(error, RequestFailed) and str(error) == "fetch to 12D3: timed out" and error.reason == "timed out"


def test_the_hosts_log_records_go_to_the_node_from_any_thread():
    import logging
    import threading

    from swarmnode.swarm.transports.libp2p.host_process import ChannelLogHandler

    async def main():
        sent = []
        handler = ChannelLogHandler(asyncio.get_running_loop(), sent.append)
        logger = logging.getLogger("swarmnode.test.host")
        logger.addHandler(handler)
        try:
            thread = threading.Thread(target=lambda: logger.warning("punched %s", "a hole"))
            thread.start()
            thread.join()
            await asyncio.sleep(0.05)  # the send runs on the loop
        finally:
            logger.removeHandler(handler)
        assert sent == [("log", logging.WARNING, "swarmnode.test.host", "punched a hole")]

    asyncio.run(main())


def test_log_records_the_host_writes_while_it_starts_are_logged_not_taken_for_its_answer(caplog):
    import logging

    from swarmnode.swarm.transports.libp2p.host_channel import encode_frame

    async def main():
        reader = asyncio.StreamReader()
        reader.feed_data(encode_frame(("log", logging.INFO, "swarmnode.test.start", "listening"))
                         + encode_frame(("started", "12D3KooWpeer")))
        return await LibP2PProcessTransport._first_word(reader)

    with caplog.at_level(logging.INFO, logger="swarmnode.test.start"):
        assert asyncio.run(main()) == ("started", "12D3KooWpeer")
    assert [r.getMessage() for r in caplog.records if r.name == "swarmnode.test.start"] == ["listening"]


def test_a_message_that_fails_here_does_not_end_the_channel_and_a_closed_channel_is_a_failure():
    import logging

    from swarmnode.swarm.transports.libp2p.host_channel import encode_frame

    async def main():
        transport = LibP2PProcessTransport(identity_path="unused", host_maddrs=[], announce_maddrs=[],
                                           client_mode=False, startup_timeout_s=1, policy=None, swarm="s")
        heard = []

        def broken(key, subkey):
            raise KeyError(key)

        transport.watch_pushes(broken)
        transport.watch_pushes(lambda key, subkey: heard.append((key, subkey)))
        reader = asyncio.StreamReader()
        reader.feed_data(encode_frame(("news", "not news")) + encode_frame(("pushed", "k", "peer"))
                         + encode_frame(("log", logging.INFO, "swarmnode.test.read", "still here")))
        reader.feed_eof()
        transport._process = type("Running", (), {"returncode": None, "pid": 1})()  # a child still alive
        await transport._read(reader)
        await asyncio.sleep(0)  # the watchers run on the loop, as the thread transport's do
        assert heard == [("k", "peer")]
        assert "stopped answering" in transport.failure()

    asyncio.run(main())


class _StandIn:
    """The few Transport methods a Host uses, with a trio side that can be made to fail."""

    peer_id = "12D3KooWhost"

    def __init__(self):
        self.broken = None
        self.stopped = False

    async def start(self):
        pass

    async def stop(self):
        self.stopped = True

    def watch_pushes(self, callback):
        pass

    def failure(self):
        return None if self.stopped else self.broken

    def counters(self):
        return {"pushed_entries": 1}

    def routing_table_size(self):
        return 2

    async def connected_peers(self):
        return []

    async def get(self, key):
        return [key]

    async def store(self, *args):
        raise BaseExceptionGroup("two at once", [ValueError("a"), KeyError("b")])


def test_the_host_answers_every_call_and_exits_when_its_trio_side_fails(monkeypatch):
    import socket

    from swarmnode.swarm.transports.libp2p import host_process
    from swarmnode.swarm.transports.libp2p.host_channel import FrameWriter, encode_frame

    monkeypatch.setattr(host_process, "NEWS_EVERY_S", 0.01)

    async def main():
        ours, theirs = socket.socketpair()
        node_reader, node_writer = await asyncio.open_unix_connection(sock=ours)
        host_reader, host_writer = await asyncio.open_unix_connection(sock=theirs)
        stand_in = _StandIn()
        host = host_process.Host(FrameWriter(host_writer), stand_in, ForwardedStats(), CachedPenalties(), None)
        running = asyncio.create_task(host.run(host_reader))
        assert await read_frame(node_reader) == ("started", "12D3KooWhost")
        for message in (("call", 1, "get", ("k",)), ("call", 2, "store", ("k", "s", b"v", 1.0)),
                        ("call", 3, "no_such_call", ())):
            node_writer.write(encode_frame(message))
        results = {}
        while len(results) < 3:
            message = await read_frame(node_reader)
            if message[0] == "result":
                results[message[1]] = message[2:]
        assert results[1] == (True, ["k"], 2)
        assert results[2][0] is False and isinstance(results[2][1], Exception)  # the group, or what it became
        assert results[3][0] is False and "no such call" in str(results[3][1])
        stand_in.broken = "the libp2p transport stopped (OSError: gone): the node has no network"
        await asyncio.wait_for(running, 5)
        assert host.failed == stand_in.broken and stand_in.stopped
        node_writer.close()

    asyncio.run(main())
