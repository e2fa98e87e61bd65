"""`swarmnode bench async`: the same number of samples trained synchronously and asynchronously."""
from __future__ import annotations

import copy
import statistics
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
    repeats: int = 1
    ratio_by_repeat: list[float] | None = None
    device: str = "cpu"
    dtype: str = "float32"
    decode: str = "auto"
    # The generator's completion tokens/s over its batches after the first (which warms up or
    # compiles): alone (the sync runs) and beside the trainer (the async runs of async_mode).
    generator_tokens_per_s_alone: float | None = None
    generator_tokens_per_s_beside: float | None = None
    generator_beside_over_alone: float | None = None
    # Share of the async run's wall time each side waited (async_mode): the generator for
    # the staleness bound, the trainer for groups.
    generator_idle_share: float | None = None
    trainer_idle_share: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Run:
    seconds: float  # the timed steps (all but the first)
    batches: list[tuple[int, float]]  # (completion tokens, wall seconds) of each generated batch, in order
    generator_wait_s: float = 0.0
    idle: dict | None = None


def tokens_per_s(batches: list[tuple[int, float]]) -> float | None:
    """Completion tokens over generation seconds, the first batch left out (warm-up, compile):

        rate = sum(tokens_b) / sum(seconds_b),  b = 2..n   (None with fewer than two batches)
    """
    rest = batches[1:]
    seconds = sum(s for _, s in rest)
    return sum(t for t, _ in rest) / seconds if rest and seconds > 0 else None


def _parts(policy: LoadedPolicy, trainer_config: TrainerConfig, generator_options: dict) -> tuple[HFGenerator, Trainer]:
    torch.manual_seed(0)
    trainer = Trainer(copy.deepcopy(policy.model), policy.tokenizer.pad_token_id, trainer_config)
    return HFGenerator(copy.deepcopy(policy.model), policy.tokenizer, **generator_options), trainer


def _timed_steps(run, steps: int) -> float:
    """Seconds for `steps` steps after a first, untimed one (start-up and warm-up excluded)."""
    marks: list[float] = []
    run(steps + 1, lambda result, dropped: marks.append(time.perf_counter()))
    return marks[-1] - marks[0]


def _time_sync(policy, config, steps, threads, trainer_config, generator_options) -> _Run:
    torch.set_num_threads(threads)
    generator, trainer = _parts(policy, trainer_config, generator_options)
    stream = prompt_stream(config.tasks, config.data_seed)
    batches: list[tuple[int, float]] = []
    timing = lambda tokens, seconds, groups: batches.append((tokens, seconds))  # noqa: E731
    seconds = _timed_steps(lambda n, cb: run_sync(generator, trainer, stream, config, n, cb, on_generate_timing=timing), steps)
    return _Run(seconds, batches)


def _time_async(policy, config, steps, threads, trainer_config, mode, generator_options, load) -> _Run:
    torch.set_num_threads(threads)
    generator, trainer = _parts(policy, trainer_config, generator_options)
    batches: list[tuple[int, float]] = []
    timing = lambda tokens, seconds, groups: batches.append((tokens, seconds))  # noqa: E731
    if mode == "process":
        dtype = str(next(policy.model.parameters()).dtype).removeprefix("torch.")
        runner = ProcessAsyncRunner(policy.name, trainer, config, threads=threads, dtype=dtype, load=load,
                                    generator_options=generator_options, on_generate_timing=timing)
    else:
        runner = AsyncRunner(generator, trainer, prompt_stream(config.tasks, config.data_seed), config,
                             on_generate_timing=timing)
    seconds = _timed_steps(runner.run, steps)
    return _Run(seconds, batches, runner.generator_wait_s, runner.idle_shares())


