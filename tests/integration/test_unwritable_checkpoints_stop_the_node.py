"""A training node whose checkpoints cannot be written says so in its status, then stops with code 1."""
import pytest

from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.status.client import NoDaemon, fetch
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.integration


def test_failing_checkpoint_writes_show_in_status_then_stop_the_daemon(tmp_path, local_config):
    config = tmp_path / "checkpoints-fail.yaml"
    config.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 4\n  samples_per_prompt: 4\n  eval_every: 1000\n  eval_size: 4\n"
          "  checkpoint_every: 5\n  threads: 1\n"
        + "\nstorage:\n  max_checkpoint_failures: 2\n  maintenance_interval_s: 1\n"
    )
    swarm = LocalSwarm(tmp_path / "swarm", 1, config)
    node = swarm.nodes[0]
    node.home.root.mkdir(parents=True)
    checkpoints = node.home.root / "checkpoints"
    checkpoints.write_text("a file where the checkpoints folder should be")  # every write fails
    with swarm:
        swarm.start()
        url = read_runtime(node.home)["status_url"]

        def failed_once():
            try:
                storage = fetch(url, timeout=1.0)["storage"]
            except NoDaemon:
                return None
            return storage if storage["checkpoint_failures"] >= 1 else None

        storage = wait_until(failed_once, timeout=90, interval=0.1, what="a failed checkpoint write in the status")
        assert storage["last_checkpoint_error"].startswith("FileExistsError: ") and storage["last_checkpoint"] is None
        assert storage["rollouts_bytes"] > 0 and storage["metrics_bytes"] > 0
        assert node.process.wait(timeout=60) == 1
    log = node.log_path.read_text()
    assert f"checkpoint write of version 5 to {checkpoints / 'v00000005'} failed (1 in a row): FileExistsError" in log
    stop = next(line for line in log.splitlines() if "stopping: " in line)
    assert "stopping: training failed: checkpoint writes failed 2 times in a row (last: FileExistsError: " in stop
    assert stop.endswith(f"make {checkpoints} a writable folder with free space, then restart")
    assert "storage maintenance failed" not in log
