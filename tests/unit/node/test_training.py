"""node/training.py: checkpoint failures stop training through the on_fatal listener."""
import pytest

from swarmnode.config import NodeConfig
from swarmnode.node.step_recorder import CheckpointFailures, check_checkpoint_failures
from swarmnode.node.training import TrainingListeners, TrainingService


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
