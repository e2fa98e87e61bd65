"""Sealing and opening signed envelopes: the only way bytes from a peer become a message.

`open_envelope` trusts nothing: it checks the size before decoding, decodes inside a guard,
checks version (one this node speaks, or, for a peer record, any readable one), kind, key and signature lengths, verifies the Ed25519 signature and the
structural limits of the body. Every failure is a `Rejected` with a `RejectReason`; no other
exception escapes (tests/unit/protocol/test_codec_fuzz.py feeds it random and mutated bytes).
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.message import Message

from swarmnode.identity import NodeIdentity, verify_ed25519
from swarmnode.protocol.generated import envelope_pb2, gradient_summary_pb2, peer_record_pb2, rollout_batch_pb2
from swarmnode.protocol.limits import check_ranges, check_structure
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions

# The wire-protocol version this release writes its messages in, and the lowest and highest it
# speaks (versions.THIS_RELEASE). A node of other versions is given its ProtocolVersions instead.
PROTOCOL_VERSION = THIS_RELEASE.written
SUPPORTED_PROTOCOL_VERSIONS = THIS_RELEASE.spoken
# Versions whose envelopes are still opened and verified: a peer record of another version is
# read (protobuf is forward compatible) to learn what its node speaks. Anything else is garbage.
READABLE_PROTOCOL_VERSIONS = (1, 1000)
SIGNATURE_DOMAIN = b"swarmnode/v1/sig\x00"
# Envelope fields around the body: version, kind, sender id (<= 64 chars), key, signature, tags.
ENVELOPE_OVERHEAD_BYTES = 256


class MessageKind(enum.IntEnum):
    PEER_RECORD = envelope_pb2.MESSAGE_KIND_PEER_RECORD
    ROLLOUT_BATCH = envelope_pb2.MESSAGE_KIND_ROLLOUT_BATCH
    GRADIENT_SUMMARY = envelope_pb2.MESSAGE_KIND_GRADIENT_SUMMARY
    ROLLOUT_ANNOUNCEMENT = envelope_pb2.MESSAGE_KIND_ROLLOUT_ANNOUNCEMENT
    SUMMARY_ANNOUNCEMENT = envelope_pb2.MESSAGE_KIND_SUMMARY_ANNOUNCEMENT


MESSAGE_TYPES: dict[MessageKind, type[Message]] = {
    MessageKind.PEER_RECORD: peer_record_pb2.PeerRecord,
    MessageKind.ROLLOUT_BATCH: rollout_batch_pb2.RolloutBatch,
    MessageKind.GRADIENT_SUMMARY: gradient_summary_pb2.GradientSummary,
    MessageKind.ROLLOUT_ANNOUNCEMENT: rollout_batch_pb2.RolloutAnnouncement,
    MessageKind.SUMMARY_ANNOUNCEMENT: gradient_summary_pb2.SummaryAnnouncement,
}

# p2pd's persistent-connection message cap (hivemind's DEFAULT_MAX_MSG_SIZE, which swarmnode
# does not change): a unary response larger than this is replaced by an error on the serving
# side, so every payload fetched with Transport.request must fit one such message.
P2PD_MAX_MESSAGE_BYTES = 4 * 1024 * 1024

# Largest body accepted per kind. Peer records and announcements travel as DHT values, which
# must stay far below the ~60 KiB where hivemind's DHT pipe hangs; payloads travel over streams.
MAX_BODY_BYTES: dict[MessageKind, int] = {
    MessageKind.PEER_RECORD: 8 * 1024,
    MessageKind.ROLLOUT_BATCH: 4 * 1024 * 1024,
    # A sealed summary is served whole in one unary response (SummaryFetchResponse in a
    # BytesValue in p2pd's CallUnaryResponse, ~50 bytes of framing around the envelope):
    # 64 KiB under p2pd's cap leaves room for that framing and the envelope's own overhead.
    MessageKind.GRADIENT_SUMMARY: P2PD_MAX_MESSAGE_BYTES - 64 * 1024,
    MessageKind.ROLLOUT_ANNOUNCEMENT: 1024,
    MessageKind.SUMMARY_ANNOUNCEMENT: 1024,
}


def max_envelope_bytes(kind: MessageKind) -> int:
    return MAX_BODY_BYTES[kind] + ENVELOPE_OVERHEAD_BYTES


class RejectReason(str, enum.Enum):
    """Why a message from a peer was dropped. The values are stable (status JSON, metrics)."""

    MALFORMED = "malformed"  # not decodable / not bytes
    OVERSIZED = "oversized"  # over the size cap, checked before decoding
    UNSUPPORTED_VERSION = "unsupported_version"  # a version no swarmnode ever spoke (0, or beyond READABLE_PROTOCOL_VERSIONS)
    INCOMPATIBLE_VERSION = "incompatible_version"  # a peer (or its message) of a version outside the range this node speaks
    WRONG_KIND = "wrong_kind"  # e.g. a rollout batch stored where a peer record belongs
    BAD_SIGNATURE = "bad_signature"
    KEY_BINDING = "key_binding"  # signing key not bound to the claimed peer id
    INVALID_FIELD = "invalid_field"  # decodes, but a field breaks the schema's limits
    WRONG_SWARM = "wrong_swarm"
    EXPIRED = "expired"
    FROM_FUTURE = "from_future"  # timestamp too far ahead of DHT time
    SUBKEY_MISMATCH = "subkey_mismatch"  # stored under another peer's subkey
    REPLAYED = "replayed"  # older than a record already accepted from that peer
    DHT_EXPIRATION = "dht_expiration"  # kept in the DHT past the record's own expires_at
    UNKNOWN_KEY = "unknown_key"  # stored under a DHT key the swarm does not use
    WRONG_SHARD = "wrong_shard"  # found under a shard key its peer id does not hash into (anyone can copy one there)
    SENDER_MISMATCH = "sender_mismatch"  # a batch signed by another peer than the one that served it
    PROMPT_MISMATCH = "prompt_mismatch"  # the prompt is not the one the task ref regenerates
    MODEL_MISMATCH = "model_mismatch"  # token ids / log-probs that do not fit the claimed model
    OUT_OF_RANGE = "out_of_range"  # an integer or float outside this node's bounds (e.g. >= 2^53)
    TOO_LONG = "too_long"  # a completion longer than this node's own generation limit allows
    LIFETIME = "lifetime"  # a record or announcement claiming a lifetime over limits.max_record_ttl_s
    IMPLAUSIBLE_LOGPROBS = "implausible_logprobs"  # behaviour log-probs far below this policy's (weight inflation)
    WRONG_BASE = "wrong_base"  # a gradient summary whose base_fingerprint is not this node's
    BAD_TENSOR = "bad_tensor"  # summary tensor names, shapes or dtypes that do not match this node's model
    NON_FINITE = "non_finite"  # NaN or Inf in a summary's values or scales
    NORM_TOO_LARGE = "norm_too_large"  # a summary's norm far above the norms this node's own summaries have
    HARMFUL_SUMMARY = "harmful_summary"  # a valid summary of a peer whose summaries keep working against this node's own direction
    REPEATED_SUMMARY = "repeated_summary"  # a peer's summary with the very values of one of its recent ones


class Rejected(Exception):
    """A typed rejection of a peer message.

    `sender` is set only where the sender's identity is verified (its libp2p key vouched for
    the signing key, or libp2p authenticated the stream): a claimed id is not an identity,
    and counting a rejection against it would let anyone frame an honest peer.
    """

    def __init__(self, reason: RejectReason, detail: str = "", sender: str | None = None):
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
        self.detail = detail
        self.sender = sender


class Signer(Protocol):
    """What `seal` needs of a node identity."""

    @property
    def peer_id(self) -> str: ...

    @property
    def public_key(self) -> bytes: ...

    def sign(self, message: bytes) -> bytes: ...


@dataclass(frozen=True)
class VersionedSigner:
    """A node identity that seals in the versions its node speaks: what a node of versions other
    than THIS_RELEASE hands to whatever seals its messages (a bare identity seals in this release's)."""

    identity: NodeIdentity
    versions: ProtocolVersions = THIS_RELEASE

    @property
    def peer_id(self) -> str:
        return self.identity.peer_id

    @property
    def public_key(self) -> bytes:
        return self.identity.public_key

    def sign(self, message: bytes) -> bytes:
        return self.identity.sign(message)

    def bind_signing_key(self) -> bytes:
        return self.identity.bind_signing_key()


# What seals this node's messages: its identity (this release's versions) or a VersionedSigner.
Sealer = NodeIdentity | VersionedSigner


def versions_of(signer: Signer) -> ProtocolVersions:
    """The versions `signer` seals in: its own if it is a VersionedSigner, else THIS_RELEASE."""
    return signer.versions if isinstance(signer, VersionedSigner) else THIS_RELEASE


@dataclass(frozen=True)
class VerifiedMessage:
    kind: MessageKind
    sender_id: str
    sender_public_key: bytes
    message: Message
    size: int
    protocol_version: int  # the envelope's: one this node speaks, unless opened with wider `versions`


def signing_bytes(protocol_version: int, kind: int, sender_id: str, body: bytes) -> bytes:
    """The canonical bytes an envelope's signature covers (see protocols/.../envelope.proto)."""
    sender = sender_id.encode("utf-8")
    return b"".join(
        (
            SIGNATURE_DOMAIN,
            struct.pack(">III", protocol_version, kind, len(sender)),
            sender,
            struct.pack(">I", len(body)),
            body,
        )
    )


def seal(signer: Signer, kind: MessageKind, message: Message) -> bytes:
    """Serialise `message`, sign it as `signer` in the protocol version it writes
    (versions_of(signer).written), and return the envelope bytes."""
    written = versions_of(signer).written
    if not isinstance(message, MESSAGE_TYPES[kind]):
        raise TypeError(f"{kind.name} carries {MESSAGE_TYPES[kind].__name__}, not {type(message).__name__}")
    body = message.SerializeToString(deterministic=True)
    if len(body) > MAX_BODY_BYTES[kind]:
        raise ValueError(f"{kind.name} body is {len(body)} bytes, over the {MAX_BODY_BYTES[kind]}-byte cap")
    envelope = envelope_pb2.SignedEnvelope(
        protocol_version=written,
        kind=int(kind),
        sender_id=signer.peer_id,
        sender_public_key=signer.public_key,
        body=body,
        signature=signer.sign(signing_bytes(written, int(kind), signer.peer_id, body)),
    )
    return envelope.SerializeToString(deterministic=True)


def _decode(message_type: type[Message], data: bytes, what: str) -> Message:
    try:
        return message_type.FromString(data)
    except Exception as e:  # noqa: BLE001 - any decoder failure (DecodeError, RecursionError, ...) is a rejection
        raise Rejected(RejectReason.MALFORMED, f"{what} does not decode ({type(e).__name__})") from None


def envelope_kind(data: object) -> MessageKind | None:
    """The kind an envelope says it carries, unchecked (no signature, no version), or None when
    `data` is no envelope of a known kind: which check to run on it, not whether to trust it."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) > max(map(max_envelope_bytes, MessageKind)):
        return None
    try:
        kind = envelope_pb2.SignedEnvelope.FromString(bytes(data)).kind
        return MessageKind(kind)
    except Exception:  # noqa: BLE001 - any bytes may arrive: not an envelope
        return None


def open_envelope(data: object, expected_kind: MessageKind, versions: tuple[int, int] | None = None) -> VerifiedMessage:
    """Check and decode envelope bytes from a peer. Raises `Rejected`; never anything else.

    `versions`: the envelope versions taken (default: SUPPORTED_PROTOCOL_VERSIONS); a readable
    version outside them is INCOMPATIBLE_VERSION, checked before the signature (no sender proven)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise Rejected(RejectReason.MALFORMED, f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    cap = max_envelope_bytes(expected_kind)
    if len(data) > cap:
        raise Rejected(RejectReason.OVERSIZED, f"{len(data)} bytes > {cap}")
    envelope = _decode(envelope_pb2.SignedEnvelope, data, "envelope")
    lowest, highest = versions or SUPPORTED_PROTOCOL_VERSIONS
    if not READABLE_PROTOCOL_VERSIONS[0] <= envelope.protocol_version <= READABLE_PROTOCOL_VERSIONS[1]:
        raise Rejected(RejectReason.UNSUPPORTED_VERSION, f"protocol version {envelope.protocol_version}")
    if not lowest <= envelope.protocol_version <= highest:
        raise Rejected(RejectReason.INCOMPATIBLE_VERSION,
                       f"protocol version {envelope.protocol_version}, this node speaks {lowest}-{highest}")
    if envelope.kind != expected_kind:
        raise Rejected(RejectReason.WRONG_KIND, f"kind {envelope.kind}, expected {expected_kind.name}")
    if not 0 < len(envelope.sender_id) <= 128:
        raise Rejected(RejectReason.INVALID_FIELD, "sender_id missing or too long")
    if len(envelope.sender_public_key) != 32 or len(envelope.signature) != 64:
        raise Rejected(RejectReason.MALFORMED, "sender_public_key must be 32 bytes, signature 64")
    if len(envelope.body) > MAX_BODY_BYTES[expected_kind]:
        raise Rejected(RejectReason.OVERSIZED, f"body {len(envelope.body)} bytes")
    signed = signing_bytes(envelope.protocol_version, envelope.kind, envelope.sender_id, envelope.body)
    if not verify_ed25519(envelope.sender_public_key, envelope.signature, signed):
        raise Rejected(RejectReason.BAD_SIGNATURE, "signature does not verify")
    message = _decode(MESSAGE_TYPES[expected_kind], envelope.body, expected_kind.name)
    problem = check_structure(message)
    if problem is not None:
        raise Rejected(RejectReason.INVALID_FIELD, problem)
    problem = check_ranges(message)
    if problem is not None:
        raise Rejected(RejectReason.OUT_OF_RANGE, problem)
    return VerifiedMessage(
        kind=expected_kind,
        sender_id=envelope.sender_id,
        sender_public_key=envelope.sender_public_key,
        message=message,
        size=len(data),
        protocol_version=envelope.protocol_version,
    )
