"""trainer/process_loop.py: the runner with generation in a child process (staleness bound, a failing
consumer, a raised quota, training.slowdown's pause)."""
import threading
import time

import pytest
import torch

from swarmnode.policy import load_policy
from swarmnode.trainer.loop import RolloutConfig
from swarmnode.trainer.process_loop import read_weights, shareable_copy, write_weights
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
    assert not runner.worker.process.is_alive()


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
    assert not runner.worker.process.is_alive() and runner.worker._shared == {}


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


class _Copier:
    """A stand-in generator: load_weights keeps its own copy of what it was given."""

    def __init__(self, device: str):
        self.device, self.weights, self.policy_version = torch.device(device), {}, -1

    def load_weights(self, state, version):
        self.weights, self.policy_version = {k: v.clone() for k, v in state.items()}, version


def _read_every_version(shared, version, cond, stop, out, device):
    """The child of the handoff test: take each new version as the generator does and count the
    copies that are not all of one version (torn), and the versions seen."""
    copier, torn, seen = _Copier(device), 0, set()
    out.put("ready")
    while True:
        with cond:
            cond.wait_for(lambda: stop.is_set() or version.value != copier.policy_version, timeout=1.0)
        if stop.is_set():
            break
        read_weights(copier, shared, version, cond)
        seen.add(copier.policy_version)
        torn += not bool((copier.weights["w"] == float(copier.policy_version)).all())
    copier.weights = {}
    shared.clear()
    out.put((torn, len(seen)))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_the_weight_handoff_never_shows_half_a_version(device):
    """The trainer writes 40 versions, each a large tensor filled with its number, while the
    generator's process takes them: every copy it took is one whole version (on a GPU through
    CUDA IPC, where copies run asynchronously)."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    size = (64 if device == "cuda" else 4) * 2**20  # floats: 256 MiB on a GPU, 16 MiB here
    shared = {"w": shareable_copy(torch.zeros(size, device=device))}
    version, cond, stop, out = context.Value("q", 0, lock=False), context.Condition(), context.Event(), context.Queue()
    child = context.Process(target=_read_every_version, args=(shared, version, cond, stop, out, device), daemon=True)
    child.start()
    try:
        assert out.get(timeout=120) == "ready"
        for v in range(1, 41):
            write_weights(shared, {"w": torch.full((size,), float(v), device=device)}, torch.device(device), cond, version, v)
            time.sleep(0.005)
        stop.set()
        with cond:
            cond.notify_all()
        torn, seen = out.get(timeout=120)
    finally:
        stop.set()
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    assert torn == 0 and seen >= 5, (torn, seen)
