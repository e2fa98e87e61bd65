"""The peer table, the record intake that feeds it, and the accept/reject counters.

A peer whose protocol versions do not overlap this node's stays out of the table (nothing is
fetched from it or sent to it) and is kept apart, counted once (`incompatible_version`, never
a strike); the DHT still admits and keeps its values, so a mixed-version swarm keeps one DHT.
"""
from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from swarmnode.protocol import PeerRecord, RecordOrigin, Rejected, RejectReason, check_peer_record, record_origin
from swarmnode.protocol.codec import READABLE_PROTOCOL_VERSIONS, MessageKind, envelope_kind
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_UNKNOWN
from swarmnode.protocol.peer_record import spoken_versions
from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement, check_rollout_announcement
from swarmnode.protocol.signed_values import DEFAULT_MAX_TTL_S
from swarmnode.protocol.summary_messages import CheckedSummaryAnnouncement, check_summary_announcement
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions, VersionRange, common_version
from swarmnode.utils.lru_map import LRUMap
from swarmnode.swarm.key_layout import uses_shards
from swarmnode.swarm.shards import belongs
from swarmnode.swarm.transports.base import StoredValue
from swarmnode.swarm.windows import (
    key_kind,
    key_window,
    parse_shard_key,
    peer_records_key,
    rollouts_key,
    shard_keys_of,
    summaries_key,
    window_index,
)

# Keys whose admitted peers the intake counts (each <= max_values_per_key): an honest holder
# holds a handful of shard keys per window; more only means someone stores under made-up ones.
KEYS_COUNTED = 4096


def short_id(peer_id: str) -> str:
    """A peer id short enough for a log line or a table column: its head and its tail."""
    return peer_id if len(peer_id) <= 16 else f"{peer_id[:8]}…{peer_id[-6:]}"


def peer_id_of(maddr: str) -> str:
    """The peer id of a full multiaddr (`.../p2p/<peer id>`): what follows its last /p2p/."""
    return maddr.rsplit("/p2p/", 1)[-1].split("/")[0]


def short_address(maddr: str) -> str:
    """A full multiaddr for a log line: its address part and the short peer id
    (`/ip4/1.2.3.4/tcp/7100/p2p/12D3KooW…xyz` -> `/ip4/1.2.3.4/tcp/7100 (12D3KooW…abcdef)`)."""
    address, _, peer = maddr.partition("/p2p/")
    return f"{address} ({short_id(peer)})" if peer else maddr


@dataclass
class PeerEntry:
    record: PeerRecord
    first_seen: float  # DHT time this node first accepted a record of the peer
    last_seen: float  # DHT time of the newest accepted record

    @property
    def peer_id(self) -> str:
        return self.record.peer_id

    @property
    def base_fingerprint(self) -> str:
        """The peer's initial-weights hash ("" when it did not say): same base, mergeable summaries."""
        return self.record.base_fingerprint


class PeerTable:
    """Peers known from accepted records; a peer leaves when its newest record expires, or
    when the table holds `capacity` peers and a new one arrives (the least recently refreshed
    goes: a flood of fresh identities costs bounded memory)."""

    def __init__(self, self_peer_id: str, capacity: int = 1024):
        self.self_peer_id = self_peer_id
        self._entries: LRUMap[str, PeerEntry] = LRUMap(capacity)

    @property
    def evicted(self) -> int:
        return self._entries.evicted

    def offer(self, record: PeerRecord, now: float) -> bool:
        """Add or refresh a checked record. Returns True if the table changed.

        Raises Rejected(REPLAYED) for a record older than the one already held (a peer's own
        old record, replayed by someone, must not roll its entry back).
        """
        entry = self._entries.get(record.peer_id)
        if entry is None:
            self._entries[record.peer_id] = PeerEntry(record=record, first_seen=now, last_seen=now)
            return True
        if record.timestamp < entry.record.timestamp:
            raise Rejected(RejectReason.REPLAYED, "older than the record already held", record.peer_id)
        if record.timestamp == entry.record.timestamp:
            return False
        entry.record, entry.last_seen = record, now
        return True

    def expire(self, now: float) -> list[str]:
        gone = [pid for pid, e in self._entries.items() if e.record.expires_at <= now]
        for pid in gone:
            self._entries.pop(pid)
        return gone

    def entries(self) -> list[PeerEntry]:
        return sorted(self._entries.values(), key=lambda e: e.first_seen)

    def with_base(self, base_fingerprint: str, now: float | None = None) -> list[str]:
        """Peer ids of the peers whose record names `base_fingerprint` (none for ""), oldest known
        first; with `now`, only those whose record has not expired by then. A node publishes and
        merges gradient summaries only while this is not empty."""
        if not base_fingerprint:
            return []
        return [e.peer_id for e in self.entries()
                if e.base_fingerprint == base_fingerprint and (now is None or e.record.expires_at > now)]

    def get(self, peer_id: str) -> PeerEntry | None:
        """The peer's entry, without making it recently refreshed."""
        return self._entries.peek(peer_id)

    def route_of(self, peer_id: str) -> tuple[int, tuple[str, ...]]:
        """What a peer's record says about reaching it: its reachability and its relays
        (a RoutedTransport's PeerRoutes)."""
        entry = self.get(peer_id)
        if entry is None:
            return REACHABILITY_UNKNOWN, ()
        return entry.record.reachability, tuple(entry.record.relays)

    def addresses_of(self, peer_id: str) -> list[str]:
        """The multiaddrs in a peer's record ([] for a peer not in the table)."""
        entry = self.get(peer_id)
        return list(entry.record.multiaddrs) if entry is not None else []

    def __contains__(self, peer_id: str) -> bool:
        return peer_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)


