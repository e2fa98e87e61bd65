"""store/rollout_store.py: the store's retention pass."""
import time

from swarmnode.config.model import StorageConfig
from swarmnode.store.rollout_store import RolloutStore


DAY = 86_400.0


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
