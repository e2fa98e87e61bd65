"""Rollout announcements (DHT values) and rollout batches (stream payloads): build and check.

An announcement is self-certifying, like a PeerRecord: it carries the libp2p identity's
signature over the node key, so the DHT can refuse a forged one on sight. A batch arrives over
a stream from a peer whose announcement we hold; it must be signed by that peer with the key
the announcement vouched for. Gradient summaries travel the same way (summary_messages.py);
the checks both share are in signed_values.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from swarmnode.protocol.codec import MessageKind, Sealer, seal
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.signed_values import DEFAULT_MAX_TTL_S, open_announcement, open_served


@dataclass(frozen=True)
class CheckedRolloutAnnouncement:
    announcement: rollout_batch_pb2.RolloutAnnouncement
    public_key: bytes  # the sender's node key, bound to its peer id
    protocol_version: int  # its envelope's

    @property
    def peer_id(self) -> str:
        return self.announcement.peer_id


def build_rollout_announcement(identity: Sealer, *, window: int, first_batch_id: int, last_batch_id: int,
                               model_fingerprint: str, now: float, ttl_s: float) -> bytes:
    """The sealed announcement that this node holds batches first_batch_id..last_batch_id."""
    message = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=identity.peer_id, window=window, first_batch_id=first_batch_id, last_batch_id=last_batch_id,
        model_fingerprint=model_fingerprint, timestamp=now, expires_at=now + ttl_s,
        peer_id_binding=identity.bind_signing_key(),
    )
    return seal(identity, MessageKind.ROLLOUT_ANNOUNCEMENT, message)


def check_rollout_announcement(data: object, *, subkey: object, now: float,
                               max_ttl_s: float = DEFAULT_MAX_TTL_S,
                               versions: tuple[int, int] | None = None) -> CheckedRolloutAnnouncement:
    """Open a rollout announcement read from the DHT under `subkey` (see `signed_values.open_announcement`)."""
    verified = open_announcement(data, MessageKind.ROLLOUT_ANNOUNCEMENT, subkey=subkey, now=now, max_ttl_s=max_ttl_s,
                                 versions=versions)
    return CheckedRolloutAnnouncement(verified.message, verified.sender_public_key,  # type: ignore[arg-type]
                                      verified.protocol_version)


def seal_rollout_batch(identity: Sealer, batch: rollout_batch_pb2.RolloutBatch) -> bytes:
    """This node's batch as signed envelope bytes."""
    return seal(identity, MessageKind.ROLLOUT_BATCH, batch)


def open_rollout_batch(data: object, *, served_by: str, public_key: bytes,
                       versions: tuple[int, int] | None = None) -> tuple[rollout_batch_pb2.RolloutBatch, int]:
    """Open a batch fetched from peer `served_by` (see `signed_values.open_served`). Returns (batch, size in bytes)."""
    verified = open_served(data, MessageKind.ROLLOUT_BATCH, served_by=served_by, public_key=public_key,
                           versions=versions)
    return verified.message, verified.size  # type: ignore[return-value]
