"""protocol/codec.py: the signed envelope (signing bytes, seal and open, typed rejections)."""
import struct

import pytest

from swarmnode.protocol import (
    MAX_BODY_BYTES,
    GradientSummary,
    MessageKind,
    PeerRecord,
    Rejected,
    RejectReason,
    open_envelope,
    seal,
    signing_bytes,
)
from swarmnode.protocol.codec import VersionedSigner
from swarmnode.protocol.generated import envelope_pb2, gradient_summary_pb2
from swarmnode.protocol.versions import ProtocolVersions
from tests.unit.protocol.helpers import announcement, rollout_batch


def gradient_summary() -> GradientSummary:
    s = GradientSummary(model_fingerprint="m", base_fingerprint="b", base_version=1, step_start=0, step_end=4,
                        scheme=gradient_summary_pb2.COMPRESSION_SCHEME_TOPK)
    s.tensors.add(name="w", shape=[2, 3], indices=struct.pack("<2I", 0, 5),
                  values=struct.pack("<2f", 0.5, -0.5), value_dtype=gradient_summary_pb2.VALUE_DTYPE_FLOAT32)
    return s


def peer_record(identity) -> PeerRecord:
    return PeerRecord(peer_id=identity.peer_id, public_key=identity.public_key,
                      peer_id_binding=identity.bind_signing_key(), swarm="s", timestamp=1.0, expires_at=2.0)


def summary_announcement(identity) -> gradient_summary_pb2.SummaryAnnouncement:
    return gradient_summary_pb2.SummaryAnnouncement(peer_id=identity.peer_id, window=3, summary_id=2, base_fingerprint="b",
                                                    size_bytes=100, timestamp=1.0, expires_at=2.0,
                                                    peer_id_binding=identity.bind_signing_key())


def test_signing_bytes_layout_by_hand():
    got = signing_bytes(1, 2, "ab", b"xyz")
    assert got == b"swarmnode/v1/sig\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x02" + b"ab" + b"\x00\x00\x00\x03" + b"xyz"


def message_of(kind, identity):
    """A valid message of `kind` (records and announcements name `identity`)."""
    return {MessageKind.PEER_RECORD: lambda: peer_record(identity),
            MessageKind.ROLLOUT_BATCH: rollout_batch,
            MessageKind.GRADIENT_SUMMARY: gradient_summary,
            MessageKind.ROLLOUT_ANNOUNCEMENT: lambda: announcement(identity),
            MessageKind.SUMMARY_ANNOUNCEMENT: lambda: summary_announcement(identity)}[kind]()


@pytest.mark.parametrize("kind", list(MessageKind))
def test_seal_open_roundtrip(make_identity, kind):
    identity = make_identity()
    message = message_of(kind, identity)
    verified = open_envelope(seal(identity, kind, message), kind)
    assert verified.sender_id == identity.peer_id
    assert verified.sender_public_key == identity.public_key
    assert verified.message == message


def _tamper(data: bytes, **changes) -> bytes:
    env = envelope_pb2.SignedEnvelope.FromString(data)
    for k, v in changes.items():
        setattr(env, k, v)
    return env.SerializeToString()


def test_rejections_are_typed(make_identity):
    identity, other = make_identity(), make_identity()
    good = seal(identity, MessageKind.ROLLOUT_BATCH, rollout_batch())
    cases = {
        RejectReason.MALFORMED: [b"\xff\xff\xff", "not bytes", _tamper(good, signature=b"short")],
        RejectReason.BAD_SIGNATURE: [_tamper(good, sender_public_key=other.public_key),
                                     _tamper(good, body=rollout_batch().SerializeToString() + b"\x08\x09")],
        RejectReason.UNSUPPORTED_VERSION: [_tamper(good, protocol_version=0), _tamper(good, protocol_version=1001)],
        RejectReason.INCOMPATIBLE_VERSION: [_tamper(good, protocol_version=3)],
        RejectReason.WRONG_KIND: [_tamper(good, kind=envelope_pb2.MESSAGE_KIND_GRADIENT_SUMMARY)],
        RejectReason.OVERSIZED: [b"\x00" * (MAX_BODY_BYTES[MessageKind.ROLLOUT_BATCH] + 1024)],
    }
    for reason, payloads in cases.items():
        for payload in payloads:
            with pytest.raises(Rejected) as info:
                open_envelope(payload, MessageKind.ROLLOUT_BATCH)
            assert info.value.reason == reason, (reason, info.value)


