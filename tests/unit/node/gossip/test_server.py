"""node/gossip/server.py through RolloutGossip: long-polled fetches held on the serving side,
bounded per peer and in all, answered when a batch is added and released on shutdown. The network
is a stand-in (the integration tests drive the same code between real daemons)."""
import asyncio
import time

from swarmnode.protocol.generated import envelope_pb2, rollout_batch_pb2
from swarmnode.swarm.gossip.rollout_bookkeeping import rollout_fetch_request
from tests.unit.node.gossip.helpers import envelopes, make_gossip
from tests.unit.trainer.helpers import group


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
    assert len(gossip.holds) == 0 and gossip.counters.requests_held == 1
    # Something newer than `after` already there: answered at once, nothing held.
    assert envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0, wait_ms=5000), "peer"))) == [b"envelope"]
    assert gossip.counters.requests_held == 1
    gossip.close()


async def share_once(gossip, groups: int) -> None:
    """Run share_loop until it published `groups` groups."""
    task = asyncio.create_task(gossip.share_loop())
    while gossip.counters.groups_published < groups:
        await asyncio.sleep(0.02)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def rewards(envelope):
    batch = rollout_batch_pb2.RolloutBatch.FromString(envelope_pb2.SignedEnvelope.FromString(envelope).body)
    return [[c.reported_reward for c in g.completions] for g in batch.groups]


def test_a_step_is_sealed_as_an_informative_and_a_flat_batch_and_served_apart(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    gossip.training.steps_to_share.append([group(rewards=(1.0, 0.0)), group(rewards=(1.0, 1.0)), group(rewards=(0.0, 1.0))])
    asyncio.run(share_once(gossip, 3))
    assert gossip.counters.batches_published == 2

    everything = envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0), "peer")))
    assert [rewards(e) for e in everything] == [[[1.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]  # flat first
    informative = envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0, informative_only=True), "peer")))
    assert informative == everything[1:]
    gossip.close()


def test_a_step_larger_than_the_configured_split_goes_out_in_batches_of_that_size(tmp_path, make_identity):
    # A scheduler that raised this node's own groups past training.local_rollouts: a peer's fetch
    # of a few batches must not bring it many steps' worth at once.
    gossip, _, _ = make_gossip(tmp_path, make_identity)
    size = gossip.config.training.local_rollouts
    flat = [group(rewards=(1.0, 1.0)) for _ in range(size + 1)]
    gossip.training.steps_to_share.append(flat + [group(rewards=(1.0, 0.0)) for _ in range(size + 3)])
    asyncio.run(share_once(gossip, 2 * size + 4))
    everything = envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0), "peer")))
    assert [len(rewards(e)) for e in everything] == [size, 1, size, 3]
    # A peer that draws any group and asks for the newest two batches gets the informative ones.
    newest = envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0, max_batches=2, newest=True), "peer")))
    assert newest == everything[2:]
    gossip.close()


def test_an_informative_only_long_poll_is_held_past_flat_batches(tmp_path, make_identity):
    gossip, _, _ = make_gossip(tmp_path, make_identity)

    async def scenario():
        ask = rollout_fetch_request(0, wait_ms=5000, informative_only=True)
        held = asyncio.create_task(gossip.server.answer(ask, "peer"))
        await asyncio.sleep(0.05)
        gossip.outbox.add(gossip.outbox.next_batch_id(), b"flat", informative=False)
        gossip._held_wake.wake()
        await asyncio.sleep(0.05)
        held_past_flat = not held.done()
        add_batch(gossip, b"informative")
        return held_past_flat, await held

    held_past_flat, answer = asyncio.run(scenario())
    assert held_past_flat and envelopes(answer) == [b"informative"]
    # A peer that asks for every batch gets both.
    assert envelopes(asyncio.run(gossip.server.answer(rollout_fetch_request(0), "peer"))) == [b"flat", b"informative"]
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
    gossip.holds.total = 2

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
