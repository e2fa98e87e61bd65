"""node/training/service.py: checkpoint failures stop training through the on_fatal listener, and how many of
peers' groups the training service wants."""
import pytest

from swarmnode.config import NodeConfig
from swarmnode.node.training.step_recorder import CheckpointFailures, check_checkpoint_failures
from swarmnode.node.training.service import TrainingListeners, TrainingService
from swarmnode.trainer.buffer import ExperienceBuffer
from tests.unit.trainer.helpers import group


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


def test_any_error_on_the_trainer_thread_reaches_on_fatal_as_one_line(tmp_path):
    reasons = []
    service = TrainingService(NodeConfig(), tmp_path, listeners=TrainingListeners(on_fatal=reasons.append))

    def train():
        raise RuntimeError("CUDA out of memory.\nTried to allocate 2 GiB")

    service._train = train
    service._main()
    assert reasons == ["RuntimeError: CUDA out of memory."] and service.error == reasons[0]
    assert service.snapshot()["phase"] == "failed: RuntimeError: CUDA out of memory."
    service.metrics.close()


def test_the_training_service_wants_peers_groups_until_the_pool_holds_ahead_steps(tmp_path):
    from swarmnode.config import NodeConfig
    from swarmnode.node.training.service import TrainingService

    config = NodeConfig.model_validate({"training": {"external_rollouts": 2, "external_selection": "nonzero_advantage"},
                                        "rollouts": {"fetch_ahead_steps": 2}})
    training = TrainingService(config, tmp_path)
    try:
        assert training.inputs.external_wanted()  # no buffer yet
        buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=8, selection="nonzero_advantage")
        training.inputs.open_intake(None, buffer)
        buffer.put([group(source="p", rewards=(0.0, 0.0))] * 8 + [group(source="p")] * 3)
        assert training.inputs.external_wanted()  # 3 usable < 2 steps x 2 groups
        buffer.put([group(source="q")])
        assert not training.inputs.external_wanted()  # 4: enough
        config.scheduler.enabled = True  # the scheduler keeps the bound (it counts supply while fetching)
        assert not training.inputs.external_wanted()
        config.scheduler.enabled, config.rollouts.fetch_ahead_steps = False, 0
        assert training.inputs.external_wanted()
    finally:
        training.metrics.close()


def test_training_status_has_gpu_memory_only_on_a_cuda_device(monkeypatch):
    """On a CPU: none. On a CUDA device: in use from the driver, the peak the highest seen."""
    from swarmnode.node.training import status as training_status
    from swarmnode.node.training.status import TrainingStatus
    from swarmnode.scheduler import SpeedMeter

    assert TrainingStatus("m", 1.0, SpeedMeter()).gpu_memory() is None
    readings = iter([(5, 100), (9, 100), (7, 100)])
    monkeypatch.setattr(training_status, "gpu_memory_in_use", lambda device: next(readings))
    monkeypatch.setattr(training_status, "process_peak_reserved", lambda device: 6)
    status = TrainingStatus("m", 1.0, SpeedMeter(), device="cuda:0")
    assert [status.gpu_memory() for _ in range(3)] == [
        {"device": "cuda:0", "in_use_bytes": in_use, "peak_bytes": peak, "total_bytes": 100}
        for in_use, peak in ((5, 6), (9, 9), (7, 9))]


def test_a_refusal_to_resume_another_models_checkpoint_ends_training_with_its_own_whole_line(tmp_path):
    from swarmnode.node.training.service import failure_reason
    from swarmnode.node.training.setup import CheckpointUnloadable
    from swarmnode.store.checkpoint_model import CheckpointOfAnotherModel

    long = "node home /h holds the training of x " + "y" * 400 + "; swarmnode reset-training --home /h"
    assert failure_reason(CheckpointOfAnotherModel(long)) == long  # never cut at 300 characters
    assert failure_reason(CheckpointUnloadable(long)) == long
