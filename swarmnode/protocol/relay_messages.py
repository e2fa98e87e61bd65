"""Dial-back and relay messages (protocols/swarmnode/v1/relay.proto): decode with bounds.

These travel over direct libp2p streams between two authenticated peers and carry no signature
of their own: what a relay forwards is the swarm's own signed messages, checked end to end by
their receiver. Every decoder returns None for bytes that do not fit its bounds.
"""
from __future__ import annotations

from swarmnode.protocol.codec import MAX_BODY_BYTES
from swarmnode.protocol.generated import relay_pb2
from swarmnode.protocol.limits import MAX_PEER_ID_CHARS

# Named like the swarm's other protocols (swarmnode/v1/rollouts, swarmnode/v1/summaries).
DIALBACK_PROTOCOL = "swarmnode/v1/dialback"
RELAY_RESERVE_PROTOCOL = "swarmnode/v1/relay-reserve"
RELAY_FORWARD_PROTOCOL = "swarmnode/v1/relay-forward"
RELAY_DELIVER_PROTOCOL = "swarmnode/v1/relay-deliver"
PING_PROTOCOL = "swarmnode/v1/ping"  # an empty answer: can a relayed peer be reached directly?

MAX_DIALBACK_PORTS = 4
MAX_PROTOCOL_CHARS = 64
MAX_IP_CHARS = 45  # the longest IPv6 text form
# A forwarded payload or answer: the largest signed message plus its envelope, with room.
MAX_RELAYED_BYTES = max(MAX_BODY_BYTES.values()) + 64 * 1024
_MAX_SMALL_BYTES = 1024


def _decode(cls, data: bytes, max_bytes: int):
    if len(data) > max_bytes:
        return None
    try:
        return cls.FromString(data)
    except Exception:  # noqa: BLE001 - any bytes may arrive here
        return None


def dialback_request(ports: list[int]) -> bytes:
    return relay_pb2.DialBackRequest(ports=ports[:MAX_DIALBACK_PORTS]).SerializeToString()


def parse_dialback_request(data: bytes) -> list[int] | None:
    """The ports to dial back: 1..4 of them, each a TCP port."""
    message = _decode(relay_pb2.DialBackRequest, data, _MAX_SMALL_BYTES)
    if message is None or not 0 < len(message.ports) <= MAX_DIALBACK_PORTS:
        return None
    if not all(0 < port < 65536 for port in message.ports):
        return None
    return list(dict.fromkeys(message.ports))


def dialback_response(observed_ip: str, open_ports: list[int]) -> bytes:
    return relay_pb2.DialBackResponse(observed_ip=observed_ip, open_ports=open_ports).SerializeToString()


def parse_dialback_response(data: bytes, asked: list[int]) -> tuple[str, list[int]] | None:
    """(observed ip, open ports) where the open ports are among those asked about."""
    message = _decode(relay_pb2.DialBackResponse, data, _MAX_SMALL_BYTES)
    if message is None or len(message.observed_ip) > MAX_IP_CHARS:
        return None
    if not set(message.open_ports) <= set(asked):
        return None
    return message.observed_ip, list(message.open_ports)


def reserve_request() -> bytes:
    return relay_pb2.RelayReserveRequest().SerializeToString()


def parse_reserve_request(data: bytes) -> bool:
    return _decode(relay_pb2.RelayReserveRequest, data, _MAX_SMALL_BYTES) is not None


def reserve_response(granted: bool, ttl_s: float, reason: str = "") -> bytes:
    return relay_pb2.RelayReserveResponse(granted=granted, ttl_s=ttl_s, reason=reason[:200]).SerializeToString()


def parse_reserve_response(data: bytes) -> relay_pb2.RelayReserveResponse | None:
    message = _decode(relay_pb2.RelayReserveResponse, data, _MAX_SMALL_BYTES)
    if message is None or not 0 <= message.ttl_s <= 3600:
        return None
    return message


def forward(target: str, protocol: str, payload: bytes, timeout_ms: int) -> bytes:
    return relay_pb2.RelayForward(target=target, protocol=protocol, payload=payload,
                                  timeout_ms=timeout_ms).SerializeToString()


def parse_forward(data: bytes) -> relay_pb2.RelayForward | None:
    message = _decode(relay_pb2.RelayForward, data, MAX_RELAYED_BYTES)
    if message is None or not 0 < len(message.target) <= MAX_PEER_ID_CHARS:
        return None
    if not 0 < len(message.protocol) <= MAX_PROTOCOL_CHARS:
        return None
    return message


def delivery(origin: str, protocol: str, payload: bytes) -> bytes:
    return relay_pb2.RelayDelivery(origin=origin, protocol=protocol, payload=payload).SerializeToString()


def parse_delivery(data: bytes) -> relay_pb2.RelayDelivery | None:
    message = _decode(relay_pb2.RelayDelivery, data, MAX_RELAYED_BYTES)
    if message is None or not 0 < len(message.origin) <= MAX_PEER_ID_CHARS:
        return None
    if not 0 < len(message.protocol) <= MAX_PROTOCOL_CHARS:
        return None
    return message


def answer(payload: bytes = b"", error: str = "") -> bytes:
    return relay_pb2.RelayAnswer(payload=payload, error=error[:200]).SerializeToString()


def parse_answer(data: bytes) -> relay_pb2.RelayAnswer | None:
    return _decode(relay_pb2.RelayAnswer, data, MAX_RELAYED_BYTES)
