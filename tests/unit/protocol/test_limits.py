"""protocol/limits.py through open_envelope: every wire integer and float is range-checked, and
chunked top-k gradient summaries are checked for their structure."""
import math

import pytest

from swarmnode.protocol import MessageKind, Rejected, RejectReason, open_envelope, seal
from swarmnode.protocol.generated import gradient_summary_pb2 as gs
from tests.unit.protocol.helpers import _mutate, _offsets, _with_offset, announcement, chunked_summary, rollout_batch


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


# -- chunked top-k gradient summaries ---------------------------------------------------------


def structure_reason(identity, summary) -> RejectReason | None:
    try:
        open_envelope(seal(identity, MessageKind.GRADIENT_SUMMARY, summary), MessageKind.GRADIENT_SUMMARY)
    except Rejected as r:
        return r.reason
    return None


@pytest.mark.parametrize("value_dtype", [gs.VALUE_DTYPE_INT2, gs.VALUE_DTYPE_INT4, gs.VALUE_DTYPE_INT8])
@pytest.mark.parametrize("chunk_size,per_chunk", [(16, 3), (16, 8), (16, 16), (64, 1), (65536, 5)])
def test_good_chunked_topk_summary_passes(make_identity, value_dtype, chunk_size, per_chunk):
    summary = chunked_summary(value_dtype, chunk_size, per_chunk)
    assert structure_reason(make_identity(), summary) is None


def test_chunked_topk_lengths_by_hand():
    # 70 elements, chunks of 16 sending 3: four full chunks (12 entries) + a last chunk of 6 (3 entries).
    t = chunked_summary().tensors[0]
    assert len(t.indices) == 2 * 15 and len(t.values) == math.ceil(15 * 2 / 8) == 4 and len(t.scales) == 2 * 5
    # per_chunk 8 > the last chunk's 6: it sends all 6, 4 * 8 + 6 = 38 entries.
    t = chunked_summary(gs.VALUE_DTYPE_INT4, 16, 8).tensors[0]
    assert len(t.indices) == 2 * 38 and len(t.values) == 19


def _summary_with(**fields):
    s = chunked_summary()
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def _zero_numel():
    s = chunked_summary()
    s.tensors.add(name="empty", shape=[0, 4], value_dtype=gs.VALUE_DTYPE_INT2)
    return s


def _int2_with_topk():
    s = chunked_summary()
    s.scheme = gs.COMPRESSION_SCHEME_TOPK
    return s


def _huge():
    s = chunked_summary()
    s.tensors[0].shape[:] = [2**16, 2**16]  # 2^32 elements
    return s


def _repeated_name():
    s = chunked_summary()
    s.tensors[1].name = s.tensors[0].name
    return s


BAD_CHUNKED = {
    "index bytes one entry short": lambda: _mutate(chunked_summary(), indices=chunked_summary().tensors[0].indices[:-2]),
    "index bytes odd": lambda: _mutate(chunked_summary(), indices=chunked_summary().tensors[0].indices + b"\x00"),
    "offset beyond the last (short) chunk": lambda: _with_offset(14, 6),  # entries 12..14 are the 6-long chunk's
    "offset beyond a full chunk": lambda: _with_offset(0, 16),
    "offset at uint16 max": lambda: _with_offset(3, 65535),
    "offset repeated in a chunk": lambda: _with_offset(1, int(_offsets(chunked_summary())[0])),
    "values one byte short": lambda: _mutate(chunked_summary(), values=chunked_summary().tensors[0].values[:-1]),
    "values one byte long": lambda: _mutate(chunked_summary(), values=chunked_summary().tensors[0].values + b"\x00"),
    "scales one chunk short": lambda: _mutate(chunked_summary(), scales=chunked_summary().tensors[0].scales[:-2]),
    "scales missing": lambda: _mutate(chunked_summary(), tensor=1, scales=b""),
    "float32 values": lambda: _mutate(chunked_summary(), value_dtype=gs.VALUE_DTYPE_FLOAT32),
    "INT2 with the TOPK scheme": _int2_with_topk,
    "zero elements": _zero_numel,
    "over 2^31 elements": _huge,
    "chunk_size 0": lambda: _summary_with(chunk_size=0),
    "chunk_size over 65536": lambda: _summary_with(chunk_size=65537),
    "per_chunk 0": lambda: _summary_with(per_chunk=0),
    "per_chunk over chunk_size": lambda: _summary_with(per_chunk=17),
    "no base_fingerprint": lambda: _summary_with(base_fingerprint=""),
    "base_fingerprint too long": lambda: _summary_with(base_fingerprint="b" * 129),
    "repeated tensor name": _repeated_name,
    "created_at NaN": lambda: _summary_with(created_at=float("nan")),
}


@pytest.mark.parametrize("case", list(BAD_CHUNKED))
def test_malformed_chunked_topk_is_invalid_field(make_identity, case):
    assert structure_reason(make_identity(), BAD_CHUNKED[case]()) == RejectReason.INVALID_FIELD


def test_summary_ids_are_range_checked(make_identity):
    assert structure_reason(make_identity(), _summary_with(summary_id=2**53)) == RejectReason.OUT_OF_RANGE
    assert structure_reason(make_identity(), _summary_with(summary_id=2**53 - 1)) is None
