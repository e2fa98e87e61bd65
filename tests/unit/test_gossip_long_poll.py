"""Gossip cost: long-polled fetches (held on the serving side, bounded per peer and in all,
released on shutdown), back-off of peers that answer nothing at once, and DHT announcement
reads only when due. Values below are worked out by hand; the network is a stand-in (the
integration tests drive the same code between real daemons)."""
import asyncio
import time

from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.swarm.rollout_bookkeeping import (
    MAX_BATCHES_PER_FETCH,
    HeldRequests,
    RolloutOutbox,
    announcements_due,
    idle_exponent_cap,
    parse_rollout_fetch_request,
    rollout_fetch_request,
    skip_fetch,
)
from tests.unit.test_gossip_bookkeeping import NOW, make_gossip, response


def envelopes(answer: bytes) -> list[bytes]:
    return list(rollout_batch_pb2.RolloutFetchResponse.FromString(answer).envelopes)


# -- pure bookkeeping ----------------------------------------------------------------------------

def test_held_requests_one_per_peer_and_a_total_cap():
    held = HeldRequests(capacity=2)
    assert held.acquire("a") and not held.acquire("a")  # a second long-poll of one peer: answered at once
    assert held.acquire("b") and not held.acquire("c")  # full
    assert held.refused == 2 and len(held) == 2
    held.release("a")
    assert held.acquire("c") and len(held) == 2
    held.release("nobody")  # releasing what is not held changes nothing
    assert len(held) == 2
    assert not HeldRequests(capacity=0).acquire("a")  # 0: this node holds nothing


def test_idle_exponent_cap_is_the_largest_power_of_two_within_the_long_poll():
    # long_poll / interval = 10 -> 2^3 = 8 intervals (4 s) <= 5 s < 2^4 intervals
    assert idle_exponent_cap(5.0, 0.5) == 3
    assert idle_exponent_cap(2.0, 0.5) == 2  # ratio 4 -> exactly 2^2
    assert idle_exponent_cap(1.9, 1.0) == 0  # ratio 1.9 -> 2^0
    assert idle_exponent_cap(0.0, 0.5) == 0  # long-poll off: no back-off for empty answers
    assert idle_exponent_cap(0.2, 0.5) == 0


def test_skip_fetch_backs_off_by_powers_of_two():
    assert [r for r in range(1, 10) if not skip_fetch(r, 0, 0, 3)] == list(range(1, 10))  # nothing to back off
    assert [r for r in range(1, 17) if not skip_fetch(r, 0, 3, 3)] == [8, 16]  # idle 3 times: every 8th round
    assert [r for r in range(1, 17) if not skip_fetch(r, 0, 5, 2)] == [4, 8, 12, 16]  # idle capped at 2^2
    assert [r for r in range(1, 130) if not skip_fetch(r, 9, 0, 3)] == [64, 128]  # failures capped at 2^6
    assert [r for r in range(1, 9) if not skip_fetch(r, 1, 2, 3)] == [4, 8]  # the larger back-off wins


def test_announcements_due_only_to_discover_or_before_a_known_one_lapses():
    due = lambda last, expiries: announcements_due(100.0, last, expiries, discover_interval_s=10.0, refresh_s=2.0)  # noqa: E731
    assert due(-float("inf"), [])  # never read
    assert due(90.0, [150.0])  # 10 s since the last read: look for new peers
    assert not due(95.0, [150.0])  # 5 s, and every known announcement good for 50 s more
    assert due(95.0, [150.0, 101.5])  # one lapses within 2 s: re-read (its owner re-announced meanwhile)
    assert not due(99.5, [101.5])  # but not within 2 s of the last read
    assert due(98.0, []) and not due(98.5, [])  # no peer known yet: look every 2 s


def test_outbox_has_after_and_fetch_request_round_trip():
    outbox = RolloutOutbox(first_batch_id=5, capacity=4)
    assert not outbox.has_after(0)
    outbox.add(outbox.next_batch_id(), b"e5")
    outbox.add(outbox.next_batch_id(), b"e6")
    assert outbox.has_after(5) and not outbox.has_after(6)
    parsed = parse_rollout_fetch_request(rollout_fetch_request(5, wait_ms=2500))
    assert (parsed.after_batch_id, parsed.max_batches, parsed.wait_ms) == (5, 16, 2500)
    assert parse_rollout_fetch_request(b"\xff garbage") is None and parse_rollout_fetch_request(b"\x08" * 65) is None
    # A request from an older node has no wait_ms: 0, answered at once.
    old = rollout_batch_pb2.RolloutFetchRequest(after_batch_id=5, max_batches=16).SerializeToString()
    assert parse_rollout_fetch_request(old).wait_ms == 0 and envelopes(outbox.answer(old)) == [b"e6"]


