"""swarm/peers.py: the peer table (refresh, replay, expiry) and the record intake (what it drops and counts)."""
import dataclasses

import pytest

from swarmnode.protocol import Rejected, RejectReason, build_peer_record, check_peer_record
from swarmnode.swarm.peers import UNVERIFIED, MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.transports.base import StoredValue
from swarmnode.swarm.windows import peer_records_key, rollouts_key, summaries_key
from tests.helpers import record_fields
from tests.unit.protocol.helpers import NOW, SPEEDS, TTL, announce, fields, forged_announcement, rejection

FIELDS = record_fields("s")
BASE = "base-abc"  # a base model's fingerprint


def record(identity, now, ttl=10.0):
    return check_peer_record(build_peer_record(identity, FIELDS, now, ttl), subkey=identity.peer_id, swarm="s", now=now)


def test_table_refreshes_refuses_replay_and_expires(make_identity):
    a = make_identity()
    table = PeerTable("self")
    old, new = record(a, 100.0), record(a, 105.0)
    assert table.offer(old, now=100.0)
    assert not table.offer(old, now=101.0)  # same record re-read: no change
    assert table.offer(new, now=105.0)
    with pytest.raises(Rejected) as info:
        table.offer(old, now=106.0)
    assert info.value.reason == RejectReason.REPLAYED
    assert table.expire(now=114.9) == []
    assert table.expire(now=115.0) == [a.peer_id]
    assert len(table) == 0


def test_intake_counts_each_bad_value_once_and_skips_own(make_identity):
    me, peer = make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    values = [
        StoredValue(peer.peer_id, build_peer_record(peer, FIELDS, 100.0, 10.0), 110.0),
        StoredValue(me.peer_id, build_peer_record(me, FIELDS, 100.0, 10.0), 110.0),
        StoredValue("x", b"garbage", 110.0),
        StoredValue("y", "not bytes", 110.0),
    ]
    for _ in range(3):  # the same DHT contents read on three polls
        intake.ingest(values, now=101.0)
    assert peer.peer_id in intake.table and me.peer_id not in intake.table
    assert stats.accepted == {"peer_record": 1}
    assert stats.rejected == {"malformed": 2}
    assert stats.rejected_by_sender["unverified"]["malformed"] == 2


def test_policy_admits_only_valid_records_under_known_keys(make_identity):
    peer = make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0)
    windows = (8, 9, 10, 11)
    assert intake.known_keys(105.0) == ([peer_records_key("s", w) for w in windows] + [rollouts_key("s", w) for w in windows]
                                        + [summaries_key("s", w) for w in windows])
    value = build_peer_record(peer, FIELDS, 100.0, 10.0)
    key = peer_records_key("s", 10)
    assert intake.admit(key, peer.peer_id, value, expiration=110.0, now=101.0)
    # The same genuine record kept in the DHT far past its own expiry (an eviction attempt).
    assert not intake.admit(key, peer.peer_id, value, expiration=3600.0, now=101.0)
    assert not intake.admit(key, peer.peer_id, b"garbage", expiration=110.0, now=101.0)
    intake.refuse_unknown_key(b"\x01" * 20, b"x")
    intake.refuse_unknown_key(b"\x01" * 20, b"x")  # counted once
    assert stats.rejected == {"dht_expiration": 1, "malformed": 1, "unknown_key": 1}


def test_records_of_another_swarm_refused_as_unknown_keys_are_remembered_by_peer(make_identity):
    peer = make_identity()
    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0)
    intake.refuse_unknown_key(b"\x02" * 20, build_peer_record(peer, record_fields("other"), 100.0, 10.0))
    intake.refuse_unknown_key(b"\x03" * 20, b"x")
    assert [(p, o.swarm) for p, o in intake.foreign.items()] == [(peer.peer_id, "other")]