def bench_async(policy: LoadedPolicy, config: RolloutConfig, steps: int, cores: int,
                trainer_config: TrainerConfig | None = None, progress=lambda msg: None, repeats: int = 1,
                decode: str = "auto", load=None) -> AsyncBenchResult:
    """Time `steps` steps each way from the same weights, prompts and seeds.

    The sync baseline is the faster of running on all `cores` threads and on one thread (small
    models often do not gain from a second thread; on a GPU only all cores). Async runs the generator and the trainer
    side by side with cores // 2 threads each, so together they use the same cores: as two
    threads of one process and with the generator in its own process (no shared GIL; on a GPU
    its own CUDA context); the faster one is reported. The first step of every run is not timed.
    With `repeats` > 1 every run is repeated, interleaved (sync, async, sync, async, ...) so that
    a slow spell of a shared machine hits both sides, and the medians are reported. The
    generator's tokens/s alone comes from the sync runs, beside the trainer from the async runs
    (tokens_per_s). `load`: a picklable callable giving the policy in the generator's process
    (default: load_policy of policy.name on the trainer's device and dtype).
    """
    trainer_config = trainer_config or TrainerConfig()
    generator_options = {"decode": decode}
    samples = steps * config.prompts_per_step * config.samples_per_prompt
    side_threads = max(1, cores // 2)
    previous_threads = torch.get_num_threads()
    sync_runs: dict[int, list[_Run]] = {}
    async_runs: dict[str, list[_Run]] = {}
    ratios: list[float] = []
    # On a GPU the thread count hardly moves the step: one sync run per repeat, on all cores.
    sync_threads_tried = {cores} if next(policy.model.parameters()).is_cuda else {cores, 1}
    try:
        for repeat in range(repeats):
            tag = f" (repeat {repeat + 1}/{repeats})" if repeats > 1 else ""
            for threads in sorted(sync_threads_tried, reverse=True):
                progress(f"sync: {steps} steps on {threads} thread(s){tag}")
                sync_runs.setdefault(threads, []).append(_time_sync(policy, config, steps, threads, trainer_config, generator_options))
            for mode in ("thread", "process"):
                progress(f"async ({mode}): {steps} steps, generator and trainer on {side_threads} thread(s) each{tag}")
                async_runs.setdefault(mode, []).append(
                    _time_async(policy, config, steps, side_threads, trainer_config, mode, generator_options, load))
            ratios.append(min(v[-1].seconds for v in sync_runs.values()) / min(v[-1].seconds for v in async_runs.values()))
    finally:
        torch.set_num_threads(previous_threads)

    return _summarise(policy, steps, samples, side_threads, repeats, ratios, decode, sync_runs, async_runs)


def _median(runs: list[_Run], value) -> float | None:
    """The median of value(run) over the runs where it is known (None: known in none)."""
    values = [v for v in map(value, runs) if v is not None]
    return statistics.median(values) if values else None


def _rounded(x: float | None, digits: int = 1) -> float | None:
    return None if x is None else round(x, digits)


def _summarise(policy, steps: int, samples: int, side_threads: int, repeats: int, ratios: list[float], decode: str,
               sync_runs: dict[int, list[_Run]], async_runs: dict[str, list[_Run]]) -> AsyncBenchResult:
    """The medians of each arm; the faster sync thread count and async mode are the ones reported."""
    sync_by_threads = {t: _median(v, lambda r: r.seconds) for t, v in sync_runs.items()}
    async_by_mode = {m: _median(v, lambda r: r.seconds) for m, v in async_runs.items()}
    sync_threads, sync_seconds = min(sync_by_threads.items(), key=lambda kv: kv[1])
    async_mode, async_seconds = min(async_by_mode.items(), key=lambda kv: kv[1])
    chosen = async_runs[async_mode]
    alone = _median(sync_runs[sync_threads], lambda r: tokens_per_s(r.batches))
    beside = _median(chosen, lambda r: tokens_per_s(r.batches))
    parameter = next(policy.model.parameters())
    return AsyncBenchResult(
        model=policy.name, steps=steps, samples=samples,
        sync_seconds=round(sync_seconds, 3), async_seconds=round(async_seconds, 3),
        sync_samples_per_s=round(samples / sync_seconds, 2), async_samples_per_s=round(samples / async_seconds, 2),
        ratio=round(sync_seconds / async_seconds, 3), sync_threads=sync_threads,
        async_threads_per_side=side_threads, async_mode=async_mode,
        generator_wait_s=round(_median(chosen, lambda r: r.generator_wait_s), 3),
        sync_seconds_by_threads={t: round(v, 3) for t, v in sync_by_threads.items()},
        async_seconds_by_mode={m: round(v, 3) for m, v in async_by_mode.items()},
        repeats=repeats, ratio_by_repeat=[round(r, 3) for r in ratios],
        device=str(parameter.device), dtype=str(parameter.dtype).removeprefix("torch."), decode=decode,
        generator_tokens_per_s_alone=_rounded(alone), generator_tokens_per_s_beside=_rounded(beside),
        generator_beside_over_alone=_rounded(beside / alone, 3) if alone and beside else None,
        generator_idle_share=_rounded(_median(chosen, lambda r: r.idle["generator_idle_share"]), 4),
        trainer_idle_share=_rounded(_median(chosen, lambda r: r.idle["trainer_idle_share"]), 4),
    )


# Random-init model shapes for benchmarks on a GPU (the bundled tokenizer's vocabulary).
MODEL_SHAPES = {
    # Qwen2.5-0.5B's shape: 358M parameters with the bundled 258-token vocabulary.
    "0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
             "num_key_value_heads": 2, "max_position_embeddings": 32768, "rope_theta": 1_000_000.0,
             "tie_word_embeddings": True},
}


