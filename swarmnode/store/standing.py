"""Peers' standing with this node (strikes, ignores, fetch cursors, summary trust) in SQLite, so a restart
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
    updated REAL NOT NULL,
    trust_score REAL,               -- its gradient summaries' score (summaries/trust.py), NULL: never judged
    trust_judged INTEGER            -- how many of its summaries were scored
);
CREATE INDEX IF NOT EXISTS standing_by_update ON peer_standing (updated);
"""
TRUST_COLUMNS = (("trust_score", "REAL"), ("trust_judged", "INTEGER"))  # added after the first release
# Kept first when rows are pruned or loaded: peers still ignored, and peers whose summaries this
# node distrusts (a flood of newer strangers must pardon neither).
PROTECTED = "(ignored_until > ? OR COALESCE(trust_score, 0) < 0)"


@dataclass(frozen=True)
class StandingRow:
    peer: str
    accepted: int
    rejected: int
    ignored_until: float
    cursor: int | None
    trust_score: float | None = None
    trust_judged: int = 0


class StandingStore:
    """Upserts of peers' standings; keeps the `max_rows` most recently updated (thread-safe)."""

    PRUNE_EVERY = 256  # saves between prunes

    def __init__(self, path: Path, max_rows: int):
        self._conn = open_db(path, SCHEMA)
        have = {row[1] for row in self._conn.execute("PRAGMA table_info(peer_standing)")}
        for name, kind in TRUST_COLUMNS:
            if name not in have:  # a store written by an older release
                self._conn.execute(f"ALTER TABLE peer_standing ADD COLUMN {name} {kind}")
        self._lock = threading.Lock()
        self.max_rows = max_rows
        self._saves = 0

    def save(self, rows: list[StandingRow]) -> None:
        now = time.time()
        with self._lock:
            self._conn.executemany(
                "INSERT INTO peer_standing (peer, accepted, rejected, ignored_until, cursor, updated) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(peer) DO UPDATE SET "
                "accepted=excluded.accepted, rejected=excluded.rejected, ignored_until=excluded.ignored_until, "
                "cursor=excluded.cursor, updated=excluded.updated",
                [(r.peer, r.accepted, r.rejected, r.ignored_until, r.cursor, now) for r in rows],
            )
            self._saves += 1
            if self._saves % self.PRUNE_EVERY == 0:
                self._prune()

    def save_trust(self, rows: list[tuple[str, float, int]]) -> None:
        """Upserts (peer, trust score, summaries judged); the rest of a standing is left as it is."""
        now = time.time()
        with self._lock:
            self._conn.executemany(
                "INSERT INTO peer_standing (peer, accepted, rejected, ignored_until, cursor, updated, trust_score, "
                "trust_judged) VALUES (?, 0, 0, 0, NULL, ?, ?, ?) ON CONFLICT(peer) DO UPDATE SET "
                "trust_score=excluded.trust_score, trust_judged=excluded.trust_judged, updated=excluded.updated",
                [(peer, now, float(score), int(judged)) for peer, score, judged in rows])
            self._saves += 1
            if self._saves % self.PRUNE_EVERY == 0:
                self._prune()

    def _prune(self) -> None:
        self._conn.execute(
            "DELETE FROM peer_standing WHERE peer NOT IN "
            f"(SELECT peer FROM peer_standing ORDER BY {PROTECTED} DESC, updated DESC LIMIT ?)",
            (time.time(), self.max_rows))

    def load(self, limit: int, now: float | None = None) -> list[StandingRow]:
        """`limit` standings, peers still ignored at `now` or distrusted first, then the most
        recently updated; newest last (so an LRU keeps the newest). A flood of newer strangers
        cannot pardon anyone."""
        now = time.time() if now is None else now
        with self._lock:
            rows = self._conn.execute(
                "SELECT peer, accepted, rejected, ignored_until, cursor, trust_score, COALESCE(trust_judged, 0) "
                f"FROM peer_standing ORDER BY {PROTECTED} DESC, updated DESC LIMIT ?", (now, limit)).fetchall()
        return [StandingRow(*row) for row in reversed(rows)]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
