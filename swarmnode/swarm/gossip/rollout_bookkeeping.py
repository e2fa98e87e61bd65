"""Rollout gossip bookkeeping: the batches a node serves, and what it has fetched from whom.

Batches never sit in the DHT: a node announces the range of batch ids it holds (a few hundred
bytes under swarmnode/<swarm>/rollouts/<window>, subkey = its peer id) and peers fetch the
batches they have not seen over a direct libp2p request on ROLLOUT_PROTOCOL. These classes do
no I/O; the node's loops move the bytes.

A fetch may be a long-poll (RolloutFetchRequest.wait_ms): a server with nothing newer holds it
until a batch is added or the wait ends, so an idle peer costs one request per wait, not one
per fetch interval. Held requests are bounded (HeldRequests): one per peer, a few in all.
"""
from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol, Sequence, TypeVar

from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.utils.lru_map import LRUMap
from swarmnode.utils.ratelimit import ConcurrencySlots

ROLLOUT_PROTOCOL = "swarmnode/v1/rollouts"
MAX_BATCHES_PER_FETCH = 16
MAX_ROLLOUT_FETCH_RESPONSE_BYTES = 2 * 1024 * 1024  # under p2pd's 4 MiB message cap
MAX_ROLLOUT_FETCH_REQUEST_BYTES = 64
MAX_FAILURE_EXPONENT = 6  # a failing peer is asked at least every 2^6 fetch intervals
# The per-peer bounds of rollout gossip counted in status.limits (RolloutGossip.limits_snapshot);
# a node without a model reports them as zeros.
ROLLOUT_LIMIT_KEYS = ("serve_refused", "accept_deferred", "fetch_waits", "tracked_senders", "senders_evicted",
                      "held_refused")


class RolloutOutbox:
    """This node's most recent sealed batches (thread-safe), served to fetching peers."""

    def __init__(self, first_batch_id: int, capacity: int):
        self._next_id = first_batch_id
        self._batches: OrderedDict[int, bytes] = OrderedDict()
        self._flat: set[int] = set()  # ids of held batches of flat groups (split_informative)
        self._capacity = capacity
        self._lock = threading.Lock()
        self.batches_served = 0
        self.bytes_served = 0

    def next_batch_id(self) -> int:
        with self._lock:
            batch_id, self._next_id = self._next_id, self._next_id + 1
            return batch_id

    def add(self, batch_id: int, envelope: bytes, informative: bool = True) -> None:
        """Hold a sealed batch; `informative`: its groups' rewards differ (split_informative)."""
        with self._lock:
            self._batches[batch_id] = envelope
            if not informative:
                self._flat.add(batch_id)
            while len(self._batches) > self._capacity:
                self._flat.discard(self._batches.popitem(last=False)[0])

    def _ids_after(self, after_batch_id: int, informative_only: bool) -> list[int]:
        return [batch_id for batch_id in self._batches
                if batch_id > after_batch_id and not (informative_only and batch_id in self._flat)]

    def id_range(self) -> tuple[int, int] | None:
        with self._lock:
            if not self._batches:
                return None
            return next(iter(self._batches)), next(reversed(self._batches))

    def has_after(self, after_batch_id: int, informative_only: bool = False) -> bool:
        """Whether a batch newer than `after_batch_id` is held (of informative groups only, with
        `informative_only`)."""
        with self._lock:
            if not informative_only:  # ids only grow: the newest decides
                return bool(self._batches) and next(reversed(self._batches)) > after_batch_id
            return bool(self._ids_after(after_batch_id, True))

    def after(self, after_batch_id: int, max_batches: int, newest: bool = False,
              informative_only: bool = False) -> list[bytes]:
        """Envelopes of batches newer than `after_batch_id`, oldest first, within the size caps:
        the oldest such batches, or with `newest` the newest ones (the older are skipped); with
        `informative_only`, batches of flat groups are left out."""
        cap = min(max_batches, MAX_BATCHES_PER_FETCH)
        with self._lock:
            ids = self._ids_after(after_batch_id, informative_only)
            if newest:
                ids = ids[-cap:] if cap else []
            out, size = [], 0
            for batch_id in ids:
                envelope = self._batches[batch_id]
                if len(out) >= cap or size + len(envelope) > MAX_ROLLOUT_FETCH_RESPONSE_BYTES:
                    break
                out.append(envelope)
                size += len(envelope)
            self.batches_served += len(out)
            self.bytes_served += size
        return out

    def answer(self, request: bytes) -> bytes:
        """The response bytes to a fetch request; a malformed request gets an empty response."""
        return self.answer_parsed(parse_rollout_fetch_request(request))

    def answer_parsed(self, parsed: rollout_batch_pb2.RolloutFetchRequest | None) -> bytes:
        response = rollout_batch_pb2.RolloutFetchResponse()
        if parsed is not None:
            response.envelopes.extend(self.after(parsed.after_batch_id, parsed.max_batches, parsed.newest,
                                                 parsed.informative_only))
        return response.SerializeToString()


