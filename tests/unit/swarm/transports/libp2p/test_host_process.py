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
    news = HostNews()
    watch.news(news)
    assert [o.peer_id for o in news.foreign] == ["f1"] and [p.peer_id for p in news.incompatible] == ["i1"]
    assert news.over_key_cap == 3
    again = HostNews()
    watch.news(again)
    assert again.foreign == [] and again.incompatible == [] and again.over_key_cap == 0
    intake.incompatible["i1"] = _incompatible("i1", 6.0)  # a newer record of the same peer
    newer = HostNews()
    watch.news(newer)
    assert [p.timestamp for p in newer.incompatible] == [6.0]


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
