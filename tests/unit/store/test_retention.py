"""store/retention.py on hand-built databases: age limits, byte bounds, WAL checkpoints, downsampling."""
import json

from swarmnode.store import retention
from swarmnode.store.metrics import SCHEMA as METRICS_SCHEMA
from swarmnode.store.rollout_store import SCHEMA as ROLLOUTS_SCHEMA
from swarmnode.store.sqlite import open_db

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
