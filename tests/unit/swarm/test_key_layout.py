"""swarm/key_layout.py by hand: where a node writes and reads each kind of DHT value, one key per
window (protocol version 1) or a window's key spread over shards (version 2 on), how a sharded
spread sizes its shards from what its reads found, and how a read's values are sorted by shard."""
import hashlib

from swarmnode.protocol.versions import ProtocolVersions
from swarmnode.swarm.key_layout import (
    COUNTED_PER_SHARD,
    KeyLayout,
    OneKeyPerWindow,
    ReadKey,
    ShardedKeys,
    sort_reads,
    uses_shards,
)
from swarmnode.swarm.shards import SHARDS_READ_PER_WINDOW, TRANSITION_GRACE_WINDOWS, shard_of
from swarmnode.swarm.transports.base import StoredValue

# Top hex digits of sha256(peer id): "alice" 2bd8..., "bob" 81b6..., "carol" 4c26...
# alice: 0010 -> shard 0 at bits 1, 2 at bits 4; bob: 1000 -> 1 at bits 1, 8 at bits 4; carol: 0100 -> 0, 4.
ALICE, BOB, CAROL = "alice", "bob", "carol"


def one_key(window):
    return f"one/{window}"


def shard_key(window, bits, shard):
    return f"shard/{window}/{bits}/{shard}"


def sharded(peer_id=ALICE, shards_read=SHARDS_READ_PER_WINDOW, counted_per_shard=10**9):
    """A spread that counts every peer of a shard (the cap has its own test)."""
    return ShardedKeys(shard_key, peer_id, shards_read=shards_read, counted_per_shard=counted_per_shard)


def at(bits, *counts):
    """What a read of `counts[i]` peers in shard i at `bits` hands observe()."""
    return {(bits, shard): n for shard, n in enumerate(counts)}


def own_only(keys):
    """The keys of a read at the node's own level (no probes above it)."""
    return [k for k in keys if k.bits == keys[0].bits]


def found(*peer_ids):
    return [StoredValue(p, b"value of " + p.encode(), 0.0) for p in peer_ids]


def test_the_example_peers_hash_where_the_comments_say():
    assert hashlib.sha256(b"alice").hexdigest()[:4] == "2bd8" and hashlib.sha256(b"bob").hexdigest()[:4] == "81b6"
    assert [shard_of(ALICE, b) for b in (0, 1, 4)] == [0, 0, 2]
    assert [shard_of(BOB, b) for b in (0, 1, 4)] == [0, 1, 8]
    assert [shard_of(CAROL, b) for b in (0, 1, 4)] == [0, 0, 4]


def test_one_key_per_window_writes_and_reads_the_windows_one_key():
    spread = OneKeyPerWindow(one_key)
    assert spread.write_keys(7) == ["one/7"]
    assert spread.read_keys(7, 8) == [ReadKey("one/7")]
    assert spread.read_keys(7, 8)[0].bits is None and not spread.nearest_holders
    spread.observe(at(None, 500), 8)  # nothing to size
    assert spread.write_keys(7) == ["one/7"]


def test_a_key_of_any_peer_holds_every_value_a_shards_key_only_its_peers():
    anyone = ReadKey("one/7")
    assert anyone.holds(ALICE) and anyone.holds(BOB) and anyone.holds(42)
    at_bits_1 = ReadKey("shard/7/1/0", 1, 0)
    assert at_bits_1.holds(ALICE) and at_bits_1.holds(CAROL) and not at_bits_1.holds(BOB)
    assert not at_bits_1.holds(42) and not at_bits_1.holds(b"alice")  # a subkey that is no peer id
    assert ReadKey("shard/7/0/0", 0, 0).holds(BOB)  # one shard: everyone's
    assert not ReadKey("shard/7/17/0", 17, 0).holds(ALICE)  # bits out of range: nobody's


