import struct

import pytest

from swarmnode.protocol import (
    MAX_BODY_BYTES,
    GradientSummary,
    MessageKind,
    PeerRecord,
    Rejected,
    RejectReason,
    RolloutBatch,
    open_envelope,
    seal,
    signing_bytes,
)
from swarmnode.protocol.generated import envelope_pb2, gradient_summary_pb2
from swarmnode.protocol.generated.rollout_batch_pb2 import RolloutAnnouncement


def rollout_batch() -> RolloutBatch:
    batch = RolloutBatch(window=7, policy_version=3, model_fingerprint="m", tokenizer_fingerprint="t",
                         created_at=1000.0, temperature=1.0, top_p=1.0)
    group = batch.groups.add(prompt="1+2=")
    group.task.task, group.task.seed, group.task.index = "chain_sum", 1, 2
    group.completions.add(text="3", token_ids=[5, 6], logprobs=[-0.1, -0.2], finish_reason="stop")
    return batch


def gradient_summary() -> GradientSummary:
    s = GradientSummary(model_fingerprint="m", base_fingerprint="b", base_version=1, step_start=0, step_end=4,
                        scheme=gradient_summary_pb2.COMPRESSION_SCHEME_TOPK)
    s.tensors.add(name="w", shape=[2, 3], indices=struct.pack("<2I", 0, 5),
                  values=struct.pack("<2f", 0.5, -0.5), value_dtype=gradient_summary_pb2.VALUE_DTYPE_FLOAT32)
    return s


def peer_record(identity) -> PeerRecord:
    return PeerRecord(peer_id=identity.peer_id, public_key=identity.public_key,
                      peer_id_binding=identity.bind_signing_key(), swarm="s", timestamp=1.0, expires_at=2.0)


def announcement(identity) -> RolloutAnnouncement:
    return RolloutAnnouncement(peer_id=identity.peer_id, window=3, first_batch_id=1, last_batch_id=4,
                               timestamp=1.0, expires_at=2.0, peer_id_binding=identity.bind_signing_key())


def summary_announcement(identity) -> gradient_summary_pb2.SummaryAnnouncement:
    return gradient_summary_pb2.SummaryAnnouncement(peer_id=identity.peer_id, window=3, summary_id=2, base_fingerprint="b",
                                                    size_bytes=100, timestamp=1.0, expires_at=2.0,
                                                    peer_id_binding=identity.bind_signing_key())


def test_signing_bytes_layout_by_hand():
    got = signing_bytes(1, 2, "ab", b"xyz")
    assert got == b"swarmnode/v1/sig\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x02" + b"ab" + b"\x00\x00\x00\x03" + b"xyz"


@pytest.mark.parametrize("kind", list(MessageKind))
def test_seal_open_roundtrip(make_identity, kind):
    identity = make_identity()
    message = {MessageKind.PEER_RECORD: lambda: peer_record(identity),
               MessageKind.ROLLOUT_BATCH: rollout_batch,
               MessageKind.GRADIENT_SUMMARY: gradient_summary,
               MessageKind.ROLLOUT_ANNOUNCEMENT: lambda: announcement(identity),
               MessageKind.SUMMARY_ANNOUNCEMENT: lambda: summary_announcement(identity)}[kind]()
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
        RejectReason.UNSUPPORTED_VERSION: [_tamper(good, protocol_version=2)],
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


def _rejected_reason(identity, kind, message):
    with pytest.raises(Rejected) as info:
        open_envelope(seal(identity, kind, message), kind)
    assert info.value.sender is None  # open_envelope proves no identity: nothing is held against a claimed id
    return info.value.reason


def _with(make, path, value):
    """A message from `make()` with the field at dotted `path` set to `value` (ints index lists)."""
    message = make()
    *parents, last = path.split(".")
    target = message
    for part in parents:
        target = target[int(part)] if part.isdigit() else getattr(target, part)
    if last.isdigit():
        target[int(last)] = value
    else:
        setattr(target, last, value)
    return message


BATCH_INTS = ("window", "policy_version", "batch_id", "groups.0.task.seed", "groups.0.task.index")


@pytest.mark.parametrize("path", BATCH_INTS)
@pytest.mark.parametrize("value", [2**53, 2**63, 2**64 - 1])
def test_wire_integers_beyond_2_53_are_out_of_range(make_identity, path, value):
    # 2^63 and up would overflow SQLite's INTEGER; anything past 2^53 is no honest id or version.
    assert _rejected_reason(make_identity(), MessageKind.ROLLOUT_BATCH, _with(rollout_batch, path, value)) == RejectReason.OUT_OF_RANGE
    assert open_envelope(seal(make_identity(), MessageKind.ROLLOUT_BATCH, _with(rollout_batch, path, 2**53 - 1)),
                         MessageKind.ROLLOUT_BATCH).message is not None


@pytest.mark.parametrize("path,value,reason", [
    ("created_at", float("nan"), RejectReason.INVALID_FIELD),
    ("created_at", float("inf"), RejectReason.INVALID_FIELD),
    ("created_at", 1e30, RejectReason.OUT_OF_RANGE),
    ("created_at", -1.0, RejectReason.OUT_OF_RANGE),
    ("temperature", float("nan"), RejectReason.INVALID_FIELD),
    ("temperature", 3.4e38, RejectReason.OUT_OF_RANGE),
    ("temperature", 0.0, RejectReason.OUT_OF_RANGE),
    ("top_p", 1.5, RejectReason.OUT_OF_RANGE),
    ("top_p", float("-inf"), RejectReason.INVALID_FIELD),
    ("groups.0.completions.0.reported_reward", float("nan"), RejectReason.INVALID_FIELD),
    ("groups.0.completions.0.reported_reward", -1e30, RejectReason.OUT_OF_RANGE),
    ("groups.0.completions.0.logprobs.0", float("nan"), RejectReason.INVALID_FIELD),
    ("groups.0.completions.0.logprobs.0", -1e30, RejectReason.OUT_OF_RANGE),
    ("groups.0.completions.0.logprobs.0", 0.5, RejectReason.INVALID_FIELD),
])
def test_every_float_field_is_finite_and_in_range(make_identity, path, value, reason):
    assert _rejected_reason(make_identity(), MessageKind.ROLLOUT_BATCH, _with(rollout_batch, path, value)) == reason


@pytest.mark.parametrize("path", ["window", "first_batch_id", "last_batch_id"])
def test_announcement_integers_are_range_checked(make_identity, path):
    identity = make_identity()
    message = _with(lambda: announcement(identity), path, 2**63)
    if path == "first_batch_id":
        message.last_batch_id = 2**63
    assert _rejected_reason(identity, MessageKind.ROLLOUT_ANNOUNCEMENT, message) == RejectReason.OUT_OF_RANGE