def shaped_policy(shape: str, device: str = "cpu", dtype: str = "float32") -> LoadedPolicy:
    """A randomly initialised Qwen2 of MODEL_SHAPES[shape] with the bundled tokenizer (seed 0)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from swarmnode.policy.loading import BUNDLED_TINY, load_policy

    tokenizer = load_policy(BUNDLED_TINY).tokenizer
    config = Qwen2Config(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.eos_token_id, **MODEL_SHAPES[shape])
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(getattr(torch, dtype)).eval()
    return LoadedPolicy(f"random:{shape}", model, tokenizer, fingerprint="")


def logprob_gap(policy: LoadedPolicy, prompts: list[str], samples: int, params, fp32_logits: bool = False,
                chunking: str = "auto", decode: str = "auto") -> dict[str, float]:
    """|generator's behaviour log-prob - trainer's log-prob| over the sampled tokens, same weights:

        gap_t = |behavior_logp_t - logp_t|   (max, mean and 99th percentile over all tokens)

    The generator samples with the hf backend; the trainer's forward scores the same tokens.
    In float32 the two agree to ~1e-5; in bf16 they differ by how the two computations round.
    """
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup, collate
    from swarmnode.trainer.forward import completion_logprobs, resolve_chunking

    model = copy.deepcopy(policy.model)  # the generator patches its model's head when fp32_logits is set
    generator = HFGenerator(model, policy.tokenizer, fp32_logits=fp32_logits, decode=decode)
    generations = generator.generate(prompts, samples, params)
    groups = [ScoredGroup(ref=TaskRef("sum2", 0, i), prompt_token_ids=g.prompt_token_ids,
                          completion_token_ids=[c.token_ids for c in g.completions],
                          behavior_logprobs=[c.logprobs for c in g.completions], rewards=[0.0] * samples, policy_version=0)
              for i, g in enumerate(generations)]
    batch = collate(groups, policy.tokenizer.pad_token_id).to(generator.device)
    with torch.no_grad():
        logp = completion_logprobs(model, batch, params.temperature, chunking=resolve_chunking(chunking, generator.device))
    gaps = (batch.behavior_logp - logp).abs()[batch.completion_mask.bool()].float()
    return {"max": float(gaps.max()), "mean": float(gaps.mean()), "p99": float(torch.quantile(gaps, 0.99)),
            "tokens": int(gaps.numel())}