def test_a_small_swarm_is_one_shard_written_and_read_once():
    spread = sharded()
    assert spread.nearest_holders and spread.bits == 0 and spread.estimate is None
    assert spread.write_keys(7) == ["shard/7/0/0"]
    keys = spread.read_keys(7, 7)
    assert keys[0] == ReadKey("shard/7/0/0", 0, 0)
    # Seeing nobody yet, its first read also looks at its own shard at every level above.
    assert keys[1:] == [ReadKey(f"shard/7/{b}/{shard_of(ALICE, b)}", b, shard_of(ALICE, b)) for b in range(1, 17)]
    assert spread.read_keys(6, 7) == [ReadKey("shard/6/0/0", 0, 0)]  # the previous window: no probes
    spread.observe({}, 7)  # a read that found no key: nothing learnt
    assert spread.estimate is None and spread.bits == 0


def test_bits_grow_only_when_the_mean_shard_holds_over_twice_the_target():
    stays = sharded()
    stays.observe(at(0, 12, 20), 7)  # mean 16: not over 2 x 8
    assert (stays.estimate, stays.bits) == (16.0, 0)
    # Within 1.25 of the grow point (16 / 1.25 = 12.8 < 16): it also writes the next level, for
    # readers whose estimate already crossed.
    assert stays.write_keys(7) == ["shard/7/0/0", "shard/7/1/0"]
    grows = sharded()
    grows.observe(at(0, 12, 22), 7)  # mean 17 > 16: one shard becomes two (17 / 2 = 8.5 stays)
    assert (grows.estimate, grows.bits) == (17.0, 1)
    quiet = sharded()
    quiet.observe(at(0, 12), 7)  # 12 <= 12.8: not near the grow point, one key only
    assert quiet.write_keys(7) == ["shard/7/0/0"]


def climb_to_200(spread) -> None:
    """Reads that each say N = 200 (per-shard counts x 2^bits): one more bit per read."""
    for window, count in enumerate((200, 100, 50, 25), start=4):
        spread.observe(at(spread.bits, count), window)


def test_a_large_count_grows_one_bit_per_read_up_to_the_band():
    spread = sharded()
    spread.observe(at(0, 200), 3)  # 200 wants bits 4 (200 / 16 = 12.5 is the first mean <= 16), one step at a time
    assert (spread.estimate, spread.bits) == (200.0, 1)
    spread = sharded()
    climb_to_200(spread)
    assert (spread.estimate, spread.bits) == (200.0, 4)
    spread.observe(at(4, 12), 8)  # 12 x 16 = 192: the EWMA says 198.4, mean 12.4 stays in the band
    assert (round(spread.estimate, 6), spread.bits) == (198.4, 4)


def test_after_growing_the_level_left_is_written_for_the_grace_windows_and_not_after():
    spread = sharded(BOB)
    spread.observe(at(0, 20), 5)  # 20 > 16: bits 0 -> 1 in reading window 5; mean 10 is in the band, not near its ends
    assert spread.bits == 1
    for window in range(5, 5 + TRANSITION_GRACE_WINDOWS + 1):  # windows 5..10
        assert spread.write_keys(window) == [f"shard/{window}/0/0", f"shard/{window}/1/1"], window
    assert spread.write_keys(11) == ["shard/11/1/1"]  # bob's shard at bits 1 only
    assert spread.write_keys(20) == ["shard/20/1/1"]


def test_the_estimate_is_smoothed_so_one_empty_read_does_not_shrink_the_shards():
    spread = sharded()
    climb_to_200(spread)
    assert spread.bits == 4
    # EWMA with alpha 0.2: 200 -> 160 -> 128 -> 102.4 -> 81.92 -> 65.536 -> 52.4288. Shrink when
    # N / 16 < 4 (64): only the sixth empty read does it, and 52.4288 / 8 = 6.55 stops at bits 3.
    expected = [(160.0, 4), (128.0, 4), (102.4, 4), (81.92, 4), (65.536, 4), (52.4288, 3)]
    for i, (estimate, bits) in enumerate(expected):
        spread.observe(at(4, 0, 0, 0, 0), 8 + i)
        assert round(spread.estimate, 6) == estimate and spread.bits == bits, i