UNVERIFIED = "unverified"  # rejections whose sender's identity was never proven


class MessageStats:
    """Accepted messages by kind, rejected by reason and by verified sender (stable names for status).

    Per-sender counts are kept for the `max_senders` most recently rejected senders; a
    rejection whose sender is unproven (None) is counted under UNVERIFIED, never under the id
    the message claims.
    """

    def __init__(self, max_senders: int = 1024):
        self.accepted: Counter = Counter()
        self.rejected: Counter = Counter()
        self._by_sender: LRUMap[str, Counter] = LRUMap(max_senders)
        # The event loop, gossip worker threads and the trainer thread all count here.
        self._lock = threading.Lock()

    def accept(self, kind: str) -> None:
        with self._lock:
            self.accepted[kind] += 1

    def reject(self, reason: RejectReason, sender: str | None) -> None:
        with self._lock:
            self.rejected[reason.value] += 1
            self._by_sender.setdefault(sender or UNVERIFIED, Counter)[reason.value] += 1

    def counts(self) -> dict[str, dict]:
        """Copies of the counters, for status: accepted, rejected, rejected_by_sender."""
        with self._lock:
            return {"accepted": dict(self.accepted), "rejected": dict(self.rejected),
                    "rejected_by_sender": {s: dict(c) for s, c in self._by_sender.items()}}

    def rejected_from(self, sender: str) -> int:
        """How many of `sender`'s messages were rejected (0 for a sender no longer tracked)."""
        with self._lock:
            counts = self._by_sender.get(sender)
            return sum(counts.values()) if counts is not None else 0

    @property
    def rejected_by_sender(self) -> dict[str, Counter]:
        """A copy: per verified sender, its rejections by reason."""
        with self._lock:
            return {sender: Counter(counts) for sender, counts in self._by_sender.items()}

    @property
    def senders_evicted(self) -> int:
        return self._by_sender.evicted


class Verdicts:
    """Verdicts on values already judged, so a value re-read every poll is checked (and counted) once."""

    def __init__(self, capacity: int = 8192):
        self._capacity = capacity
        self._verdicts: OrderedDict[bytes, object] = OrderedDict()

    @staticmethod
    def digest(*parts: object) -> bytes:
        """sha256 over the parts, bytes hashed as they are (repr of a large hostile value would
        cost four times its size in memory), anything else by its repr, each length-prefixed."""
        h = hashlib.sha256()
        for part in parts:
            data = bytes(part) if isinstance(part, (bytes, bytearray, memoryview)) else repr(part).encode("utf-8", "replace")
            h.update(len(data).to_bytes(8, "big") + (b"b" if isinstance(part, (bytes, bytearray, memoryview)) else b"r"))
            h.update(data)
        return h.digest()

    def get(self, digest: bytes) -> tuple[bool, object]:
        if digest in self._verdicts:
            self._verdicts.move_to_end(digest)
            return True, self._verdicts[digest]
        return False, None

    def put(self, digest: bytes, verdict: object) -> None:
        self._verdicts[digest] = verdict
        if len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)


# A record may sit in the DHT at most this long past its own expires_at (float rounding).
DHT_EXPIRATION_SLACK_S = 1.0


