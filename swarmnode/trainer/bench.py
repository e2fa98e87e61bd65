"""`swarmnode bench async`: the same number of samples trained synchronously and asynchronously."""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass

import torch

from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.policy.loading import LoadedPolicy
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream, run_sync
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import Trainer, TrainerConfig


@dataclass
class AsyncBenchResult:
    model: str
    steps: int
    samples: int
    sync_seconds: float
    async_seconds: float
    sync_samples_per_s: float
    async_samples_per_s: float
    ratio: float
    sync_threads: int
    async_threads_per_side: int
    async_mode: str
    generator_wait_s: float
    sync_seconds_by_threads: dict[int, float]
    async_seconds_by_mode: dict[str, float]

    def as_dict(self) -> dict:
        return asdict(self)


def _parts(policy: LoadedPolicy, trainer_config: TrainerConfig) -> tuple[HFGenerator, Trainer]:
    torch.manual_seed(0)
    trainer = Trainer(copy.deepcopy(policy.model), policy.tokenizer.pad_token_id, trainer_config)
    return HFGenerator(copy.deepcopy(policy.model), policy.tokenizer), trainer


def _timed_steps(run, steps: int) -> float:
    """Seconds for `steps` steps after a first, untimed one (start-up and warm-up excluded)."""
    marks: list[float] = []
    run(steps + 1, lambda result, dropped: marks.append(time.perf_counter()))
    return marks[-1] - marks[0]


def _time_sync(policy, config, steps, threads, trainer_config) -> float:
    torch.set_num_threads(threads)
    generator, trainer = _parts(policy, trainer_config)
    stream = prompt_stream(config.tasks, config.data_seed)
    return _timed_steps(lambda n, cb: run_sync(generator, trainer, stream, config, n, cb), steps)


def _time_async(policy, config, steps, threads, trainer_config, mode) -> tuple[float, float]:
    torch.set_num_threads(threads)
    generator, trainer = _parts(policy, trainer_config)
    if mode == "process":
        runner = ProcessAsyncRunner(policy.name, trainer, config, threads=threads)
    else:
        runner = AsyncRunner(generator, trainer, prompt_stream(config.tasks, config.data_seed), config)
    seconds = _timed_steps(runner.run, steps)
    return seconds, runner.generator_wait_s


def bench_async(policy: LoadedPolicy, config: RolloutConfig, steps: int, cores: int,
                trainer_config: TrainerConfig | None = None, progress=lambda msg: None) -> AsyncBenchResult:
    """Time `steps` steps each way from the same weights, prompts and seeds.

    The sync baseline is the faster of running on all `cores` threads and on one thread (small
    models often do not gain from a second thread). Async runs the generator and the trainer
    side by side with cores // 2 threads each, so together they use the same cores: as two
    threads of one process and with the generator in its own process (no shared GIL); the
    faster one is reported. The first step of every run is not timed.
    """
    trainer_config = trainer_config or TrainerConfig()
    samples = steps * config.prompts_per_step * config.samples_per_prompt
    side_threads = max(1, cores // 2)
    previous_threads = torch.get_num_threads()
    try:
        sync_by_threads = {}
        for threads in sorted({cores, 1}, reverse=True):
            progress(f"sync: {steps} steps on {threads} thread(s)")
            sync_by_threads[threads] = _time_sync(policy, config, steps, threads, trainer_config)
        async_by_mode, waits = {}, {}
        for mode in ("thread", "process"):
            progress(f"async ({mode}): {steps} steps, generator and trainer on {side_threads} thread(s) each")
            async_by_mode[mode], waits[mode] = _time_async(policy, config, steps, side_threads, trainer_config, mode)
    finally:
        torch.set_num_threads(previous_threads)
    sync_threads, sync_seconds = min(sync_by_threads.items(), key=lambda kv: kv[1])
    async_mode, async_seconds = min(async_by_mode.items(), key=lambda kv: kv[1])
    return AsyncBenchResult(
        model=policy.name, steps=steps, samples=samples,
        sync_seconds=round(sync_seconds, 3), async_seconds=round(async_seconds, 3),
        sync_samples_per_s=round(samples / sync_seconds, 2), async_samples_per_s=round(samples / async_seconds, 2),
        ratio=round(sync_seconds / async_seconds, 3), sync_threads=sync_threads,
        async_threads_per_side=side_threads, async_mode=async_mode, generator_wait_s=round(waits[async_mode], 3),
        sync_seconds_by_threads={t: round(v, 3) for t, v in sync_by_threads.items()},
        async_seconds_by_mode={m: round(v, 3) for m, v in async_by_mode.items()},
    )
