"""The peer table, the record intake that feeds it, and the accept/reject counters."""
from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field

from swarmnode.protocol import PeerRecord, Rejected, RejectReason, check_peer_record
from swarmnode.swarm.transport import StoredValue


@dataclass
class PeerEntry:
    record: PeerRecord
    first_seen: float  # DHT time this node first accepted a record of the peer
    last_seen: float  # DHT time of the newest accepted record

    @property
    def peer_id(self) -> str:
        return self.record.peer_id


class PeerTable:
    """Peers known from accepted records; a peer leaves when its newest record expires."""

    def __init__(self, self_peer_id: str):
        self.self_peer_id = self_peer_id
        self._entries: dict[str, PeerEntry] = {}

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
            del self._entries[pid]
        return gone

    def entries(self) -> list[PeerEntry]:
        return sorted(self._entries.values(), key=lambda e: e.first_seen)

    def __contains__(self, peer_id: str) -> bool:
        return peer_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class MessageStats:
    """Accepted messages by kind, rejected by reason and by sender (stable names for status)."""

    accepted: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    rejected_by_sender: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def accept(self, kind: str) -> None:
        self.accepted[kind] += 1

    def reject(self, reason: RejectReason, sender: str | None) -> None:
        self.rejected[reason.value] += 1
        self.rejected_by_sender[sender or "unknown"][reason.value] += 1


class SeenValues:
    """Digests of DHT values already judged, so a value re-read every poll is checked once."""

    def __init__(self, capacity: int = 8192):
        self._capacity = capacity
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def first_time(self, subkey: object, value: object) -> bool:
        digest = hashlib.sha256(repr((subkey, value)).encode("utf-8", "replace")).digest()
        if digest in self._seen:
            self._seen.move_to_end(digest)
            return False
        self._seen[digest] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True


class RecordIntake:
    """Turns DHT values read under the peer-record keys into peer-table updates and counts."""

    def __init__(self, table: PeerTable, stats: MessageStats, swarm: str):
        self.table = table
        self.stats = stats
        self.swarm = swarm
        self._seen = SeenValues()

    def ingest(self, values: list[StoredValue], now: float) -> None:
        for item in values:
            if item.subkey == self.table.self_peer_id or not self._seen.first_time(item.subkey, item.value):
                continue
            try:
                record = check_peer_record(item.value, subkey=item.subkey, swarm=self.swarm, now=now)
                if record.peer_id == self.table.self_peer_id:
                    raise Rejected(RejectReason.SUBKEY_MISMATCH, "claims to be this node", record.peer_id)
                if self.table.offer(record, now):
                    self.stats.accept("peer_record")
            except Rejected as r:
                self.stats.reject(r.reason, r.sender)
