"""Summary announcements (DHT values) and sealed gradient summaries (stream payloads): build and check.

They travel like rollouts: a node announces "I hold summary `summary_id` of base
`base_fingerprint`" under swarmnode/<swarm>/summaries/<window> (self-certifying, so the DHT
refuses forgeries), and peers with the same base fetch the sealed summary over a libp2p
request. The announcement names the base and the size, so a receiver skips what it could
never merge before spending bandwidth on it. The checks here are only the wire's: whether a
summary fits this node's model, its base and its norm bounds is for swarmnode/summaries/.
"""
from __future__ import annotations

from dataclasses import dataclass

from swarmnode.protocol.codec import MessageKind, Sealer, seal
from swarmnode.protocol.generated import gradient_summary_pb2
from swarmnode.protocol.signed_values import DEFAULT_MAX_TTL_S, open_announcement, open_served


@dataclass(frozen=True)
class CheckedSummaryAnnouncement:
    announcement: gradient_summary_pb2.SummaryAnnouncement
    public_key: bytes  # the sender's node key, bound to its peer id: a fetched summary must be signed with it
    protocol_version: int  # its envelope's

    @property
    def peer_id(self) -> str:
        return self.announcement.peer_id


def build_summary_announcement(identity: Sealer, *, window: int, summary_id: int, base_fingerprint: str,
                               size_bytes: int, now: float, ttl_s: float) -> bytes:
    """The sealed announcement of this node's summary `summary_id` (`size_bytes`: its sealed envelope's length)."""
    message = gradient_summary_pb2.SummaryAnnouncement(
        peer_id=identity.peer_id, window=window, summary_id=summary_id, base_fingerprint=base_fingerprint,
        size_bytes=size_bytes, timestamp=now, expires_at=now + ttl_s, peer_id_binding=identity.bind_signing_key(),
    )
    return seal(identity, MessageKind.SUMMARY_ANNOUNCEMENT, message)


def check_summary_announcement(data: object, *, subkey: object, now: float,
                               max_ttl_s: float = DEFAULT_MAX_TTL_S,
                               versions: tuple[int, int] | None = None) -> CheckedSummaryAnnouncement:
    """Open a summary announcement read from the DHT under `subkey`. Raises `Rejected`.

    The same checks as a rollout announcement's (signed_values.open_announcement): envelope, peer-id
    binding, own subkey, lifetime.
    """
    verified = open_announcement(data, MessageKind.SUMMARY_ANNOUNCEMENT, subkey=subkey, now=now, max_ttl_s=max_ttl_s,
                                 versions=versions)
    return CheckedSummaryAnnouncement(verified.message, verified.sender_public_key,  # type: ignore[arg-type]
                                      verified.protocol_version)


def seal_summary(identity: Sealer, summary: gradient_summary_pb2.GradientSummary) -> bytes:
    """This node's summary as signed envelope bytes (ValueError if over the GRADIENT_SUMMARY body cap)."""
    return seal(identity, MessageKind.GRADIENT_SUMMARY, summary)


def open_summary(data: object, *, served_by: str, public_key: bytes,
                 versions: tuple[int, int] | None = None) -> tuple[gradient_summary_pb2.GradientSummary, int]:
    """Open a summary fetched from peer `served_by` (whose announced key is `public_key`), in one
    of `versions` (open_envelope's).

    Returns (summary, size in bytes). Raises `Rejected`, always naming `served_by`: the stream
    was authenticated by libp2p, and a peer may serve only summaries it signed itself with the
    key its announcement bound to its peer id.
    """
    verified = open_served(data, MessageKind.GRADIENT_SUMMARY, served_by=served_by, public_key=public_key,
                           versions=versions)
    return verified.message, verified.size  # type: ignore[return-value]


__all__ = ["CheckedSummaryAnnouncement", "build_summary_announcement", "check_summary_announcement",
           "open_summary", "seal_summary"]
