#!/usr/bin/env python3
"""One node, alone, learning on this machine: held-out accuracy per policy version.

Runs the node's own RL path (HF generator thread + decoupled-PPO trainer, async with the
staleness bound) on the bundled tiny policy for --minutes, evaluates greedy held-out accuracy
(seed 0, never trained on) every --eval-every versions, prints it, and writes
docs/results/learning_curve.json and docs/results/learning_curve.png.

    .venv/bin/python scripts/learning_curve.py            # the README's figures (20 minutes)
    .venv/bin/python scripts/learning_curve.py --minutes 2 --out /tmp/lc   # a quick look
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch
from rich.console import Console

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.tasks import DEFAULT_TASKS
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream
from swarmnode.trainer.trainer import Trainer, TrainerConfig

ROOT = Path(__file__).resolve().parent.parent


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
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    return p.parse_args(argv)


def plot(points: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    minutes = [p["minutes"] for p in points]
    ax.plot(minutes, [100 * p["accuracy"] for p in points], marker="o", label="mean")
    for task in DEFAULT_TASKS:
        ax.plot(minutes, [100 * p["per_task"][task] for p in points], linestyle="--", alpha=0.6, label=task)
    ax.set_xlabel("minutes (wall clock, 2-core CPU)")
    ax.set_ylabel("held-out greedy accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console()
    torch.manual_seed(args.seed)
    policy = load_policy(args.model)
    config = RolloutConfig(
        prompts_per_step=args.prompts, samples_per_prompt=args.samples, max_staleness=args.max_staleness,
        sampling=SamplingParams(temperature=args.temperature, max_new_tokens=8),
    )
    trainer = Trainer(policy.model, policy.tokenizer.pad_token_id, TrainerConfig(lr=args.lr, temperature=args.temperature))
    generator = HFGenerator(copy.deepcopy(policy.model), policy.tokenizer)
    evaluator = HFGenerator(trainer.model, policy.tokenizer)
    items = heldout_items(config.tasks, args.eval_size)
    stream = prompt_stream(config.tasks, config.data_seed, exclude=questions_of(items))
    runner = AsyncRunner(generator, trainer, stream, config)
    torch.set_num_threads(1)  # generator and trainer threads, one core each
    start = time.perf_counter()
    points: list[dict] = []

    def evaluate() -> None:
        accuracy = greedy_accuracy(evaluator, items)
        point = {"version": trainer.version, "minutes": round((time.perf_counter() - start) / 60, 3),
                 "accuracy": accuracy["mean"], "per_task": {t: accuracy[t] for t in config.tasks}}
        points.append(point)
        per_task = "  ".join(f"{t} {100 * accuracy[t]:5.1f}%" for t in config.tasks)
        console.print(f"version {trainer.version:4d}  {point['minutes']:6.2f} min  accuracy {100 * accuracy['mean']:5.1f}%  ({per_task})")

    evaluate()

    def on_step(result, dropped) -> None:
        if result.trained and result.version % args.eval_every == 0:
            evaluate()
        if time.perf_counter() - start > args.minutes * 60:
            runner.stop()

    runner.run(None, on_step)
    evaluate()
    minutes = (time.perf_counter() - start) / 60
    initial, final = points[0]["accuracy"], points[-1]["accuracy"]
    best = max(points, key=lambda p: p["accuracy"])
    summary = {
        "model": args.model,
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
        "command": "python scripts/learning_curve.py " + " ".join(argv),
        "points": points,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning_curve.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    plot(points, args.out / "learning_curve.png",
         f"one node, {args.model}: {100 * initial:.1f}% -> {100 * final:.1f}% in {minutes:.0f} min")
    console.print(f"held-out accuracy {100 * initial:.1f}% -> {100 * final:.1f}% "
                  f"({summary['gain_points']:+.1f} points) in {minutes:.1f} min, {trainer.version} versions")
    console.print(f"wrote {args.out / 'learning_curve.json'} and {args.out / 'learning_curve.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
