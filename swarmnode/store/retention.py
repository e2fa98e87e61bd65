"""Retention of the home's SQLite stores: age limits, size bounds, metric downsampling, WAL checkpoints.

Pure SQL on a caller's connection (no threads, no locks: the store that owns the connection
serialises use). Every table these helpers touch has a REAL `time` column (seconds since the
epoch) with an index on it; "oldest" means smallest `time`.

Sizes: the *live* size of a database is (page_count - freelist_count) * page_size, the bytes its
rows and indexes occupy, WAL included (the pragmas read the connection's current snapshot). A
database created by `open_db` has auto_vacuum=INCREMENTAL, so `checkpoint` gives freed pages back
and the file shrinks to the live size; an older database keeps its file size and reuses its free
pages, so either way the file stops growing once the live size is bounded.
"""
from __future__ import annotations

import math
import os
import sqlite3
from typing import Any, Sequence

from swarmnode.store.sqlite import transaction

PRUNE_ROUNDS = 32          # bound on delete rounds of one prune_to_bytes call
PRUNE_MIN_FRACTION = 0.02  # a round deletes at least this share of each table's rows


def live_bytes(conn: sqlite3.Connection) -> int:
    """Bytes the rows and indexes occupy: (page_count - freelist_count) * page_size."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return (pages - free) * conn.execute("PRAGMA page_size").fetchone()[0]


def file_bytes(path: str | os.PathLike) -> int:
    """Bytes on disk of the database at `path`: the main file plus its -wal file (0 if missing)."""
    total = 0
    for name in (os.fspath(path), os.fspath(path) + "-wal"):
        try:
            total += os.path.getsize(name)
        except OSError:
            pass
    return total


def delete_older_than(conn: sqlite3.Connection, tables: Sequence[str], cutoff: float) -> dict[str, int]:
    """Delete the rows of each table with time < cutoff, in one transaction.

    Returns {table: rows deleted}.
    """
    deleted = {}
    with transaction(conn):
        for table in tables:
            deleted[table] = conn.execute(f"DELETE FROM {table} WHERE time < ?", (cutoff,)).rowcount
    return deleted


def prune_to_bytes(conn: sqlite3.Connection, tables: Sequence[str], max_bytes: int) -> dict[str, int]:
    """Delete the oldest rows of `tables` until live_bytes(conn) <= max_bytes (or the tables are empty).

    Each round deletes the oldest ceil(n * f) rows of every table (n: its row count), with
    f = max(PRUNE_MIN_FRACTION, (live - max_bytes) / live): the share of the bytes that is over the
    bound. Deleted rows do not free exactly their share of pages (index pages empty more slowly
    than time-ordered table pages), so rounds repeat, at most PRUNE_ROUNDS of them. Every round is
    one transaction. Tables not listed (another store's) count towards the size but are not pruned.

    Returns {table: rows deleted}.
    """
    deleted = dict.fromkeys(tables, 0)
    for _ in range(PRUNE_ROUNDS):
        used = live_bytes(conn)
        if used <= max_bytes:
            break
        fraction = max(PRUNE_MIN_FRACTION, (used - max_bytes) / used)
        removed = 0
        with transaction(conn):
            for table in tables:
                rows = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                if rows:
                    n = conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} ORDER BY time LIMIT ?)",
                                     (math.ceil(rows * fraction),)).rowcount
                    deleted[table] += n
                    removed += n
        if not removed:
            break  # nothing left to delete: the rest is schema or other stores' tables
    return deleted


def downsample_metrics(conn: sqlite3.Connection, cutoff: float, bucket_s: float) -> dict[str, int]:
    """Replace the metrics rows older than `cutoff` by one row per (name, bucket), in one transaction.

    A row at time t is in bucket b = floor(t / bucket_s). Only buckets that ended by the cutoff,
    (b + 1) * bucket_s <= cutoff, are touched (rows with t < floor(cutoff / bucket_s) * bucket_s),
    so no later row can land in a bucket already downsampled. A (name, bucket) holding n > 1 rows
    becomes one row with
        time = (b + 0.5) * bucket_s, value = mean of the n values, version = max of the n versions.
    A bucket with one row is left as it is, which makes a second pass over the same rows a no-op.

    Returns {"rows_downsampled": rows replaced, "rows_written": rows that replaced them}.
    """
    edge = math.floor(cutoff / bucket_s) * bucket_s
    with transaction(conn):
        conn.execute("DROP TABLE IF EXISTS temp.metric_buckets")
        conn.execute(
            "CREATE TEMP TABLE metric_buckets AS SELECT name, CAST(time / ? AS INTEGER) AS bucket, AVG(value) AS value, "
            "MAX(version) AS version, COUNT(*) AS n FROM metrics WHERE time < ? GROUP BY name, bucket HAVING n > 1",
            (bucket_s, edge),
        )
        replaced, written = conn.execute("SELECT COALESCE(SUM(n), 0), COUNT(*) FROM temp.metric_buckets").fetchone()
        # The same bucket expression as above, so that exactly the rows averaged are deleted.
        conn.execute("DELETE FROM metrics WHERE time < ? AND (name, CAST(time / ? AS INTEGER)) IN "
                     "(SELECT name, bucket FROM temp.metric_buckets)", (edge, bucket_s))
        # Mid-bucket time: floor(time / bucket_s) gives back b exactly, whatever rounding b * bucket_s has.
        conn.execute("INSERT INTO metrics (time, version, name, value) "
                     "SELECT (bucket + 0.5) * ?, version, name, value FROM temp.metric_buckets", (bucket_s,))
        conn.execute("DROP TABLE temp.metric_buckets")
    return {"rows_downsampled": replaced, "rows_written": written}


def checkpoint(conn: sqlite3.Connection) -> dict[str, Any]:
    """Give free pages back (PRAGMA incremental_vacuum: a no-op without auto_vacuum=INCREMENTAL), then
    copy the WAL into the database and truncate it (PRAGMA wal_checkpoint(TRUNCATE)).

    Returns {"wal_busy": 1 if another connection kept the checkpoint from completing, else 0}.
    """
    # executescript steps the pragma to completion; execute() would step it once: one page freed.
    conn.executescript("PRAGMA incremental_vacuum;")
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return {"wal_busy": busy}
