"""Peers' standing with this node (strikes, ignores, fetch cursors) in SQLite, so a restart
pardons no one. Kept in rollouts.sqlite beside the groups and rejections, bounded in rows."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from swarmnode.store.sqlite import open_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS peer_standing (
    peer TEXT PRIMARY KEY,
    accepted INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    ignored_until REAL NOT NULL,    -- DHT time (seconds since the epoch)
    cursor INTEGER,                 -- newest batch id fetched from the peer
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS standing_by_update ON peer_standing (updated);
"""


@dataclass(frozen=True)
class StandingRow:
    peer: str
    accepted: int
    rejected: int
    ignored_until: float
    cursor: int | None


class StandingStore:
    """Upserts of peers' standings; keeps the `max_rows` most recently updated (thread-safe)."""

    PRUNE_EVERY = 256  # saves between prunes

    def __init__(self, path: Path, max_rows: int):
        self._conn = open_db(path, SCHEMA)
        self._lock = threading.Lock()
        self.max_rows = max_rows
        self._saves = 0

    def save(self, rows: list[StandingRow]) -> None:
        now = time.time()
        with self._lock:
            self._conn.executemany(
                "INSERT INTO peer_standing VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(peer) DO UPDATE SET "
                "accepted=excluded.accepted, rejected=excluded.rejected, ignored_until=excluded.ignored_until, "
                "cursor=excluded.cursor, updated=excluded.updated",
                [(r.peer, r.accepted, r.rejected, r.ignored_until, r.cursor, now) for r in rows],
            )
            self._saves += 1
            if self._saves % self.PRUNE_EVERY == 0:
                self._prune()

    def _prune(self) -> None:
        self._conn.execute(
            "DELETE FROM peer_standing WHERE peer NOT IN "
            "(SELECT peer FROM peer_standing ORDER BY ignored_until > ? DESC, updated DESC LIMIT ?)",
            (time.time(), self.max_rows))

    def load(self, limit: int, now: float | None = None) -> list[StandingRow]:
        """`limit` standings, peers still ignored at `now` first, then the most recently updated;
        newest last (so an LRU keeps the newest). A flood of newer strangers cannot pardon anyone."""
        now = time.time() if now is None else now
        with self._lock:
            rows = self._conn.execute(
                "SELECT peer, accepted, rejected, ignored_until, cursor FROM peer_standing "
                "ORDER BY ignored_until > ? DESC, updated DESC LIMIT ?", (now, limit)).fetchall()
        return [StandingRow(*row) for row in reversed(rows)]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
