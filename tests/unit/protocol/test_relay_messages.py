"""protocol/relay_messages.py: every decoder refuses bytes outside its bounds."""
from hypothesis import given
from hypothesis import strategies as st

from swarmnode.protocol.generated import relay_pb2
from swarmnode.protocol.relay_messages import (
    MAX_RELAYED_BYTES,
    delivery,
    dialback_request,
    dialback_response,
    forward,
    parse_answer,
    parse_delivery,
    parse_dialback_request,
    parse_dialback_response,
    parse_forward,
    parse_reserve_request,
    parse_reserve_response,
    reserve_response,
)


def test_dialback_request_round_trip_and_bounds():
    assert parse_dialback_request(dialback_request([4001, 4001, 4002])) == [4001, 4002]
    assert parse_dialback_request(dialback_request([])) is None
    assert parse_dialback_request(relay_pb2.DialBackRequest(ports=[0]).SerializeToString()) is None
    assert parse_dialback_request(relay_pb2.DialBackRequest(ports=[70000]).SerializeToString()) is None
    assert parse_dialback_request(relay_pb2.DialBackRequest(ports=[1, 2, 3, 4, 5]).SerializeToString()) is None


def test_dialback_response_may_only_name_ports_that_were_asked():
    assert parse_dialback_response(dialback_response("198.18.0.101", [4001]), [4001]) == ("198.18.0.101", [4001])
    assert parse_dialback_response(dialback_response("198.18.0.101", [22]), [4001]) is None
    assert parse_dialback_response(dialback_response("x" * 46, []), [4001]) is None


def test_forward_and_delivery_need_a_target_and_a_protocol():
    parsed = parse_forward(forward("peer", "/swarmnode/rollouts/1", b"abc", 5000))
    assert (parsed.target, parsed.protocol, parsed.payload, parsed.timeout_ms) == ("peer", "/swarmnode/rollouts/1", b"abc", 5000)
    assert parse_forward(forward("", "/p", b"", 1)) is None
    assert parse_forward(forward("peer", "/p" * 40, b"", 1)) is None
    assert parse_delivery(delivery("origin", "/p", b"x")).origin == "origin"
    assert parse_delivery(delivery("o" * 129, "/p", b"x")) is None
    assert parse_forward(b"\x00" * (MAX_RELAYED_BYTES + 1)) is None


def test_reserve_response_bounds():
    assert parse_reserve_response(reserve_response(True, 60.0)).granted
    assert parse_reserve_response(reserve_response(True, 1e9)) is None


@given(st.binary(max_size=256))
def test_no_decoder_raises_on_any_bytes(data):
    parse_dialback_request(data)
    parse_dialback_response(data, [4001])
    parse_reserve_request(data)
    parse_reserve_response(data)
    parse_forward(data)
    parse_delivery(data)
    parse_answer(data)
