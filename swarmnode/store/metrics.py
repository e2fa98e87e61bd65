"""The metrics history of a node, in SQLite in its home (one row per value)."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from swarmnode.config.model import StorageConfig
from swarmnode.store import retention
from swarmnode.store.sqlite import open_db, transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS metrics (
    time REAL NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics (name, version);
CREATE INDEX IF NOT EXISTS metrics_by_time ON metrics (time);
"""


class MetricsStore:
    """Append-only metrics; safe to call from several threads (one connection, one lock)."""

    def __init__(self, path: Path):
        self.path = path
        self._conn = open_db(path, SCHEMA)
        self._lock = threading.Lock()
        self._closed = False

    def record(self, version: int, values: dict[str, float], when: float | None = None) -> None:
        now = time.time() if when is None else when
        rows = [(now, version, name, float(value)) for name, value in values.items() if value is not None]
        with self._lock, transaction(self._conn):
            self._conn.executemany("INSERT INTO metrics (time, version, name, value) VALUES (?, ?, ?, ?)", rows)

    def size_bytes(self) -> int:
        """metrics.sqlite and its -wal file, bytes on disk."""
        return retention.file_bytes(self.path)

    def maintain(self, config: StorageConfig, now: float) -> dict[str, Any]:
        """Downsample rows older than metrics_full_resolution_s to one per metric and
        metrics_downsample_s, delete the oldest until the live size is under metrics_max_bytes;
        checkpoint the WAL. Blocking: run it on a worker thread."""
        with self._lock:
            if self._closed:
                return {}
            before = self.size_bytes()
            downsampled = retention.downsample_metrics(self._conn, now - config.metrics_full_resolution_s,
                                                       config.metrics_downsample_s)
            pruned = retention.prune_to_bytes(self._conn, ("metrics",), config.metrics_max_bytes)
            wal = retention.checkpoint(self._conn)
            return {**downsampled, "rows_deleted_size": pruned["metrics"], "bytes_before": before,
                    "bytes_after": self.size_bytes(), **wal}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()