def rollout_fetch_request(after_batch_id: int, max_batches: int = MAX_BATCHES_PER_FETCH, wait_ms: int = 0,
                          newest: bool = False, informative_only: bool = False) -> bytes:
    """The request bytes asking a peer for its batches after `after_batch_id` (held up to `wait_ms`
    when it has none; with `newest` its newest `max_batches` rather than the oldest; with
    `informative_only` only its batches of groups whose rewards differ)."""
    return rollout_batch_pb2.RolloutFetchRequest(after_batch_id=after_batch_id, max_batches=max_batches,
                                                 wait_ms=wait_ms, newest=newest,
                                                 informative_only=informative_only).SerializeToString()


class _HasSpread(Protocol):
    @property
    def reward_spread(self) -> float: ...


Grouped = TypeVar("Grouped", bound=_HasSpread)


def split_informative(groups: Sequence[Grouped], max_groups: int | None = None) -> list[tuple[list[Grouped], bool]]:
    """A step's groups as the batches to seal, in order: the flat groups (all samples scored the
    same: zero advantage), then the groups whose rewards differ, each kind left out when empty and
    cut into batches of at most `max_groups` (>= 1; None: no cut). A peer that draws only
    informative groups asks for the second kind; the informative ones come last so that a fetch
    of a peer's newest batches ends with them. Why the cut: a peer's fetch asks for a number of
    batches (a new peer's backlog, the newest few), sized for steps of the configured split; one
    batch of a node whose plan raised its own groups far past that (the scheduler's fast node:
    45-64 a step instead of 8) would bring a slow peer many steps' worth of groups at once, to
    age in its pool while it trains on them."""
    if max_groups is not None and max_groups < 1:
        raise ValueError(f"max_groups must be >= 1, not {max_groups}")
    informative = [g for g in groups if g.reward_spread > 0]
    flat = [g for g in groups if not g.reward_spread > 0]
    size = max_groups or max(1, len(groups))
    return [(part[i:i + size], kind) for part, kind in ((flat, False), (informative, True))
            for i in range(0, len(part), size)]


def fetch_wanted(usable: int, per_step: int, ahead_steps: float) -> bool:
    """Whether to fetch peers' batches now: while the pool holds fewer usable groups (ones this
    node's selection can draw) than `ahead_steps` steps take,
        usable < ahead_steps * max(1, per_step);
    always with ahead_steps = 0 (fetch everything). A node that fetches more than it trains on
    pays to check and re-score groups that only age out of its pool."""
    return ahead_steps <= 0 or usable < ahead_steps * max(1, per_step)


def parse_rollout_fetch_request(data: bytes) -> rollout_batch_pb2.RolloutFetchRequest | None:
    """A peer's fetch request, or None if it is too long or does not decode (answered empty).
    Its integers are proto3 uint32/uint64, so in range; what they may cost is capped where used."""
    if len(data) > MAX_ROLLOUT_FETCH_REQUEST_BYTES:
        return None
    try:
        return rollout_batch_pb2.RolloutFetchRequest.FromString(data)
    except Exception:  # noqa: BLE001 - garbage from a peer
        return None