def test_signed_but_structurally_invalid_body_is_invalid_field(make_identity):
    identity = make_identity()
    batch = rollout_batch()
    batch.groups[0].completions[0].logprobs.append(0.5)  # positive log-prob, wrong length
    with pytest.raises(Rejected) as info:
        open_envelope(seal(identity, MessageKind.ROLLOUT_BATCH, batch), MessageKind.ROLLOUT_BATCH)
    assert info.value.reason == RejectReason.INVALID_FIELD
    summary = gradient_summary()
    summary.tensors[0].indices = struct.pack("<2I", 0, 6)  # index 6 out of range for shape 2x3
    with pytest.raises(Rejected) as info:
        open_envelope(seal(identity, MessageKind.GRADIENT_SUMMARY, summary), MessageKind.GRADIENT_SUMMARY)
    assert info.value.reason == RejectReason.INVALID_FIELD


def test_seal_refuses_wrong_type_and_oversized(make_identity):
    identity = make_identity()
    with pytest.raises(TypeError):
        seal(identity, MessageKind.PEER_RECORD, rollout_batch())
    big = PeerRecord(peer_id="x" * 9000)
    with pytest.raises(ValueError, match="cap"):
        seal(identity, MessageKind.PEER_RECORD, big)


def test_an_envelope_of_another_readable_version_opens_only_where_asked(make_identity):
    from swarmnode.protocol import codec

    identity = make_identity()
    newer = VersionedSigner(identity, ProtocolVersions(7, 7))  # a newer node writes version 7
    sealed = seal(newer, MessageKind.ROLLOUT_BATCH, rollout_batch())
    with pytest.raises(Rejected) as info:
        open_envelope(sealed, MessageKind.ROLLOUT_BATCH)  # this node speaks 2-2
    assert info.value.reason == RejectReason.INCOMPATIBLE_VERSION and "version 7, this node speaks 2-2" in info.value.detail
    verified = open_envelope(sealed, MessageKind.ROLLOUT_BATCH, codec.READABLE_PROTOCOL_VERSIONS)
    assert (verified.protocol_version, verified.sender_id) == (7, identity.peer_id)
    # The version is signed: an envelope whose version was changed on the way does not verify.
    with pytest.raises(Rejected) as info:
        open_envelope(_tamper(sealed, protocol_version=8), MessageKind.ROLLOUT_BATCH, codec.READABLE_PROTOCOL_VERSIONS)
    assert info.value.reason == RejectReason.BAD_SIGNATURE


@pytest.mark.parametrize("kind", list(MessageKind))
def test_envelope_kind_reads_the_kind_of_a_sealed_message_unchecked(make_identity, kind):
    from swarmnode.protocol.codec import envelope_kind

    identity = make_identity()
    message = message_of(kind, identity)
    sealed = seal(identity, kind, message)
    assert envelope_kind(sealed) is kind
    assert envelope_kind(bytearray(sealed)) is kind and envelope_kind(memoryview(sealed)) is kind
    # Unchecked: a newer node's envelope, or one whose signature no longer verifies, still says its kind.
    assert envelope_kind(seal(VersionedSigner(identity, ProtocolVersions(7, 7)), kind, message)) is kind
    assert envelope_kind(_tamper(sealed, sender_public_key=make_identity().public_key)) is kind


def test_envelope_kind_of_anything_else_is_none():
    from swarmnode.protocol.codec import envelope_kind

    assert envelope_kind(b"garbage") is None
    assert envelope_kind(b"") is None  # decodes to kind 0, unspecified
    assert envelope_kind(b"\xff" * 10) is None
    assert envelope_kind(envelope_pb2.SignedEnvelope(kind=99).SerializeToString()) is None  # no such kind
    for value in (None, "a string", 7, ["list"], {"kind": 1}):
        assert envelope_kind(value) is None
    assert envelope_kind(b"\x00" * (MAX_BODY_BYTES[MessageKind.ROLLOUT_BATCH] + 1024)) is None  # over every kind's size
