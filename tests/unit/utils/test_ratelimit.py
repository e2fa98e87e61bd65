"""utils/ratelimit.py: token buckets, one per peer, in a bounded map (values worked out by hand)."""
import pytest

from swarmnode.utils.ratelimit import ConcurrencySlots, PeerRateLimiter, TokenBucket


def test_token_bucket_by_hand():
    bucket = TokenBucket(rate=2.0, burst=3.0, tokens=3.0, updated=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]  # the burst, then empty
    assert bucket.take(0.25) is False  # 0.5 token: not enough
    assert bucket.take(0.5) is True  # 1.0 token at t=0.5
    assert bucket.take(100.0) and bucket.tokens == pytest.approx(2.0)  # refilled to the burst (3) minus 1


def test_rate_limiter_is_per_peer_and_bounded():
    limiter = PeerRateLimiter(rate=1.0, burst=2, max_peers=3)
    assert [limiter.allow("flood", 0.0) for _ in range(5)] == [True, True, False, False, False]
    assert limiter.allow("honest", 0.0)  # another peer's bucket is untouched
    assert limiter.refused == 3
    for i in range(10):
        limiter.allow(f"sybil{i}", 0.0)
    assert len(limiter) == 3


def test_concurrency_slots_bound_each_peer_and_the_total_and_forget_released_peers():
    slots = ConcurrencySlots(total=3, per_peer=2)
    assert slots.acquire("a") and slots.acquire("a") and not slots.acquire("a")  # a's two slots
    assert slots.acquire("b") and not slots.acquire("c") and len(slots) == 3  # all three taken
    slots.release("a")
    assert slots.acquire("c") and len(slots) == 3
    for peer in ("a", "b", "c", "c"):  # an extra release of a peer holding nothing changes nothing
        slots.release(peer)
    assert len(slots) == 0 and slots._held == {}