class HeldRequests(ConcurrencySlots):
    """Which peers' long-polls this node holds: at most one per peer and `capacity` in all, so a
    stranger (or a flood of fresh identities) cannot pin handlers open; a request over either
    bound is answered at once. Keyed by the libp2p-authenticated peer id; entries exist only
    while held, so the map is bounded by `capacity`. Event-loop only (not thread-safe)."""

    def __init__(self, capacity: int):
        super().__init__(total=capacity, per_peer=1)
        self.refused = 0  # long-polls answered at once for want of a slot

    def acquire(self, peer_id: str) -> bool:
        if super().acquire(peer_id):
            return True
        self.refused += 1
        return False


def idle_exponent_cap(long_poll_s: float, fetch_interval_s: float) -> int:
    """How far a peer that answers at once with nothing (it does not hold long-polls: an older
    version, or out of held slots) is backed off: to at most one fetch per long_poll_s."""
    ratio = long_poll_s / fetch_interval_s
    return max(0, int(ratio).bit_length() - 1) if ratio >= 1 else 0


def skip_fetch(round_no: int, failures: int, idle: int, idle_cap: int) -> bool:
    """Whether fetch round `round_no` skips a peer: one with `failures` failed fetches in a row
    is asked every 2^failures rounds (at most 2^MAX_FAILURE_EXPONENT), one that answered
    nothing at once `idle` times in a row every 2^min(idle, idle_cap) rounds."""
    exponent = max(min(failures, MAX_FAILURE_EXPONENT), min(idle, idle_cap))
    return exponent > 0 and round_no % (2 ** exponent) != 0


def announcements_due(now: float, last_read: float, expiries: list[float], discover_interval_s: float,
                      refresh_s: float) -> bool:
    """Whether to read the DHT's rollout announcements now (every time here is DHT time).

    New peers are looked for every `discover_interval_s` (every `refresh_s` while none is known:
    such a node has no one else to ask); known peers are fetched from directly, so their
    announcements are re-read only when one would lapse within `refresh_s` (its owner
    re-announces every refresh_s), and then not more often than every refresh_s."""
    since = now - last_read
    if since >= (discover_interval_s if expiries else min(refresh_s, discover_interval_s)):
        return True
    return since >= refresh_s and any(expires_at - now <= refresh_s for expires_at in expiries)


def parse_rollout_fetch_response(data: bytes) -> list[bytes] | None:
    """The envelopes of a fetch response, or None if it is not one (or too large)."""
    if len(data) > MAX_ROLLOUT_FETCH_RESPONSE_BYTES + 64 * MAX_BATCHES_PER_FETCH:
        return None
    try:
        response = rollout_batch_pb2.RolloutFetchResponse.FromString(data)
    except Exception:  # noqa: BLE001 - any decoder failure
        return None
    if len(response.envelopes) > MAX_BATCHES_PER_FETCH:
        return None
    return list(response.envelopes)


IGNORED_PENALTY = 100.0  # an ignored peer's GossipSub penalty: past the graylist threshold (-50)


@dataclass
class PeerStanding:
    """One sender's record with this node: cursor into its batches, good and bad messages."""

    cursor: int | None = None  # newest batch id fetched from it
    accepted: int = 0  # groups accepted
    rejected: int = 0  # groups or batches rejected
    strikes: deque = field(default_factory=deque)  # times of recent rejections
    ignored_until: float = 0.0

    @property
    def quality(self) -> float:
        """Laplace-smoothed share of its groups that passed every check, in (0, 1)."""
        return (self.accepted + 1) / (self.accepted + self.rejected + 2)


