"""Async RL with the generator in its own process (the `hf` backend, on a CPU or a GPU).

Threads in one process share the GIL, and a small model's decode loop is mostly Python between
short torch calls, so a generator thread and a trainer thread mostly take turns; as a child
process the generator runs beside the trainer (the figures: docs/experiments/cpu-throughput.md,
`swarmnode bench async`). So the generator can run in a child process, as in AReaL:

- weights: the trainer copies its state dict into shared tensors and bumps a shared version
  after each step; the child loads them before its next batch. On a CPU the shared tensors are
  in shared memory; on a GPU they stay on the device and the child maps them through CUDA IPC
  (its own CUDA context), so a new version goes GPU to GPU without a copy through the host;
  each side waits for its copies to finish before it lets go of the lock;
- admission: the child generates batch b only once b <= steps_trained + max_staleness;
- rollouts: the child scores its groups and sends them back over a queue; a feeder thread puts
  them into the trainer's ExperienceBuffer.

On a GPU a decode step is many short kernel launches from Python, and a generator thread beside
the trainer's shares the GIL and the default CUDA stream with it; whether its own process wins
that back is what docs/experiments/gpu.md measures.
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import queue
import signal
import sys
import threading
import time
from typing import Callable, Mapping

import torch
import torch.multiprocessing as mp

from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.generator_worker import BatchSink, BatchStats
from swarmnode.trainer.loop import (
    GroupsCallback,
    RolloutConfig,
    StepLoop,
    TimingCallback,
    generate_groups,
    prompt_stream,
    slowdown_sleep,
)
from swarmnode.trainer.trainer import StepResult, Trainer


def _finish_copies(device: torch.device) -> None:
    """Wait for this process's queued copies on `device` (a GPU's run asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def write_weights(shared: Mapping[str, torch.Tensor], state: Mapping[str, torch.Tensor], device: torch.device,
                  cond, version, new_version: int) -> None:
    """The trainer's side of the handoff: under the lock, copy `state` into the shared tensors,
    wait until the copies are done, then publish `new_version`. A reader holds the same lock
    while it copies, so it never sees half a version and is never overwritten mid-copy."""
    with cond:
        for name, tensor in shared.items():
            tensor.copy_(state[name])
        _finish_copies(device)
        version.value = new_version
        cond.notify_all()


def read_weights(generator, shared: Mapping[str, torch.Tensor], version, cond) -> None:
    """The generator's side: under the lock, load the shared tensors if they hold a newer
    version than the generator's, and wait until the copies are done."""
    with cond:
        current = version.value
        if current != generator.policy_version:
            generator.load_weights(shared, current)
            _finish_copies(generator.device)


def shareable_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A copy the child can map: in shared memory on a CPU; on a GPU a device tensor (sent as a
    CUDA IPC handle when the child starts)."""
    copy = tensor.detach().clone()
    return copy if copy.is_cuda else copy.share_memory_()


def _generator_main(load, shared, version, steps_done, cond, stop, out, config: RolloutConfig,
                    stream_start: int, exclude, threads: int, slowdown: float = 1.0, local_quota=None,
                    generator_options=None) -> None:
    """The child: generate, score and send batches until `stop`, loading shared weights."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # die with the trainer's process
    torch.set_num_threads(threads)
    from swarmnode.policy.hf_backend import HFGenerator

    policy = load()  # the trainer's device and precision: behaviour log-probs must match it
    generator = HFGenerator(policy.model, policy.tokenizer, policy_version=-1, **(generator_options or {}))
    stream = prompt_stream(config.tasks, config.data_seed, stream_start, exclude)
    try:
        _generate_batches(generator, stream, shared, version, steps_done, cond, stop, out, config, slowdown, local_quota)
    finally:
        shared.clear()  # let go of the trainer's CUDA IPC tensors before the process ends
        _finish_copies(generator.device)
    out.put(None)


def _generate_batches(generator, stream, shared, version, steps_done, cond, stop, out, config: RolloutConfig,
                      slowdown: float, local_quota) -> None:
    """The child's loop: wait for the staleness bound, take the newest weights, generate and send a batch."""
    for batch in itertools.count():
        waited = time.perf_counter()
        with cond:
            cond.wait_for(lambda: stop.is_set() or batch <= steps_done.value + config.max_staleness)
        if stop.is_set():
            break
        waited = time.perf_counter() - waited
        read_weights(generator, shared, version, cond)
        batch_size = config.prompts_per_step if local_quota is None else max(1, local_quota.value)
        items = list(itertools.islice(stream, batch_size))
        start = time.perf_counter()
        groups = generate_groups(generator, items, config)
        # training.slowdown, before the batch goes out; a stop ends it early
        slowdown_sleep(time.perf_counter() - start, slowdown, stop.wait)
        seconds = time.perf_counter() - start
        tokens = sum(len(t) for g in groups for t in g.completion_token_ids)
        out.put((groups, BatchStats(seconds, tokens, len(items)), waited))


