"""swarm/shards.py by hand: shard hashing, the hysteresis of the shard count, the size estimate,
which shards a node reads, and the fetch round's sampling."""
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmnode.swarm.shards import (
    DELIVERY_PRIOR,
    GROW_FACTOR,
    MAX_SHARD_BITS,
    SHRINK_FACTOR,
    TARGET_PER_SHARD,
    belongs,
    estimate_swarm_size,
    fetch_round_size,
    levels_to_write,
    next_bits,
    pick_fetch_peers,
    shard_of,
    shards_to_read,
    smoothed_estimate,
)
from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, summaries_shard_key

peer_ids = st.text(min_size=1, max_size=60)


def test_shard_of_is_the_top_bits_of_sha256_by_hand():
    # hashlib.sha256(b"peer-a").hexdigest() starts "bdb94c73": 0xbd = 189, 0xb = 11, 0xbdb = 3035
    assert shard_of("peer-a", 0) == 0
    assert shard_of("peer-a", 1) == 1
    assert shard_of("peer-a", 4) == 11
    assert shard_of("peer-a", 8) == 189
    assert shard_of("peer-a", 12) == 3035
    # hashlib.sha256(b"12D3KooWtest").hexdigest() starts "ee71b312": 0xe = 14, 0xee = 238
    assert shard_of("12D3KooWtest", 4) == 14
    assert shard_of("12D3KooWtest", 8) == 238
    with pytest.raises(ValueError):
        shard_of("peer-a", MAX_SHARD_BITS + 1)


def test_a_record_belongs_only_to_its_own_shard():
    assert belongs("peer-a", 4, 11)
    assert not belongs("peer-a", 4, 12)
    assert belongs("peer-a", 0, 0)
    assert not belongs("peer-a", MAX_SHARD_BITS + 1, 0)


@given(peer_ids, st.integers(0, MAX_SHARD_BITS - 1))
def test_one_more_bit_splits_a_shard_in_two(peer_id, bits):
    assert shard_of(peer_id, bits + 1) >> 1 == shard_of(peer_id, bits)
    assert 0 <= shard_of(peer_id, bits) < 2**bits or bits == 0


def test_one_shard_while_small_then_grows_and_shrinks_at_the_thresholds():
    grow = GROW_FACTOR * TARGET_PER_SHARD  # 16 with the defaults
    assert next_bits(0, 10) == 0
    assert next_bits(0, grow) == 0  # at the threshold: not over it
    assert next_bits(0, grow + 1) == 1
    assert next_bits(0, 100) == 3  # 100 / 8 = 12.5 <= 16, 100 / 4 = 25 > 16
    assert next_bits(3, 100) == 3
    assert next_bits(3, 33) == 3  # 33 / 8 = 4.1 >= 4 = 0.5 x 8
    assert next_bits(3, 31) == 2  # 31 / 8 = 3.9 < 4
    assert next_bits(0, 10**9) == MAX_SHARD_BITS
    assert next_bits(5, 0) == 0


def test_no_flapping_around_a_threshold():
    grow = GROW_FACTOR * TARGET_PER_SHARD
    bits, seen = 0, []
    for n in [grow - 1, grow + 1, grow - 1, grow + 1, grow - 2, grow]:  # wobbling around 16
        bits = next_bits(bits, n)
        seen.append(bits)
    assert seen == [0, 1, 1, 1, 1, 1]  # one change, then it stays: 15 / 2 = 7.5 is not < 4


@given(st.integers(0, MAX_SHARD_BITS), st.floats(0, 10**7))
def test_next_bits_lands_in_the_band_and_is_a_fixed_point(bits, n):
    new = next_bits(bits, n)
    assert next_bits(new, n) == new
    mean = n / 2**new
    assert new == MAX_SHARD_BITS or mean <= GROW_FACTOR * TARGET_PER_SHARD
    assert new == 0 or mean >= SHRINK_FACTOR * TARGET_PER_SHARD


