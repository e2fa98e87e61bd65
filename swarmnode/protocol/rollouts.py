"""Rollout announcements (DHT values) and rollout batches (stream payloads): build and check.

An announcement is self-certifying, like a PeerRecord: it carries the libp2p identity's
signature over the node key, so the DHT can refuse a forged one on sight. A batch arrives over
a stream from a peer whose announcement we hold; it must be signed by that peer with the key
the announcement vouched for.
"""
from __future__ import annotations

from dataclasses import dataclass

from swarmnode.identity import NodeIdentity, verify_binding
from swarmnode.protocol.codec import MessageKind, Rejected, RejectReason, open_envelope, seal
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.peer_record import DEFAULT_MAX_TTL_S, MAX_CLOCK_SKEW_S, check_lifetime


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


def check_announcement(data: object, *, subkey: object, now: float,
                       max_ttl_s: float = DEFAULT_MAX_TTL_S) -> CheckedAnnouncement:
    """Open an announcement read from the DHT under `subkey`. Raises `Rejected`.

    Envelope checks, then: its peer id is the sender, the libp2p key behind the peer id signed
    the envelope's key, it is stored under its own peer id, and it is neither expired nor from
    the future, nor claims more than `max_ttl_s` of life.
    """
    verified = open_envelope(data, MessageKind.ROLLOUT_ANNOUNCEMENT)
    message: rollout_batch_pb2.RolloutAnnouncement = verified.message  # type: ignore[assignment]
    if message.peer_id != verified.sender_id:
        raise Rejected(RejectReason.KEY_BINDING, "announcement's peer id differs from its envelope")
    if not verify_binding(message.peer_id, verified.sender_public_key, message.peer_id_binding):
        raise Rejected(RejectReason.KEY_BINDING, "signing key is not bound to the peer id")
    sender = message.peer_id  # verified from here on; a misplaced value is anyone's doing, not the sender's
    if subkey != message.peer_id:
        raise Rejected(RejectReason.SUBKEY_MISMATCH, f"stored under subkey {str(subkey)[:64]!r}")
    check_lifetime(message.timestamp, message.expires_at, now=now, max_ttl_s=max_ttl_s, sender=sender)
    return CheckedAnnouncement(message, verified.sender_public_key)


def seal_rollout_batch(identity: NodeIdentity, batch: rollout_batch_pb2.RolloutBatch) -> bytes:
    return seal(identity, MessageKind.ROLLOUT_BATCH, batch)


def open_rollout_batch(data: object, *, served_by: str, public_key: bytes) -> tuple[rollout_batch_pb2.RolloutBatch, int]:
    """Open a batch fetched from peer `served_by` (whose announced key is `public_key`).

    Returns (batch, size in bytes). Raises `Rejected` (always naming `served_by`: libp2p
    authenticated the stream it came over): a peer may relay nothing but its own batches,
    signed with the key its announcement bound to its peer id.
    """
    try:
        verified = open_envelope(data, MessageKind.ROLLOUT_BATCH)
    except Rejected as r:
        raise Rejected(r.reason, r.detail, served_by) from None
    if verified.sender_id != served_by:
        raise Rejected(RejectReason.SENDER_MISMATCH, f"served by {served_by[:16]}, signed as {verified.sender_id[:16]}", served_by)
    if verified.sender_public_key != public_key:
        raise Rejected(RejectReason.KEY_BINDING, "batch signed with another key than the announced one", served_by)
    return verified.message, verified.size  # type: ignore[return-value]


def batch_age_problem(batch: rollout_batch_pb2.RolloutBatch, *, now: float, max_age_s: float) -> tuple[RejectReason, str] | None:
    """Why an opened batch is too new or too old to take, or None: made no later than now plus
    clock skew, and no earlier than `max_age_s` ago."""
    if batch.created_at > now + MAX_CLOCK_SKEW_S:
        return RejectReason.FROM_FUTURE, f"made {batch.created_at - now:.0f}s ahead"
    if batch.created_at < now - max_age_s:
        return RejectReason.EXPIRED, f"made {now - batch.created_at:.0f}s ago, over {max_age_s:g}s"
    return None