def test_a_record_with_an_impossible_speed_is_dropped_and_counted(make_identity):
    me, honest, liar = make_identity(), make_identity(), make_identity()
    table, stats = PeerTable(me.peer_id), MessageStats()
    intake = RecordIntake(table, stats, "s", window_s=10.0)
    values = [StoredValue(honest.peer_id, build_peer_record(honest, fields(**SPEEDS), 100.0, 10.0), 110.0),
              StoredValue(liar.peer_id, build_peer_record(liar, fields(train_samples_per_s=1e12), 100.0, 10.0), 110.0)]
    intake.ingest(values, now=101.0)
    assert honest.peer_id in table and liar.peer_id not in table
    assert stats.counts()["rejected"] == {"out_of_range": 1}
    # Ranges are checked before the key binding proves who signed: as for every other field,
    # the rejection is counted but not held against the peer id the record names.
    assert liar.peer_id not in stats.rejected_by_sender


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


def test_intake_admits_announcements_on_rollouts_keys(make_identity):
    me, peer, other = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    keys = intake.known_keys(NOW + 5)  # window 100
    assert [k for k in keys if "/rollouts/" in k] == [rollouts_key("s", w) for w in (98, 99, 100, 101)]
    assert rollouts_key("s", 100) == "swarmnode/s/rollouts/100"
    key = rollouts_key("s", 100)
    value = announce(peer)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)  # re-judged from cache
    assert not intake.admit(key, peer.peer_id, forged_announcement(peer, other), expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(key, other.peer_id, value, expiration=NOW + TTL, now=NOW + 1)  # another's subkey
    assert not intake.admit(key, peer.peer_id, value, expiration=NOW + 3600, now=NOW + 1)  # kept too long
    # A peer record is not admitted under a rollouts key, nor an announcement under a peers key.
    record = build_peer_record(peer, record_fields("s"), NOW, TTL)
    assert not intake.admit(key, peer.peer_id, record, expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(peer_records_key("s", 100), peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(peer_records_key("s", 100), peer.peer_id, record, expiration=NOW + TTL, now=NOW + 1)
    assert stats.rejected == {"key_binding": 1, "subkey_mismatch": 1, "dht_expiration": 1, "wrong_kind": 2}
    # A forged binding proves no identity: counted as unverified, never against the peer it names.
    assert stats.rejected_by_sender["unverified"]["key_binding"] == 1
    # Its own valid values, misplaced (another subkey) or pinned (a far DHT expiration) by anyone: not its fault.
    assert peer.peer_id not in stats.rejected_by_sender


def test_intake_announcements_keeps_valid_ones_of_others(make_identity):
    me, a, b = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    values = [
        StoredValue(a.peer_id, announce(a), NOW + TTL),
        StoredValue(me.peer_id, announce(me), NOW + TTL),  # own: skipped, not rejected
        StoredValue(b.peer_id, forged_announcement(b, a), NOW + TTL),
        StoredValue("x", b"garbage", NOW + TTL),
    ]
    for _ in range(3):  # three polls of the same DHT contents: each bad value counted once
        got = intake.announcements(values, now=NOW + 1)
        assert [x.peer_id for x in got] == [a.peer_id]
    assert stats.rejected == {"key_binding": 1, "malformed": 1}


def test_peer_table_with_base(make_identity):
    me, a, b, c = (make_identity() for _ in range(4))
    table = PeerTable(me.peer_id)

    def offer(identity, base, now, ttl=10.0):
        fields = dataclasses.replace(record_fields("s"), base_fingerprint=base)
        record = check_peer_record(build_peer_record(identity, fields, now, ttl), subkey=identity.peer_id, swarm="s",
                                   now=now)
        table.offer(record, now)

    offer(a, BASE, 100.0)
    offer(b, "other-base", 101.0)
    offer(c, BASE, 102.0, ttl=1.0)
    assert table.with_base(BASE) == [a.peer_id, c.peer_id]
    assert table.with_base(BASE, now=105.0) == [a.peer_id]  # c's record has expired by then
    assert table.with_base("other-base") == [b.peer_id]
    assert table.with_base("") == [] and table.with_base("nobody") == []
    assert [e.base_fingerprint for e in table.entries()] == [BASE, "other-base", BASE]
    # A base fingerprint longer than the schema allows is refused.
    long_fields = dataclasses.replace(record_fields("s"), base_fingerprint="x" * 129)
    r = rejection(check_peer_record, build_peer_record(a, long_fields, 100.0, 10.0), subkey=a.peer_id, swarm="s",
                  now=100.0)
    assert r.reason == RejectReason.INVALID_FIELD


def test_message_stats_bound_senders_and_never_blame_a_claimed_id():
    stats = MessageStats(max_senders=2)
    stats.reject(RejectReason.BAD_SIGNATURE, None)
    for i in range(5):
        stats.reject(RejectReason.MALFORMED, f"p{i}")
    assert stats.rejected == {"bad_signature": 1, "malformed": 5}
    assert set(stats.rejected_by_sender) == {"p3", "p4"} and stats.senders_evicted == 4
    stats.reject(RejectReason.KEY_BINDING, None)
    assert stats.rejected_by_sender[UNVERIFIED] == {"key_binding": 1}


def test_forged_record_naming_an_honest_peer_is_not_counted_against_it(make_identity):
    honest, mallory = make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0)
    from swarmnode.protocol import MessageKind, seal
    from swarmnode.protocol.generated import peer_record_pb2

    # Mallory signs a record that claims the honest peer's id (with her own binding).
    claim = peer_record_pb2.PeerRecord(peer_id=honest.peer_id, public_key=mallory.public_key,
                                       peer_id_binding=mallory.bind_signing_key(), swarm="s", timestamp=NOW,
                                       expires_at=NOW + 10)

    class ClaimsHonest:
        peer_id = honest.peer_id
        public_key = mallory.public_key
        sign = staticmethod(mallory.sign)

    assert not intake.admit(peer_records_key("s", 100), honest.peer_id, seal(ClaimsHonest, MessageKind.PEER_RECORD, claim),
                            NOW + 10, NOW + 1)
    assert stats.rejected == {"key_binding": 1} and honest.peer_id not in stats.rejected_by_sender


def test_peer_table_is_bounded_least_recently_refreshed_first(make_identity):
    a, b, c = make_identity(), make_identity(), make_identity()
    table = PeerTable("self", capacity=2)
    rec = lambda who, t: check_peer_record(build_peer_record(who, FIELDS, t, 10.0), subkey=who.peer_id, swarm="s", now=t)
    table.offer(rec(a, NOW), NOW)
    table.offer(rec(b, NOW), NOW)
    table.offer(rec(a, NOW + 1), NOW + 1)  # a refreshed: b is now the least recent
    table.offer(rec(c, NOW + 2), NOW + 2)
    assert {e.peer_id for e in table.entries()} == {a.peer_id, c.peer_id} and table.evicted == 1


def test_intake_keeps_at_most_max_values_per_key(make_identity):
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0, max_values_per_key=2)
    key = peer_records_key("s", 100)
    first, second, third = make_identity(), make_identity(), make_identity()
    value = lambda who: build_peer_record(who, FIELDS, NOW, 10.0)
    assert intake.admit(key, first.peer_id, value(first), NOW + 10, NOW + 1)
    assert intake.admit(key, second.peer_id, value(second), NOW + 10, NOW + 1)
    assert not intake.admit(key, third.peer_id, value(third), NOW + 10, NOW + 1)  # a third peer: over the cap
    assert intake.admit(key, first.peer_id, build_peer_record(first, FIELDS, NOW + 1, 10.0), NOW + 11, NOW + 1)
    assert intake.values_over_key_cap == 1


def test_a_peer_of_other_versions_stays_out_of_the_table_counted_once_and_its_values_stay_in_the_dht(make_identity):
    from swarmnode.protocol.summary_messages import build_summary_announcement
    from tests.unit.protocol.helpers import speaking

    me, same, newer = make_identity(), make_identity(), make_identity()
    table, stats = PeerTable(me.peer_id), MessageStats()
    intake = RecordIntake(table, stats, "s", window_s=10.0)
    newer_signer = speaking(newer, 3, 4)
    newer_records = [build_peer_record(newer_signer, FIELDS, t, 10.0) for t in (100.0, 102.0)]
    newer_announcement = announce(newer_signer)
    newer_summary = build_summary_announcement(newer_signer, window=100, summary_id=1, base_fingerprint=BASE,
                                               size_bytes=10, now=NOW, ttl_s=TTL)
    values = [StoredValue(same.peer_id, build_peer_record(same, FIELDS, 100.0, 10.0), 110.0),
              StoredValue(newer.peer_id, newer_records[0], 110.0)]
    for now in (101.0, 101.5):  # two polls
        intake.ingest(values, now=now)
    intake.ingest([StoredValue(newer.peer_id, newer_records[1], 112.0)], now=102.5)  # its next record
    assert same.peer_id in table and newer.peer_id not in table  # never fetched from, never sent to
    assert stats.rejected == {"incompatible_version": 1}  # once for the peer, not once per record
    assert stats.rejected_by_sender[newer.peer_id] == {"incompatible_version": 1}
    [kept] = intake.incompatible_peers(now=103.0)
    assert (kept.peer_id, kept.versions, kept.expires_at) == (newer.peer_id, (3, 4), 112.0)
    assert intake.incompatible_peers(now=112.0) == []  # its newest record expired
    origin = intake.origin_of(newer.peer_id)
    assert (origin.swarm, origin.versions) == ("s", (3, 4)) and intake.origin_of(same.peer_id) is None
    # The DHT keeps its values (a swarm of two versions keeps one DHT); this node does not use its announcements.
    assert intake.admit(peer_records_key("s", 10), newer.peer_id, newer_records[1], expiration=112.0, now=102.5)
    assert intake.admit(rollouts_key("s", 100), newer.peer_id, newer_announcement, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(summaries_key("s", 100), newer.peer_id, newer_summary, expiration=NOW + TTL, now=NOW + 1)
    ours = announce(same)
    got = intake.announcements([StoredValue(newer.peer_id, newer_announcement, NOW + TTL),
                                StoredValue(same.peer_id, ours, NOW + TTL)], now=NOW + 1)
    assert [a.peer_id for a in got] == [same.peer_id]
    assert intake.summary_announcements([StoredValue(newer.peer_id, newer_summary, NOW + TTL)], now=NOW + 1) == []
    assert stats.rejected == {"incompatible_version": 1}


def test_a_peer_that_speaks_this_nodes_versions_again_joins_the_table(make_identity):
    from tests.unit.protocol.helpers import speaking

    me, peer = make_identity(), make_identity()
    table, stats = PeerTable(me.peer_id), MessageStats()
    intake = RecordIntake(table, stats, "s", window_s=10.0)
    of_version_3 = build_peer_record(speaking(peer, 3, 3), FIELDS, 100.0, 10.0)
    intake.ingest([StoredValue(peer.peer_id, of_version_3, 110.0)], now=101.0)
    assert peer.peer_id not in table and intake.incompatible_peers(101.0)
    intake.ingest([StoredValue(peer.peer_id, build_peer_record(peer, FIELDS, 103.0, 10.0), 113.0)], now=103.5)
    assert peer.peer_id in table and intake.incompatible_peers(103.5) == []


def test_records_of_another_swarm_and_version_under_unknown_keys_are_remembered(make_identity):
    from tests.unit.protocol.helpers import speaking

    peer, newer = make_identity(), make_identity()
    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0)
    newer_record = build_peer_record(speaking(newer, 3, 4), record_fields("s"), 100.0, 10.0)
    intake.refuse_unknown_key(b"\x04" * 20, newer_record)
    intake.refuse_unknown_key(b"\x05" * 20, build_peer_record(peer, record_fields("s"), 100.0, 10.0))  # ours: no
    assert [(p, o.swarm, o.versions) for p, o in intake.foreign.items()] == [(newer.peer_id, "s", (3, 4))]


def test_short_address_keeps_the_address_and_shortens_the_peer_id():
    from swarmnode.swarm.peers import short_address

    peer = "12D3KooWRF8XmKrkCfhJV33DRaRmqU5oKT9gXi8gWYwfZ8a4mTZo"
    assert short_address(f"/ip4/198.18.0.10/tcp/7100/p2p/{peer}") == "/ip4/198.18.0.10/tcp/7100 (12D3KooW…a4mTZo)"
    assert short_address("/ip4/198.18.0.10/tcp/7100") == "/ip4/198.18.0.10/tcp/7100"


def test_peer_id_of_a_full_multiaddr():
    from swarmnode.swarm.peers import peer_id_of

    assert peer_id_of("/dns4/boot.example.org/tcp/7100/p2p/12D3KooWX") == "12D3KooWX"
    assert peer_id_of("/ip4/198.18.0.10/tcp/1/p2p/12D3KooWR/p2p-circuit/p2p/12D3KooWT") == "12D3KooWT"


# -- the sharded key layout (protocol version 2): shard keys named from values, misplaced values refused


def sharded_values(peer, window=100):
    """A valid peer record, rollout announcement and summary announcement of `peer` in `window` (NOW: 100)."""
    from swarmnode.protocol.rollout_messages import build_rollout_announcement
    from swarmnode.protocol.summary_messages import build_summary_announcement

    return (build_peer_record(peer, FIELDS, NOW, TTL),
            build_rollout_announcement(peer, window=window, first_batch_id=3, last_batch_id=7, model_fingerprint="fp",
                                       now=NOW, ttl_s=TTL),
            build_summary_announcement(peer, window=window, summary_id=1, base_fingerprint=BASE, size_bytes=10,
                                       now=NOW, ttl_s=TTL))


def test_candidate_keys_name_the_shard_keys_a_value_is_written_under(make_identity):
    from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions
    from swarmnode.swarm.shards import shard_of
    from swarmnode.swarm.windows import (
        peer_records_shard_key,
        rollouts_shard_key,
        shard_keys_of,
        summaries_shard_key,
        window_index,
    )

    peer = make_identity()
    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0)
    assert intake.sharded and THIS_RELEASE == ProtocolVersions(2, 2)
    record, rollouts, summary = sharded_values(peer)
    window = window_index(NOW, 10.0)
    assert window == 100
    got = intake.candidate_keys(peer.peer_id, record, NOW + TTL, NOW + 1)
    assert got == shard_keys_of("s", "peers", 100, peer.peer_id) and len(got) == 17
    assert peer_records_shard_key("s", window, 0, 0) in got
    assert peer_records_shard_key("s", 100, 1, shard_of(peer.peer_id, 1)) in got
    assert peer_records_shard_key("s", 100, 1, 1 - shard_of(peer.peer_id, 1)) not in got
    got = intake.candidate_keys(peer.peer_id, rollouts, NOW + TTL, NOW + 1)
    assert got == shard_keys_of("s", "rollouts", 100, peer.peer_id) and rollouts_shard_key("s", 100, 0, 0) in got
    got = intake.candidate_keys(peer.peer_id, summary, NOW + TTL, NOW + 1)
    assert got == shard_keys_of("s", "summaries", 100, peer.peer_id, BASE)
    assert summaries_shard_key("s", 100, BASE, 0, 0) in got
    # No valid value, no names: garbage, a subkey that is no peer id, another peer's subkey, a far window.
    assert intake.candidate_keys(peer.peer_id, b"garbage", NOW + TTL, NOW + 1) == []
    assert intake.candidate_keys(peer.peer_id, "not bytes", NOW + TTL, NOW + 1) == []
    assert intake.candidate_keys(7, record, NOW + TTL, NOW + 1) == []
    assert intake.candidate_keys(make_identity().peer_id, record, NOW + TTL, NOW + 1) == []
    assert intake.candidate_keys(peer.peer_id, announce(peer), NOW + TTL, NOW + 1) == []  # window 33
    # A node of one key per window names no shard keys.
    legacy = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0, versions=ProtocolVersions(1, 1))
    assert not legacy.sharded
    for value in (record, rollouts, summary):
        assert legacy.candidate_keys(peer.peer_id, value, NOW + TTL, NOW + 1) == []


