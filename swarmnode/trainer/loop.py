"""Generation and training, one after the other (sync) or at the same time (async).

Async: a generator keeps producing scored groups while the trainer thread trains (`StepLoop`,
the one step loop; the generator behind it is a GeneratorWorker: `GeneratorThread` here, a child
process in process_loop.py). The generator waits only at the staleness bound (admission
control, as in AReaL): batch b may be generated only once b <= steps_trained + max_staleness, so
every group it produces is at most max_staleness versions old when trained. After each step the
trainer publishes its weights and the generator loads them before its next batch.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from swarmnode.policy.generation import Generator, SamplingParams
from swarmnode.tasks import DEFAULT_TASKS, TaskItem, get_task
from swarmnode.trainer.buffer import ExperienceBuffer, Take
from swarmnode.trainer.experience import ScoredGroup, score_generation
from swarmnode.trainer.generator_worker import BatchSink, BatchStats, GeneratorWorker
from swarmnode.trainer.trainer import StepResult, Trainer


@dataclass(frozen=True)
class RolloutConfig:
    prompts_per_step: int = 32  # I: local groups per step
    samples_per_prompt: int = 8
    max_staleness: int = 1
    external_rollouts: int = 0  # J: groups from peers per step
    external_selection: str = "uniform"
    external_max_staleness: int = 8
    external_wait_s: float = 0.0  # how long a step waits for J external groups it can draw
    tasks: tuple[str, ...] = DEFAULT_TASKS
    data_seed: int = 1000  # training items come from this seed; held-out evaluation uses seed 0
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(temperature=1.0, max_new_tokens=8))


def prompt_stream(tasks: Sequence[str], seed: int, start: int = 0,
                  exclude: frozenset[tuple[str, str]] = frozenset()) -> Iterator[TaskItem]:
    """Items of the tasks in turn: (tasks[0], seed, start), (tasks[1], seed, start), ...

    Items whose (task, question) is in `exclude` are skipped: small task spaces (all sums of
    two 2-digit numbers) would otherwise train on the held-out questions themselves.
    """
    resolved = [get_task(name) for name in tasks]
    for index in itertools.count(start):
        for task in resolved:
            item = task.item(seed, index)
            if (item.ref.task, item.question) not in exclude:
                yield item


def generate_groups(generator: Generator, items: list[TaskItem], config: RolloutConfig) -> list[ScoredGroup]:
    generations = generator.generate([i.question for i in items], config.samples_per_prompt, config.sampling)
    return [score_generation(item, generation) for item, generation in zip(items, generations)]


StepCallback = Callable[[StepResult, int], None]  # (result, dropped_stale)
GroupsCallback = Callable[[list[ScoredGroup]], None]
TimingCallback = Callable[[int, float, int], None]  # (completion tokens, wall seconds, groups) of one generated batch


@dataclass(frozen=True)
class Quotas:
    """What each step takes: I local groups (also the generator's batch), up to J peers' groups,
    and how long to wait for them. The scheduler replaces a runner's quotas once per window;
    a runner reads them afresh for every batch and every step."""

    local: int
    external: int
    external_wait_s: float

    @classmethod
    def of(cls, config: "RolloutConfig") -> "Quotas":
        return cls(config.prompts_per_step, config.external_rollouts, config.external_wait_s)



def slowdown_pause_s(compute_s: float, slowdown: float) -> float:
    """Seconds to pause after `compute_s` seconds of work so that it takes `slowdown` times as
    long in all: (slowdown - 1) * compute_s; 0 at slowdown 1 or for a measurement that is
    negative or not finite. A pause proportional to the measured work (not a fixed one) keeps
    the ratio right however long each batch or step really takes."""
    if not (math.isfinite(compute_s) and compute_s > 0 and slowdown > 1):
        return 0.0
    return (slowdown - 1.0) * compute_s


def slowdown_sleep(compute_s: float, slowdown: float, wait: Callable[[float], object]) -> float:
    """Pause slowdown_pause_s(compute_s, slowdown) with `wait(seconds)`, which returns early when
    the runner stops; the seconds actually slept (0 without a pause)."""
    pause = slowdown_pause_s(compute_s, slowdown)
    if pause <= 0:
        return 0.0
    start = time.perf_counter()
    wait(pause)
    return time.perf_counter() - start


def make_buffer(config: RolloutConfig, quality: Callable[[], dict] = dict, seed: int = 0) -> ExperienceBuffer:
    return ExperienceBuffer(config.max_staleness, external_max_staleness=config.external_max_staleness,
                            selection=config.external_selection, quality=quality, seed=seed)


def run_sync(generator: Generator, trainer: Trainer, stream: Iterator[TaskItem], config: RolloutConfig,
             steps: int, on_step: StepCallback | None = None,
             on_generate_timing: TimingCallback | None = None) -> list[StepResult]:
    results = []
    for _ in range(steps):
        start = time.perf_counter()
        groups = generate_groups(generator, list(itertools.islice(stream, config.prompts_per_step)), config)
        if on_generate_timing is not None:
            tokens = sum(len(t) for g in groups for t in g.completion_token_ids)
            on_generate_timing(tokens, time.perf_counter() - start, len(groups))
        result = trainer.step(groups)
        generator.load_weights(trainer.weights(), trainer.version)
        results.append(result)
        if on_step:
            on_step(result, 0)
    return results


class BatchSizes:
    """Sizes of the generator's batches in order, for the trainer to take one batch a step.

    A step takes exactly the oldest untaken batch's size, not the current quota: when a plan
    raises I past what the batches already admitted hold ((max_staleness + 1) x the old I), a
    trainer waiting for the new I would wait for groups the generator may not make before the
    step ends (a deadlock)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._sizes: deque[int] = deque()
        self._closed = False

    def add(self, size: int) -> None:
        with self._cond:
            self._sizes.append(size)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def next(self) -> int | None:
        """The oldest batch's size, waiting for one; None once closed with none left."""
        with self._cond:
            self._cond.wait_for(lambda: self._sizes or self._closed)
            return self._sizes.popleft() if self._sizes else None


class GeneratorThread:
    """The GeneratorWorker on a thread of this process: `generator` (hf or vllm) makes batches of
    `stream`'s items and loads `trainer`'s weights as each step publishes them."""

    def __init__(self, generator: Generator, trainer: Trainer, stream: Iterator[TaskItem], config: RolloutConfig,
                 slowdown: float = 1.0):
        self.generator = generator
        self.trainer = trainer
        self.stream = stream
        self.config = config
        self.slowdown = slowdown  # training.slowdown: after each batch, pause (slowdown - 1) x its compute time
        self._batch_size = config.prompts_per_step
        self._cond = threading.Condition()
        self._steps_done = 0
        self._published: tuple[int, dict] | None = None
        self._stop = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, sink: BatchSink) -> None:
        self._thread = threading.Thread(target=self._generate_forever, args=(sink,), name="swarmnode-generator",
                                        daemon=True)
        self._thread.start()

    def _generate_forever(self, sink: BatchSink) -> None:
        try:
            for batch in itertools.count():
                with self._cond:
                    waited = time.perf_counter()
                    self._cond.wait_for(lambda: self._stop or batch <= self._steps_done + self.config.max_staleness)
                    sink.generator_waited(time.perf_counter() - waited)
                    if self._stop:
                        return
                    published, self._published = self._published, None
                if published is not None:
                    self.generator.load_weights(published[1], published[0])
                items = list(itertools.islice(self.stream, self._batch_size))
                sink.batch_generated(*self._generate(items))
        except BaseException as e:  # noqa: BLE001 - surfaced by raise_if_failed()
            self._error = e
            sink.generation_ended()

    def _generate(self, items: list[TaskItem]) -> tuple[list[ScoredGroup], BatchStats]:
        start = time.perf_counter()
        groups = generate_groups(self.generator, items, self.config)
        # before the groups go out: a slow node delivers late
        slowdown_sleep(time.perf_counter() - start, self.slowdown, self.wait_for_stop)
        seconds = time.perf_counter() - start
        tokens = sum(len(t) for g in groups for t in g.completion_token_ids)
        return groups, BatchStats(seconds, tokens, len(items))

    def publish(self) -> None:
        with self._cond:
            self._steps_done += 1
            self._published = (self.trainer.version, self.trainer.weights())
            self._cond.notify_all()

    def set_batch_size(self, size: int) -> None:
        self._batch_size = size  # read before the next batch

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def stopping(self) -> bool:
        return self._stop

    def wait_for_stop(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._stop, timeout=timeout)

    def raise_if_failed(self) -> None:
        if self._error is not None:
            raise RuntimeError("the generator thread failed") from self._error

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


