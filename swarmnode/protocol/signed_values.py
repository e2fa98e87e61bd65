"""What every value a peer signs is checked for in context, whatever its kind.

- Time: `check_lifetime` (a DHT value's timestamp and expiry against this node's clock and
  `max_ttl_s`) and `age_problem` (an opened batch's or summary's creation time).
- Opening: `open_announcement` (a self-certifying announcement read from the DHT: rollouts'
  and summaries') and `open_served` (a payload a peer served over a stream: a rollout batch, a
  gradient summary). The per-kind wrappers live in rollout_messages.py and summary_messages.py.
"""
from __future__ import annotations

from typing import Any

from swarmnode.identity import verify_binding
from swarmnode.protocol.codec import MessageKind, Rejected, RejectReason, VerifiedMessage, open_envelope

# A record signed further than this ahead of our DHT time is refused (clock skew allowance).
MAX_CLOCK_SKEW_S = 30.0
# The longest life a record or announcement may claim unless the node's config says otherwise
# (limits.max_record_ttl_s): a record claiming ten years would otherwise stay a ghost peer.
DEFAULT_MAX_TTL_S = 120.0


def check_lifetime(timestamp: float, expires_at: float, *, now: float, max_ttl_s: float, sender: str) -> None:
    """Raise `Rejected` unless now < expires_at, timestamp <= now + skew and expires_at - timestamp <= max_ttl_s.

    A lifetime or a timestamp ahead is what `sender` signed: counted against it. An expired
    value is not: anyone can store a peer's old record again.
    """
    if expires_at <= now:
        raise Rejected(RejectReason.EXPIRED, f"expired {now - expires_at:.1f}s ago")
    if timestamp > now + MAX_CLOCK_SKEW_S:
        raise Rejected(RejectReason.FROM_FUTURE, f"signed {timestamp - now:.1f}s ahead", sender)
    if expires_at - timestamp > max_ttl_s:
        raise Rejected(RejectReason.LIFETIME, f"claims {expires_at - timestamp:.0f}s of life, over {max_ttl_s:g}s", sender)


def age_problem(created_at: float, *, now: float, max_age_s: float) -> tuple[RejectReason, str] | None:
    """Why an opened message (a rollout batch, a gradient summary) made at `created_at` is too
    new or too old to take, or None: made no later than now plus clock skew, and no earlier
    than `max_age_s` ago."""
    if created_at > now + MAX_CLOCK_SKEW_S:
        return RejectReason.FROM_FUTURE, f"made {created_at - now:.0f}s ahead"
    if created_at < now - max_age_s:
        return RejectReason.EXPIRED, f"made {now - created_at:.0f}s ago, over {max_age_s:g}s"
    return None


def open_announcement(data: object, kind: MessageKind, *, subkey: object, now: float,
                      max_ttl_s: float = DEFAULT_MAX_TTL_S, versions: tuple[int, int] | None = None) -> VerifiedMessage:
    """Open a self-certifying announcement (rollouts or summaries) read from the DHT under `subkey`.

    Envelope checks, then: its peer id is the sender, the libp2p key behind the peer id signed
    the envelope's key, it is stored under its own peer id, and it is neither expired nor from
    the future, nor claims more than `max_ttl_s` of life. Raises `Rejected`. Both announcement
    messages carry peer_id, peer_id_binding, timestamp and expires_at. `versions`: the envelope
    versions taken (open_envelope's; the DHT keeps announcements of every readable version).
    """
    verified = open_envelope(data, kind, versions)
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


def open_served(data: object, kind: MessageKind, *, served_by: str, public_key: bytes,
                versions: tuple[int, int] | None = None) -> VerifiedMessage:
    """Open a payload of `kind` fetched from peer `served_by` (whose announced key is `public_key`),
    in one of `versions` (open_envelope's).

    Raises `Rejected`, always naming `served_by` (libp2p authenticated the stream it came
    over): a peer may relay nothing but its own payloads, signed with the key its announcement
    bound to its peer id.
    """
    try:
        verified = open_envelope(data, kind, versions)
    except Rejected as r:
        raise Rejected(r.reason, r.detail, served_by) from None
    if verified.sender_id != served_by:
        raise Rejected(RejectReason.SENDER_MISMATCH, f"served by {served_by[:16]}, signed as {verified.sender_id[:16]}", served_by)
    if verified.sender_public_key != public_key:
        raise Rejected(RejectReason.KEY_BINDING, f"{kind.name} signed with another key than the announced one", served_by)
    return verified
