"""protocol/peer_record.py: building and checking PeerRecords (context, binding, measured speeds)."""
import math

import pytest

from swarmnode.protocol import MessageKind, Rejected, RejectReason, build_peer_record, check_peer_record, seal
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.limits import CAPABILITY_CAPS
from tests.helpers import record_fields
from tests.unit.protocol.helpers import SPEEDS, fields

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


def test_record_origin_names_the_swarm_or_the_protocol_version(make_identity):
    from swarmnode.protocol import PROTOCOL_VERSION, record_origin
    from swarmnode.protocol.generated import envelope_pb2

    peer = make_identity()
    value = build_peer_record(peer, record_fields("other-swarm"), 100.0, 10.0)
    origin = record_origin(value)
    assert (origin.peer_id, origin.swarm, origin.protocol_version) == (peer.peer_id, "other-swarm", PROTOCOL_VERSION)
    envelope = envelope_pb2.SignedEnvelope.FromString(value)
    envelope.protocol_version = PROTOCOL_VERSION + 1
    origin = record_origin(envelope.SerializeToString())
    assert (origin.peer_id, origin.swarm, origin.protocol_version) == (peer.peer_id, None, PROTOCOL_VERSION + 1)
    envelope.protocol_version = PROTOCOL_VERSION
    envelope.signature = bytes(64)  # a forged record of this version is believed about nothing
    assert record_origin(envelope.SerializeToString()) is None
    assert record_origin(b"garbage") is None and record_origin("not bytes") is None
