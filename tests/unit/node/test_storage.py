"""The status document's `storage` object, its rendering, and checkpoint failures stopping training."""
import pytest
from rich.console import Console

from swarmnode.cli.render import status_view
from swarmnode.config import NodeConfig
from swarmnode.node.storage import storage_status
from swarmnode.node.step_recorder import CheckpointFailures, check_checkpoint_failures
from swarmnode.node.training import TrainingListeners, TrainingService
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.snapshot import STORAGE_NONE, JoinState, build_status
from swarmnode.store.checkpoints import BackgroundCheckpointer
from swarmnode.store.metrics import MetricsStore
from swarmnode.store.rollout_store import RolloutStore
from swarmnode.swarm.peers import MessageStats


def status(**extra):
    return build_status(
        peer_id="12D3KooWTest", swarm="s", software_version="0.1.0", protocol_version=1, state=peer_record_pb2.NODE_STATE_RUNNING,
        started_at=1000.0, now=1100.0, window=1, window_s=30.0, multiaddrs=["/ip4/127.0.0.1/tcp/1/p2p/12D3KooWTest"],
        client_mode=False, routing_table_size=0, join=JoinState((), True, 0, None), peers=[], stats=MessageStats(),
        device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(), model_fingerprint="", **extra,
    )


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


def test_status_view_shows_storage_in_80_columns():
    storage = {
        "rollouts_bytes": 3 * 2**20 + 2**19, "metrics_bytes": 2048, "checkpoint_failures": 2, "last_checkpoint": "v00000040",
        "last_checkpoint_error": "OSError: [Errno 28] No space left on device: '/home/someone/.swarmnode/checkpoints/.tmp-v00000050-123'",
        "last_maintenance": {"at": 1088.0, "seconds": 0.1, "rollouts": {"rows_deleted_age": 3, "rows_deleted_size": 4},
                             "metrics": {"rows_downsampled": 600, "rows_written": 1, "rows_deleted_size": 5}},
    }
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(storage=storage, training={"model": "bundled:tiny-policy"})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "3.5 MiB" in text and "2.0 KiB" in text and "v00000040" in text
    assert "2 in a row: OSError: [Errno 28] No space left on device" in text
    assert "12s ago: 12 rows pruned, 600 metrics downsampled" in text
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status()))
    assert "rollouts.sqlite" not in console.export_text()


def test_checkpoint_failures_stop_training_through_on_fatal(tmp_path):
    config = NodeConfig.model_validate({"storage": {"max_checkpoint_failures": 2}})
    reasons = []
    service = TrainingService(config, tmp_path, listeners=TrainingListeners(on_fatal=reasons.append))
    max_failures = config.storage.max_checkpoint_failures
    service.checkpoints.consecutive_failures, service.checkpoints.last_error = 1, "FileExistsError: x"
    check_checkpoint_failures(service.checkpoints, max_failures)  # one failure: training goes on
    service.checkpoints.consecutive_failures = 2

    def train():
        check_checkpoint_failures(service.checkpoints, max_failures)

    service._train = train
    service._main()
    expected = (f"checkpoint writes failed 2 times in a row (last: FileExistsError: x); "
                f"make {tmp_path / 'checkpoints'} a writable folder with free space, then restart")
    assert reasons == [expected] and service.error == expected
    assert service.snapshot()["phase"] == f"failed: {expected}" and not service.snapshot()["running"]
    with pytest.raises(CheckpointFailures):
        check_checkpoint_failures(service.checkpoints, max_failures)
    service.metrics.close()


def test_status_view_shows_limits_hit_in_80_columns():
    limits = {"peers": 64, "tracked_senders": 64, "serve_refused": 17643, "accept_deferred": 0, "fetch_waits": 3083,
              "values_over_key_cap": 39903, "peers_evicted": 1264, "senders_evicted": 3275}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(limits=limits)))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "64 peers, 64 senders held; fetch waits 3083, peers evicted 1264, senders evicted 3275," in flat
    assert "serve refused 17643, values over key cap 39903" in flat and "accept deferred" not in flat
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status()))
    assert "0 peers, 0 senders held; none" in console.export_text()