def test_admit_refuses_a_value_under_a_shard_its_peer_does_not_hash_into(make_identity):
    from swarmnode.swarm.shards import shard_of
    from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, summaries_shard_key

    peer = make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0)
    record, rollouts, summary = sharded_values(peer)
    own = shard_of(peer.peer_id, 1)
    other = 1 - own
    assert not intake.admit(peer_records_shard_key("s", 100, 1, other), peer.peer_id, record, NOW + TTL, NOW + 1)
    assert stats.rejected == {"wrong_shard": 1}
    # Anyone can copy a signed value there: no sender is held to it.
    assert stats.rejected_by_sender == {"unverified": {"wrong_shard": 1}}
    assert intake.admit(peer_records_shard_key("s", 100, 1, own), peer.peer_id, record, NOW + TTL, NOW + 1)
    assert intake.admit(peer_records_shard_key("s", 100, 0, 0), peer.peer_id, record, NOW + TTL, NOW + 1)
    assert intake.admit(rollouts_shard_key("s", 100, 1, own), peer.peer_id, rollouts, NOW + TTL, NOW + 1)
    assert intake.admit(summaries_shard_key("s", 100, BASE, 1, own), peer.peer_id, summary, NOW + TTL, NOW + 1)
    assert not intake.admit(rollouts_shard_key("s", 100, 1, other), peer.peer_id, rollouts, NOW + TTL, NOW + 1)
    assert not intake.admit(summaries_shard_key("s", 100, BASE, 1, other), peer.peer_id, summary, NOW + TTL, NOW + 1)
    assert not intake.admit(peer_records_shard_key("s", 100, 1, 2), peer.peer_id, record, NOW + TTL, NOW + 1)  # no shard 2
    assert not intake.admit(peer_records_shard_key("s", 100, 0, 0), 7, record, NOW + TTL, NOW + 1)  # no peer id
    assert stats.rejected == {"wrong_shard": 5}
    # A shard key's kind is its name's: a rollout announcement under a peers shard is the wrong kind.
    assert not intake.admit(peer_records_shard_key("s", 100, 1, own), peer.peer_id, rollouts, NOW + TTL, NOW + 1)
    assert stats.rejected == {"wrong_shard": 5, "wrong_kind": 1}
    intake.refuse_misplaced(3)  # what a reader dropped
    intake.refuse_misplaced(0)
    assert stats.rejected == {"wrong_shard": 8, "wrong_kind": 1} and peer.peer_id not in stats.rejected_by_sender


