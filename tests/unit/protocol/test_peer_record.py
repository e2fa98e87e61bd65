"""protocol/peer_record.py: building and checking PeerRecords (context, binding, measured speeds)."""
import math

import pytest

from swarmnode.protocol import MessageKind, Rejected, RejectReason, build_peer_record, check_peer_record, seal
from swarmnode.protocol.generated import envelope_pb2, peer_record_pb2
from swarmnode.protocol.limits import CAPABILITY_CAPS
from tests.helpers import record_fields
from tests.unit.protocol.helpers import SPEEDS, fields, speaking

FIELDS = record_fields("s", gflops=1.0)


def reason_of(data, *, subkey, swarm="s", now=105.0):
    with pytest.raises(Rejected) as info:
        check_peer_record(data, subkey=subkey, swarm=swarm, now=now)
    return info.value.reason


def test_valid_record_is_accepted(make_identity):
    me = make_identity()
    record = check_peer_record(build_peer_record(me, FIELDS, now=100.0, ttl_s=20.0), subkey=me.peer_id, swarm="s", now=105.0)
    assert (record.peer_id, record.expires_at, record.capability.matmul_gflops) == (me.peer_id, 120.0, 1.0)


def test_context_rejections(make_identity):
    me, other = make_identity(), make_identity()
    data = build_peer_record(me, FIELDS, now=100.0, ttl_s=20.0)
    assert reason_of(data, subkey=other.peer_id) == RejectReason.SUBKEY_MISMATCH
    assert reason_of(data, subkey=me.peer_id, swarm="t") == RejectReason.WRONG_SWARM
    assert reason_of(data, subkey=me.peer_id, now=121.0) == RejectReason.EXPIRED
    future = build_peer_record(me, FIELDS, now=1000.0, ttl_s=20.0)
    assert reason_of(future, subkey=me.peer_id, now=100.0) == RejectReason.FROM_FUTURE


def test_key_binding_rejections(make_identity):
    me, mallory = make_identity(), make_identity()
    # Mallory signs a record claiming my peer id with her own signing key and her binding.
    forged = peer_record_pb2.PeerRecord(
        peer_id=me.peer_id, public_key=mallory.public_key, peer_id_binding=mallory.bind_signing_key(),
        swarm="s", timestamp=100.0, expires_at=120.0,
    )

    class Claiming:  # signs as Mallory but puts my peer id in the envelope
        peer_id = me.peer_id
        public_key = mallory.public_key
        sign = staticmethod(mallory.sign)

    assert reason_of(seal(Claiming, MessageKind.PEER_RECORD, forged), subkey=me.peer_id) == RejectReason.KEY_BINDING
    # Record whose peer id differs from the envelope sender.
    mismatched = peer_record_pb2.PeerRecord(
        peer_id=me.peer_id, public_key=mallory.public_key, peer_id_binding=b"\x00" * 64,
        swarm="s", timestamp=100.0, expires_at=120.0,
    )
    assert reason_of(seal(mallory, MessageKind.PEER_RECORD, mismatched), subkey=me.peer_id) == RejectReason.KEY_BINDING


def reason(identity, **capability):
    data = build_peer_record(identity, fields(**capability), now=100.0, ttl_s=20.0)
    try:
        check_peer_record(data, subkey=identity.peer_id, swarm="s", now=105.0)
    except Rejected as r:
        return r.reason
    return None


def test_honest_speeds_pass_and_every_speed_is_bounded(make_identity):
    me = make_identity()
    assert reason(me, **SPEEDS) is None
    assert reason(me, **{name: cap for name, cap in CAPABILITY_CAPS.items()}) is None  # at the cap: accepted
    for name, cap in CAPABILITY_CAPS.items():
        for bad in (math.nan, math.inf, -math.inf, -1.0):
            assert reason(me, **{name: bad}) == RejectReason.INVALID_FIELD, (name, bad)
        for bad in (cap * 1.01, 3.4e38):
            assert reason(me, **{name: bad}) == RejectReason.OUT_OF_RANGE, (name, bad)


def test_record_origin_names_the_swarm_and_the_protocol_versions(make_identity):
    from swarmnode.protocol import record_origin
    from swarmnode.protocol.generated import envelope_pb2

    peer = make_identity()
    value = build_peer_record(peer, record_fields("other-swarm"), 100.0, 10.0)
    origin = record_origin(value)
    assert (origin.peer_id, origin.swarm, origin.versions) == (peer.peer_id, "other-swarm", (2, 2))
    newer = build_peer_record(speaking(peer, 3, 4), record_fields("other-swarm"), 100.0, 10.0)
    origin = record_origin(newer)  # another version's record is verified and read all the same
    assert (origin.peer_id, origin.swarm, origin.versions) == (peer.peer_id, "other-swarm", (3, 4))
    envelope = envelope_pb2.SignedEnvelope.FromString(newer)
    envelope.signature = bytes(64)  # a forged record, of any version, is believed about nothing
    assert record_origin(envelope.SerializeToString()) is None
    assert record_origin(b"garbage") is None and record_origin("not bytes") is None