FOREIGN_PEERS_KEPT = 64  # peers of other swarms remembered (only to explain a join)
INCOMPATIBLE_PEERS_KEPT = 64  # peers of this swarm of other protocol versions remembered (status, log, join)


@dataclass
class IncompatiblePeer:
    """A peer of this swarm whose protocol versions do not overlap this node's, from its newest record."""

    peer_id: str
    versions: VersionRange
    software_version: str
    timestamp: float
    expires_at: float


class RecordIntake:
    """Judges DHT values (when stored and when read) and feeds accepted peer records to the table.

    It is also the DHT's RecordPolicy: only the swarm's keys of nearby windows are known (peer
    records, rollout and summary announcements; with the sharded layout, their shards too), and
    a value is admitted only if it is a valid message of the peer named by its subkey, of the
    kind its key holds, and (under a shard's key) of a peer that hashes into that shard.
    """

    def __init__(self, table: PeerTable, stats: MessageStats, swarm: str, window_s: float, *,
                 max_ttl_s: float = DEFAULT_MAX_TTL_S, max_values_per_key: int = 512,
                 versions: ProtocolVersions = THIS_RELEASE):
        self.table = table
        self.versions = versions  # the protocol versions this node speaks
        self.stats = stats
        self.swarm = swarm
        self.window_s = window_s
        self.max_ttl_s = max_ttl_s
        self.max_values_per_key = max_values_per_key
        self.sharded = uses_shards(versions)  # which key layout this node writes, reads and knows
        self._verdicts = Verdicts(capacity=max(8192, 16 * max_values_per_key))
        # Subkeys (peers) admitted under each current key: at most max_values_per_key each.
        self._subkeys = LRUMap[str, set](capacity=KEYS_COUNTED)
        self.values_over_key_cap = 0
        # Peers seen publishing records for another swarm, window or protocol version (refused as
        # unknown keys): peer id -> origin, to say why a join through them did not take.
        self.foreign = LRUMap[str, RecordOrigin](capacity=FOREIGN_PEERS_KEPT)
        # Peers of this swarm that speak no version this node speaks (each counted once).
        self.incompatible = LRUMap[str, IncompatiblePeer](capacity=INCOMPATIBLE_PEERS_KEPT)

    def _judged(self, digest: bytes, check: Callable[[], Any]) -> Any:
        """check()'s result, or None when it raises Rejected (counted once per distinct value)."""
        seen, verdict = self._verdicts.get(digest)
        if seen:
            return verdict
        try:
            verdict = check()
        except Rejected as r:
            self.stats.reject(r.reason, r.sender)
            verdict = None
        self._verdicts.put(digest, verdict)
        return verdict

    def judge(self, subkey: object, value: object, expiration: float, now: float) -> PeerRecord | None:
        """The checked peer record of any readable protocol version, or None (the rejection is
        counted once per distinct value)."""

        def check() -> PeerRecord:
            record = check_peer_record(value, subkey=subkey, swarm=self.swarm, now=now, max_ttl_s=self.max_ttl_s)
            if expiration > record.expires_at + DHT_EXPIRATION_SLACK_S:
                raise Rejected(RejectReason.DHT_EXPIRATION, "kept past the record's expires_at")  # anyone's doing
            return record

        return self._judged(Verdicts.digest(subkey, value, expiration), check)

    def _judge_announcement(self, tag: str, check_message, subkey: object, value: object, expiration: float, now: float):
        """An announcement (rollouts or summaries) opened by `check_message`, or None; the DHT
        must not keep it past its own expires_at. Rejections counted once per distinct value."""

        def check():
            checked = check_message(value, subkey=subkey, now=now, max_ttl_s=self.max_ttl_s,
                                    versions=READABLE_PROTOCOL_VERSIONS)
            if expiration > checked.announcement.expires_at + DHT_EXPIRATION_SLACK_S:
                raise Rejected(RejectReason.DHT_EXPIRATION, "kept past the announcement's expires_at")
            return checked

        return self._judged(Verdicts.digest(tag, subkey, value, expiration), check)

    def judge_announcement(self, subkey: object, value: object, expiration: float, now: float) -> CheckedRolloutAnnouncement | None:
        """The checked rollout announcement of any readable protocol version, or None."""
        return self._judge_announcement("announcement", check_rollout_announcement, subkey, value, expiration, now)

    def announcements(self, values: list[StoredValue], now: float) -> list[CheckedRolloutAnnouncement]:
        """Valid announcements of other peers among `values`, in a version this node speaks (one
        of another version is skipped: its peer is counted once, by its record)."""
        checked = (self.judge_announcement(v.subkey, v.value, v.expiration, now) for v in values)
        return [a for a in checked if a is not None and a.peer_id != self.table.self_peer_id and self.versions.speaks(a.protocol_version)]

    def judge_summary_announcement(self, subkey: object, value: object, expiration: float,
                                   now: float) -> CheckedSummaryAnnouncement | None:
        """The checked summary announcement of any readable protocol version, or None."""
        return self._judge_announcement("summary_announcement", check_summary_announcement, subkey, value, expiration, now)

    def summary_announcements(self, values: list[StoredValue], now: float) -> list[CheckedSummaryAnnouncement]:
        """Valid summary announcements of other peers among `values`, in a version this node speaks."""
        checked = (self.judge_summary_announcement(v.subkey, v.value, v.expiration, now) for v in values)
        return [a for a in checked if a is not None and a.peer_id != self.table.self_peer_id and self.versions.speaks(a.protocol_version)]

    def ingest(self, values: list[StoredValue], now: float) -> None:
        for item in values:
            record = self.judge(item.subkey, item.value, item.expiration, now)
            if record is None or record.peer_id == self.table.self_peer_id:
                continue
            if common_version(self.versions.spoken, spoken_versions(record)) is None:
                self._keep_incompatible(record)
                continue
            held = self.incompatible.peek(record.peer_id)
            if held is not None and record.timestamp > held.timestamp:
                self.incompatible.pop(record.peer_id)  # it speaks this node's versions now
            try:
                if self.table.offer(record, now):
                    self.stats.accept("peer_record")
            except Rejected as r:
                # A peer's own older record still sits in the previous window, which every
                # poll reads: it is validly signed and changes nothing, so it is not held
                # against the peer (a replay by a third party is just as harmless).
                if r.reason != RejectReason.REPLAYED:
                    self.stats.reject(r.reason, r.sender)

    def _keep_incompatible(self, record: PeerRecord) -> None:
        """Remember a peer of versions this node does not speak from its newest record, counted
        once (`incompatible_version` against it: its record is verified, but it is no strike)."""
        held = self.incompatible.peek(record.peer_id)
        if held is None:
            self.stats.reject(RejectReason.INCOMPATIBLE_VERSION, record.peer_id)
        elif record.timestamp <= held.timestamp:
            return
        self.incompatible[record.peer_id] = IncompatiblePeer(record.peer_id, spoken_versions(record),
                                                             record.software_version, record.timestamp,
                                                             record.expires_at)

    def remember_incompatible(self, peer: IncompatiblePeer) -> None:
        """A peer of other protocol versions met by this node's libp2p host process (its own
        intake, in another process): counted once, kept as if met here."""
        held = self.incompatible.peek(peer.peer_id)
        if held is None:
            self.stats.reject(RejectReason.INCOMPATIBLE_VERSION, peer.peer_id)
        elif peer.timestamp <= held.timestamp:
            return
        self.incompatible[peer.peer_id] = peer

    def remember_foreign(self, origin: RecordOrigin) -> None:
        """A peer of another swarm, window or version met by this node's libp2p host process."""
        self.foreign[origin.peer_id] = origin

    def count_over_key_cap(self, count: int) -> None:
        """Values this node's libp2p host process refused for a key full of peers."""
        self.values_over_key_cap += max(0, int(count))

    def incompatible_peers(self, now: float) -> list[IncompatiblePeer]:
        """The peers of other protocol versions whose newest record has not expired by `now`."""
        return [p for p in self.incompatible.values() if p.expires_at > now]

    def origin_of(self, peer_id: str) -> RecordOrigin | None:
        """Why `peer_id` cannot be joined through, as far as its records said: it is of another
        swarm, or of this swarm but of protocol versions this node does not speak; else None."""
        foreign = self.foreign.peek(peer_id)
        if foreign is not None:
            return foreign
        incompatible = self.incompatible.peek(peer_id)
        return RecordOrigin(peer_id, self.swarm, incompatible.versions) if incompatible is not None else None

    # -- RecordPolicy --------------------------------------------------------------------------

    def known_keys(self, now: float) -> list[str]:
        current = window_index(now, self.window_s)
        windows = range(current - 2, current + 2)
        return ([peer_records_key(self.swarm, w) for w in windows] + [rollouts_key(self.swarm, w) for w in windows]
                + [summaries_key(self.swarm, w) for w in windows])

    def knows_key(self, key: str, now: float) -> bool:
        window = key_window(self.swarm, key, sharded=self.sharded)
        current = window_index(now, self.window_s)
        return window is not None and current - 2 <= window <= current + 1

    def reads_nearest_holders(self) -> bool:
        return self.sharded

    def candidate_keys(self, subkey: object, value: object, expiration: float, now: float) -> list[str]:
        """The shard keys `value` may sit under (its kind's, its own window's, its peer's shard at
        every bits level), for a DHT that sees only a key's hash; [] for a node of one key per
        window, or a value that is no valid record or announcement."""
        if not self.sharded or not isinstance(subkey, str):
            return []
        kind, base = envelope_kind(value), ""
        if kind == MessageKind.PEER_RECORD:
            record = self.judge(subkey, value, expiration, now)
            window, name = (None if record is None else window_index(record.timestamp, self.window_s)), "peers"
        elif kind == MessageKind.ROLLOUT_ANNOUNCEMENT:
            checked = self.judge_announcement(subkey, value, expiration, now)
            window, name = (None if checked is None else checked.announcement.window), "rollouts"
        elif kind == MessageKind.SUMMARY_ANNOUNCEMENT:
            checked = self.judge_summary_announcement(subkey, value, expiration, now)
            window, name = (None if checked is None else checked.announcement.window), "summaries"
            base = "" if checked is None else checked.announcement.base_fingerprint
        else:
            return []
        if window is None or not self.knows_key(peer_records_key(self.swarm, window), now):
            return []
        return shard_keys_of(self.swarm, name, window, subkey, base)

    def admit(self, key: str, subkey: object, value: object, expiration: float, now: float) -> bool:
        """Admit a valid value of a peer already held under `key`, or of a new peer while the
        key holds fewer than max_values_per_key peers (first come: see docs/security.md). Under a
        shard's key, only a peer that hashes into the shard."""
        shard = parse_shard_key(self.swarm, key) if self.sharded else None
        if shard is not None and not (isinstance(subkey, str) and belongs(subkey, shard.bits, shard.shard)):
            self.stats.reject(RejectReason.WRONG_SHARD, None)
            return False
        held = self._subkeys_of(key, now)
        if subkey not in held and len(held) >= self.max_values_per_key:
            self.values_over_key_cap += 1
            return False
        kind = key_kind(self.swarm, key)
        if kind == "rollouts":
            ok = self.judge_announcement(subkey, value, expiration, now) is not None
        elif kind == "summaries":
            ok = self.judge_summary_announcement(subkey, value, expiration, now) is not None
        else:
            record = self.judge(subkey, value, expiration, now)
            ok = record is not None
            if ok and common_version(self.versions.spoken, spoken_versions(record)) is None:
                self._keep_incompatible(record)  # a peer of another layout is met here, not in reads
        if ok:
            held.add(subkey)
        return ok

    def _subkeys_of(self, key: str, now: float) -> set:
        held = self._subkeys.get(key)
        if held is None:
            for old in [k for k in self._subkeys if not self.knows_key(k, now)]:
                self._subkeys.pop(old)  # its window is past: its cap goes with it
            held = self._subkeys[key] = set()
        return held

    def refuse_misplaced(self, count: int) -> None:
        """Count values a read found under a shard's key their peer does not hash into (dropped
        by the reader; anyone can copy a signed value there, so no sender is held to it)."""
        for _ in range(count):
            self.stats.reject(RejectReason.WRONG_SHARD, None)

    def refuse_unknown_key(self, key_id: bytes, value: object) -> None:
        digest = Verdicts.digest(key_id, value)
        seen, _ = self._verdicts.get(digest)
        if not seen:
            self.stats.reject(RejectReason.UNKNOWN_KEY, None)
            self._verdicts.put(digest, None)
            origin = record_origin(value)
            if origin is not None and (origin.swarm != self.swarm or self.of_other_window(origin)
                                       or common_version(self.versions.spoken, origin.versions) is None):
                self.foreign[origin.peer_id] = origin

    def of_other_window(self, origin: RecordOrigin) -> bool:
        """The record says a swarm.window_s other than this node's (an older node's says none):
        its keys are of other windows, so neither node ever reads the other's records."""
        return origin.window_s != 0 and origin.window_s != self.window_s

    def other_window_peers(self, now: float) -> list[RecordOrigin]:
        """Peers of this swarm seen publishing under another swarm.window_s, newest record unexpired."""
        return [o for o in self.foreign.values() if o.swarm == self.swarm and self.of_other_window(o) and o.expires_at > now]
