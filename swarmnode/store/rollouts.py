"""Received rollouts in SQLite: every accepted group with its sender, every rejection with its reason."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from swarmnode.store.sqlite import open_db

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
"""


class RolloutStore:
    """Append-only; safe from several threads (one connection, one lock)."""

    def __init__(self, path: Path):
        self._conn = open_db(path, SCHEMA)
        self._lock = threading.Lock()

    def accepted(self, sender: str, batch_id: int, groups, same_model: bool) -> None:
        now = time.time()
        rows = [(now, sender, batch_id, g.ref.task, g.ref.seed, g.ref.index, g.policy_version, int(same_model),
                 json.dumps(g.rewards), json.dumps(g.texts)) for g in groups]
        with self._lock:
            self._conn.executemany("INSERT INTO received_groups VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def rejected(self, sender: str, batch_id: int | None, reasons: list[tuple[str, str]]) -> None:
        now = time.time()
        with self._lock:
            self._conn.executemany("INSERT INTO rejections VALUES (?, ?, ?, ?, ?)",
                                   [(now, sender, batch_id, reason, detail[:200]) for reason, detail in reasons])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
