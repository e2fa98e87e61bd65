import pytest

from swarmnode.protocol import MessageKind, Rejected, RejectReason, build_peer_record, check_peer_record, seal
from swarmnode.protocol.generated import peer_record_pb2
from tests.helpers import record_fields

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
