"""Decoder fuzzing: random and mutated bytes only ever produce a typed rejection."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmnode.identity import NodeIdentity, SigningKey
from swarmnode.protocol import MessageKind, Rejected, build_peer_record, check_peer_record, open_envelope
from swarmnode.protocol.rollout_messages import build_rollout_announcement, check_rollout_announcement, open_rollout_batch
from swarmnode.swarm.gossip.rollout_bookkeeping import RolloutOutbox, parse_rollout_fetch_response
from tests.helpers import record_fields

IDENTITY = NodeIdentity(SigningKey.generate(), SigningKey.generate(), p2p_identity_path=None)  # type: ignore[arg-type]
VALID = build_peer_record(IDENTITY, record_fields("fuzz"), now=1000.0, ttl_s=20.0)
ANNOUNCEMENT = build_rollout_announcement(IDENTITY, window=3, first_batch_id=1, last_batch_id=9, model_fingerprint="m",
                                          now=1000.0, ttl_s=20.0)
OUTBOX = RolloutOutbox(first_batch_id=1, capacity=4)


def _open_all_ways(data) -> None:
    for kind in MessageKind:
        try:
            open_envelope(data, kind)
        except Rejected:
            pass
    try:
        check_peer_record(data, subkey=IDENTITY.peer_id, swarm="fuzz", now=1001.0)
    except Rejected:
        pass
    try:
        check_rollout_announcement(data, subkey=IDENTITY.peer_id, now=1001.0)
    except Rejected:
        pass
    try:
        open_rollout_batch(data, served_by=IDENTITY.peer_id, public_key=IDENTITY.public_key)
    except Rejected:
        pass
    if isinstance(data, bytes):
        # A peer's fetch request or response: garbage gets an empty answer / None, never an exception.
        envelopes = parse_rollout_fetch_response(data)
        assert envelopes is None or all(isinstance(e, bytes) for e in envelopes)
        assert parse_rollout_fetch_response(OUTBOX.answer(data)) == []


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from([VALID, ANNOUNCEMENT])))
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete" and data:
            del data[pos: pos + draw(st.integers(1, 16))]
        elif op == "truncate":
            data = data[:pos]
    return bytes(data)


FUZZ = settings(max_examples=5_000, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_only_rejected(data):
    _open_all_ways(data)


@FUZZ
@given(mutated())
def test_mutated_envelopes_only_rejected(data):
    _open_all_ways(data)


@pytest.mark.parametrize("value", [None, 1, 1.5, "text", [b"x"], {"a": b"b"}, b"", b"\x00" * 100_000])
def test_non_bytes_and_edge_values_rejected(value):
    _open_all_ways(value)
    with pytest.raises(Rejected):
        check_peer_record(value, subkey="x", swarm="fuzz", now=0.0)


def test_valid_record_still_opens():
    record = check_peer_record(VALID, subkey=IDENTITY.peer_id, swarm="fuzz", now=1001.0)
    assert record.peer_id == IDENTITY.peer_id