class StepLoop:
    """The step loop of async training, on the calling thread: each step takes the oldest batch
    the `worker` (a GeneratorWorker: a thread or a child process) delivered, trains on it and
    publishes the new weights to the worker. It is the worker's BatchSink."""

    def __init__(self, worker: GeneratorWorker, trainer: Trainer, config: RolloutConfig, *,
                 buffer: ExperienceBuffer | None = None, on_generated: GroupsCallback | None = None,
                 slowdown: float = 1.0, after_step: Callable[[StepResult], None] | None = None,
                 on_generate_timing: TimingCallback | None = None):
        self.worker = worker
        self.trainer = trainer
        self.config = config
        self.buffer = buffer if buffer is not None else make_buffer(config)
        self.on_generated = on_generated  # e.g. share the groups with the swarm (called on the worker's thread)
        # Called on the trainer thread after each step, before the weights go to the generator
        # (e.g. the outer step of gradient summaries, so the generator gets the merged weights).
        self.after_step = after_step
        # Called on the worker's thread with each batch's tokens and wall seconds (e.g. to measure speed).
        self.on_generate_timing = on_generate_timing
        self.slowdown = slowdown  # training.slowdown: after each step, pause (slowdown - 1) x its compute time
        self._quotas = Quotas.of(config)
        self._sizes = BatchSizes()
        self.started_at: float | None = None  # perf_counter when run() began (idle shares)
        self.trainer_wait_s = 0.0  # the trainer's waits for groups
        self.generator_wait_s = 0.0  # the generator's waits at the staleness bound
        self.generated_tokens = 0
        self.generate_seconds = 0.0
        self.items_generated = 0

    @property
    def quotas(self) -> Quotas:
        return self._quotas

    def set_quotas(self, quotas: Quotas) -> None:
        """Replaced whole by the scheduler once per window (any thread): the worker makes batches
        of the new I from its next batch, each step reads them afresh."""
        self._quotas = quotas
        self.worker.set_batch_size(quotas.local)

    def generator_waited(self, seconds: float) -> None:
        self.generator_wait_s += seconds

    def batch_generated(self, groups: list[ScoredGroup], stats: BatchStats) -> None:
        self.generate_seconds += stats.seconds
        self.generated_tokens += stats.tokens
        self.items_generated += stats.items
        if self.on_generate_timing is not None:
            self.on_generate_timing(stats.tokens, stats.seconds, len(groups))
        self.buffer.put(groups)
        self._sizes.add(len(groups))  # what is in the buffer: a short batch cannot strand the trainer
        if self.on_generated is not None:
            self.on_generated(groups)

    def generation_ended(self) -> None:
        self.buffer.close()  # a trainer waiting for groups returns instead of hanging
        self._sizes.close()

    def idle_shares(self) -> dict[str, float | None]:
        """generator_idle_share and trainer_idle_share: each side's waiting seconds over the wall
        seconds since run() began (None before it began)."""
        if self.started_at is None:
            return {"generator_idle_share": None, "trainer_idle_share": None}
        wall = max(1e-9, time.perf_counter() - self.started_at)
        return {"generator_idle_share": round(min(1.0, self.generator_wait_s / wall), 4),
                "trainer_idle_share": round(min(1.0, self.trainer_wait_s / wall), 4)}

    def _take(self) -> Take:
        """One step's groups: the oldest batch's local groups and up to quotas.external peers'
        groups; the wait is added to trainer_wait_s."""
        quotas, version = self.quotas, self.trainer.version
        waited = time.perf_counter()
        local = self._sizes.next()
        take = Take([], 0) if local is None else self.buffer.take(local, quotas.external, version,
                                                                   external_wait=quotas.external_wait_s)
        self.trainer_wait_s += time.perf_counter() - waited
        return take

    def _pause(self, compute_s: float) -> float:
        """Sleep the slowdown's share of `compute_s` on the trainer thread, woken early by
        `stop()`; the seconds slept."""
        return slowdown_sleep(compute_s, self.slowdown, self.worker.wait_for_stop)

    def stop(self) -> None:
        """Ask `run` to return after the step in progress (callable from any thread)."""
        self.worker.stop()
        self.buffer.close()
        self._sizes.close()

    def run(self, steps: int | None, on_step: StepCallback | None = None) -> list[StepResult]:
        """Train `steps` steps (None: until `stop()`) while the worker generates; the worker is
        stopped and joined on return."""
        if self.worker.stopping():
            return []
        results = []
        try:
            self.worker.start(self)
            self.started_at = time.perf_counter()
            for _ in itertools.count() if steps is None else range(steps):
                take = self._take()
                self.worker.raise_if_failed()
                if self.worker.stopping() or not take.groups:
                    break
                result = self.trainer.step(take.groups)
                # the slowdown's pause, before the new weights go out
                result = dataclasses.replace(result, pause_seconds=self._pause(result.seconds))
                if self.after_step is not None:
                    self.after_step(result)
                self.worker.publish()
                results.append(result)
                if on_step:
                    on_step(result, take.dropped_stale)
        finally:
            self.stop()
            self.worker.join()
        return results


class AsyncRunner(StepLoop):
    """The step loop with the generator on a thread of this process (training.generator "thread")."""

    def __init__(self, generator: Generator, trainer: Trainer, stream: Iterator[TaskItem], config: RolloutConfig,
                 *, buffer: ExperienceBuffer | None = None, on_generated: GroupsCallback | None = None,
                 slowdown: float = 1.0, after_step: Callable[[StepResult], None] | None = None,
                 on_generate_timing: TimingCallback | None = None):
        super().__init__(GeneratorThread(generator, trainer, stream, config, slowdown), trainer, config, buffer=buffer,
                         on_generated=on_generated, slowdown=slowdown, after_step=after_step,
                         on_generate_timing=on_generate_timing)
