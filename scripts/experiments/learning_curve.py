#!/usr/bin/env python3
"""One node, alone, learning on this machine: held-out accuracy per policy version.

Runs the node's own RL path (HF generator thread + decoupled-PPO trainer, async with the
staleness bound) on the bundled tiny policy for --minutes, evaluates greedy held-out accuracy
(seed 0, never trained on) every --eval-every versions, prints it, and writes
docs/results/learning_curve.json and docs/results/learning_curve.png.

    .venv/bin/python scripts/experiments/learning_curve.py            # the README's figures (20 minutes)
    .venv/bin/python scripts/experiments/learning_curve.py --minutes 2 --out /tmp/lc   # a quick look
    .venv/bin/python scripts/experiments/learning_curve.py --device cuda --minutes 3     # learning_curve_cuda.json / .png
    .venv/bin/python scripts/experiments/learning_curve.py --replot docs/results/learning_curve_cuda.json   # PNG from a JSON

Without matplotlib (a bare GPU machine) the JSON is written and the PNG left for --replot.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch

from swarmnode.node.preflight import device_problem
from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import DECODES, HFGenerator
from swarmnode.tasks import DEFAULT_TASKS
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import Trainer, TrainerConfig

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--eval-every", type=int, default=20, help="versions between evaluations")
    p.add_argument("--eval-size", type=int, default=256, help="held-out items per task")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-staleness", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--generator", default="thread", choices=["thread", "process"],
                   help="the generator beside the trainer as a thread or its own process (training.generator)")
    p.add_argument("--decode", default="auto", choices=list(DECODES), help="the generator's decode path (model.decode)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", help="file stem of the JSON and PNG (default: learning_curve, + _<device type> off the CPU)")
    p.add_argument("--replot", type=Path, help="only draw the PNG beside this learning-curve JSON")
    args = p.parse_args(argv)
    if problem := device_problem(args.device):
        p.exit(2, f"error: --device {args.device}: {problem}\n")
    if args.name is None:
        device_type = args.device.split(":")[0]
        args.name = "learning_curve" if device_type == "cpu" else f"learning_curve_{device_type}"
    return args


def plot(points: list[dict], path: Path, title: str, device: str = "2-core CPU") -> bool:
    """The curve as a PNG; False (nothing drawn) where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    minutes = [p["minutes"] for p in points]
    ax.plot(minutes, [100 * p["accuracy"] for p in points], marker="o", label="mean")
    for task in DEFAULT_TASKS:
        ax.plot(minutes, [100 * p["per_task"][task] for p in points], linestyle="--", alpha=0.6, label=task)
    ax.set_xlabel(f"minutes (wall clock, {device})")
    ax.set_ylabel("held-out greedy accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def replot(path: Path) -> int:
    summary = json.loads(path.read_text(encoding="utf-8"))
    initial, final = summary["initial_accuracy"], summary["final_accuracy"]
    device = summary.get("device_name") or "2-core CPU"
    title = f"one node, {summary['model']}: {100 * initial:.1f}% -> {100 * final:.1f}% in {summary['minutes']:.0f} min"
    return 0 if plot(summary["points"], path.with_suffix(".png"), title, device) else 1


def summarize(args, argv, policy, trainer, runner, points: list[dict], minutes: float) -> dict:
    """The run's figures, settings and evaluation points, as written to the JSON."""
    initial, final = points[0]["accuracy"], points[-1]["accuracy"]
    best = max(points, key=lambda p: p["accuracy"])
    device = next(policy.model.parameters()).device
    return {
        "model": args.model,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "2-core CPU",
        "dtype": args.dtype,
        "initial_accuracy": initial,
        "final_accuracy": final,
        "best_accuracy": best["accuracy"],
        "best_version": best["version"],
        "gain_points": round(100 * (final - initial), 2),
        "minutes": round(minutes, 2),
        "versions": trainer.version,
        "generated_tokens_per_s": round(runner.generated_tokens / max(runner.generate_seconds, 1e-9), 1),
        "dropped_stale": runner.buffer.stats.dropped_stale,
        "staleness_histogram": {str(k): v for k, v in sorted(runner.buffer.stats.staleness.items())},
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "command": "python scripts/experiments/learning_curve.py " + " ".join(argv),
        "points": points,
    }


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.replot:
        return replot(args.replot)
    torch.manual_seed(args.seed)
    policy = load_policy(args.model, device=args.device, dtype=args.dtype)
    config = RolloutConfig(
        prompts_per_step=args.prompts, samples_per_prompt=args.samples, max_staleness=args.max_staleness,
        sampling=SamplingParams(temperature=args.temperature, max_new_tokens=8),
    )
    trainer = Trainer(policy.model, policy.tokenizer.pad_token_id, TrainerConfig(lr=args.lr, temperature=args.temperature))
    evaluator = HFGenerator(trainer.model, policy.tokenizer)
    items = heldout_items(config.tasks, args.eval_size)
    if args.generator == "process":
        runner = ProcessAsyncRunner(args.model, trainer, config, exclude=questions_of(items), dtype=args.dtype,
                                    generator_options={"decode": args.decode})
    else:
        generator = HFGenerator(copy.deepcopy(policy.model), policy.tokenizer, decode=args.decode)
        runner = AsyncRunner(generator, trainer, prompt_stream(config.tasks, config.data_seed, exclude=questions_of(items)), config)
    if args.device == "cpu":
        torch.set_num_threads(1)  # generator and trainer threads, one core each
    start = time.perf_counter()
    points: list[dict] = []

    def evaluate() -> None:
        accuracy = greedy_accuracy(evaluator, items)
        point = {"version": trainer.version, "minutes": round((time.perf_counter() - start) / 60, 3),
                 "accuracy": accuracy["mean"], "per_task": {t: accuracy[t] for t in config.tasks}}
        points.append(point)
        per_task = "  ".join(f"{t} {100 * accuracy[t]:5.1f}%" for t in config.tasks)
        print(f"version {trainer.version:4d}  {point['minutes']:6.2f} min  accuracy {100 * accuracy['mean']:5.1f}%  ({per_task})")

    evaluate()

    def on_step(result, dropped) -> None:
        if result.trained and result.version % args.eval_every == 0:
            evaluate()
        if time.perf_counter() - start > args.minutes * 60:
            runner.stop()

    runner.run(None, on_step)
    evaluate()
    minutes = (time.perf_counter() - start) / 60
    summary = summarize(args, argv, policy, trainer, runner, points, minutes)
    initial, final, device_name = summary["initial_accuracy"], summary["final_accuracy"], summary["device_name"]
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, png_path = args.out / f"{args.name}.json", args.out / f"{args.name}.png"
    json_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    drawn = plot(points, png_path, f"one node, {args.model}: {100 * initial:.1f}% -> {100 * final:.1f}% in {minutes:.0f} min",
                 device_name)
    print(f"held-out accuracy {100 * initial:.1f}% -> {100 * final:.1f}% "
          f"({summary['gain_points']:+.1f} points) in {minutes:.1f} min, {trainer.version} versions")
    print(f"wrote {json_path}" + (f" and {png_path}" if drawn else f" (no matplotlib: draw the PNG with --replot {json_path})"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