def reads_in_turn(spread, window, count):
    """The own-level key of each of `count` reads in `window`, each observed as 12 peers: the
    level holds while the reads go round."""
    keys = []
    for _ in range(count):
        read = own_only(spread.read_keys(window, window))
        assert len(read) == 1  # one shard of its level a read
        keys.append(read[0])
        spread.observe({(read[0].bits, read[0].shard): 12}, window)
    return keys


def test_reads_go_round_the_own_shard_then_distinct_others_one_a_read_each_holding_only_its_peers():
    spread = sharded()
    climb_to_200(spread)  # 16 shards
    keys = reads_in_turn(spread, 7, SHARDS_READ_PER_WINDOW + 1)
    assert SHARDS_READ_PER_WINDOW == 4 and spread.bits == 4
    assert keys[0] == ReadKey("shard/7/4/2", 4, 2)  # alice's own shard at bits 4
    assert len({k.shard for k in keys[:4]}) == 4 and all(0 <= k.shard < 16 and k.bits == 4 for k in keys)
    assert keys[4] == keys[0]  # round again
    assert [k.name for k in keys] == [f"shard/7/4/{k.shard}" for k in keys]
    # The previous window's key of the shard a read takes, no probes there, in the first round of
    # a window's reads only (one per chosen shard): window 7 has had 6 reads, window 8 none yet.
    assert spread.read_keys(6, 7) == []
    previous = []
    for _ in range(SHARDS_READ_PER_WINDOW + 1):
        current = own_only(spread.read_keys(8, 8))[0]
        previous.append((current.shard, spread.read_keys(7, 8)))
        spread.observe({(current.bits, current.shard): 12}, 8)
    assert [keys for _, keys in previous[:4]] == [[ReadKey(f"shard/7/4/{shard}", 4, shard)] for shard, _ in previous[:4]]
    assert len({shard for shard, _ in previous[:4]}) == 4 and previous[4][1] == []
    spread.observe({(4, 0): 12}, 7)  # a read of window 7 answered late: window 8's count holds
    assert spread.read_keys(7, 8) == []
    again = sharded()
    climb_to_200(again)
    assert reads_in_turn(again, 7, 4) == keys[:4]  # the same for the same reading window
    peers = [f"peer-{i}" for i in range(200)]
    for key in keys:
        assert [p for p in peers if key.holds(p)] == [p for p in peers if shard_of(p, 4) == key.shard]
    # Fewer shards than SHARDS_READ_PER_WINDOW: all of them in turn, own first then ascending.
    few = sharded(BOB)
    few.observe(at(0, 30), 7)  # its first read: the turn is at the second shard, then round
    assert reads_in_turn(few, 7, 3) == [ReadKey("shard/7/1/0", 1, 0), ReadKey("shard/7/1/1", 1, 1),
                                        ReadKey("shard/7/1/0", 1, 0)]
    assert len(sharded(shards_read=2).read_keys(7, 6)) == 1  # bits 0: the one shard


def test_sort_reads_keeps_held_values_counts_misplaced_and_counts_peers_per_shard_over_windows():
    # Shard 0 at bits 1 (alice, carol) read in windows 5 and 4, shard 1 (bob) in window 5.
    reads = [
        (ReadKey("shard/5/1/0", 1, 0), found(ALICE, BOB)),  # bob copied into the wrong shard
        (ReadKey("shard/4/1/0", 1, 0), found(ALICE, CAROL)),  # alice again, one window older
        (ReadKey("shard/5/1/1", 1, 1), found(BOB, CAROL, ALICE)),
    ]
    got = sort_reads(reads)
    assert [v.subkey for v in got.values] == [ALICE, ALICE, CAROL, BOB]
    assert got.misplaced == 3
    assert got.peers_per_shard == {(1, 0): 2, (1, 1): 1}  # {alice, carol} and {bob}
    empty = sort_reads([(ReadKey("shard/5/1/0", 1, 0), []), (ReadKey("shard/5/1/1", 1, 1), found(ALICE))])
    assert (empty.values, empty.misplaced, empty.peers_per_shard) == ([], 1, {(1, 0): 0, (1, 1): 0})


