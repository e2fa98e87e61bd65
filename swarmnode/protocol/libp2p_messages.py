"""The py-libp2p transport's own wire messages (protocols/swarmnode/v1/libp2p.proto), decoded with
bounds, and how the swarm's (key, subkey) pairs map onto Kademlia keys. No libp2p import here.

Kademlia holds one value per key, so a value the hivemind DHT keeps under `key` with subkey `s`
lives under the DHT key "/<key>/<s>" (namespace = the key's first part, "swarmnode"), and the
subkeys under one key are found through provider records of "/<key>".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from swarmnode.protocol.generated import libp2p_pb2
from swarmnode.protocol.limits import MAX_PEER_ID_CHARS, MAX_TIMESTAMP
from swarmnode.protocol.relay_messages import MAX_PROTOCOL_CHARS, MAX_RELAYED_BYTES

DHT_NAMESPACE = "swarmnode"
MAX_KEY_CHARS = 256
MAX_ENTRY_VALUE_BYTES = 16 * 1024  # a peer record or announcement (8 KiB body cap) with room
MAX_ENTRY_BYTES = MAX_ENTRY_VALUE_BYTES + MAX_KEY_CHARS + MAX_PEER_ID_CHARS + 64
MAX_STREAM_BYTES = MAX_RELAYED_BYTES  # an answer: the largest signed message, with room
# A request: every one the swarm sends is small (a fetch cursor, a relayed request); a node
# answering many at once must not hold megabytes for each.
MAX_REQUEST_BYTES = 256 * 1024
MAX_REPLY_BYTES = MAX_STREAM_BYTES + 1024
MAX_ERROR_CHARS = 200


@dataclass(frozen=True)
class DhtEntry:
    key: str
    subkey: str
    value: bytes
    expiration: float


def provider_key(key: str) -> str:
    """The Kademlia key whose providers are the peers holding a value under `key`."""
    return f"/{key}"


def dht_key(key: str, subkey: str) -> str:
    """The Kademlia key of the value under (`key`, `subkey`)."""
    return f"/{key}/{subkey}"


def split_dht_key(dht: str) -> tuple[str, str] | None:
    """(key, subkey) of a Kademlia key made by `dht_key`, or None for any other string."""
    if not dht.startswith(f"/{DHT_NAMESPACE}/") or len(dht) > MAX_KEY_CHARS + MAX_PEER_ID_CHARS + 2:
        return None
    key, _, subkey = dht[1:].rpartition("/")
    if not key or not subkey or len(subkey) > MAX_PEER_ID_CHARS or len(key) > MAX_KEY_CHARS:
        return None
    return key, subkey


def encode_entry(entry: DhtEntry) -> bytes:
    return libp2p_pb2.DhtEntry(key=entry.key, subkey=entry.subkey, value=entry.value,
                               expiration=entry.expiration).SerializeToString()


def decode_entry(data: bytes) -> DhtEntry | None:
    """The entry in `data`, or None when it does not fit the bounds (size, key, a finite time)."""
    if not isinstance(data, bytes) or len(data) > MAX_ENTRY_BYTES:
        return None
    try:
        message = libp2p_pb2.DhtEntry.FromString(data)
    except Exception:  # noqa: BLE001 - any bytes may arrive here
        return None
    if not message.key.startswith(f"{DHT_NAMESPACE}/") or len(message.key) > MAX_KEY_CHARS:
        return None
    if not 0 < len(message.subkey) <= MAX_PEER_ID_CHARS or "/" in message.subkey:
        return None
    if len(message.value) > MAX_ENTRY_VALUE_BYTES:
        return None
    if not (math.isfinite(message.expiration) and 0 < message.expiration < MAX_TIMESTAMP):
        return None
    return DhtEntry(message.key, message.subkey, message.value, message.expiration)


def stream_protocol(protocol: str) -> str:
    """The libp2p protocol id of a swarm protocol ("swarmnode/v1/rollouts" -> "/swarmnode/v1/rollouts")."""
    if not protocol or len(protocol) > MAX_PROTOCOL_CHARS:
        raise ValueError(f"protocol name {protocol!r} is empty or over {MAX_PROTOCOL_CHARS} characters")
    return protocol if protocol.startswith("/") else f"/{protocol}"


def encode_reply(payload: bytes = b"", error: str = "") -> bytes:
    return libp2p_pb2.StreamReply(payload=payload, error=error[:MAX_ERROR_CHARS]).SerializeToString()


def decode_reply(data: bytes) -> tuple[bytes, str] | None:
    """(payload, error) of an answer, or None when it does not fit the bounds."""
    if len(data) > MAX_REPLY_BYTES:
        return None
    try:
        message = libp2p_pb2.StreamReply.FromString(data)
    except Exception:  # noqa: BLE001 - any bytes may arrive here
        return None
    if len(message.payload) > MAX_STREAM_BYTES or len(message.error) > MAX_ERROR_CHARS:
        return None
    return message.payload, message.error
