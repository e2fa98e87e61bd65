"""swarm/gossip/rollout_bookkeeping.py: held long-polls, the idle back-off, when announcements are due,
the outbox and fetch requests, the sender ledger (values worked out by hand)."""
import pytest

from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.swarm.gossip.rollout_bookkeeping import (
    MAX_BATCHES_PER_FETCH,
    MAX_ROLLOUT_FETCH_RESPONSE_BYTES,
    IGNORED_PENALTY,
    HeldRequests,
    RolloutOutbox,
    SenderLedger,
    announcements_due,
    fetch_wanted,
    idle_exponent_cap,
    parse_rollout_fetch_request,
    parse_rollout_fetch_response,
    rollout_fetch_request,
    skip_fetch,
    split_informative,
)
from tests.unit.node.gossip.helpers import envelopes

NOW = 1000.0


# -- long-poll bookkeeping -----------------------------------------------------------------------

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


# -- outbox ------------------------------------------------------------------------------------

class Spread:
    def __init__(self, name, spread):
        self.name, self.reward_spread = name, spread


def test_a_steps_groups_split_into_an_informative_and_a_flat_batch():
    a, b, c = Spread("a", 1.0), Spread("b", 0.0), Spread("c", 0.25)
    assert [([g.name for g in part], kind) for part, kind in split_informative([a, b, c])] == [
        (["b"], False), (["a", "c"], True)]  # the informative ones last: the newest batch of a step
    assert [kind for _, kind in split_informative([b])] == [False]  # no empty batch
    assert [kind for _, kind in split_informative([a])] == [True]
    assert split_informative([]) == []


def test_split_informative_cuts_each_kind_into_batches_of_at_most_max_groups():
    informative = [Spread(f"i{k}", 0.5) for k in range(5)]
    flat = [Spread(f"f{k}", 0.0) for k in range(2)]
    batches = split_informative(informative + flat, max_groups=2)
    assert [([g.name for g in part], kind) for part, kind in batches] == [
        (["f0", "f1"], False), (["i0", "i1"], True), (["i2", "i3"], True), (["i4"], True)]
    assert [len(part) for part, _ in split_informative(informative, max_groups=8)] == [5]
    assert split_informative([], max_groups=2) == []
    with pytest.raises(ValueError):
        split_informative(informative, max_groups=0)


def test_the_outbox_serves_only_informative_batches_to_who_asks_and_forgets_flat_ids_it_evicts():
    box = RolloutOutbox(first_batch_id=1, capacity=3)
    for envelope, informative in ((b"i1", True), (b"f2", False), (b"i3", True), (b"f4", False)):
        box.add(box.next_batch_id(), envelope, informative)
    assert box.after(0, 16) == [b"f2", b"i3", b"f4"]  # capacity 3: batch 1 went
    assert box.after(0, 16, informative_only=True) == [b"i3"]
    assert box.after(0, 1, newest=True, informative_only=True) == [b"i3"]
    assert box.has_after(3) and not box.has_after(3, informative_only=True)  # only a flat batch is newer
    for envelope in (b"i5", b"i6", b"i7"):
        box.add(box.next_batch_id(), envelope)
    assert box.after(0, 16, informative_only=True) == [b"i5", b"i6", b"i7"] == box.after(0, 16)
    assert box._flat == set()  # evicted flat ids are not kept
    request = rollout_fetch_request(4, informative_only=True)
    assert parse_rollout_fetch_request(request).informative_only
    assert envelopes(box.answer(request)) == [b"i5", b"i6", b"i7"]
    flat_box = RolloutOutbox(first_batch_id=1, capacity=4)
    flat_box.add(flat_box.next_batch_id(), b"f1", False)
    assert envelopes(flat_box.answer(rollout_fetch_request(0, informative_only=True))) == []
    assert envelopes(flat_box.answer(rollout_fetch_request(0))) == [b"f1"]  # an older node's request: everything


def test_outbox_ids_capacity_and_after():
    box = RolloutOutbox(first_batch_id=10, capacity=3)
    assert box.id_range() is None and box.after(0, 16) == []
    ids = [box.next_batch_id() for _ in range(5)]
    assert ids == [10, 11, 12, 13, 14]
    for i in ids:
        box.add(i, b"env%d" % i)
    assert box.id_range() == (12, 14)  # 10 and 11 evicted
    assert box.after(0, 16) == [b"env12", b"env13", b"env14"]
    assert box.after(12, 16) == [b"env13", b"env14"]
    assert box.after(11, 1) == [b"env12"]
    assert box.after(14, 16) == []
    assert box.batches_served == 6 and box.bytes_served == 6 * 5


