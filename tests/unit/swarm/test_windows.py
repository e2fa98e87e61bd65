"""swarm/windows.py by hand: window indices and the DHT keys of each window."""
import pytest

from swarmnode.swarm.windows import peer_records_key, window_index, windows_to_read


def test_window_math_by_hand():
    assert window_index(125.0, 30.0) == 4
    assert window_index(120.0, 30.0) == 4
    assert window_index(119.999, 30.0) == 3
    assert windows_to_read(4) == (4, 3)
    assert peer_records_key("s", 4) == "swarmnode/s/peers/4"


# -- sharded keys: their names parsed back, the windows of known keys, every key a peer's value may sit under


def test_parse_shard_key_round_trips_each_kind():
    from swarmnode.swarm.windows import (
        ShardKeyName,
        parse_shard_key,
        peer_records_shard_key,
        rollouts_shard_key,
        summaries_shard_key,
    )

    assert peer_records_shard_key("s", 7, 3, 5) == "swarmnode/s/sharded/peers/7/3/5"
    assert parse_shard_key("s", "swarmnode/s/sharded/peers/7/3/5") == ShardKeyName("peers", 7, 3, 5, "")
    assert parse_shard_key("s", rollouts_shard_key("s", 8, 0, 0)) == ShardKeyName("rollouts", 8, 0, 0, "")
    assert summaries_shard_key("s", 9, "base-abc", 2, 3) == "swarmnode/s/sharded/summaries/base-abc/9/2/3"
    assert parse_shard_key("s", summaries_shard_key("s", 9, "base-abc", 2, 3)) == ShardKeyName("summaries", 9, 2, 3, "base-abc")
    # Not range-checked here: belongs() refuses bits 17 or shard 9 of bits 3.
    assert parse_shard_key("s", peer_records_shard_key("s", 7, 17, 9)) == ShardKeyName("peers", 7, 17, 9, "")


def test_parse_shard_key_refuses_legacy_keys_garbage_and_other_swarms():
    from swarmnode.swarm.windows import (
        parse_shard_key,
        peer_records_shard_key,
        rollouts_key,
        summaries_key,
    )

    for key in [
        peer_records_key("s", 7), rollouts_key("s", 7), summaries_key("s", 7),  # one key per window
        "garbage", "", "swarmnode/s/sharded/", "swarmnode/s/sharded/peers/7/3",  # too short
        "swarmnode/s/sharded/peers/7/3/5/1",  # too long
        "swarmnode/s/sharded/peers/base-abc/7/3/5",  # a base on a peers key
        "swarmnode/s/sharded/summaries/7/3/5",  # a summaries key without its base
        "swarmnode/s/sharded/summaries//7/3/5",  # an empty base
        "swarmnode/s/sharded/blobs/7/3/5",  # no such kind
        "swarmnode/s/sharded/peers/seven/3/5", "swarmnode/s/sharded/peers/7/3/x",  # not numbers
        peer_records_shard_key("other", 7, 3, 5),  # another swarm
        peer_records_shard_key("s-2", 7, 3, 5),  # a swarm whose name starts like this one's
    ]:
        assert parse_shard_key("s", key) is None, key


def test_key_window_knows_shard_keys_only_when_sharded_and_in_range():
    from swarmnode.swarm.windows import key_window, peer_records_shard_key, rollouts_key, summaries_key, summaries_shard_key

    for sharded in (False, True):  # one key per window: known either way
        assert key_window("s", peer_records_key("s", 7), sharded=sharded) == 7
        assert key_window("s", rollouts_key("s", 8), sharded=sharded) == 8
        assert key_window("s", summaries_key("s", 9), sharded=sharded) == 9
        assert key_window("s", peer_records_key("s", -1), sharded=sharded) == -1
        assert key_window("s", peer_records_key("other", 7), sharded=sharded) is None
        assert key_window("s", "swarmnode/s/peers/x", sharded=sharded) is None
        assert key_window("s", "swarmnode/s/peers/", sharded=sharded) is None
        assert key_window("s", "garbage", sharded=sharded) is None
    assert key_window("s", peer_records_shard_key("s", 7, 3, 5), sharded=False) is None
    assert key_window("s", peer_records_shard_key("s", 7, 3, 5), sharded=True) == 7
    assert key_window("s", summaries_shard_key("s", 9, "b", 0, 0), sharded=True) == 9
    assert key_window("s", peer_records_shard_key("s", 7, 16, 2**16 - 1), sharded=True) == 7
    assert key_window("s", peer_records_shard_key("s", 7, 3, 8), sharded=True) is None  # shard 8 of 8
    assert key_window("s", peer_records_shard_key("s", 7, 17, 0), sharded=True) is None  # over 16 bits
    assert key_window("s", peer_records_shard_key("s", 7, -1, 0), sharded=True) is None
    assert key_window("s", peer_records_shard_key("s", 7, 1, -1), sharded=True) is None


def test_shard_keys_of_names_the_peers_shard_at_every_bits_level():
    import hashlib

    from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, shard_keys_of, summaries_shard_key

    top = int(hashlib.sha256(b"bob").hexdigest()[:4], 16)  # 0x81b6: bob's top 16 bits
    shards = [top >> (16 - bits) for bits in range(17)]
    assert shards[:5] == [0, 1, 2, 4, 8] and shards[16] == 0x81B6
    peers = shard_keys_of("s", "peers", 7, "bob")
    assert len(peers) == 17 and len(set(peers)) == 17
    assert peers == [peer_records_shard_key("s", 7, bits, shards[bits]) for bits in range(17)]
    assert peers[1] == "swarmnode/s/sharded/peers/7/1/1"
    assert shard_keys_of("s", "rollouts", 7, "bob") == [rollouts_shard_key("s", 7, b, shards[b]) for b in range(17)]
    assert shard_keys_of("s", "summaries", 7, "bob", "base-abc") == [
        summaries_shard_key("s", 7, "base-abc", b, shards[b]) for b in range(17)]


@pytest.mark.parametrize("suffix", ["--5", "\u00b2", "0100", "\uff11\uff10\uff10", "+100", "1_00", "-0", ""])
def test_a_key_whose_window_is_not_written_as_this_node_writes_numbers_is_none(suffix):
    from swarmnode.swarm.windows import key_window, parse_shard_key

    assert key_window("s", f"swarmnode/s/peers/{suffix}", sharded=True) is None
    assert parse_shard_key("s", f"swarmnode/s/sharded/peers/{suffix}/0/0") is None
    assert parse_shard_key("s", f"swarmnode/s/sharded/peers/100/{suffix}/0") is None
    assert key_window("s", "swarmnode/s/peers/-3", sharded=False) == -3 and key_window("s", "swarmnode/s/peers/0", sharded=False) == 0
