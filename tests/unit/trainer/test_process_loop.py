"""trainer/process_loop.py: the runner with generation in a child process (staleness bound, a failing
consumer, a raised quota, training.slowdown's pause)."""
import threading
import time

import pytest

from swarmnode.policy import load_policy
from swarmnode.trainer.loop import RolloutConfig
from swarmnode.trainer.trainer import Trainer, TrainerConfig
from tests.unit.trainer.helpers import CONFIG, generator_used_each_version_exactly, raise_the_quota_after_the_first_step


def test_process_runner_trains_within_the_staleness_bound_and_cleans_up():
    from swarmnode.trainer.process_loop import ProcessAsyncRunner

    bundled = load_policy("bundled:tiny-policy")
    trainer = Trainer(bundled.model, bundled.tokenizer.pad_token_id, TrainerConfig(lr=1e-4))
    runner = ProcessAsyncRunner("bundled:tiny-policy", trainer, CONFIG)
    results = runner.run(steps=3)
    assert len(results) == 3
    assert set(runner.buffer.stats.staleness) <= {0, 1}
    assert runner.items_generated >= 3 * CONFIG.prompts_per_step and runner.generated_tokens > 0
    assert not runner._process.is_alive()


def test_process_runner_surfaces_a_failing_consumer_instead_of_hanging():
    from swarmnode.trainer.process_loop import ProcessAsyncRunner

    bundled = load_policy("bundled:tiny-policy")
    trainer = Trainer(bundled.model, bundled.tokenizer.pad_token_id, TrainerConfig(lr=1e-4))

    def share(groups):
        raise OSError("disk full")

    runner = ProcessAsyncRunner("bundled:tiny-policy", trainer, CONFIG, on_generated=share)
    with pytest.raises(RuntimeError, match="feeder failed") as info:
        runner.run(steps=50)
    assert isinstance(info.value.__cause__, OSError)
    assert not runner._process.is_alive() and runner._shared == {}


def test_the_process_runner_follows_a_raised_quota_without_hanging():
    """The same plan change for the process runner: its child reads the new I before its next
    batch, and the trainer takes each batch at the size it reached the buffer with."""
    from swarmnode.trainer.process_loop import ProcessAsyncRunner

    bundled = load_policy("bundled:tiny-policy")
    trainer = Trainer(bundled.model, bundled.tokenizer.pad_token_id, TrainerConfig(lr=1e-4))
    runner = ProcessAsyncRunner("bundled:tiny-policy", trainer, CONFIG)
    hung, taken = raise_the_quota_after_the_first_step(runner, timeout=180)
    assert not hung, "the trainer waited for groups that were never generated"
    assert taken[0] == 1 and taken[-1] == 4 and len(taken) == 5


def test_the_process_runners_trainer_pause_lasts_and_a_stop_ends_it():
    from swarmnode.trainer.process_loop import ProcessAsyncRunner

    class FakeTrainer:
        version = 0

    runner = ProcessAsyncRunner("unused", FakeTrainer(), RolloutConfig(), slowdown=2.0)
    assert runner._pause(0.05) >= 0.049
    slow = ProcessAsyncRunner("unused", FakeTrainer(), RolloutConfig(), slowdown=1000.0)
    threading.Timer(0.1, slow.stop).start()
    start = time.perf_counter()
    slow._pause(1.0)
    assert time.perf_counter() - start < 30


def test_the_child_generates_with_exactly_the_trainers_version():
    assert generator_used_each_version_exactly("bundled:tiny-policy") >= 8
