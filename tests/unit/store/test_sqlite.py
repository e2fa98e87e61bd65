"""store/sqlite.py: new databases get incremental auto-vacuum."""
from swarmnode.store.metrics import SCHEMA as METRICS_SCHEMA
from swarmnode.store.sqlite import open_db


def test_new_databases_get_incremental_auto_vacuum(tmp_path):
    assert open_db(tmp_path / "a.sqlite", METRICS_SCHEMA).execute("PRAGMA auto_vacuum").fetchone()[0] == 2