def test_sort_reads_of_one_key_per_window_keeps_everything():
    got = sort_reads([(ReadKey("one/5"), found(ALICE, BOB)), (ReadKey("one/4"), found(ALICE, CAROL))])
    assert [v.subkey for v in got.values] == [ALICE, BOB, ALICE, CAROL]
    assert (got.misplaced, got.peers_per_shard) == (0, {(None, 0): 3})


def test_the_layout_follows_the_protocol_version_written():
    assert uses_shards(ProtocolVersions(2, 2)) and uses_shards(ProtocolVersions(2, 5))
    assert not uses_shards(ProtocolVersions(1, 1)) and not uses_shards(ProtocolVersions(1, 2))  # writes 1
    layout = KeyLayout.of(ALICE, ProtocolVersions(2, 2))
    assert layout == KeyLayout(True, ALICE, SHARDS_READ_PER_WINDOW)
    spread = layout.spread(one_key, shard_key)
    assert isinstance(spread, ShardedKeys) and spread.peer_id == ALICE and spread.shards_read == 4
    assert spread.write_keys(3) == ["shard/3/0/0"]
    legacy = KeyLayout.of(ALICE, ProtocolVersions(1, 1)).spread(one_key, shard_key)
    assert isinstance(legacy, OneKeyPerWindow) and legacy.write_keys(3) == ["one/3"]
    assert isinstance(KeyLayout.of(ALICE, ProtocolVersions(1, 2)).spread(one_key, shard_key), OneKeyPerWindow)


def test_a_node_left_below_the_swarms_level_finds_it_by_probing_the_levels_above():
    spread = sharded()
    spread.observe(at(0, 8), 3)  # 8 peers at bits 0: in the band, nobody lonely
    assert (spread.estimate, spread.bits) == (8.0, 0)
    # One probe every 4 reads, 1, 2, 4 and 8 levels above in turn: reads 4, 8, 12 and 16 are
    # turns 1, 2, 3 and 4 -> steps 2, 4, 8 and 1 (read 1 was the observe above).
    probes = []
    for window in range(4, 20):
        probes.append([k.bits for k in spread.read_keys(window, window) if k.bits != 0])
        spread.observe(at(0, 8), window)
    assert probes == [[], [], [], [2], [], [], [], [4], [], [], [], [8], [], [], [], [1]]
    # The swarm writes at bits 4: its own shard there holds 16 peers, 16 x 16 = 256 > 8: it jumps.
    spread.observe({(0, 0): 8, (4, shard_of(ALICE, 4)): 16}, 8)
    assert (spread.estimate, spread.bits) == (256.0, 4)
    # Fewer than ADOPT_PEERS (4) in a probed shard: a few stray entries move nobody.
    stray = sharded()
    stray.observe({(0, 0): 8, (12, 3): 3}, 3)
    assert (stray.estimate, stray.bits) == (8.0, 0)
    # A probed level that says less than the estimate does not move it down either.
    big = sharded()
    climb_to_200(big)
    big.observe({(4, 2): 12, (5, 1): 6}, 9)  # 6 x 32 = 192 < 198.4
    assert big.bits == 4


def test_a_flood_into_one_shard_moves_a_node_one_level_not_out_of_sight_of_its_peers():
    capped = sharded(counted_per_shard=COUNTED_PER_SHARD)
    capped.observe(at(0, 320), 3)  # 5 holders x 64 flood identities, merged: counted as 32
    assert (capped.estimate, capped.bits) == (32.0, 1)  # 32 / 2 = 16: one level, and no more
    capped.observe(at(1, 2, 1), 4)  # the flood wrote at bits 0 only: at bits 1, the 3 honest peers
    # mean 1.5 x 2 = 3: the EWMA says 32 + 0.2 x (3 - 32) = 26.2; 26.2 / 2 = 13.1 stays in the band,
    # and with 2 shards a node reads both in turn: it still sees every honest peer
    assert (round(capped.estimate, 6), capped.bits) == (26.2, 1)
    turn = []
    for _ in range(2):
        turn += [k.shard for k in capped.read_keys(4, 4) if k.bits == 1]
        capped.observe(at(1, 2, 1), 4)
    assert sorted(turn) == [0, 1]
