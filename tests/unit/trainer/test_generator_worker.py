"""trainer/generator_worker.py: the step loop over any GeneratorWorker, through the two
interfaces (a stand-in worker that delivers its batches at once, and one that fails)."""
import pytest

from swarmnode.trainer.generator_worker import BatchSink, BatchStats
from swarmnode.trainer.loop import StepLoop
from swarmnode.trainer.trainer import StepResult
from tests.unit.trainer.helpers import CONFIG, group


class StandInTrainer:
    version = 0

    def step(self, groups):
        self.version += 1
        return StepResult(version=self.version, trained=True, loss=0.0, reward_mean=0.5, groups=len(groups),
                          groups_used=len(groups), completion_tokens=0, seconds=0.0, stats={}, local_groups=len(groups))


class DeliversAtOnce:
    """Delivers `batches` batches (of 2 groups, 3 tokens, after a 0.5 s wait each) on start, then ends."""

    def __init__(self, batches, error=None):
        self.batches, self.error = batches, error
        self.published = self.joined = 0
        self.sizes, self.stopped = [], False

    def start(self, sink: BatchSink):
        for _ in range(self.batches):
            sink.generator_waited(0.5)
            sink.batch_generated([group(), group()], BatchStats(seconds=1.0, tokens=3, items=2))
        sink.generation_ended()

    def publish(self):
        self.published += 1

    def set_batch_size(self, size):
        self.sizes.append(size)

    def stop(self):
        self.stopped = True

    def stopping(self):
        return self.stopped

    def wait_for_stop(self, timeout):
        return self.stopped

    def raise_if_failed(self):
        if self.error is not None:
            raise RuntimeError("the stand-in failed") from self.error

    def join(self):
        self.joined += 1


def test_the_step_loop_trains_on_what_the_worker_delivers_and_publishes_each_step():
    from swarmnode.trainer.loop import Quotas

    worker, timings = DeliversAtOnce(batches=2), []
    loop = StepLoop(worker, StandInTrainer(), CONFIG, on_generate_timing=lambda *timing: timings.append(timing))
    loop.set_quotas(Quotas(2, 0, 0.0))
    results = loop.run(steps=5)  # two batches, then the worker's end ends the run
    assert [r.groups for r in results] == [2, 2] and worker.published == 2
    assert worker.sizes == [2] and worker.stopped and worker.joined == 1
    assert timings == [(3, 1.0, 2), (3, 1.0, 2)]
    assert (loop.generated_tokens, loop.generate_seconds, loop.items_generated, loop.generator_wait_s) == (6, 2.0, 4, 1.0)
    assert set(loop.idle_shares()) == {"generator_idle_share", "trainer_idle_share"}


def test_the_step_loop_raises_the_workers_failure_and_joins_it():
    worker = DeliversAtOnce(batches=1, error=OSError("disk full"))
    loop = StepLoop(worker, StandInTrainer(), CONFIG)
    with pytest.raises(RuntimeError, match="stand-in failed") as info:
        loop.run(steps=3)
    assert isinstance(info.value.__cause__, OSError) and worker.stopped and worker.joined == 1


def test_a_stopped_step_loop_does_not_start_its_worker():
    worker = DeliversAtOnce(batches=1)
    loop = StepLoop(worker, StandInTrainer(), CONFIG)
    loop.stop()
    assert loop.run(steps=3) == [] and worker.joined == 0 and loop.idle_shares()["trainer_idle_share"] is None
