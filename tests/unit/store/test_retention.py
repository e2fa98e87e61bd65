"""Retention of the SQLite stores (store/retention.py) on hand-built databases."""
import json
import sqlite3
import time

from swarmnode.config.model import StorageConfig
from swarmnode.store import retention
from swarmnode.store.metrics import SCHEMA as METRICS_SCHEMA
from swarmnode.store.metrics import MetricsStore
from swarmnode.store.rollout_store import SCHEMA as ROLLOUTS_SCHEMA
from swarmnode.store.rollout_store import RolloutStore
from swarmnode.store.sqlite import open_db

DAY = 86_400.0


def rollouts_db(tmp_path, received_times, rejection_times, text="x" * 100):
    conn = open_db(tmp_path / "rollouts.sqlite", ROLLOUTS_SCHEMA)
    conn.executemany("INSERT INTO received_groups VALUES (?, 'peer', 1, 'sum2', 1, 0, 0, 1, '[1.0]', ?)",
                     [(t, json.dumps([text])) for t in received_times])
    conn.executemany("INSERT INTO rejections VALUES (?, 'peer', NULL, 'malformed', 'bad')", [(t,) for t in rejection_times])
    return conn


def metrics_db(tmp_path, rows):
    """rows: (time, version, name, value)."""
    conn = open_db(tmp_path / "metrics.sqlite", METRICS_SCHEMA)
    conn.executemany("INSERT INTO metrics (time, version, name, value) VALUES (?, ?, ?, ?)", rows)
    return conn


def times(conn, table):
    return [r[0] for r in conn.execute(f"SELECT time FROM {table} ORDER BY time")]


def test_new_databases_get_incremental_auto_vacuum(tmp_path):
    assert open_db(tmp_path / "a.sqlite", METRICS_SCHEMA).execute("PRAGMA auto_vacuum").fetchone()[0] == 2


def test_delete_older_than_removes_exactly_the_rows_before_the_cutoff(tmp_path):
    conn = rollouts_db(tmp_path, [100.0 + i for i in range(10)], [100.0, 104.9, 105.0, 106.0])
    deleted = retention.delete_older_than(conn, ("received_groups", "rejections"), 105.0)
    assert deleted == {"received_groups": 5, "rejections": 2}
    assert times(conn, "received_groups") == [105.0, 106.0, 107.0, 108.0, 109.0]
    assert times(conn, "rejections") == [105.0, 106.0]


def test_prune_to_bytes_deletes_oldest_rows_until_under_the_bound(tmp_path):
    conn = rollouts_db(tmp_path, [float(i) for i in range(4000)], [float(i) for i in range(1000)], text="y" * 400)
    conn.execute("CREATE TABLE other (time REAL, blob TEXT)")  # another store's table: counted, never pruned
    conn.executemany("INSERT INTO other VALUES (?, ?)", [(0.0, "z" * 400)] * 100)
    before = retention.live_bytes(conn)
    bound = before // 3
    deleted = retention.prune_to_bytes(conn, ("received_groups", "rejections"), bound)
    assert retention.live_bytes(conn) <= bound
    kept = times(conn, "received_groups")
    assert deleted["received_groups"] == 4000 - len(kept) > 0
    assert kept == [float(i) for i in range(4000 - len(kept), 4000)]  # the newest, contiguous
    assert times(conn, "rejections") == [float(i) for i in range(1000 - len(times(conn, "rejections")), 1000)]
    assert conn.execute("SELECT COUNT(*) FROM other").fetchone()[0] == 100


def test_prune_to_bytes_is_a_no_op_under_the_bound_and_stops_when_tables_are_empty(tmp_path):
    conn = rollouts_db(tmp_path, [1.0, 2.0], [3.0])
    assert retention.prune_to_bytes(conn, ("received_groups", "rejections"), 10**9) == {"received_groups": 0, "rejections": 0}
    # A bound below the schema's own pages: everything goes, and the loop ends.
    assert retention.prune_to_bytes(conn, ("received_groups", "rejections"), 1) == {"received_groups": 2, "rejections": 1}
    assert times(conn, "received_groups") == [] and times(conn, "rejections") == []