def test_outbox_after_caps_batches_and_bytes():
    box = RolloutOutbox(first_batch_id=0, capacity=100)
    for i in range(MAX_BATCHES_PER_FETCH + 4):
        box.add(box.next_batch_id(), bytes([i]))
    got = box.after(-1, 1000)
    assert got == [bytes([i]) for i in range(MAX_BATCHES_PER_FETCH)]
    big = RolloutOutbox(first_batch_id=0, capacity=10)
    chunk = (MAX_ROLLOUT_FETCH_RESPONSE_BYTES * 2) // 5  # 0.4 of the cap: two fit, the third would not
    for i in range(4):
        big.add(big.next_batch_id(), bytes([i]) * chunk)
    assert [e[0] for e in big.after(-1, 16)] == [0, 1]
    assert [e[0] for e in big.after(1, 16)] == [2, 3]


def test_outbox_after_newest_skips_the_older_backlog():
    box = RolloutOutbox(first_batch_id=1, capacity=16)
    for i in range(1, 11):
        box.add(i, b"e%d" % i)
    assert box.after(2, 3, newest=True) == [b"e8", b"e9", b"e10"]  # newest three, oldest first
    assert box.after(2, 3) == [b"e3", b"e4", b"e5"]
    assert box.after(8, 4, newest=True) == [b"e9", b"e10"]  # fewer than asked: all of them
    assert box.after(10, 4, newest=True) == [] and box.after(2, 0, newest=True) == []
    parsed = rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(2, max_batches=3, newest=True))
    assert parsed.newest and parse_rollout_fetch_response(box.answer(rollout_fetch_request(2, max_batches=3, newest=True))) == [
        b"e8", b"e9", b"e10"]
    assert not rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(2)).newest  # a plain fetch


def test_fetch_wanted_while_the_pool_holds_less_than_ahead_steps_take():
    assert fetch_wanted(usable=31, per_step=16, ahead_steps=2.0)  # 31 < 2 * 16
    assert not fetch_wanted(usable=32, per_step=16, ahead_steps=2.0)
    assert fetch_wanted(usable=5, per_step=4, ahead_steps=1.5) and not fetch_wanted(6, 4, 1.5)  # 6 = 1.5 * 4
    assert fetch_wanted(usable=10_000, per_step=16, ahead_steps=0)  # 0: fetch everything
    assert fetch_wanted(usable=1, per_step=0, ahead_steps=2.0) and not fetch_wanted(2, 0, 2.0)  # J=0 counts as 1


def test_outbox_answer_and_fetch_round_trip():
    box = RolloutOutbox(first_batch_id=1, capacity=8)
    for i in range(1, 5):
        box.add(i, b"batch-%d" % i)
    request = rollout_fetch_request(2, max_batches=5)
    parsed = rollout_batch_pb2.RolloutFetchRequest.FromString(request)
    assert (parsed.after_batch_id, parsed.max_batches) == (2, 5)
    assert rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(7)).max_batches == MAX_BATCHES_PER_FETCH
    assert parse_rollout_fetch_response(box.answer(request)) == [b"batch-3", b"batch-4"]
    assert parse_rollout_fetch_response(box.answer(rollout_fetch_request(0, max_batches=1))) == [b"batch-1"]
    served = box.batches_served
    for garbage in (b"garbage", b"\xff" * 10, rollout_fetch_request(0) + b"\x00" * 64):  # undecodable / too long
        response = box.answer(garbage)
        assert parse_rollout_fetch_response(response) == []
        assert rollout_batch_pb2.RolloutFetchResponse.FromString(response).envelopes == []
    assert box.batches_served == served


def test_parse_fetch_response_refuses_garbage_and_excess():
    assert parse_rollout_fetch_response(b"\xff" * 10) is None
    assert parse_rollout_fetch_response(b"") == []
    too_many = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"x"] * (MAX_BATCHES_PER_FETCH + 1))
    assert parse_rollout_fetch_response(too_many.SerializeToString()) is None
    ok = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"a", b"b"])
    assert parse_rollout_fetch_response(ok.SerializeToString()) == [b"a", b"b"]
    huge = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"x" * (MAX_ROLLOUT_FETCH_RESPONSE_BYTES + 64 * MAX_BATCHES_PER_FETCH)])
    assert parse_rollout_fetch_response(huge.SerializeToString()) is None


# -- sender ledger ------------------------------------------------------------------------------