def test_levels_to_write_near_thresholds_and_after_a_change():
    assert levels_to_write(3, 8 * 8) == (3,)  # mean 8: the middle of the band
    assert levels_to_write(3, 8 * 12.5) == (3,)  # mean 12.5 <= 16 / 1.25 = 12.8
    assert levels_to_write(3, 8 * 13) == (3, 4)  # mean 13 > 12.8: readers ahead grew
    assert levels_to_write(3, 8 * 4.5) == (2, 3)  # mean 4.5 < 4 x 1.25 = 5: readers ahead shrank
    assert levels_to_write(3, 8 * 8, previous_bits=2) == (2, 3)  # readers behind have not moved
    assert levels_to_write(3, 8 * 8, previous_bits=7) == (3,)  # not a neighbour: ignored
    assert levels_to_write(0, 5) == (0,)


def test_the_estimate_is_exact_on_uniform_shards_and_smoothing_is_an_ewma():
    assert estimate_swarm_size([12, 12, 12, 12], 5) == 384.0
    assert estimate_swarm_size([10, 14], 2) == 48.0
    assert estimate_swarm_size([], 3) == 0.0
    assert smoothed_estimate(None, 100.0) == 100.0
    assert smoothed_estimate(100.0, 200.0, alpha=0.2) == pytest.approx(120.0)


def test_shards_to_read_by_hand():
    assert shards_to_read("peer-a", 7, 3, 3) == (5, 1, 2)  # own shard 0xbd >> 5 = 5 first
    assert shards_to_read("peer-a", 8, 3, 3) == (5, 6, 2)
    assert shards_to_read("peer-a", 7, 2, 4) == (2, 0, 1, 3)  # all 4: own, then ascending
    assert shards_to_read("peer-a", 7, 0, 4) == (0,)


@settings(max_examples=50)
@given(peer_ids, st.integers(0, 2**40), st.integers(1, 12), st.integers(1, 10))
def test_shards_to_read_properties(peer_id, window, bits, count):
    shards = shards_to_read(peer_id, window, bits, count)
    assert shards[0] == shard_of(peer_id, bits)
    assert len(shards) == len(set(shards)) == min(count, 2**bits)
    assert all(0 <= s < 2**bits for s in shards)
    assert shards == shards_to_read(peer_id, window, bits, count)


def test_shards_to_read_changes_across_windows():
    sets = {shards_to_read("peer-a", w, 10, 4) for w in range(20)}
    assert len(sets) == 20
    assert all(s[0] == shard_of("peer-a", 10) for s in sets)


def test_fetch_peers_are_drawn_by_what_they_delivered():
    rng = random.Random(1)
    peers = ["good", "new", "poor"]
    delivered = {"good": 18.0, "poor": 0.0}  # weights 20, 2, 2 with the prior of 2
    assert DELIVERY_PRIOR == 2.0
    first = Counter(pick_fetch_peers(peers, delivered, 1, rng)[0] for _ in range(4000))
    assert first["good"] / 4000 == pytest.approx(20 / 24, abs=0.03)
    picked = pick_fetch_peers(peers, delivered, 5, rng)
    assert sorted(picked) == sorted(peers)  # no more than there are, none twice
    assert pick_fetch_peers(peers, delivered, 0, rng) == []


def test_fetch_round_grows_only_while_the_pool_stays_short():
    assert fetch_round_size(2, True) == 4
    assert fetch_round_size(4, True) == 8
    assert fetch_round_size(8, True) == 8
    assert fetch_round_size(8, False) == 4
    assert fetch_round_size(2, False) == 2
    assert fetch_round_size(1, False, minimum=1, maximum=3) == 1


def test_shard_keys_by_hand():
    assert peer_records_shard_key("s", 4, 3, 5) == "swarmnode/s/sharded/peers/4/3/5"
    assert rollouts_shard_key("s", 4, 3, 5) == "swarmnode/s/sharded/rollouts/4/3/5"
    assert summaries_shard_key("s", 4, "ab12", 0, 0) == "swarmnode/s/sharded/summaries/ab12/4/0/0"
