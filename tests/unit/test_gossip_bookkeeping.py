"""RolloutGossip's bookkeeping for fetched batches: cursors, replays, failing storage and the
per-peer rate limits. The network and the trainer are stand-ins here (the integration tests in
tests/integration/test_hostile_peer.py drive the same code with real peers)."""
import asyncio

from swarmnode.config import NodeConfig
from swarmnode.node.gossip import PeerStandings, RolloutGossip
from swarmnode.trainer.intake import IntakeResult
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement, seal_rollout_batch
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.rollout_bookkeeping import rollout_fetch_request

NOW = 1_000_000.0


class Transport:
    def __init__(self):
        self.response = b""

    def dht_time(self):
        return NOW

    async def request(self, peer, protocol, payload, timeout):
        return self.response

    def child_processes(self):
        return []


class Training:
    fingerprint = tokenizer_fingerprint = "fp"
    eos_ids = {0}

    def __init__(self):
        self.received = []
        self.wanted = True  # the pool wants peers' groups (TrainingService.external_wanted)

    def external_wanted(self):
        return self.wanted

    def receive(self, batch, sender):
        self.received.append(batch.batch_id)
        return IntakeResult(groups=["group"] * len(batch.groups), same_model=True)


def sealed(identity, batch_id):
    batch = rollout_batch_pb2.RolloutBatch(window=1, policy_version=1, model_fingerprint="fp", batch_id=batch_id,
                                           created_at=NOW, temperature=1.0, top_p=1.0)
    group = batch.groups.add(prompt="1+2=")
    group.task.task = "sum2"
    group.completions.add(text="3", token_ids=[51], logprobs=[-0.5])
    return seal_rollout_batch(identity, batch)


def response(*envelopes):
    return rollout_batch_pb2.RolloutFetchResponse(envelopes=list(envelopes)).SerializeToString()


def make_gossip(tmp_path, make_identity, **limits):
    config = NodeConfig.model_validate({"limits": limits})
    me, peer = make_identity(), make_identity()
    stats = MessageStats()
    records = RecordIntake(PeerTable(me.peer_id), stats, "s", 10.0)
    transport = Transport()
    standings = PeerStandings.open(config, stats, tmp_path, transport.dht_time)
    gossip = RolloutGossip(config, me, transport, Training(), records, standings)
    announcement = rollout_batch_pb2.RolloutAnnouncement(peer_id=peer.peer_id, first_batch_id=1, last_batch_id=9)
    return gossip, peer, CheckedRolloutAnnouncement(announcement, peer.public_key)