class GeneratorProcess:
    """The GeneratorWorker in a child process: it loads `model_name` on the trainer's device (or
    what `load`, a picklable callable, returns), runs an HFGenerator with `generator_options`
    (decode path, logits, attention) and takes `trainer`'s weights through shared tensors. A
    feeder thread here hands its batches to the sink."""

    def __init__(self, model_name: str, trainer: Trainer, config: RolloutConfig, *, stream_start: int = 0,
                 exclude: frozenset = frozenset(), threads: int = 1, dtype: str = "float32", slowdown: float = 1.0,
                 load: Callable | None = None, generator_options: dict | None = None):
        self.trainer = trainer
        self.slowdown = slowdown  # training.slowdown: the child pauses after each batch
        self._device = self._trainer_device(trainer)  # where the shared weights live
        if load is None:
            from swarmnode.policy import load_policy

            load = functools.partial(load_policy, model_name, device=str(self._device), dtype=dtype)
        self._child_args = (load, config, stream_start, exclude, threads, dict(generator_options or {}))
        self._context = mp.get_context("spawn")
        self._batch_size = self._context.Value("i", config.prompts_per_step, lock=False)  # the child's batch size
        self._version = self._context.Value("q", trainer.version, lock=False)
        self._steps_done = self._context.Value("q", 0, lock=False)
        self._cond = self._context.Condition()
        self._stop = self._context.Event()
        self._out = self._context.Queue()
        self._shared: dict[str, torch.Tensor] = {}  # allocated by start(): a model-sized copy
        self.process = None
        self._feeder: threading.Thread | None = None
        self._failed = False
        self._error: BaseException | None = None

    @staticmethod
    def _trainer_device(trainer: Trainer) -> torch.device:
        model = getattr(trainer, "model", None)  # (a stand-in trainer in tests may have none)
        first = next(model.parameters(), None) if model is not None else None
        return first.device if first is not None else torch.device("cpu")

    def start(self, sink: BatchSink) -> None:
        load, config, stream_start, exclude, threads, generator_options = self._child_args
        self._shared = {k: shareable_copy(v) for k, v in self.trainer.model.state_dict().items()}
        _finish_copies(self._device)
        self.process = self._context.Process(
            target=_generator_main, name="swarmnode-generator", daemon=True,
            args=(load, self._shared, self._version, self._steps_done, self._cond, self._stop, self._out,
                  config, stream_start, exclude, threads, self.slowdown, self._batch_size, generator_options),
        )
        self.process.start()
        self._feeder = threading.Thread(target=self._feed, args=(sink,), name="swarmnode-rollout-feeder", daemon=True)
        self._feeder.start()

    def _feed(self, sink: BatchSink) -> None:
        try:
            while True:
                try:
                    message = self._out.get(timeout=1.0)
                except queue.Empty:
                    if not self.process.is_alive():
                        self._failed = not self._stop.is_set()
                        break
                    continue
                if message is None:
                    break
                groups, stats, waited = message
                sink.generator_waited(waited)
                sink.batch_generated(groups, stats)
        except BaseException as e:  # noqa: BLE001 - surfaced by raise_if_failed()
            self._error = e
        finally:
            sink.generation_ended()

    def publish(self) -> None:
        state = self.trainer.model.state_dict()
        write_weights(self._shared, state, self._device, self._cond, self._version, self.trainer.version)
        with self._cond:
            self._steps_done.value += 1
            self._cond.notify_all()

    def set_batch_size(self, size: int) -> None:
        self._batch_size.value = size  # the child reads it before its next batch

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait_for_stop(self, timeout: float) -> bool:
        return self._stop.wait(timeout)

    def raise_if_failed(self) -> None:
        if self._error is not None:
            raise RuntimeError("the rollout feeder failed") from self._error
        if self._failed:
            raise RuntimeError(f"the generator process exited with code {self.process.exitcode}")

    def join(self) -> None:
        if self.process is not None and self.process.pid is not None:  # it started
            self.process.join(timeout=30)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        if self._feeder is not None:
            self._feeder.join(timeout=30)
        self._shared = {}
        if self._device.type == "cuda":
            torch.cuda.ipc_collect()  # free what the ended child held through CUDA IPC


class ProcessAsyncRunner(StepLoop):
    """The step loop with the generator in a child process (training.generator "process"); the
    arguments are GeneratorProcess's and StepLoop's."""

    def __init__(self, model_name: str, trainer: Trainer, config: RolloutConfig, *, stream_start: int = 0,
                 exclude: frozenset = frozenset(), threads: int = 1, buffer: ExperienceBuffer | None = None,
                 on_generated: GroupsCallback | None = None, dtype: str = "float32", slowdown: float = 1.0,
                 after_step: Callable[[StepResult], None] | None = None, on_generate_timing: TimingCallback | None = None,
                 load: Callable | None = None, generator_options: dict | None = None):
        worker = GeneratorProcess(model_name, trainer, config, stream_start=stream_start, exclude=exclude,
                                  threads=threads, dtype=dtype, slowdown=slowdown, load=load,
                                  generator_options=generator_options)
        super().__init__(worker, trainer, config, buffer=buffer, on_generated=on_generated, slowdown=slowdown,
                         after_step=after_step, on_generate_timing=on_generate_timing)
