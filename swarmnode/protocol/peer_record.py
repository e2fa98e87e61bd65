"""PeerRecord: build one for this node, and check one from a peer against its context."""
from __future__ import annotations

from dataclasses import dataclass

from swarmnode.identity import verify_binding
from swarmnode.protocol.codec import (
    READABLE_PROTOCOL_VERSIONS,
    MessageKind,
    Rejected,
    RejectReason,
    Sealer,
    VerifiedMessage,
    open_envelope,
    seal,
    versions_of,
)
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.signed_values import DEFAULT_MAX_TTL_S, check_lifetime
from swarmnode.protocol.versions import VersionRange


@dataclass(frozen=True)
class PeerRecordFields:
    """What a node says about itself, apart from keys and times."""

    software_version: str
    swarm: str
    multiaddrs: tuple[str, ...]
    model_fingerprint: str
    device: peer_record_pb2.DeviceInfo
    capability: peer_record_pb2.Capability
    state: int
    client_mode: bool
    # Hash of the initial weights (policy.loading.base_fingerprint), "" when unknown: peers with
    # the same base may merge each other's gradient summaries (PeerTable.with_base).
    base_fingerprint: str = ""
    reachability: int = 0  # REACHABILITY_UNKNOWN / _PUBLIC / _PRIVATE (node/network.py)
    relays: tuple[str, ...] = ()  # peer ids holding this node's relay reservations, while private
    window_s: float = 0.0  # swarm.window_s, which every node of the swarm shares (0: not said)


def build_peer_record(identity: Sealer, fields: PeerRecordFields, now: float, ttl_s: float) -> bytes:
    """The signed envelope bytes of this node's PeerRecord, valid from `now` for `ttl_s`: it speaks
    the versions `identity` seals in (versions_of) and is written in their lowest."""
    versions = versions_of(identity)
    record = peer_record_pb2.PeerRecord(
        peer_id=identity.peer_id,
        public_key=identity.public_key,
        peer_id_binding=identity.bind_signing_key(),
        software_version=fields.software_version,
        protocol_version=versions.written,
        min_protocol_version=versions.lowest,
        max_protocol_version=versions.highest,
        swarm=fields.swarm,
        multiaddrs=list(fields.multiaddrs),
        model_fingerprint=fields.model_fingerprint,
        device=fields.device,
        capability=fields.capability,
        state=fields.state,
        timestamp=now,
        expires_at=now + ttl_s,
        client_mode=fields.client_mode,
        base_fingerprint=fields.base_fingerprint,
        reachability=fields.reachability,
        relays=list(fields.relays),
        window_s=fields.window_s,
    )
    return seal(identity, MessageKind.PEER_RECORD, record)


def check_peer_record(data: object, *, subkey: object, swarm: str, now: float,
                      max_ttl_s: float = DEFAULT_MAX_TTL_S) -> peer_record_pb2.PeerRecord:
    """Open a PeerRecord read from the DHT under `subkey` and check it in context.

    Checks, in order: envelope (size, decode, signature, structure, ranges) of any readable
    protocol version; the record's key is the envelope's signing key and its peer id is the
    sender; the libp2p key behind the peer id signed the node key (binding); the versions it
    speaks hold its envelope's (an older node's record without them is given (version, version));
    it was stored under its own peer id; it belongs to this swarm; it is neither expired nor
    from the future, nor claims more than `max_ttl_s` of life. Raises `Rejected`, naming the
    sender only once the binding proved the identity. Whether this node speaks any of the
    record's versions is for the caller (`spoken_versions`, versions.common_version).
    """
    verified: VerifiedMessage = open_envelope(data, MessageKind.PEER_RECORD, READABLE_PROTOCOL_VERSIONS)
    record: peer_record_pb2.PeerRecord = verified.message  # type: ignore[assignment]
    if record.peer_id != verified.sender_id or record.public_key != verified.sender_public_key:
        raise Rejected(RejectReason.KEY_BINDING, "record's peer id or key differs from its envelope")
    if not verify_binding(record.peer_id, record.public_key, record.peer_id_binding):
        raise Rejected(RejectReason.KEY_BINDING, "signing key is not bound to the peer id")
    sender = record.peer_id  # verified from here on, but where and when a value is stored is anyone's doing:
    _give_versions(record, verified.protocol_version, sender)
    if subkey != record.peer_id:  # ...so a misplaced value is not held against the peer that signed it
        raise Rejected(RejectReason.SUBKEY_MISMATCH, f"stored under subkey {str(subkey)[:64]!r}")
    if record.swarm != swarm:
        raise Rejected(RejectReason.WRONG_SWARM, f"swarm {record.swarm!r}")
    check_lifetime(record.timestamp, record.expires_at, now=now, max_ttl_s=max_ttl_s, sender=sender)
    return record


def _give_versions(record: peer_record_pb2.PeerRecord, envelope_version: int, sender: str) -> None:
    """Fill in the versions of an older node's record (none given: its envelope's only); raise
    INVALID_FIELD for a range that is half given, empty, beyond the readable versions, or
    without the envelope's own version."""
    lowest, highest = record.min_protocol_version, record.max_protocol_version
    if lowest == highest == 0:
        record.min_protocol_version = record.max_protocol_version = envelope_version
        return
    if not (READABLE_PROTOCOL_VERSIONS[0] <= lowest <= envelope_version <= highest <= READABLE_PROTOCOL_VERSIONS[1]):
        raise Rejected(RejectReason.INVALID_FIELD, f"protocol versions {lowest}-{highest} with an envelope of version "
                       f"{envelope_version}", sender)


def spoken_versions(record: peer_record_pb2.PeerRecord) -> VersionRange:
    """The versions a checked record's node speaks (check_peer_record filled in an older node's)."""
    return record.min_protocol_version, record.max_protocol_version


@dataclass(frozen=True)
class RecordOrigin:
    """Who published a peer record this node cannot use: its peer id, the swarm it is in, the
    protocol versions it speaks, its swarm.window_s (0.0: its record does not say, an older
    node's) and when that record expires."""

    peer_id: str
    swarm: str
    versions: VersionRange
    window_s: float = 0.0
    expires_at: float = 0.0


def record_origin(data: object) -> RecordOrigin | None:
    """The origin of a PeerRecord of another swarm, window or protocol version, found under a key
    this node does not use; None for anything else. Only for saying why a join did not take: the
    record (of any readable version) is verified (signature, key binding, structure) before its
    swarm, window and versions are believed."""
    try:
        verified = open_envelope(data, MessageKind.PEER_RECORD, READABLE_PROTOCOL_VERSIONS)
        record: peer_record_pb2.PeerRecord = verified.message  # type: ignore[assignment]
        if record.peer_id != verified.sender_id or not verify_binding(record.peer_id, record.public_key,
                                                                      record.peer_id_binding):
            return None
        _give_versions(record, verified.protocol_version, record.peer_id)
    except Rejected:
        return None
    return RecordOrigin(record.peer_id, record.swarm, spoken_versions(record), record.window_s, record.expires_at)