def test_knows_key_of_shard_keys_of_near_windows_only_when_sharded():
    from swarmnode.protocol.versions import ProtocolVersions
    from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, summaries_shard_key

    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0)
    now = NOW + 1  # window 100: windows 98..101 are near
    for window in (98, 99, 100, 101):
        assert intake.knows_key(peer_records_shard_key("s", window, 1, 1), now)
        assert intake.knows_key(rollouts_shard_key("s", window, 0, 0), now)
        assert intake.knows_key(summaries_shard_key("s", window, BASE, 16, 65535), now)
        assert intake.knows_key(peer_records_key("s", window), now)  # one key per window: still known
    for window in (97, 102, 0):
        assert not intake.knows_key(peer_records_shard_key("s", window, 1, 1), now)
        assert not intake.knows_key(peer_records_key("s", window), now)
    assert not intake.knows_key(peer_records_shard_key("s", 100, 1, 2), now)  # shard out of range
    assert not intake.knows_key(peer_records_shard_key("s", 100, 17, 0), now)  # bits out of range
    assert not intake.knows_key(peer_records_shard_key("other", 100, 0, 0), now)
    assert not intake.knows_key("swarmnode/s/sharded/peers/100", now) and not intake.knows_key("garbage", now)
    assert intake.reads_nearest_holders()
    legacy = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0, versions=ProtocolVersions(1, 1))
    assert not legacy.knows_key(peer_records_shard_key("s", 100, 0, 0), now)
    assert not legacy.knows_key(rollouts_shard_key("s", 100, 0, 0), now)
    assert legacy.knows_key(peer_records_key("s", 100), now) and legacy.knows_key(summaries_key("s", 101), now)
    assert not legacy.reads_nearest_holders()


