"""Received rollouts in SQLite: every accepted group with its sender, every rejection with its reason."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from swarmnode.config.model import StorageConfig
from swarmnode.store import retention
from swarmnode.store.sqlite import open_db, transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS received_groups (
    time REAL NOT NULL,
    sender TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    task TEXT NOT NULL,
    seed INTEGER NOT NULL,
    item_index INTEGER NOT NULL,
    policy_version INTEGER NOT NULL,
    same_model INTEGER NOT NULL,
    rewards TEXT NOT NULL,          -- JSON list: this node's own scores
    texts TEXT NOT NULL             -- JSON list: the completions' text
);
CREATE TABLE IF NOT EXISTS rejections (
    time REAL NOT NULL,
    sender TEXT NOT NULL,
    batch_id INTEGER,               -- NULL when the batch itself did not open
    reason TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS received_by_sender ON received_groups (sender, time);
CREATE INDEX IF NOT EXISTS rejections_by_sender ON rejections (sender, time);
CREATE INDEX IF NOT EXISTS received_by_time ON received_groups (time);
CREATE INDEX IF NOT EXISTS rejections_by_time ON rejections (time);
"""
RETAINED_TABLES = ("received_groups", "rejections")  # what maintain() prunes; other tables in the file are left alone


class RolloutStore:
    """Append-only; safe from several threads (one connection, one lock)."""

    def __init__(self, path: Path):
        self.path = path
        self._conn = open_db(path, SCHEMA)
        self._lock = threading.Lock()
        self._closed = False

    def accepted(self, sender: str, batch_id: int, groups, same_model: bool) -> None:
        now = time.time()
        rows = [(now, sender, batch_id, g.ref.task, g.ref.seed, g.ref.index, g.policy_version, int(same_model),
                 json.dumps(g.rewards), json.dumps(g.texts)) for g in groups]
        with self._lock, transaction(self._conn):
            self._conn.executemany("INSERT INTO received_groups VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def rejected(self, sender: str, batch_id: int | None, reasons: list[tuple[str, str]]) -> None:
        now = time.time()
        with self._lock, transaction(self._conn):
            self._conn.executemany("INSERT INTO rejections VALUES (?, ?, ?, ?, ?)",
                                   [(now, sender, batch_id, reason, detail[:200]) for reason, detail in reasons])

    def size_bytes(self) -> int:
        """rollouts.sqlite and its -wal file, bytes on disk."""
        return retention.file_bytes(self.path)

    def maintain(self, config: StorageConfig, now: float) -> dict[str, Any]:
        """Delete groups and rejections older than rollouts_max_age_s, then the oldest until the live
        size is under rollouts_max_bytes; checkpoint the WAL. Blocking: run it on a worker thread."""
        with self._lock:
            if self._closed:
                return {}
            before = self.size_bytes()
            aged = retention.delete_older_than(self._conn, RETAINED_TABLES, now - config.rollouts_max_age_s)
            pruned = retention.prune_to_bytes(self._conn, RETAINED_TABLES, config.rollouts_max_bytes)
            wal = retention.checkpoint(self._conn)
            return {"rows_deleted_age": sum(aged.values()), "rows_deleted_size": sum(pruned.values()),
                    "bytes_before": before, "bytes_after": self.size_bytes(), **wal}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()