def test_checkpoint_truncates_the_wal_and_shrinks_the_file(tmp_path):
    path = tmp_path / "rollouts.sqlite"
    conn = rollouts_db(tmp_path, [float(i) for i in range(3000)], [], text="w" * 400)
    assert (tmp_path / "rollouts.sqlite-wal").stat().st_size > 0
    retention.checkpoint(conn)
    full = retention.file_bytes(path)
    assert (tmp_path / "rollouts.sqlite-wal").stat().st_size == 0
    retention.prune_to_bytes(conn, ("received_groups",), full // 4)
    done = retention.checkpoint(conn)
    assert done == {"wal_busy": 0}
    # auto_vacuum=INCREMENTAL: freed pages go back, the file is the live size.
    assert retention.file_bytes(path) == retention.live_bytes(conn) <= full // 4


def test_downsample_replaces_complete_old_buckets_by_mean_and_max_version(tmp_path):
    conn = metrics_db(tmp_path, [
        (0.0, 1, "loss", 1.0), (1.0, 3, "loss", 2.0), (9.5, 2, "loss", 3.0),   # bucket 0: three rows
        (12.0, 4, "loss", 7.0),                                                # bucket 1: one row, kept as is
        (21.0, 5, "loss", 4.0), (29.5, 6, "loss", 6.0),                        # bucket 2
        (22.0, 5, "reward", 1.0), (23.0, 6, "reward", 0.0),                    # bucket 2, another name
        (31.0, 7, "loss", 8.0), (32.0, 8, "loss", 9.0),                        # bucket 3: ends after the cutoff
        (40.0, 9, "loss", 10.0),
    ])
    done = retention.downsample_metrics(conn, cutoff=35.0, bucket_s=10.0)
    assert done == {"rows_downsampled": 7, "rows_written": 3}
    rows = conn.execute("SELECT time, version, name, value FROM metrics ORDER BY time, name").fetchall()
    assert rows == [
        (5.0, 3, "loss", 2.0), (12.0, 4, "loss", 7.0), (25.0, 6, "loss", 5.0), (25.0, 6, "reward", 0.5),
        (31.0, 7, "loss", 8.0), (32.0, 8, "loss", 9.0), (40.0, 9, "loss", 10.0),
    ]
    # Idempotent: a second pass over the same buckets changes nothing...
    assert retention.downsample_metrics(conn, cutoff=35.0, bucket_s=10.0) == {"rows_downsampled": 0, "rows_written": 0}
    # ...and a later cutoff takes the next complete bucket only.
    assert retention.downsample_metrics(conn, cutoff=41.0, bucket_s=10.0) == {"rows_downsampled": 2, "rows_written": 1}
    assert conn.execute("SELECT time, version, value FROM metrics WHERE time >= 30 ORDER BY time").fetchall() == [
        (35.0, 8, 8.5), (40.0, 9, 10.0)]


def test_downsample_buckets_survive_float_rounding(tmp_path):
    # bucket_s = 0.1: b * 0.1 is not exact in binary; mid-bucket times keep each row in its bucket.
    conn = metrics_db(tmp_path, [(0.1 * i + 0.01, i, "m", float(i)) for i in range(30)] * 2)
    assert retention.downsample_metrics(conn, cutoff=3.0, bucket_s=0.1) == {"rows_downsampled": 60, "rows_written": 30}
    assert retention.downsample_metrics(conn, cutoff=3.0, bucket_s=0.1) == {"rows_downsampled": 0, "rows_written": 0}
    rows = conn.execute("SELECT CAST(time / 0.1 AS INTEGER), version, value FROM metrics ORDER BY time").fetchall()
    assert rows == [(i, i, float(i)) for i in range(30)]


def test_rollout_store_maintain_deletes_old_rows_and_reports(tmp_path):
    store = RolloutStore(tmp_path / "rollouts.sqlite")
    store.rejected("peer", None, [("malformed", "x")] * 10)
    config = StorageConfig(rollouts_max_age_s=DAY)
    now = time.time()
    kept = store.maintain(config, now)
    assert kept["rows_deleted_age"] == 0 and kept["rows_deleted_size"] == 0
    done = store.maintain(config, now + 2 * DAY)
    assert done["rows_deleted_age"] == 10 and done["rows_deleted_size"] == 0
    assert done["bytes_after"] == store.size_bytes() <= done["bytes_before"]
    assert (tmp_path / "rollouts.sqlite-wal").stat().st_size == 0
    store.close()
    assert store.maintain(config, now) == {}  # a pass racing shutdown does nothing


def test_metrics_store_maintain_downsamples_and_bounds_size(tmp_path):
    store = MetricsStore(tmp_path / "metrics.sqlite")
    now = 10 * DAY
    for i in range(600):  # one value a second, two days ago
        store.record(i, {"loss": float(i % 2)}, when=now - 2 * DAY + i)
    store.record(700, {"loss": 5.0}, when=now)
    config = StorageConfig(metrics_full_resolution_s=DAY, metrics_downsample_s=600.0)
    done = store.maintain(config, now)
    assert (done["rows_downsampled"], done["rows_written"], done["rows_deleted_size"]) == (600, 1, 0)
    rows = store._conn.execute("SELECT time, version, value FROM metrics ORDER BY time").fetchall()
    assert rows == [(now - 2 * DAY + 300.0, 599, 0.5), (now, 700, 5.0)]
    store.close()


def test_metrics_store_maintain_prunes_oldest_to_the_byte_bound(tmp_path):
    store = MetricsStore(tmp_path / "metrics.sqlite")
    for i in range(60_000):
        store.record(i, {"a_fairly_long_metric_name": float(i)}, when=1000.0 + i)
    config = StorageConfig(metrics_max_bytes=2**20, metrics_full_resolution_s=10 * DAY)
    done = store.maintain(config, 2000.0 + 60_000)
    assert done["rows_deleted_size"] > 0 and done["bytes_before"] > 2**20 >= done["bytes_after"] == store.size_bytes()
    oldest = store._conn.execute("SELECT MIN(version), COUNT(*) FROM metrics").fetchone()
    assert oldest == (done["rows_deleted_size"], 60_000 - done["rows_deleted_size"])
    store.close()


def test_an_old_database_without_auto_vacuum_is_bounded_by_its_live_size(tmp_path):
    path = tmp_path / "metrics.sqlite"
    with sqlite3.connect(path) as conn:  # made before retention existed: auto_vacuum off
        conn.executescript(METRICS_SCHEMA.replace("CREATE INDEX IF NOT EXISTS metrics_by_time ON metrics (time);", ""))
        conn.executemany("INSERT INTO metrics VALUES (?, ?, 'm', 1.0)", [(float(i), i) for i in range(50_000)])
    conn.close()
    store = MetricsStore(path)
    assert store._conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    store.maintain(StorageConfig(metrics_max_bytes=2**20, metrics_full_resolution_s=10 * DAY), 60_000.0)
    assert retention.live_bytes(store._conn) <= 2**20
    store.close()


def test_a_steps_metrics_are_one_commit(tmp_path):
    store = MetricsStore(tmp_path / "metrics.sqlite")
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.record(1, {f"metric_{i}": float(i) for i in range(9)})
    _, frames, _ = store._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert frames <= 4  # table + index pages once; a commit per row would write them 9 times
    store.close()