def test_admitting_a_record_of_a_version_this_node_does_not_speak_names_its_peer_once(make_identity):
    from tests.unit.protocol.helpers import speaking

    me, old = make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    key = peer_records_key("s", 100)  # a version-1 node writes one key per window
    first = build_peer_record(speaking(old, 1, 1), FIELDS, NOW, TTL)
    assert intake.admit(key, old.peer_id, first, NOW + TTL, NOW + 1)  # the DHT keeps it
    assert intake.admit(key, old.peer_id, first, NOW + TTL, NOW + 1)
    newer = build_peer_record(speaking(old, 1, 1), FIELDS, NOW + 2, TTL)
    assert intake.admit(key, old.peer_id, newer, NOW + 2 + TTL, NOW + 3)
    [kept] = intake.incompatible_peers(NOW + 3)
    assert (kept.peer_id, kept.versions, kept.timestamp, kept.expires_at) == (old.peer_id, (1, 1), NOW + 2, NOW + 2 + TTL)
    assert stats.rejected == {"incompatible_version": 1}
    assert stats.rejected_by_sender == {old.peer_id: {"incompatible_version": 1}}
    assert old.peer_id not in intake.table
    # A record of this node's own version admitted the same way names nobody.
    same = make_identity()
    assert intake.admit(key, same.peer_id, build_peer_record(same, FIELDS, NOW, TTL), NOW + TTL, NOW + 1)
    assert [p.peer_id for p in intake.incompatible_peers(NOW + 3)] == [old.peer_id]


def test_a_peer_of_another_window_is_remembered_by_its_record_under_a_key_this_node_does_not_use(make_identity):
    import dataclasses

    other, same, older = make_identity(), make_identity(), make_identity()
    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0)
    intake.refuse_unknown_key(b"\x06" * 20, build_peer_record(other, dataclasses.replace(record_fields("s"), window_s=30.0),
                                                              100.0, 10.0))
    # The same window (a record under a key just out of range), and an older node's that says no window: not foreign.
    intake.refuse_unknown_key(b"\x07" * 20, build_peer_record(same, dataclasses.replace(record_fields("s"), window_s=10.0),
                                                              100.0, 10.0))
    intake.refuse_unknown_key(b"\x08" * 20, build_peer_record(older, record_fields("s"), 100.0, 10.0))
    assert [(p, o.window_s) for p, o in intake.foreign.items()] == [(other.peer_id, 30.0)]
    assert [o.peer_id for o in intake.other_window_peers(105.0)] == [other.peer_id]
    assert intake.other_window_peers(111.0) == []  # its record expired
    assert intake.origin_of(other.peer_id).window_s == 30.0
