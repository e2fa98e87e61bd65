"""swarm/gossip/summary_outbox.py: the outbox of this node's sealed summaries (answers by id, counts,
bounds) and its fetch requests and responses, a full-size summary included."""
import pytest
from google.protobuf.wrappers_pb2 import BytesValue

from swarmnode.protocol.codec import MAX_BODY_BYTES, P2PD_MAX_MESSAGE_BYTES, MessageKind
from swarmnode.protocol.generated import gradient_summary_pb2 as gs
from swarmnode.protocol.summary_messages import seal_summary
from swarmnode.swarm.gossip.summary_outbox import (
    MAX_SUMMARY_FETCH_REQUEST_BYTES,
    MAX_SUMMARY_FETCH_RESPONSE_BYTES,
    SummaryOutbox,
    parse_summary_fetch_response,
    summary_fetch_request,
)

BASE = "base-abc"


def test_a_full_size_sealed_summary_fits_one_p2pd_response(make_identity):
    """The body cap is what one unary response can carry: envelope + SummaryFetchResponse +
    BytesValue + p2pd's CallUnaryResponse framing (38 bytes measured) under p2pd's 4 MiB."""
    identity = make_identity()
    s = gs.GradientSummary(model_fingerprint="m", base_fingerprint=BASE, scheme=gs.COMPRESSION_SCHEME_DENSE)
    s.tensors.add(name="w", shape=[1], value_dtype=gs.VALUE_DTYPE_FLOAT32, values=b"\x00" * 4)
    # Pad with an unknown field (kept by protobuf, ignored by the checks) to exactly the body cap.
    filler = MAX_BODY_BYTES[MessageKind.GRADIENT_SUMMARY] - s.ByteSize() - 6  # tag 2 bytes, length 4
    s = gs.GradientSummary.FromString(s.SerializeToString() + b"\xfa\x07" + _varint(filler) + b"\x00" * filler)
    assert s.ByteSize() == MAX_BODY_BYTES[MessageKind.GRADIENT_SUMMARY]
    envelope = seal_summary(identity, s)
    assert len(envelope) <= MAX_SUMMARY_FETCH_RESPONSE_BYTES
    outbox = SummaryOutbox(capacity=1)
    outbox.add(1, envelope)
    wire = BytesValue(value=outbox.answer(summary_fetch_request(1))).ByteSize()
    assert wire + 64 <= P2PD_MAX_MESSAGE_BYTES
    assert parse_summary_fetch_response(outbox.answer(summary_fetch_request(1))) == envelope
    with pytest.raises(ValueError, match="cap"):
        s2 = gs.GradientSummary.FromString(s.SerializeToString() + b"\xfa\x07\x01\x00")
        seal_summary(identity, s2)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_outbox_answers_by_id_and_counts():
    outbox = SummaryOutbox(capacity=2)
    assert outbox.newest() is None
    for summary_id in (3, 4, 5):
        outbox.add(summary_id, bytes([summary_id]) * 10)
    assert outbox.ids() == [4, 5] and outbox.newest() == (5, 10)  # 3 dropped past capacity
    assert parse_summary_fetch_response(outbox.answer(summary_fetch_request(5))) == b"\x05" * 10
    assert parse_summary_fetch_response(outbox.answer(summary_fetch_request(3))) == b""  # no longer held
    assert outbox.answer(summary_fetch_request(3)) == b""  # an empty envelope
    assert outbox.answer(b"\xff\xff\xff") == b""  # garbage
    assert outbox.answer(b"\x08" + b"\xff" * MAX_SUMMARY_FETCH_REQUEST_BYTES) == b""  # oversize
    assert outbox.answer("not bytes") == b""  # type: ignore[arg-type]
    assert outbox.counters() == {"held": 2, "served": 1, "bytes_served": 10}
    outbox.add(4, b"new")  # re-adding an id refreshes it as the newest
    assert outbox.newest() == (4, 3)
    with pytest.raises(ValueError):
        SummaryOutbox(capacity=0)


def test_a_peer_that_reads_gap_coded_offsets_gets_them_and_an_older_node_the_uint16_coding():
    outbox = SummaryOutbox(capacity=2)
    outbox.add(7, b"gaps" * 3, older=b"uint16" * 4)
    assert outbox.newest() == (7, 12)  # what is announced: the gap-coded size
    assert parse_summary_fetch_response(outbox.answer(summary_fetch_request(7))) == b"gaps" * 3
    # An older release's request: summary_id alone (the field it does not know is absent).
    older_request = gs.SummaryFetchRequest(summary_id=7).SerializeToString()
    assert older_request == summary_fetch_request(7, gap_coded=False)
    assert parse_summary_fetch_response(outbox.answer(older_request)) == b"uint16" * 4
    assert len(summary_fetch_request(2**64 - 1)) <= MAX_SUMMARY_FETCH_REQUEST_BYTES
    # A summary whose uint16 coding is over the size cap is held in the gap coding only: an older
    # node is answered "not held", never with a coding it would refuse (and strike the sender for).
    outbox.add(8, b"only gaps", older=b"")
    served = outbox.counters()["served"]
    assert parse_summary_fetch_response(outbox.answer(older_request.replace(b"\x07", b"\x08"))) == b""
    assert outbox.counters()["served"] == served
    assert parse_summary_fetch_response(outbox.answer(summary_fetch_request(8))) == b"only gaps"


def test_parse_fetch_response_refuses_what_is_not_a_response():
    assert parse_summary_fetch_response(b"\xff") is None
    assert parse_summary_fetch_response(None) is None
    assert parse_summary_fetch_response(b"\x00" * (MAX_SUMMARY_FETCH_RESPONSE_BYTES + 1)) is None
    assert parse_summary_fetch_response(b"") == b""
