#!/usr/bin/env python3
"""Each node's speed in a mixed swarm, from the summary.json `swarmnode swarm local` writes:
steps/s, samples/s and tokens/s per node, and the GPU nodes' against the CPU nodes' mean.

    swarmnode swarm local --nodes 3 --devices cuda,cpu --config configs/local-train.yaml \\
        --duration 180 --root runs/mixed
    python scripts/gpu/swarm_rates.py runs/mixed/summary.json [--json out.json]

The figures are each node's own last status (training.seconds_per_step and the speeds the
node measures over its recent steps; steps over uptime for the whole run), so they are read
the way `swarmnode status` shows them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

FIGURES = ("steps_per_s", "train_samples_per_s", "generate_tokens_per_s", "train_tokens_per_s")


def node_rates(row: dict) -> dict | None:
    """One node's device and speeds from its status row (None for a node that did not answer):

        steps_per_s = 1 / seconds_per_step        run_steps_per_s = steps / uptime_s
    """
    training = row.get("training") or {}
    if "error" in row or not training.get("steps"):
        return None
    memory = training.get("gpu_memory") or {}
    seconds_per_step = training.get("seconds_per_step")
    return {
        "name": row.get("name"),
        "device": memory.get("device") or "cpu",
        "steps": training["steps"],
        "steps_per_s": round(1.0 / seconds_per_step, 3) if seconds_per_step else None,
        "run_steps_per_s": round(training["steps"] / row["uptime_s"], 3) if row.get("uptime_s") else None,
        "train_samples_per_s": training.get("train_samples_per_s"),
        "generate_tokens_per_s": training.get("generate_tokens_per_s"),
        "train_tokens_per_s": training.get("train_tokens_per_s"),
        "groups_generated": training.get("groups_generated"),
        "external_trained": training.get("external_trained"),
        "heldout_accuracy": training.get("heldout_accuracy"),
        "gpu_peak_bytes": memory.get("peak_bytes"),
    }


def gpu_over_cpu(nodes: list[dict]) -> dict[str, float | None]:
    """Each figure's mean over the GPU nodes divided by its mean over the CPU nodes (None
    where either side has no value)."""
    def mean(on_gpu: bool, figure: str) -> float | None:
        values = [n[figure] for n in nodes if (n["device"] != "cpu") == on_gpu and n[figure]]
        return statistics.fmean(values) if values else None

    ratios = {}
    for figure in FIGURES:
        gpu, cpu = mean(True, figure), mean(False, figure)
        ratios[figure] = round(gpu / cpu, 2) if gpu and cpu else None
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("summary", type=Path, help="<root>/summary.json of `swarmnode swarm local`")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    try:
        rows = json.loads(args.summary.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"error: {args.summary}: {e}", file=sys.stderr)
        return 2
    rated = [(row, node_rates(row)) for row in rows]
    nodes = [n for _, n in rated if n is not None]
    silent = [row.get("name") for row, n in rated if n is None]
    print(f"{'node':7} {'device':7} {'steps':>6} {'steps/s':>8} {'samples/s':>10} {'gen tok/s':>10} {'groups':>7}")
    for n in nodes:
        print(f"{n['name']:7} {n['device']:7} {n['steps']:>6} {n['steps_per_s'] or 0:>8.2f} "
              f"{n['train_samples_per_s'] or 0:>10,.0f} {n['generate_tokens_per_s'] or 0:>10,.0f} {n['groups_generated'] or 0:>7}")
    ratios = gpu_over_cpu(nodes)
    print("gpu / cpu: " + ", ".join(f"{k} {v}x" for k, v in ratios.items() if v is not None))
    if silent:
        print("no training figures from: " + ", ".join(map(str, silent)))
    if args.json:
        args.json.write_text(json.dumps({"nodes": nodes, "gpu_over_cpu": ratios, "silent": silent}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
