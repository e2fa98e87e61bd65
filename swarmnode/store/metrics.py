"""The metrics history of a node, in SQLite in its home (one row per value)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from swarmnode.store.sqlite import open_db

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
        self._conn = open_db(path, SCHEMA)
        self._lock = threading.Lock()

    def record(self, version: int, values: dict[str, float], when: float | None = None) -> None:
        now = time.time() if when is None else when
        rows = [(now, version, name, float(value)) for name, value in values.items() if value is not None]
        with self._lock:
            self._conn.executemany("INSERT INTO metrics (time, version, name, value) VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
