"""node/storage.py: the status document's `storage` object."""
from swarmnode.node.storage import storage_status
from swarmnode.status.snapshot import STORAGE_NONE
from swarmnode.store.checkpoints import BackgroundCheckpointer
from swarmnode.store.metrics import MetricsStore
from swarmnode.store.rollout_store import RolloutStore
from tests.unit.status.helpers import status


def test_a_node_without_a_model_reports_empty_storage():
    assert status()["storage"] == STORAGE_NONE == {
        "rollouts_bytes": 0, "metrics_bytes": 0, "checkpoint_failures": 0, "last_checkpoint_error": None,
        "last_checkpoint": None, "last_maintenance": None,
    }
    assert storage_status(None, None, None, None) == STORAGE_NONE


def test_storage_status_reads_sizes_and_checkpoint_failures(tmp_path):
    rollouts, metrics = RolloutStore(tmp_path / "rollouts.sqlite"), MetricsStore(tmp_path / "metrics.sqlite")
    metrics.record(1, {"loss": 1.0})
    checkpoints = BackgroundCheckpointer(tmp_path / "checkpoints")
    checkpoints.consecutive_failures, checkpoints.last_error = 2, "OSError: [Errno 28] No space left on device"
    checkpoints.last_path = tmp_path / "checkpoints" / "v00000010"
    doc = storage_status(rollouts, metrics, checkpoints, {"at": 1.0})
    assert doc["rollouts_bytes"] == rollouts.size_bytes() > 0 and doc["metrics_bytes"] == metrics.size_bytes() > 0
    assert (doc["checkpoint_failures"], doc["last_checkpoint"], doc["last_maintenance"]) == (2, "v00000010", {"at": 1.0})
    assert doc["last_checkpoint_error"] == "OSError: [Errno 28] No space left on device"
