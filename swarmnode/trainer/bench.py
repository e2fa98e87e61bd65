"""`swarmnode bench async`: the same number of samples trained synchronously and asynchronously."""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass

import torch

from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.policy.loading import LoadedPolicy
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream, run_sync
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
    generator_wait_s: float
    sync_seconds_by_threads: dict[int, float]

    def as_dict(self) -> dict:
        return asdict(self)


def _parts(policy: LoadedPolicy, trainer_config: TrainerConfig) -> tuple[HFGenerator, Trainer]:
    torch.manual_seed(0)
    trainer = Trainer(copy.deepcopy(policy.model), policy.tokenizer.pad_token_id, trainer_config)
    return HFGenerator(copy.deepcopy(policy.model), policy.tokenizer), trainer


def _time_sync(policy, config, steps, threads, trainer_config) -> float:
    torch.set_num_threads(threads)
    generator, trainer = _parts(policy, trainer_config)
    stream = prompt_stream(config.tasks, config.data_seed)
    run_sync(generator, trainer, stream, config, steps=1)  # warm-up
    start = time.perf_counter()
    run_sync(generator, trainer, stream, config, steps=steps)
    return time.perf_counter() - start


def bench_async(policy: LoadedPolicy, config: RolloutConfig, steps: int, cores: int,
                trainer_config: TrainerConfig | None = None, progress=lambda msg: None) -> AsyncBenchResult:
    """Time `steps` steps each way from the same weights, prompts and seeds (one untimed warm-up).

    The sync baseline is the faster of running on all `cores` threads and on one thread (small
    models often do not gain from a second thread); async runs the generator and the trainer
    side by side with cores // 2 threads each, so together they use the same cores.
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
        sync_threads, sync_seconds = min(sync_by_threads.items(), key=lambda kv: kv[1])

        torch.set_num_threads(side_threads)
        generator, trainer = _parts(policy, trainer_config)
        stream = prompt_stream(config.tasks, config.data_seed)
        run_sync(generator, trainer, stream, config, steps=1)  # warm-up
        progress(f"async: {steps} steps, generator and trainer on {side_threads} thread(s) each")
        runner = AsyncRunner(generator, trainer, stream, config)
        start = time.perf_counter()
        runner.run(steps)
        async_seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(previous_threads)
    return AsyncBenchResult(
        model=policy.name, steps=steps, samples=samples,
        sync_seconds=round(sync_seconds, 3), async_seconds=round(async_seconds, 3),
        sync_samples_per_s=round(samples / sync_seconds, 2), async_samples_per_s=round(samples / async_seconds, 2),
        ratio=round(sync_seconds / async_seconds, 3), sync_threads=sync_threads,
        async_threads_per_side=side_threads, generator_wait_s=round(runner.generator_wait_s, 3),
        sync_seconds_by_threads={t: round(v, 3) for t, v in sync_by_threads.items()},
    )