def test_a_record_of_another_version_is_opened_and_verified_and_says_what_it_speaks(make_identity):
    from swarmnode.protocol import spoken_versions

    newer = make_identity()
    data = build_peer_record(speaking(newer, 3, 4), FIELDS, now=100.0, ttl_s=20.0)
    record = check_peer_record(data, subkey=newer.peer_id, swarm="s", now=105.0)  # this node speaks 2-2
    assert (record.peer_id, spoken_versions(record)) == (newer.peer_id, (3, 4))
    assert reason_of(data, subkey=newer.peer_id, swarm="t") == RejectReason.WRONG_SWARM  # checked like any other
    # And the other way round: a node of 3-4 reads this one's record as 2-2.
    older = make_identity()
    data = build_peer_record(older, FIELDS, now=100.0, ttl_s=20.0)
    assert spoken_versions(check_peer_record(data, subkey=older.peer_id, swarm="s", now=105.0)) == (2, 2)


def _record_without_versions(identity, envelope_version: int) -> bytes:
    """The record an older node publishes: no versions in it, written in `envelope_version`."""
    signer = speaking(identity, envelope_version, envelope_version)
    data = build_peer_record(signer, FIELDS, now=100.0, ttl_s=20.0)
    envelope = envelope_pb2.SignedEnvelope.FromString(data)
    record = peer_record_pb2.PeerRecord.FromString(envelope.body)
    record.ClearField("min_protocol_version")
    record.ClearField("max_protocol_version")
    return seal(signer, MessageKind.PEER_RECORD, record)


def test_a_record_without_versions_speaks_its_envelopes_version_only(make_identity):
    from swarmnode.protocol import spoken_versions

    me = make_identity()
    for version in (1, 5):
        record = check_peer_record(_record_without_versions(me, version), subkey=me.peer_id, swarm="s", now=105.0)
        assert spoken_versions(record) == (version, version)


def test_impossible_version_ranges_are_invalid_and_held_against_the_signer(make_identity):
    me = make_identity()
    for lowest, highest in ((0, 2), (2, 1), (2, 0), (1, 1001), (3, 4)):  # half given, empty, beyond readable, without 2
        data = build_peer_record(me, FIELDS, now=100.0, ttl_s=20.0)
        envelope = envelope_pb2.SignedEnvelope.FromString(data)
        record = peer_record_pb2.PeerRecord.FromString(envelope.body)
        record.min_protocol_version, record.max_protocol_version = lowest, highest
        with pytest.raises(Rejected) as info:
            check_peer_record(seal(me, MessageKind.PEER_RECORD, record), subkey=me.peer_id, swarm="s", now=105.0)
        assert (info.value.reason, info.value.sender) == (RejectReason.INVALID_FIELD, me.peer_id), (lowest, highest)
    # a version beyond the readable ones is garbage, whatever the record says
    data = build_peer_record(speaking(me, 1001, 1001), FIELDS, now=100.0, ttl_s=20.0)
    assert reason_of(data, subkey=me.peer_id) == RejectReason.UNSUPPORTED_VERSION


def test_the_window_travels_in_the_record_and_an_older_record_reads_as_unknown(make_identity):
    import dataclasses

    from swarmnode.protocol import record_origin

    peer = make_identity()
    value = build_peer_record(peer, dataclasses.replace(FIELDS, window_s=30.0), now=100.0, ttl_s=20.0)
    assert check_peer_record(value, subkey=peer.peer_id, swarm="s", now=105.0).window_s == 30.0
    origin = record_origin(value)
    assert (origin.window_s, origin.expires_at) == (30.0, 120.0)
    older = build_peer_record(peer, FIELDS, now=100.0, ttl_s=20.0)  # an older node's: no window in it
    assert check_peer_record(older, subkey=peer.peer_id, swarm="s", now=105.0).window_s == 0.0
    assert record_origin(older).window_s == 0.0
    # An older node's schema, without the field, still reads a newer record (it skips field 22).
    old = _schema_without("window_s").FromString(envelope_pb2.SignedEnvelope.FromString(value).body)
    assert (old.peer_id, old.swarm, old.expires_at) == (peer.peer_id, "s", 120.0) and not hasattr(old, "window_s")


def _schema_without(field_name: str):
    """PeerRecord as a schema without `field_name` parses it (in a pool of its own)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto.FromString(peer_record_pb2.DESCRIPTOR.serialized_pb)
    message = next(m for m in proto.message_type if m.name == "PeerRecord")
    kept = [f for f in message.field if f.name != field_name]
    del message.field[:]
    message.field.extend(kept)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("swarmnode.v1.PeerRecord"))


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan, 86_401.0])
def test_an_impossible_window_is_invalid(make_identity, bad):
    import dataclasses

    peer = make_identity()
    value = build_peer_record(peer, dataclasses.replace(FIELDS, window_s=bad), now=100.0, ttl_s=20.0)
    assert reason_of(value, subkey=peer.peer_id) in (RejectReason.INVALID_FIELD, RejectReason.OUT_OF_RANGE)