class SenderLedger:
    """Who sent what: fetch cursors, and a time-out for peers that keep sending bad data.

    A peer with more than `strike_limit` rejections within `strike_window_s` is ignored (not
    fetched from, its batches dropped) for `ignore_s`. At most `max_peers` standings are held
    (least recently used go first; ignored peers and peers that have contributed last);
    `restore` brings back the standings a previous run saved, so a restart pardons no one.
    """

    def __init__(self, strike_limit: int, strike_window_s: float, ignore_s: float, backlog: int, max_peers: int = 1024):
        self.strike_limit = strike_limit
        self.strike_window_s = strike_window_s
        self.ignore_s = ignore_s
        self.backlog = backlog
        self._now = 0.0  # the latest time seen, for deciding which standings are protected
        # Evicted last: peers being ignored (a flood of identities must not pardon them) and
        # peers that have contributed (it must not reset an honest peer's record either).
        self._peers: LRUMap[str, PeerStanding] = LRUMap(
            max_peers, protect=lambda s: s.ignored_until > self._now or s.accepted > 0)
        self._lock = threading.Lock()

    def standing(self, peer_id: str) -> PeerStanding:
        with self._lock:
            return self._peers.setdefault(peer_id, PeerStanding)

    def accepted_of(self, peer_ids: list[str]) -> dict[str, int]:
        """Groups accepted so far from each of `peer_ids` that has a standing (none: not listed)."""
        with self._lock:
            found = ((p, self._peers.peek(p)) for p in peer_ids)
            return {p: s.accepted for p, s in found if s is not None}

    def restore(self, peer_id: str, accepted: int, rejected: int, ignored_until: float, cursor: int | None) -> None:
        with self._lock:
            self._peers[peer_id] = PeerStanding(cursor=cursor, accepted=accepted, rejected=rejected,
                                                ignored_until=ignored_until)

    @property
    def evicted(self) -> int:
        return self._peers.evicted

    def __len__(self) -> int:
        return len(self._peers)

    def ignored(self, peer_id: str, now: float) -> bool:
        with self._lock:
            s = self._peers.get(peer_id)  # asking makes no entry: every announcing stranger would
        return s is not None and s.ignored_until > now

    def start_after(self, peer_id: str, first: int, last: int) -> int | None:
        """The batch id to fetch after, or None if nothing new. A new peer: only its recent backlog."""
        s = self.standing(peer_id)
        if s.cursor is None:
            return max(0, max(first, last - self.backlog + 1) - 1)  # a wire id is >= 0
        if s.cursor >= last:
            return None
        return max(s.cursor, first - 1, 0)

    def advance(self, peer_id: str, batch_id: int) -> None:
        with self._lock:  # looked up and updated under one lock: an eviction in between would orphan it
            s = self._peers.setdefault(peer_id, PeerStanding)
            s.cursor = batch_id if s.cursor is None else max(s.cursor, batch_id)

    def record(self, peer_id: str, accepted: int, rejected: int, now: float) -> bool:
        """Count a verdict; returns True if this pushes the peer into the ignored state."""
        with self._lock:
            s = self._peers.setdefault(peer_id, PeerStanding)
            self._now = max(self._now, now)
            s.accepted += accepted
            s.rejected += rejected
            for _ in range(rejected):
                s.strikes.append(now)
            while s.strikes and s.strikes[0] < now - self.strike_window_s:
                s.strikes.popleft()
            if len(s.strikes) > self.strike_limit and s.ignored_until <= now:
                s.ignored_until = now + self.ignore_s
                s.strikes.clear()
                return True
        return False

    def quality(self, peer_id: str) -> float:
        return self.standing(peer_id).quality

    def gossip_penalty(self, peer_id: str, now: float) -> float:
        """What this node holds against a peer, as a GossipSub application-score penalty:
        IGNORED_PENALTY while it is ignored, else its strikes within the strike window."""
        with self._lock:
            s = self._peers.get(peer_id)
            if s is None:
                return 0.0
            if s.ignored_until > now:
                return IGNORED_PENALTY
            return float(sum(1 for at in s.strikes if at >= now - self.strike_window_s))

    def snapshot(self, now: float) -> dict[str, dict]:
        with self._lock:
            return {
                pid: {"accepted": s.accepted, "rejected": s.rejected, "quality": round(s.quality, 3),
                      "ignored": s.ignored_until > now}
                for pid, s in self._peers.items()
            }


__all__ = ["ROLLOUT_PROTOCOL", "HeldRequests", "PeerStanding", "RolloutOutbox", "SenderLedger", "announcements_due",
           "fetch_wanted", "idle_exponent_cap", "parse_rollout_fetch_request", "parse_rollout_fetch_response",
           "rollout_fetch_request", "skip_fetch", "split_informative"]
