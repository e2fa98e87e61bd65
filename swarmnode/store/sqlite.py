"""One SQLite connection per store, shared by threads under a lock (WAL, append-mostly)."""
from __future__ import annotations

import sqlite3
from pathlib import Path


def open_db(path: Path, schema: str) -> sqlite3.Connection:
    """Open (creating) the database at `path` with `schema`; callers serialise use with a lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema)
    return conn
