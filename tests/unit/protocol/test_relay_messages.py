"""protocol/relay_messages.py: every decoder refuses bytes outside its bounds."""
from hypothesis import given
from hypothesis import strategies as st

from swarmnode.protocol import relay_messages as wire


def test_dialback_request_round_trip_and_bounds():
    assert wire.parse_dialback_request(wire.dialback_request([4001, 4001, 4002])) == [4001, 4002]
    assert wire.parse_dialback_request(wire.dialback_request([])) is None
    assert wire.parse_dialback_request(wire.relay_pb2.DialBackRequest(ports=[0]).SerializeToString()) is None
    assert wire.parse_dialback_request(wire.relay_pb2.DialBackRequest(ports=[70000]).SerializeToString()) is None
    assert wire.parse_dialback_request(wire.relay_pb2.DialBackRequest(ports=[1, 2, 3, 4, 5]).SerializeToString()) is None


def test_dialback_response_may_only_name_ports_that_were_asked():
    assert wire.parse_dialback_response(wire.dialback_response("198.18.0.101", [4001]), [4001]) == ("198.18.0.101", [4001])
    assert wire.parse_dialback_response(wire.dialback_response("198.18.0.101", [22]), [4001]) is None
    assert wire.parse_dialback_response(wire.dialback_response("x" * 46, []), [4001]) is None


def test_forward_and_delivery_need_a_target_and_a_protocol():
    parsed = wire.parse_forward(wire.forward("peer", "/swarmnode/rollouts/1", b"abc", 5000))
    assert (parsed.target, parsed.protocol, parsed.payload, parsed.timeout_ms) == ("peer", "/swarmnode/rollouts/1", b"abc", 5000)
    assert wire.parse_forward(wire.forward("", "/p", b"", 1)) is None
    assert wire.parse_forward(wire.forward("peer", "/p" * 40, b"", 1)) is None
    assert wire.parse_delivery(wire.delivery("origin", "/p", b"x")).origin == "origin"
    assert wire.parse_delivery(wire.delivery("o" * 129, "/p", b"x")) is None
    assert wire.parse_forward(b"\x00" * (wire.MAX_RELAYED_BYTES + 1)) is None


def test_reserve_response_bounds():
    assert wire.parse_reserve_response(wire.reserve_response(True, 60.0)).granted
    assert wire.parse_reserve_response(wire.reserve_response(True, 1e9)) is None


@given(st.binary(max_size=256))
def test_no_decoder_raises_on_any_bytes(data):
    wire.parse_dialback_request(data)
    wire.parse_dialback_response(data, [4001])
    wire.parse_reserve_request(data)
    wire.parse_reserve_response(data)
    wire.parse_forward(data)
    wire.parse_delivery(data)
    wire.parse_answer(data)
