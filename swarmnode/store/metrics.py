"""The metrics history of a node, in SQLite in its home (one row per value)."""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS metrics (
    time REAL NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics (name, version);
"""


class MetricsStore:
    """Append-only metrics; safe to call from several threads (one connection, one lock)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        self._lock = threading.Lock()

    def record(self, version: int, values: dict[str, float], when: float | None = None) -> None:
        now = time.time() if when is None else when
        rows = [(now, version, name, float(value)) for name, value in values.items() if value is not None]
        with self._lock:
            self._conn.executemany("INSERT INTO metrics (time, version, name, value) VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
