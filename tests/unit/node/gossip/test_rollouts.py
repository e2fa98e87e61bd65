"""node/gossip/rollouts.py RolloutGossip: its bookkeeping for fetched batches (cursors, replays,
failing storage, the per-peer rate limits) and its fetch loop (long-polls, back-off of peers that
answer nothing at once, DHT announcement reads only when due, deferred fetches while the pool is
full). Values are worked out by hand; the network and the trainer are stand-ins here (the
integration tests in tests/integration/test_hostile_peer_cannot_stop_training.py drive the same
code with real peers)."""
import asyncio

from swarmnode.node.gossip import RolloutGossip
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.rollout_messages import seal_rollout_batch
from swarmnode.swarm.gossip.rollout_bookkeeping import MAX_BATCHES_PER_FETCH, parse_rollout_fetch_request, rollout_fetch_request
from tests.unit.node.gossip.helpers import NOW, make_gossip, response, sealed


def test_failing_storage_neither_replays_nor_uncounts_a_batch(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    gossip.store.accepted = disk_full
    gossip.standings.ledger.advance(peer.peer_id, 4)
    gossip.transport.response = response(sealed(peer, 5))
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [5] and gossip.counters.groups_accepted == 1
    assert gossip.counters.store_errors == 1 and gossip.standings.ledger.standing(peer.peer_id).cursor == 5
    # The peer serves batch 5 again: a replay, counted against it, never trained twice.
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [5] and gossip.counters.groups_accepted == 1
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


def test_batches_of_a_protocol_version_this_node_does_not_speak_are_dropped_but_not_strikes(tmp_path, make_identity):
    from tests.unit.protocol.helpers import speaking

    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    limit = gossip.standings.ledger.strike_limit = 2
    gossip.standings.ledger.advance(peer.peer_id, 0)
    # the peer upgraded after this node read its announcement
    newer = [sealed(speaking(peer, 3, 4), i) for i in range(1, limit + 3)]
    gossip.transport.response = response(*newer)
    asyncio.run(gossip._fetch_from(announced))
    assert gossip.training.received == [] and not gossip.standings.ledger.ignored(peer.peer_id, NOW)
    assert gossip.standings.stats.rejected_by_sender[peer.peer_id] == {"incompatible_version": limit + 2}
    gossip.close()


def test_a_stalling_peer_slows_only_itself_and_failing_peers_are_backed_off(tmp_path, make_identity):
    """Driven round by round (no wall time): a round starts once the fast and the dead peer's
    fetches have ended, and asks as many due peers as it has free places (2, one of them held
    by the staller from its first ask on). Which due peer is drawn is random, so the back-off
    is checked as its law: the k-th ask of a peer whose k fetches failed comes in a round that
    is a multiple of 2^k."""
    from swarmnode.swarm.gossip.rollout_bookkeeping import MAX_FAILURE_EXPONENT
    from swarmnode.swarm.transports.base import RequestFailed

    gossip, fast, fast_announced = make_gossip(tmp_path, make_identity)
    gossip.config.rollouts.long_poll_s = 0  # plain polling: a peer answering nothing is not backed off
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    _, slow, slow_announced = make_gossip(tmp_path / "slow", make_identity)
    _, dead, dead_announced = make_gossip(tmp_path / "dead", make_identity)
    asked_in = {fast.peer_id: [], slow.peer_id: [], dead.peer_id: []}  # the rounds each peer was asked in
    current = [0]
    rounds = 40

    async def request(peer, protocol, payload, timeout):
        asked_in[peer].append(current[0])
        if peer == slow.peer_id:
            await asyncio.sleep(3600)  # answers nothing, holds the stream open until cancelled
        if peer == dead.peer_id:
            raise RequestFailed("unreachable")
        return response()

    async def announcements():
        return [slow_announced, fast_announced, dead_announced]

    gossip.transport.request = request
    gossip._read_announcements = announcements
    for announced in (fast_announced, slow_announced, dead_announced):
        announced.announcement.expires_at = NOW + 60

    class Done(Exception):
        pass

    async def fetch_round(round_no):
        while gossip.fetcher.busy(fast.peer_id) or gossip.fetcher.busy(dead.peer_id):
            await asyncio.sleep(0.001)
        if round_no > rounds:
            raise Done
        current[0] = round_no
        await gossip._fetch_round(round_no)

    async def drive():
        try:
            await gossip.fetcher.run(lambda: 0.0, fetch_round)  # cancels the staller's fetch when it stops
        except Done:
            pass

    asyncio.run(drive())
    assert len(asked_in[slow.peer_id]) == 1  # asked once; its held stream never blocked a round
    dead_rounds = asked_in[dead.peer_id]
    for failures, round_no in enumerate(dead_rounds):
        assert round_no % 2 ** min(failures, MAX_FAILURE_EXPONENT) == 0, dead_rounds
    # At most 6 asks in 40 rounds (then rounds 2, 4, 8, 16, 32); every other round's pick, but
    # the one that went to the staller, is the fast peer.
    assert 1 <= len(dead_rounds) <= 6 and len(asked_in[fast.peer_id]) >= rounds - len(dead_rounds) - 1, asked_in
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


# -- long-polled fetches: back-off of peers that answer nothing at once, announcement reads when due


def test_fetches_long_poll_and_back_off_peers_that_answer_nothing_at_once(tmp_path, make_identity):
    gossip, holder, holder_announced = make_gossip(tmp_path, make_identity)
    _, old, old_announced = make_gossip(tmp_path / "old", make_identity)
    cfg = gossip.config.rollouts
    cfg.fetch_interval_s, cfg.long_poll_s = 0.05, 0.4  # idle back-off: at most 2^3 intervals
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    asked = {holder.peer_id: [], old.peer_id: []}

    async def request(peer, protocol, payload, timeout):
        wait_s = parse_rollout_fetch_request(payload).wait_ms / 1000
        asked[peer].append((wait_s, timeout))
        if peer == holder.peer_id:
            await asyncio.sleep(wait_s)  # holds the long-poll, then has nothing
        return response()  # an older node answers at once

    async def announcements():
        return [holder_announced, old_announced]

    gossip.transport.request = request
    gossip._read_announcements = announcements
    for announced in (holder_announced, old_announced):
        announced.announcement.expires_at = NOW + 60
        gossip.standings.ledger.advance(announced.peer_id, 0)

    async def run_for(seconds):
        loop = asyncio.create_task(gossip.fetch_loop())
        await asyncio.sleep(seconds)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    asyncio.run(run_for(1.6))
    # ~30 rounds. The holder: one request per 0.4 s hold (+ a round to notice), not 30.
    assert 2 <= len(asked[holder.peer_id]) <= 5, asked[holder.peer_id]
    assert asked[holder.peer_id][0] == (0.4, cfg.fetch_timeout_s + 0.4)
    # The old node: asked in rounds 1, 2, 4, 8, 16, 24 (idle 1, 2, 3, then every 8th): 6, not 30.
    assert 4 <= len(asked[old.peer_id]) <= 8, asked[old.peer_id]
    sent = sum(map(len, asked.values()))
    assert gossip.counters.fetch_requests == sent and gossip.counters.empty_fetches in (sent - 1, sent)  # one may be in flight
    gossip.close()


def test_long_polls_leave_half_the_fetch_slots_free(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity, max_concurrent_fetches=8)
    gossip._long_polls_out = 3
    assert gossip._long_poll_s() == gossip.config.rollouts.long_poll_s
    gossip._long_polls_out = 4
    assert gossip._long_poll_s() == 0.0  # four held of eight slots: plain polls from here
    gossip.close()
    single, _, _ = make_gossip(tmp_path / "one", make_identity, max_concurrent_fetches=1)
    assert single._long_poll_s() == 0.0  # one slot: never held
    single.close()


def test_announcements_are_read_when_due_not_every_round(tmp_path, make_identity):
    gossip, _, announced = make_gossip(tmp_path, make_identity)
    gossip.config.rollouts.fetch_interval_s = 0.02
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    announced.announcement.expires_at = NOW + 60
    reads = []

    async def announcements():
        reads.append(1)
        return [announced]

    gossip._read_announcements = announcements

    async def scenario():
        loop = asyncio.create_task(gossip.fetch_loop())
        await asyncio.sleep(0.3)  # ~15 rounds; DHT time stands still here, so nothing lapses
        first = len(reads)
        gossip.receiver.request_reread()  # a batch signed with another key than announced
        await asyncio.sleep(0.1)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        return first

    assert asyncio.run(scenario()) == 1 and len(reads) == 2
    assert gossip.counters.announcement_reads == 2
    gossip.close()


def test_a_full_pool_defers_fetches_and_then_asks_for_the_newest_batches(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    cfg = gossip.config.rollouts
    cfg.fetch_interval_s, cfg.long_poll_s = 0.02, 0.0
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    announced.announcement.expires_at = NOW + 60
    gossip.standings.ledger.advance(peer.peer_id, 0)
    asked = []

    async def request(peer_id, protocol, payload, timeout):
        asked.append(parse_rollout_fetch_request(payload))
        return response()

    async def announcements():
        return [announced]

    gossip.transport.request = request
    gossip._read_announcements = announcements

    async def run_for(seconds):
        loop = asyncio.create_task(gossip.fetch_loop())
        await asyncio.sleep(seconds)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    gossip.training.wanted = False  # the pool holds fetch_ahead_steps steps' worth
    asyncio.run(run_for(0.2))
    assert asked == [] and gossip.counters.fetches_deferred >= 3
    gossip.training.wanted = True
    asyncio.run(run_for(0.2))
    assert asked and all(r.newest and r.max_batches == cfg.backlog_batches for r in asked)
    asked.clear()
    cfg.fetch_ahead_steps = 0  # fetch everything: the oldest batches after the cursor, as many as fit
    asyncio.run(run_for(0.2))
    assert asked and all(not r.newest and r.max_batches == MAX_BATCHES_PER_FETCH for r in asked)
    # Uniform selection (this config's) asks for every batch; one that draws only informative
    # groups asks for those alone.
    assert gossip.config.training.external_selection == "uniform" and not any(r.informative_only for r in asked)
    asked.clear()
    gossip.config.training.external_selection = "nonzero_advantage"
    asyncio.run(run_for(0.2))
    assert asked and all(r.informative_only for r in asked)
    gossip.close()


# -- fetch rounds ask a sample of the known peers, more only while the pool stays short


def test_a_fetch_round_asks_a_few_of_many_known_peers_and_more_while_all_are_busy(tmp_path, make_identity):
    from swarmnode.protocol.codec import PROTOCOL_VERSION
    from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement

    gossip, _, _ = make_gossip(tmp_path, make_identity)  # max_concurrent_fetches 8
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    many = {}
    for i in range(20):
        a = rollout_batch_pb2.RolloutAnnouncement(peer_id=f"peer-{i}", first_batch_id=1, last_batch_id=9,
                                                  expires_at=NOW + 60)
        many[a.peer_id] = CheckedRolloutAnnouncement(a, b"", PROTOCOL_VERSION)
    asked = []

    async def request(peer, protocol, payload, timeout):
        asked.append(peer)
        await asyncio.sleep(30)  # every fetch stays under way

    async def announcements():
        return list(many.values())

    gossip.transport.request = request
    gossip._read_announcements = announcements

    async def scenario():
        running = []
        for round_no in range(1, 5):
            await gossip._fetch_round(round_no)
            running.append(gossip.fetcher.running())
            await asyncio.sleep(0)  # the started fetches send their requests
        seen = list(asked)
        for task in list(gossip.fetcher._inflight.values()):
            task.cancel()
        await asyncio.sleep(0.01)
        return running, seen

    running, seen = asyncio.run(scenario())
    assert len(gossip._known) == 20
    # 2 at first; all busy: 4, then 8 (limits.max_concurrent_fetches), and no more.
    assert running == [2, 4, 8, 8]
    assert len(seen) == 8 and len(set(seen)) == 8 and set(seen) <= set(many)
    assert gossip._round_peers == 8
    gossip.close()


def test_a_fetch_round_shrinks_back_when_the_pool_is_not_short(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    gossip.config.training.external_rollouts = 4
    gossip.training.ready = True
    gossip._round_peers = 8
    gossip.training.wanted = False
    for expected in (4, 2, 2):
        asyncio.run(gossip._fetch_round(1))
        assert gossip._round_peers == expected
    assert gossip.counters.fetches_deferred == 3 and gossip.fetcher.running() == 0
    gossip.close()


def test_a_fetch_that_waited_for_a_slot_while_the_pool_filled_sends_nothing(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    gossip.standings.ledger.advance(peer.peer_id, 4)
    asked = []

    async def request(peer_id, protocol, payload, timeout):
        asked.append(peer_id)
        return response(sealed(peer, 5))

    gossip.transport.request = request
    gossip.training.wanted = False
    asyncio.run(gossip._fetch_from(announced))
    assert asked == [] and gossip.training.received == []
    assert gossip.counters.fetches_deferred == 1 and gossip.counters.fetch_requests == 0
    gossip.training.wanted = True
    asyncio.run(gossip._fetch_from(announced))
    assert asked == [peer.peer_id] and gossip.training.received == [5]
    assert gossip.counters.fetches_deferred == 1 and gossip.counters.fetch_requests == 1
    gossip.close()


def test_each_accepted_batch_counts_in_the_latency_histogram(tmp_path, make_identity):
    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    gossip.standings.ledger.advance(peer.peer_id, 0)
    gossip.transport.response = response(sealed(peer, 1), sealed(peer, 2))
    asyncio.run(gossip._fetch_from(announced))
    gossip.transport.transport_cpu_s = lambda: 0.0  # the stand-in transport has no process of its own
    histogram = gossip.snapshot()["latency_histogram"]
    assert histogram["count"] == 2 == len(gossip.receiver.latencies)
    assert histogram["sum"] == round(sum(gossip.receiver.latencies), 6)
    assert list(histogram["buckets"].values()) == sorted(histogram["buckets"].values())  # cumulative
    gossip.close()


def test_rejected_rollouts_are_counted_by_reason_and_the_total_is_their_sum(tmp_path, make_identity):
    from swarmnode.protocol import RejectReason

    gossip, peer, announced = make_gossip(tmp_path, make_identity)
    gossip.standings.ledger.advance(peer.peer_id, 4)
    gossip.transport.response = response(sealed(peer, 3))  # at or under the cursor: replayed
    asyncio.run(gossip._fetch_from(announced))
    gossip.transport.response = b"\xff not a response"
    asyncio.run(gossip._fetch_from(announced))
    gossip.standings.blame_implausible({peer.peer_id: 3})  # the trainer's verdict
    gossip.standings.blame(peer.peer_id, 5, [(RejectReason.TOO_LONG, "x")] * 2)
    # A gradient summary's rejection is the summaries' count, not the rollouts'.
    gossip.standings.blame(peer.peer_id, None, [(RejectReason.NORM_TOO_LARGE, "summary")], kind="gradient_summary")
    gossip.transport.transport_cpu_s = lambda: 0.0
    snapshot = gossip.snapshot()
    assert snapshot["groups_rejected_by_reason"] == {"implausible_logprobs": 1, "malformed": 1, "replayed": 1,
                                                     "too_long": 2}
    assert snapshot["groups_rejected"] == 5
    assert gossip.standings.stats.rejected_by_sender[peer.peer_id]["norm_too_large"] == 1  # still held against it
    gossip.close()


def test_swarm_cpu_seconds_never_fall_back_when_the_transports_helper_ends(tmp_path, make_identity):
    """swarm_cpu_s is a Prometheus counter: a helper process that ended reads 0 CPU seconds, and
    the count keeps what it had used."""
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    gossip.transport.transport_cpu_s = lambda: 5.0
    before = gossip.snapshot()["swarm_cpu_s"]
    gossip.transport.transport_cpu_s = lambda: 0.0  # p2pd exited (or the libp2p thread ended)
    after = gossip.snapshot()
    assert after["swarm_cpu_s"] >= before >= 5.0 and after["swarm_cpu_breakdown_s"]["transport"] == 5.0
    gossip.close()
