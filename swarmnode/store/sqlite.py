"""One SQLite connection per store, shared by threads under a lock (WAL, append-mostly)."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

BUSY_TIMEOUT_MS = 5000  # another connection to the same file (a second store) waits rather than fails


def open_db(path: Path, schema: str) -> sqlite3.Connection:
    """Open (creating) the database at `path` with `schema`; callers serialise use with a lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    # Only takes effect on a database that has no table yet, so it goes first: retention can then
    # give freed pages back to the file system (store/retention.py). Older databases keep reusing
    # their free pages instead.
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.executescript(schema)
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection.

    Rows written together go in one transaction: in autocommit mode every row of an executemany
    is its own commit, each writing its table and index pages to the WAL again (a step's nine
    metrics wrote over five times the WAL bytes that way).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        # A failed COMMIT (disk full) may leave the transaction open, holding the write lock
        # for every other connection: roll it back if it is still there.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
