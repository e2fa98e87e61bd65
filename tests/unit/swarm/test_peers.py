"""swarm/peers.py: the peer table (refresh, replay, expiry) and the record intake (what it drops and counts)."""
import pytest

from swarmnode.protocol import Rejected, RejectReason, build_peer_record, check_peer_record
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.transport import StoredValue
from swarmnode.swarm.windows import peer_records_key, rollouts_key, summaries_key
from tests.helpers import record_fields
from tests.unit.protocol.helpers import SPEEDS, fields

FIELDS = record_fields("s")


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
