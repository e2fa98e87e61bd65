"""`swarmnode bench async`: synchronous against asynchronous training speed on this machine."""
from __future__ import annotations

import json
import os

import typer
from rich.console import Console

from swarmnode.cli.help import HelpCommand, HelpGroup
from swarmnode.cli.start import fail

bench_app = typer.Typer(help="Measure this machine.", no_args_is_help=True, cls=HelpGroup)


@bench_app.command("async", cls=HelpCommand)
def bench_async_command(
    model: str = typer.Option("bundled:tiny-policy", "--model", help="hub id, local path or bundled:<name>"),
    steps: int = typer.Option(30, "--steps", min=1, help="training steps timed each way"),
    prompts: int = typer.Option(32, "--prompts", min=1, help="prompts per step"),
    samples: int = typer.Option(8, "--samples", min=1, help="samples per prompt"),
    max_staleness: int = typer.Option(1, "--max-staleness", min=1, help="async staleness bound (eta)"),
    cores: int = typer.Option(os.cpu_count() or 2, "--cores", min=1, help="CPU threads to use"),
    repeats: int = typer.Option(3, "--repeats", min=1, help="repeat every run, interleaved, and report medians"),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:0, ..."),
    dtype: str = typer.Option("float32", "--dtype", help="float32, bfloat16 or float16"),
    model_shape: str | None = typer.Option(None, "--model-shape", help="a randomly initialised model of this shape "
                                           "instead of --model (0.5b: Qwen2.5-0.5B's)"),
    decode: str = typer.Option("auto", "--decode", help="the generator's decode path (model.decode)"),
    max_new_tokens: int = typer.Option(8, "--max-new-tokens", min=1, help="tokens sampled per completion at most"),
    as_json: bool = typer.Option(False, "--json", help="last line: one JSON object with the figures"),
) -> None:
    """Compare synchronous and asynchronous training speed.

    Trains the same number of samples both ways; prints samples/s and the ratio, the
    generator's tokens/s alone and beside the trainer, and each side's idle share.
    """
    import functools

    from swarmnode.policy import PolicyLoadError, SamplingParams, load_policy
    from swarmnode.trainer.bench import bench_async, shaped_policy
    from swarmnode.trainer.loop import RolloutConfig

    if problem := _bench_flag_problem(device, dtype, model_shape, decode):
        fail(problem)
    load = None
    try:
        if model_shape is not None:
            load = functools.partial(shaped_policy, model_shape, device, dtype)  # the generator process builds the same
            policy = load()
        else:
            policy = load_policy(model, device=device, dtype=dtype)
    except PolicyLoadError as e:
        fail(str(e))
    config = RolloutConfig(prompts_per_step=prompts, samples_per_prompt=samples, max_staleness=max_staleness,
                           sampling=SamplingParams(temperature=1.0, max_new_tokens=max_new_tokens))
    console = Console(stderr=as_json)
    result = bench_async(policy, config, steps, cores, progress=lambda m: console.print(f"[dim]{m}[/dim]"), repeats=repeats,
                         decode=decode, load=load)
    _print_async_result(console, result)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))


def _bench_flag_problem(device: str, dtype: str, model_shape: str | None, decode: str) -> str | None:
    """The first bad flag of `bench async`, as one line, or None."""
    from swarmnode.node.preflight import device_problem
    from swarmnode.policy.hf_backend import DECODES
    from swarmnode.trainer.bench import MODEL_SHAPES

    torch_dtypes = ("float32", "bfloat16", "float16")
    if dtype not in torch_dtypes:
        return f"--dtype {dtype}: expected one of {', '.join(torch_dtypes)}"
    if decode not in DECODES:
        return f"--decode {decode}: expected one of {', '.join(DECODES)}"
    if model_shape is not None and model_shape not in MODEL_SHAPES:
        return f"--model-shape {model_shape}: expected one of {', '.join(MODEL_SHAPES)}"
    if problem := device_problem(device):
        return f"--device {device}: {problem}"
    return None


def _print_async_result(console: Console, result) -> None:
    """`bench async`'s figures for people: both rates, their ratio, the generator's speeds, idle shares."""
    def tried(seconds_by: dict) -> str:
        return ", ".join(f"{key} {seconds:.1f}s" for key, seconds in seconds_by.items())

    console.print(f"sync : {result.sync_samples_per_s:8.1f} samples/s ({result.samples} samples in "
                  f"{result.sync_seconds:.1f}s, {result.sync_threads} threads)")
    console.print(f"       threads tried: {tried(result.sync_seconds_by_threads)}")
    console.print(f"async: {result.async_samples_per_s:8.1f} samples/s ({result.samples} samples in "
                  f"{result.async_seconds:.1f}s, generator as a {result.async_mode})")
    console.print(f"       generator tried as a {tried(result.async_seconds_by_mode)}; "
                  f"it waited {result.generator_wait_s:.1f}s")
    repeats = result.repeats
    per_repeat = f" (per repeat: {', '.join(f'{r:.2f}x' for r in result.ratio_by_repeat)})" if repeats > 1 else ""
    console.print(f"async/sync ratio: {result.ratio:.2f}x{per_repeat}" + (" (medians)" if repeats > 1 else ""))
    rate = lambda x: "-" if x is None else f"{x:,.0f}"  # noqa: E731
    share = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
    console.print(f"generator: {rate(result.generator_tokens_per_s_alone)} tokens/s alone, "
                  f"{rate(result.generator_tokens_per_s_beside)} beside the trainer"
                  + (f" ({result.generator_beside_over_alone:.2f}x)" if result.generator_beside_over_alone else ""))
    console.print(f"idle (async): generator {share(result.generator_idle_share)}, trainer {share(result.trainer_idle_share)}"
                  f" ({result.device}, {result.dtype}, decode {result.decode})")
