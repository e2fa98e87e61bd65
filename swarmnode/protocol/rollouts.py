"""Rollout announcements (DHT values) and rollout batches (stream payloads): build and check.

An announcement is self-certifying, like a PeerRecord: it carries the libp2p identity's
signature over the node key, so the DHT can refuse a forged one on sight. A batch arrives over
a stream from a peer whose announcement we hold; it must be signed by that peer with the key
the announcement vouched for. `open_announcement` and `open_served` are shared with gradient
summaries (protocol/summaries.py), which travel the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmnode.identity import NodeIdentity, verify_binding
from swarmnode.protocol.codec import MessageKind, Rejected, RejectReason, VerifiedMessage, open_envelope, seal
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.peer_record import DEFAULT_MAX_TTL_S, check_lifetime


@dataclass(frozen=True)
class CheckedAnnouncement:
    announcement: rollout_batch_pb2.RolloutAnnouncement
    public_key: bytes  # the sender's node key, bound to its peer id

    @property
    def peer_id(self) -> str:
        return self.announcement.peer_id


def build_announcement(identity: NodeIdentity, *, window: int, first_batch_id: int, last_batch_id: int,
                       model_fingerprint: str, now: float, ttl_s: float) -> bytes:
    message = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=identity.peer_id, window=window, first_batch_id=first_batch_id, last_batch_id=last_batch_id,
        model_fingerprint=model_fingerprint, timestamp=now, expires_at=now + ttl_s,
        peer_id_binding=identity.bind_signing_key(),
    )
    return seal(identity, MessageKind.ROLLOUT_ANNOUNCEMENT, message)


def open_announcement(data: object, kind: MessageKind, *, subkey: object, now: float,
                      max_ttl_s: float = DEFAULT_MAX_TTL_S) -> VerifiedMessage:
    """Open a self-certifying announcement (rollouts or summaries) read from the DHT under `subkey`.

    Envelope checks, then: its peer id is the sender, the libp2p key behind the peer id signed
    the envelope's key, it is stored under its own peer id, and it is neither expired nor from
    the future, nor claims more than `max_ttl_s` of life. Raises `Rejected`. Both announcement
    messages carry peer_id, peer_id_binding, timestamp and expires_at.
    """
    verified = open_envelope(data, kind)
    message: Any = verified.message
    if message.peer_id != verified.sender_id:
        raise Rejected(RejectReason.KEY_BINDING, "announcement's peer id differs from its envelope")
    if not verify_binding(message.peer_id, verified.sender_public_key, message.peer_id_binding):
        raise Rejected(RejectReason.KEY_BINDING, "signing key is not bound to the peer id")
    sender = message.peer_id  # verified from here on; a misplaced value is anyone's doing, not the sender's
    if subkey != sender:
        raise Rejected(RejectReason.SUBKEY_MISMATCH, f"stored under subkey {str(subkey)[:64]!r}")
    check_lifetime(message.timestamp, message.expires_at, now=now, max_ttl_s=max_ttl_s, sender=sender)
    return verified


def check_announcement(data: object, *, subkey: object, now: float,
                       max_ttl_s: float = DEFAULT_MAX_TTL_S) -> CheckedAnnouncement:
    """Open a rollout announcement read from the DHT under `subkey` (see `open_announcement`)."""
    verified = open_announcement(data, MessageKind.ROLLOUT_ANNOUNCEMENT, subkey=subkey, now=now, max_ttl_s=max_ttl_s)
    return CheckedAnnouncement(verified.message, verified.sender_public_key)  # type: ignore[arg-type]


def seal_rollout_batch(identity: NodeIdentity, batch: rollout_batch_pb2.RolloutBatch) -> bytes:
    return seal(identity, MessageKind.ROLLOUT_BATCH, batch)


def open_served(data: object, kind: MessageKind, *, served_by: str, public_key: bytes) -> VerifiedMessage:
    """Open a payload of `kind` fetched from peer `served_by` (whose announced key is `public_key`).

    Raises `Rejected`, always naming `served_by` (libp2p authenticated the stream it came
    over): a peer may relay nothing but its own payloads, signed with the key its announcement
    bound to its peer id.
    """
    try:
        verified = open_envelope(data, kind)
    except Rejected as r:
        raise Rejected(r.reason, r.detail, served_by) from None
    if verified.sender_id != served_by:
        raise Rejected(RejectReason.SENDER_MISMATCH, f"served by {served_by[:16]}, signed as {verified.sender_id[:16]}", served_by)
    if verified.sender_public_key != public_key:
        raise Rejected(RejectReason.KEY_BINDING, f"{kind.name} signed with another key than the announced one", served_by)
    return verified


def open_rollout_batch(data: object, *, served_by: str, public_key: bytes) -> tuple[rollout_batch_pb2.RolloutBatch, int]:
    """Open a batch fetched from peer `served_by` (see `open_served`). Returns (batch, size in bytes)."""
    verified = open_served(data, MessageKind.ROLLOUT_BATCH, served_by=served_by, public_key=public_key)
    return verified.message, verified.size  # type: ignore[return-value]
