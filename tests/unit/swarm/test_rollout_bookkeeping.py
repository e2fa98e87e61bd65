"""swarm/rollout_bookkeeping.py: held long-polls, the idle back-off, when announcements are due,
the outbox and fetch requests (values worked out by hand)."""
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.swarm.rollout_bookkeeping import (
    HeldRequests,
    RolloutOutbox,
    announcements_due,
    idle_exponent_cap,
    parse_rollout_fetch_request,
    rollout_fetch_request,
    skip_fetch,
)
from tests.unit.node.gossip.helpers import envelopes


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