def test_failing_storage_neither_replays_nor_uncounts_a_batch(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    gossip.store.accepted = disk_full
    gossip.standings.ledger.advance(peer.peer_id, 4)
    gossip.transport.response = response(sealed(peer, 5))
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [5] and gossip.counters["groups_accepted"] == 1
    assert gossip.counters["store_errors"] == 1 and gossip.standings.ledger.standing(peer.peer_id).cursor == 5
    # The peer serves batch 5 again: a replay, counted against it, never trained twice.
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [5] and gossip.counters["groups_accepted"] == 1
    assert gossip.standings.stats.rejected_by_sender[peer.peer_id] == {"replayed": 1}
    gossip.close()


def test_batches_over_the_accept_rate_wait_for_the_next_fetch(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity, accept_batches_per_s=0.001, accept_burst=2)
    gossip.standings.ledger.advance(peer.peer_id, 0)
    gossip.transport.response = response(*(sealed(peer, i) for i in range(1, 6)))
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [1, 2] and gossip.standings.ledger.standing(peer.peer_id).cursor == 2
    assert gossip.limits_snapshot()["accept_deferred"] == 1 and not gossip.standings.stats.rejected
    gossip.close()


def test_requests_over_a_peers_serve_rate_get_an_empty_answer(tmp_path, make_identity):
    gossip, peer, _ = make_gossip(tmp_path, make_identity, serve_requests_per_s=0.001, serve_burst=2)
    gossip.outbox.add(gossip.outbox.next_batch_id(), b"envelope")
    answers = [asyncio.run(gossip.server.answer(rollout_fetch_request(0), "flooder")) for _ in range(3)]
    assert [len(rollout_batch_pb2.RolloutFetchResponse.FromString(a).envelopes) for a in answers] == [1, 1, 0]
    assert asyncio.run(gossip.server.answer(rollout_fetch_request(0), "honest")) == answers[0]  # others are still served
    assert gossip.limits_snapshot()["serve_refused"] == 1
    assert tuple(gossip.limits_snapshot()) == RolloutGossip.LIMIT_KEYS  # what a model-less node reports as zeros
    gossip.close()


def test_strikes_and_ignores_survive_a_restart(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    gossip.transport.response = b"\xff not a response"
    gossip.standings.ledger.advance(peer.peer_id, 0)
    for _ in range(gossip.config.rollouts.strike_limit + 1):
        asyncio.run(gossip._fetch_from(announced))
    assert gossip.standings.ledger.ignored(peer.peer_id, NOW)
    gossip.close()
    restarted, _, _ = make_gossip(tmp_path, make_identity)
    assert restarted.standings.ledger.ignored(peer.peer_id, NOW + 1)
    assert restarted.standings.ledger.standing(peer.peer_id).rejected == gossip.config.rollouts.strike_limit + 1
    restarted.close()


def test_honest_differences_are_counted_but_not_strikes(tmp_path, make_identity):
    from swarmnode.protocol import RejectReason

    gossip, peer, _ = make_gossip(tmp_path, make_identity)
    limit = gossip.config.rollouts.strike_limit
    gossip.standings.blame(peer.peer_id, 1, [(RejectReason.TOO_LONG, "x")] * (limit + 5))
    gossip.standings.blame(peer.peer_id, None, [(RejectReason.IMPLAUSIBLE_LOGPROBS, "x")] * (limit + 5))
    assert not gossip.standings.ledger.ignored(peer.peer_id, NOW)
    assert gossip.standings.stats.rejected_by_sender[peer.peer_id] == {"too_long": limit + 5, "implausible_logprobs": limit + 5}
    gossip.standings.blame(peer.peer_id, 1, [(RejectReason.PROMPT_MISMATCH, "x")] * (limit + 1))
    assert gossip.standings.ledger.ignored(peer.peer_id, NOW)
    gossip.close()


def test_a_stalling_peer_slows_only_itself_and_failing_peers_are_backed_off(tmp_path, make_identity):
    from swarmnode.swarm.transport import RequestFailed

    gossip, fast, fast_announced = make_gossip(tmp_path, make_identity)
    gossip.config.rollouts.fetch_interval_s = 0.05
    gossip.config.rollouts.long_poll_s = 0  # plain polling: a peer answering nothing is not backed off
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    _, slow, slow_announced = make_gossip(tmp_path / "slow", make_identity)
    _, dead, dead_announced = make_gossip(tmp_path / "dead", make_identity)
    asked = {fast.peer_id: 0, slow.peer_id: 0, dead.peer_id: 0}

    async def request(peer, protocol, payload, timeout):
        asked[peer] += 1
        if peer == slow.peer_id:
            await asyncio.sleep(30)  # answers nothing, holds the stream open
        if peer == dead.peer_id:
            raise RequestFailed("unreachable")
        return response()

    async def announcements():
        return [slow_announced, fast_announced, dead_announced]

    gossip.transport.request = request
    gossip._read_announcements = announcements
    for announced in (fast_announced, slow_announced, dead_announced):
        announced.announcement.expires_at = NOW + 60

    async def run_for(seconds):
        loop = asyncio.create_task(gossip.fetch_loop())
        await asyncio.sleep(seconds)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    asyncio.run(run_for(1.5))
    assert asked[slow.peer_id] == 1 and asked[fast.peer_id] >= 15
    # Failing fetches back off exponentially: asked after 1, 2, 4, 8, 16 rounds (about 5 of ~25).
    assert 3 <= asked[dead.peer_id] <= 7, asked
    gossip.close()


def test_a_batch_too_old_moves_the_cursor_and_is_not_a_strike(tmp_path, make_identity):
    """A slow peer's old batches (or ones kept across our restart) are counted once, not struck."""
    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    gossip.standings.ledger.advance(peer.peer_id, 0)
    stale = []
    for batch_id in range(1, 2 + gossip.config.rollouts.strike_limit):  # more old batches than strikes allowed
        batch = rollout_batch_pb2.RolloutBatch(window=1, policy_version=1, model_fingerprint="fp", batch_id=batch_id,
                                               created_at=NOW - 10_000, temperature=1.0, top_p=1.0)
        group = batch.groups.add(prompt="1+2=")
        group.task.task = "sum2"
        group.completions.add(text="3", token_ids=[51], logprobs=[-0.5])
        stale.append(seal_rollout_batch(peer, batch))

    async def honest_server(peer_id, protocol, payload, timeout):
        after = rollout_batch_pb2.RolloutFetchRequest.FromString(payload).after_batch_id
        return response(*stale[after:after + 16])

    gossip.transport.request = honest_server
    for _ in range(3):
        asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [] and gossip.standings.ledger.standing(peer.peer_id).cursor == len(stale)
    assert gossip.standings.stats.rejected_by_sender[peer.peer_id] == {"expired": len(stale)}
    assert not gossip.standings.ledger.ignored(peer.peer_id, NOW)
    gossip.close()


def test_message_stats_count_exactly_from_many_threads():
    import threading

    from swarmnode.protocol import RejectReason
    from swarmnode.swarm.peers import MessageStats

    stats = MessageStats(max_senders=8)

    def hammer(k):
        for i in range(3000):
            stats.reject(RejectReason.MALFORMED, f"p{(k * 7 + i) % 50}")
            if i % 100 == 0:
                stats.counts()

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stats.counts()["rejected"] == {"malformed": 12_000} and len(stats.rejected_by_sender) == 8
