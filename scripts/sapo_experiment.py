#!/usr/bin/env python3
"""SAPO at tiny scale: the same local swarm under 8/0, 6/2, 4/4 and 2/6 local/external splits.

For every seed and split it starts N real `swarmnode run` daemons on 127.0.0.1 (configs/
local-train.yaml, each node with its own questions: data_seed + 1000 * node), lets every node
train R steps ("rounds") with I local and J external groups per step, stops them, and reads
each node's metrics.sqlite. Cumulative reward, as in the paper (arXiv 2509.08721), is the sum
over rounds of the mean reward of the node's own (local) rollouts.

    .venv/bin/python scripts/sapo_experiment.py --nodes 4 --rounds 200 --seeds 0 1

Writes docs/results/sapo.json and docs/results/sapo.png (reward per round), and prints the
table against the paper's figures.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from swarmnode.cli.render import swarm_table
from swarmnode.config import load_config
from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalSwarm

ROOT = Path(__file__).resolve().parent.parent
PAPER = {"8/0": 561.79, "6/2": 854.43, "4/4": 1093.31, "2/6": 945.87}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rounds", type=int, default=200, help="training steps per node")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--splits", default="8/0,6/2,4/4,2/6", help="local/external groups per step")
    p.add_argument("--selection", default="uniform", help="external selection policy (uniform is the paper's)")
    p.add_argument("--positive-only", action="store_true", help="training.external_positive_only: learn only from peers' successes")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "sapo")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", default="sapo", help="results go to <out>/<name>.json and <name>.png")
    p.add_argument("--replot", action="store_true", help="only redraw <name>.png from <name>.json")
    return p.parse_args(argv)


def split_config(base: dict, local: int, external: int, selection: str, positive_only: bool = False) -> dict:
    cfg = json.loads(json.dumps(base))
    t = cfg.setdefault("training", {})
    t.update(local_rollouts=local, external_rollouts=external, external_selection=selection,
             external_wait_s=2.0 if external else 0.0, eval_every=100_000, checkpoint_every=100_000,
             external_positive_only=positive_only)
    return cfg


def local_rewards(metrics_path: Path) -> list[float]:
    """Mean reward of the node's own rollouts, per training step, in step order."""
    with sqlite3.connect(str(metrics_path)) as conn:
        rows = conn.execute(
            "SELECT s.value, r.value FROM metrics s JOIN metrics r ON s.version = r.version AND s.time = r.time "
            "WHERE s.name = 'step' AND r.name = 'local_reward_mean' ORDER BY s.value"
        ).fetchall()
    return [reward for _, reward in rows]


def node_memory_mib(runtime: dict) -> float | None:
    """RSS of the node process plus its p2pd, MiB (Linux)."""
    total = 0
    for pid in [runtime.get("pid")] + [c.get("pid") for c in runtime.get("children", [])]:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            return None
    return total / 1024


def run_one(args, base: dict, split: str, seed: int, console: Console) -> dict:
    local, external = (int(x) for x in split.split("/"))
    root = args.root / args.name / f"seed{seed}" / split.replace("/", "-")
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(split_config(base, local, external, args.selection, args.positive_only)), encoding="utf-8")
    node_config = load_config(config_path, environ={})
    data_seed = node_config.training.data_seed + 100_000 * seed

    def node_env(index: int) -> dict[str, str]:
        return {"SWARMNODE__TRAINING__DATA_SEED": str(data_seed + 1000 * index),
                "SWARMNODE__TRAINING__MAX_STEPS": str(args.rounds)}

    swarm = LocalSwarm(root, args.nodes, config_path, node_env=node_env)
    started = time.monotonic()
    memory: list[float | None] = []
    with swarm:
        swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
        caption = f"seed {seed}, split {split} (I={local}, J={external}), {args.rounds} rounds"
        rows = swarm.poll()
        with Live(swarm_table(rows, caption), console=console, refresh_per_second=1) as live:
            while not swarm.training_done(rows):
                time.sleep(2.0)
                rows = swarm.poll()
                live.update(swarm_table(rows, caption))
        memory = [node_memory_mib(read_runtime(n.home)) for n in swarm.nodes]
    per_node = [local_rewards(n.home.root / "metrics.sqlite") for n in swarm.nodes]
    failed = [r["name"] for r in rows if str((r.get("training") or {}).get("phase", "")).startswith("failed")]
    if failed:
        raise SystemExit(f"{', '.join(failed)} failed; see the logs under {root}")
    gossip = [r.get("rollouts") or {} for r in rows]
    return {
        "split": split, "seed": seed, "seconds": round(time.monotonic() - started, 1),
        "per_node_rewards": per_node,
        "per_node_cumulative": [round(sum(r), 3) for r in per_node],
        "heldout_accuracy": [(r.get("training") or {}).get("heldout_accuracy") for r in rows],
        "bytes_per_batch": [g.get("bytes_per_batch") for g in gossip],
        "latency_p50_s": [g.get("latency_p50_s") for g in gossip],
        "latency_p99_s": [g.get("latency_p99_s") for g in gossip],
        "gossip_time_share": [g.get("gossip_time_share") for g in gossip],
        "groups_accepted": [g.get("groups_accepted") for g in gossip],
        "groups_rejected": [g.get("groups_rejected") for g in gossip],
        "memory_mib": memory,
    }