def test_ledger_cursor_backlog_and_advance():
    ledger = SenderLedger(strike_limit=3, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    # New peer holding 1..20: fetch after 16, i.e. only 17, 18, 19, 20.
    assert ledger.start_after("p", 1, 20) == 16
    # New peer with fewer batches than the backlog: everything it holds.
    assert ledger.start_after("q", 5, 6) == 4
    ledger.advance("p", 20)
    assert ledger.start_after("p", 1, 20) is None
    assert ledger.start_after("p", 1, 25) == 20
    ledger.advance("p", 18)  # an older batch never moves the cursor back
    assert ledger.standing("p").cursor == 20
    # The peer dropped batches we never saw: start at its oldest held one.
    assert ledger.start_after("p", 30, 35) == 29


def test_ledger_strikes_ignore_and_forgive():
    ledger = SenderLedger(strike_limit=3, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    assert not ledger.record("p", 0, 2, now=100.0)
    assert not ledger.record("p", 5, 1, now=105.0)  # 3 strikes: at the limit, not over it
    assert not ledger.ignored("p", 105.0)
    assert ledger.record("p", 0, 1, now=106.0)  # 4 > 3 within 10 s
    assert ledger.ignored("p", 106.0) and ledger.ignored("p", 165.9)
    assert not ledger.record("p", 0, 5, now=120.0)  # already ignored: no new time-out
    assert ledger.standing("p").ignored_until == 166.0
    assert not ledger.ignored("p", 166.0)
    # Strikes older than the window are forgotten.
    assert not ledger.record("r", 0, 3, now=0.0)
    assert not ledger.record("r", 0, 1, now=11.0)
    assert not ledger.ignored("r", 11.0)
    snapshot = ledger.snapshot(130.0)
    assert snapshot["p"] == {"accepted": 5, "rejected": 9, "quality": round(6 / 16, 3), "ignored": True}
    assert snapshot["r"]["ignored"] is False


def test_ledger_quality_is_laplace_smoothed():
    ledger = SenderLedger(strike_limit=100, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    assert ledger.quality("new") == 0.5
    ledger.record("p", 3, 1, now=0.0)
    assert ledger.quality("p") == pytest.approx(4 / 6)
    ledger.record("p", 0, 4, now=1.0)
    assert ledger.quality("p") == pytest.approx(4 / 10)
    ledger.record("good", 8, 0, now=0.0)
    assert ledger.quality("good") == pytest.approx(9 / 10)


# -- bounds on per-peer state ---------------------------------------------------------------------


def test_sender_ledger_is_bounded_and_keeps_ignored_peers():
    ledger = SenderLedger(strike_limit=1, strike_window_s=60, ignore_s=100, backlog=4, max_peers=2)
    assert ledger.record("bad", 0, 2, NOW)  # over the strike limit: ignored
    for i in range(5):  # a flood of fresh identities
        ledger.record(f"sybil{i}", 0, 0, NOW + 1)
    assert len(ledger) == 2 and ledger.ignored("bad", NOW + 2) and ledger.evicted == 4


def test_a_flood_of_strangers_keeps_contributors_standing():
    ledger = SenderLedger(strike_limit=20, strike_window_s=60, ignore_s=100, backlog=4, max_peers=3)
    ledger.record("honest", 2516, 0, NOW)
    ledger.advance("honest", 77)
    for i in range(50):  # announcing identities this node fetched from, that never delivered
        assert not ledger.ignored(f"sybil{i}", NOW)  # asking makes no entry
        ledger.standing(f"sybil{i}")
    assert ledger.standing("honest").accepted == 2516 and ledger.standing("honest").cursor == 77
    assert len(ledger) == 3


def test_ledger_gossip_penalty_is_recent_strikes_or_the_ignored_penalty():
    ledger = SenderLedger(strike_limit=3, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    assert ledger.gossip_penalty("stranger", NOW) == 0.0 and len(ledger) == 0  # asking makes no entry
    ledger.record("p", accepted=0, rejected=2, now=NOW)
    assert ledger.gossip_penalty("p", NOW + 5) == 2.0
    assert ledger.gossip_penalty("p", NOW + 11) == 0.0  # out of the strike window
    ledger.record("p", accepted=0, rejected=4, now=NOW + 20)  # 4 > 3 strikes: ignored for 60 s
    assert ledger.gossip_penalty("p", NOW + 30) == IGNORED_PENALTY
    assert ledger.gossip_penalty("p", NOW + 81) == 0.0  # forgiven, strikes cleared
