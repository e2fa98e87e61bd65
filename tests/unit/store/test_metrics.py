"""store/metrics.py: the store's retention pass (downsampling, byte bound) and one commit per step."""
import sqlite3

from swarmnode.config.model import StorageConfig
from swarmnode.store import retention
from swarmnode.store.metrics import SCHEMA as METRICS_SCHEMA, MetricsStore


DAY = 86_400.0


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