# -- the serving side ----------------------------------------------------------------------------

def add_batch(gossip, envelope=b"envelope"):
    """What share_loop does for a new batch."""
    gossip.outbox.add(gossip.outbox.next_batch_id(), envelope)
    gossip._held_wake.wake()


def test_a_long_poll_is_answered_when_a_batch_is_added(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)

    async def scenario():
        held = asyncio.create_task(gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "peer"))
        await asyncio.sleep(0.05)
        assert not held.done() and len(gossip.holds) == 1
        start = time.monotonic()
        add_batch(gossip)
        answer = await held
        return answer, time.monotonic() - start

    answer, waited = asyncio.run(scenario())
    assert envelopes(answer) == [b"envelope"] and waited < 0.5
    assert len(gossip.holds) == 0 and gossip.counters["requests_held"] == 1
    # Something newer than `after` already there: answered at once, nothing held.
    assert envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "peer"))) == [b"envelope"]
    assert gossip.counters["requests_held"] == 1
    gossip.close()


def test_a_hold_ends_at_the_shorter_of_the_asked_and_own_wait(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    gossip.config.rollouts.long_poll_s = 0.2

    def timed(wait_ms):
        start = time.monotonic()
        answer = asyncio.run(gossip.server.answer(rollout_fetch_request(0, wait_ms=wait_ms), "peer"))
        return envelopes(answer), time.monotonic() - start

    assert timed(60_000)[0] == [] and 0.15 < timed(60_000)[1] < 1.0  # capped by this node's 0.2 s
    assert timed(50)[1] < 0.15  # the asker's own shorter wait
    assert timed(0)[1] < 0.05  # no wait asked: a plain poll
    gossip.close()


def test_held_requests_are_bounded_per_peer_and_in_all(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    gossip.config.rollouts.max_held_requests = 2
    gossip.holds.capacity = 2

    async def scenario():
        first = asyncio.create_task(gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "a"))
        await asyncio.sleep(0.02)
        start = time.monotonic()
        again = await gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "a")  # a's second: at once
        other = asyncio.create_task(gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "b"))
        await asyncio.sleep(0.02)
        third = await gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "c")  # full: at once
        quick = time.monotonic() - start
        assert not first.done() and not other.done() and len(gossip.holds) == 2
        other.cancel()  # the asker gave up: hivemind cancels the handler, which frees its slot
        await asyncio.gather(other, return_exceptions=True)
        assert len(gossip.holds) == 1
        add_batch(gossip)
        return await first, again, third, quick

    first, again, third, quick = asyncio.run(scenario())
    assert envelopes(first) == [b"envelope"] and envelopes(again) == [] and envelopes(third) == []
    assert quick < 0.3 and gossip.limits_snapshot()["held_refused"] == 2 and len(gossip.holds) == 0
    gossip.close()


def test_close_answers_every_held_request_at_once(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)

    async def scenario():
        held = [asyncio.create_task(gossip.server.answer(rollout_fetch_request(0, wait_ms=30_000), f"p{i}")) for i in range(3)]
        await asyncio.sleep(0.05)
        start = time.monotonic()
        gossip.close()
        answers = await asyncio.gather(*held)
        late = await gossip.server.answer(rollout_fetch_request(0, wait_ms=30_000), "late")  # nothing is held after close
        return answers, late, time.monotonic() - start

    answers, late, took = asyncio.run(scenario())
    assert [envelopes(a) for a in answers] == [[], [], []] and envelopes(late) == [] and took < 0.5
    assert len(gossip.holds) == 0


# -- the fetching side ---------------------------------------------------------------------------

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
    assert gossip.counters["fetch_requests"] == sent and gossip.counters["empty_fetches"] in (sent - 1, sent)  # one may be in flight
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
        gossip.receiver.reread_announcements = True  # a batch signed with another key than announced
        await asyncio.sleep(0.1)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        return first

    assert asyncio.run(scenario()) == 1 and len(reads) == 2
    assert gossip.counters["announcement_reads"] == 2
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
    assert asked == [] and gossip.counters["fetches_deferred"] >= 3
    gossip.training.wanted = True
    asyncio.run(run_for(0.2))
    assert asked and all(r.newest and r.max_batches == cfg.backlog_batches for r in asked)
    asked.clear()
    cfg.fetch_ahead_steps = 0  # fetch everything: the oldest batches after the cursor, as many as fit
    asyncio.run(run_for(0.2))
    assert asked and all(not r.newest and r.max_batches == MAX_BATCHES_PER_FETCH for r in asked)
    gossip.close()