def summarise(runs: list[dict], splits: list[str], seeds: list[int], args) -> dict:
    out: dict = {"command": "scripts/sapo_experiment.py " + " ".join(sys.argv[1:]), "nodes": args.nodes,
                 "rounds": args.rounds, "selection": args.selection, "external_positive_only": args.positive_only, "paper_cumulative_reward": PAPER, "configs": {}}
    for split in splits:
        mine = [r for r in runs if r["split"] == split]
        by_seed = [statistics.mean(r["per_node_cumulative"]) for r in mine]
        flat = lambda key: [x for r in mine for x in r[key] if x is not None]  # noqa: E731
        curves = [rewards for r in mine for rewards in r["per_node_rewards"]]
        length = min(len(c) for c in curves)
        out["configs"][split] = {
            "cumulative_reward": round(statistics.mean(by_seed), 3),
            "cumulative_reward_by_seed": [round(x, 3) for x in by_seed],
            "cumulative_reward_std_over_seeds": round(statistics.stdev(by_seed), 3) if len(by_seed) > 1 else 0.0,
            "cumulative_reward_by_node": [r["per_node_cumulative"] for r in mine],
            "seeds": seeds,
            "final_heldout_accuracy_mean": round(statistics.mean(flat("heldout_accuracy")), 4) if flat("heldout_accuracy") else None,
            "reward_per_round": [round(statistics.mean(c[i] for c in curves), 4) for i in range(length)],
            "bytes_per_batch_mean": round(statistics.mean(flat("bytes_per_batch")), 1) if flat("bytes_per_batch") else None,
            "latency_p50_s_mean": round(statistics.mean(flat("latency_p50_s")), 3) if flat("latency_p50_s") else None,
            "latency_p99_s_max": round(max(flat("latency_p99_s")), 3) if flat("latency_p99_s") else None,
            "gossip_time_share_mean": round(statistics.mean(flat("gossip_time_share")), 4) if flat("gossip_time_share") else None,
            "groups_rejected": sum(flat("groups_rejected")),
            "memory_mib_mean": round(statistics.mean(flat("memory_mib")), 1) if flat("memory_mib") else None,
            "seconds": [r["seconds"] for r in mine],
        }
    base = out["configs"].get("8/0", {}).get("cumulative_reward")
    for split, c in out["configs"].items():
        c["vs_8_0"] = round(c["cumulative_reward"] / base, 3) if base else None
        c["paper_vs_8_0"] = round(PAPER[split] / PAPER["8/0"], 3) if split in PAPER else None
    return out


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for split, c in summary["configs"].items():
        curve = c["reward_per_round"]
        window = 10
        smooth = [sum(curve[max(0, i - window + 1): i + 1]) / len(curve[max(0, i - window + 1): i + 1]) for i in range(len(curve))]
        ax.plot(range(1, len(curve) + 1), smooth, label=f"{split} (cumulative {c['cumulative_reward']:.1f})")
    ax.set_xlabel("round (training step)")
    ax.set_ylabel("mean reward of own rollouts (10-round average)")
    seeds = summary["configs"][next(iter(summary["configs"]))]["seeds"]
    variant = "peers' positive samples only" if summary.get("external_positive_only") else "every peer sample (paper)"
    ax.set_title(f"SAPO splits, {summary['nodes']} nodes, seeds {seeds}, {summary['selection']}, {variant}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console()
    if args.replot:
        plot(json.loads((args.out / f"{args.name}.json").read_text(encoding="utf-8")), args.out / f"{args.name}.png")
        return 0
    base = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    splits = [s.strip() for s in args.splits.split(",")]
    runs = []
    for seed in args.seeds:
        for split in splits:
            console.print(f"[bold]seed {seed}, split {split}[/bold]")
            runs.append(run_one(args, base, split, seed, console))
            console.print(f"  cumulative reward per node: {runs[-1]['per_node_cumulative']} ({runs[-1]['seconds']} s)")
    summary = summarise(runs, splits, args.seeds, args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    plot(summary, args.out / f"{args.name}.png")
    table = Table(title=f"cumulative reward over {args.rounds} rounds, mean over {args.nodes} nodes")
    for col in ("split", "ours (mean)", "by seed", "std", "vs 8/0", "paper", "paper vs 8/0", "gossip CPU", "B/batch"):
        table.add_column(col, justify="right")
    for split, c in summary["configs"].items():
        table.add_row(split, f"{c['cumulative_reward']:.2f}", ", ".join(f"{x:.1f}" for x in c["cumulative_reward_by_seed"]),
                      f"{c['cumulative_reward_std_over_seeds']:.2f}", f"{c['vs_8_0']:.2f}x" if c["vs_8_0"] else "-",
                      f"{PAPER.get(split, 0):.2f}", f"{c['paper_vs_8_0']:.2f}x" if c["paper_vs_8_0"] else "-",
                      f"{100 * c['gossip_time_share_mean']:.2f}%" if c["gossip_time_share_mean"] is not None else "-",
                      f"{c['bytes_per_batch_mean']:.0f}" if c["bytes_per_batch_mean"] else "-")
    console.print(table)
    console.print(f"wrote {args.out / (args.name + '.json')} and {args.out / (args.name + '.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
