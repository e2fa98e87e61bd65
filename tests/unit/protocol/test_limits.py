"""protocol/limits.py through open_envelope: every wire integer and float is range-checked."""
import pytest

from swarmnode.protocol import MessageKind, Rejected, RejectReason, open_envelope, seal
from tests.unit.protocol.helpers import announcement, rollout_batch


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
