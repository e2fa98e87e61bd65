#!/usr/bin/env python3
"""Gradient summaries against a lone node and against independent nodes (issue 11).

For every seed and arm it starts real `swarmnode run` daemons on 127.0.0.1 (configs/
local-train.yaml as the base; node i draws its own questions, data_seed + 100000 * seed +
1000 * i, the same in every arm, so the lone node's stream is node 0's), lets every node take
--steps local optimizer steps, reads the final status documents, stops the swarm, and reads
each node's held-out accuracy (metrics.sqlite, every --eval-every versions, version 0 and the
end included, the same --eval-size items per task on every node). Arms:

  lone                 one node; summaries on but no peer, so it trains as plain
  independent          N nodes, no rollout sharing, summaries off
  summaries            N nodes with gradient summaries, no rollout sharing
  summaries+rollouts   N nodes with summaries and SAPO rollout sharing (half local, half external)

    .venv/bin/python scripts/experiments/summary_experiment.py --steps 600 --seeds 0 1
    .venv/bin/python scripts/experiments/summary_experiment.py --set summaries.outer_lr=1.5 --name summaries-lr1.5

Writes <out>/<name>.json and <out>/<name>.png (held-out accuracy against local steps) and prints
the table. Target: the lone node's final accuracy (mean of its last 3 evaluations); steps to
target: the first evaluation whose 3-evaluation trailing mean reaches it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml
from rich import box
from rich.console import Console
from rich.table import Table

from swarmnode.config import load_config
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.experiments.figures import WINDOW, arm_curve, last_mean, spread
from swarmnode.testing.experiments.local_runs import (
    apply_overrides,
    fresh_home,
    kept_runs,
    parse_overrides,
    read_curve,
    wait_until_trained,
    write_results,
)

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("lone", "independent", "summaries", "summaries+rollouts")
SEED_STRIDE, NODE_STRIDE = 100_000, 1000
SUMMARY_KEYS = ("sent", "merged", "fetched", "rejected", "bytes_per_summary", "dense_bytes", "compression_ratio",
                "outer_steps", "merge_seconds", "merge_cpu_seconds", "skipped", "down_weighted", "clipped", "harmful")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=600, help="local optimizer steps per node (training.max_steps)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated, of " + ", ".join(ARMS))
    p.add_argument("--nodes", type=int, default=4, help="nodes of every arm but lone")
    p.add_argument("--prompts", type=int, default=8, help="groups per step (summaries+rollouts: half local, half external)")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-size", type=int, default=256, help="held-out items per task")
    p.add_argument("--tasks", default="sum2,sum3")
    p.add_argument("--lr", type=float, default=None, help="training.lr (default: the config's)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="config override for every arm, e.g. summaries.outer_lr=1.5 (repeatable)")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "summaries")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", default="summaries", help="results go to <out>/<name>.json and <name>.png")
    p.add_argument("--replot", action="store_true", help="only redraw <name>.png (and the table) from <name>.json")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already finished under <root>/<name>/runs.json (same settings) and do the rest")
    args = p.parse_args(argv)
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = set(args.arms) - set(ARMS)
    if unknown:
        p.error(f"unknown arms {sorted(unknown)}; pick from {', '.join(ARMS)}")
    return args


def arm_config(base: dict, arm: str, args: argparse.Namespace) -> dict:
    """The config every node of `arm` runs (pure: `base` is not changed)."""
    cfg = json.loads(json.dumps(base))
    t, r, s = (cfg.setdefault(k, {}) for k in ("training", "rollouts", "summaries"))
    t.update(max_steps=args.steps, eval_every=args.eval_every, eval_size=args.eval_size, threads=1,
             tasks=[x.strip() for x in args.tasks.split(",")], checkpoint_every=1_000_000,
             local_rollouts=args.prompts, external_rollouts=0, external_wait_s=0.0)
    t.setdefault("data_seed", 1000)
    if args.lr is not None:
        t["lr"] = args.lr
    r["share"] = arm == "summaries+rollouts"
    s["enabled"] = arm != "independent"
    if arm == "summaries+rollouts":
        t.update(local_rollouts=args.prompts // 2, external_rollouts=args.prompts // 2, external_wait_s=2.0)
    return apply_overrides(cfg, args.set)


def arm_nodes(arm: str, args: argparse.Namespace) -> int:
    return 1 if arm == "lone" else args.nodes


def node_data_seeds(cfg: dict, seed: int, nodes: int) -> list[int]:
    """Node i's question stream, the same for node i of every arm."""
    base = cfg["training"]["data_seed"] + SEED_STRIDE * seed
    return [base + NODE_STRIDE * i for i in range(nodes)]


def node_record(index: int, data_seed: int, status: dict, home_root: Path) -> dict:
    curve, (first, last) = read_curve(home_root / "metrics.sqlite")
    seconds = last - first
    summaries = {k: (status.get("summaries") or {}).get(k) for k in SUMMARY_KEYS}
    rollouts = status.get("rollouts") or {}
    return {
        "node": index, "data_seed": data_seed, "steps": (status.get("training") or {}).get("steps"),
        "policy_version": (status.get("training") or {}).get("policy_version"),
        "curve": curve, "initial_accuracy": curve[0][1] if curve else None,
        "final_accuracy": last_mean(curve), "final_accuracy_last_eval": curve[-1][1] if curve else None,
        "wall_s": round(seconds, 1), "train_start": first, "uptime_s": status.get("uptime_s"), "summaries": summaries,
        # Merge work: CPU seconds of compressing, checking and merging over the node's wall time;
        # the wall-clock seconds inside that work also count waiting for one of the 2 shared cores.
        "merge_share": round((summaries["merge_cpu_seconds"] or 0.0) / seconds, 5) if seconds else None,
        "merge_wall_share": round((summaries["merge_seconds"] or 0.0) / seconds, 5) if seconds else None,
        "groups_accepted": rollouts.get("groups_accepted"), "groups_rejected": rollouts.get("groups_rejected"),
    }


def run_one(args, base: dict, arm: str, seed: int, console: Console) -> dict:
    root = fresh_home(args.root / args.name / f"seed{seed}" / arm)
    cfg = arm_config(base, arm, args)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    seeds = node_data_seeds(cfg, seed, arm_nodes(arm, args))
    swarm = LocalSwarm(root, len(seeds), config_path,
                       node_env=lambda i: {"SWARMNODE__TRAINING__DATA_SEED": str(seeds[i])})
    started = time.monotonic()
    with swarm:
        swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
        rows = wait_until_trained(swarm, args.steps, f"seed {seed}, {arm}, {args.steps} steps", console)
    nodes = [node_record(i, seeds[i], rows[i], swarm.nodes[i].home.root) for i in range(len(seeds))]
    t0 = min(n["train_start"] for n in nodes)
    for n in nodes:  # nodes start one after another: how long after the first each began training
        n["train_start_offset_s"] = round(n.pop("train_start") - t0, 1)
    return {"arm": arm, "seed": seed, "seconds": round(time.monotonic() - started, 1), "nodes": nodes}


# -- summary ------------------------------------------------------------------------------------

def steps_to_target(curve: list[list[float]], target: float | None) -> int | None:
    """The first evaluated step whose trailing WINDOW-evaluation mean is >= target."""
    if target is None:
        return None
    for i in range(WINDOW - 1, len(curve)):
        if round(statistics.mean(a for _, a in curve[i - WINDOW + 1: i + 1]), 4) >= target:  # as last_mean rounds
            return int(curve[i][0])
    return None


def mean_of(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.mean(values), 4) if values else None


def summarise_arm(runs: list[dict], targets: dict[int, float], args) -> dict:
    reached, never = [], []
    for r in runs:
        for n in r["nodes"]:
            n["steps_to_target"] = steps_to_target(n["curve"], targets.get(r["seed"]))
            if r["seed"] not in targets:
                continue
            reached.append(args.steps if n["steps_to_target"] is None else n["steps_to_target"])
            if n["steps_to_target"] is None:
                never.append(f"seed{r['seed']}/node{n['node']}")
    nodes = [n for r in runs for n in r["nodes"]]
    summ = lambda key: [n["summaries"][key] for n in nodes]
    return {
        "steps_to_target_mean": round(statistics.mean(reached), 1) if reached else None,
        "never_reached_target": never,
        "final_accuracy": spread([statistics.mean(n["final_accuracy"] for n in r["nodes"]) for r in runs]),
        "initial_accuracy_mean": mean_of([n["initial_accuracy"] for n in nodes]),
        "gain_points_by_seed": [round(100 * statistics.mean(n["final_accuracy"] - n["initial_accuracy"]
                                                            for n in r["nodes"]), 2) for r in runs],
        "merged_per_node": mean_of(summ("merged")), "sent_per_node": mean_of(summ("sent")),
        "bytes_per_summary": mean_of(summ("bytes_per_summary")), "dense_bytes": mean_of(summ("dense_bytes")),
        "compression_ratio": mean_of(summ("compression_ratio")),
        "merge_share_max": max((n["merge_share"] or 0.0 for n in nodes), default=None),
        "merge_wall_share_max": max((n.get("merge_wall_share") or 0.0 for n in nodes), default=None),
        "wall_s_mean": mean_of([n["wall_s"] for n in nodes]),
        "train_start_offset_s_max": max(n["train_start_offset_s"] for n in nodes),
        "curve": arm_curve(runs, args.steps, args.eval_every), "runs": runs,
    }


def summarise(runs: list[dict], args) -> dict:
    lone = {r["seed"]: r["nodes"][0] for r in runs if r["arm"] == "lone"}
    targets = {seed: n["final_accuracy"] for seed, n in lone.items()}
    arms = {arm: summarise_arm([r for r in runs if r["arm"] == arm], targets, args)
            for arm in args.arms if any(r["arm"] == arm for r in runs)}
    base = (arms.get("lone") or {}).get("steps_to_target_mean")
    for a in arms.values():
        a["steps_to_target_vs_lone"] = round(a["steps_to_target_mean"] / base, 3) if base and a["steps_to_target_mean"] else None
    c = arms.get("summaries", {})
    dense, sent = c.get("dense_bytes"), c.get("bytes_per_summary")
    return {
        "command": "scripts/experiments/summary_experiment.py " + " ".join(sys.argv[1:]),
        "config": {**{k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                   "overrides": parse_overrides(args.set)},
        "seeds": args.seeds, "steps": args.steps, "nodes": args.nodes,
        "target_definition": f"per seed, the lone node's final held-out accuracy: mean of its last {WINDOW} evaluations",
        "steps_to_target_definition": f"first evaluated step whose trailing {WINDOW}-evaluation mean >= the seed's target; "
                                      f"a node that never gets there counts as --steps ({args.steps}) and is listed in never_reached_target",
        "final_accuracy_definition": f"mean of the node's last {WINDOW} evaluations",
        "targets": {str(k): v for k, v in targets.items()},
        "steps_to_target_ratio": c.get("steps_to_target_vs_lone"),
        "compression_ratio": round(dense / sent, 2) if dense and sent else None,
        "merge_share_definition": "max over nodes of CPU seconds of summary work (compress, seal, check, merge) / "
                                  "node wall seconds of training; merge_wall_share: the same with wall seconds",
        "merge_share": c.get("merge_share_max"),
        "merge_wall_share": c.get("merge_wall_share_max"),
        "lone_gain_points": (arms.get("lone") or {}).get("gain_points_by_seed"),
        "arms": arms,
    }


# -- output -------------------------------------------------------------------------------------

def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm, a in summary["arms"].items():
        c = a["curve"]
        line, = ax.plot(c["steps"], c["mean"], label=f"{arm} (final {a['final_accuracy']['mean']:.3f})")
        if len(summary["seeds"]) > 1:
            ax.fill_between(c["steps"], c["min"], c["max"], color=line.get_color(), alpha=0.15, linewidth=0)
    if summary["targets"]:
        ax.axhline(statistics.mean(summary["targets"].values()), color="grey", linestyle="--", linewidth=1,
                   label=f"lone target (last {WINDOW} evals)")
    ax.set_xlabel("local steps (training.max_steps counts these)")
    ax.set_ylabel("held-out accuracy (mean over nodes)")
    shade = ", shaded: min-max over seeds" if len(summary["seeds"]) > 1 else ""
    ax.set_title(f"gradient summaries, {summary['nodes']} nodes, seeds {summary['seeds']}{shade}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(summary: dict) -> Table:
    t = Table(title=f"held-out accuracy after {summary['steps']} local steps (seeds {summary['seeds']})",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0), caption_justify="left")
    for col in ("arm", "final acc", "to target", "vs lone", "merges", "B/summary", "ratio", "merge%"):
        t.add_column(col, justify="left" if col == "arm" else "right")
    fmt = lambda v, f, suffix="": "-" if v is None else f"{v:{f}}{suffix}"
    for arm, a in summary["arms"].items():
        acc = a["final_accuracy"]
        never = len(a["never_reached_target"])
        t.add_row(arm, f"{acc['mean']:.3f}±{(acc['max'] - acc['min']) / 2:.3f}",
                  fmt(a["steps_to_target_mean"], ".0f") + (f" ({never}!)" if never else ""),
                  fmt(a["steps_to_target_vs_lone"], ".2f", "x"), fmt(a["merged_per_node"], ".0f"),
                  fmt(a["bytes_per_summary"], ".0f"), fmt(a["compression_ratio"], ".0f", "x"),
                  fmt(None if a["merge_share_max"] is None else 100 * a["merge_share_max"], ".2f"))
    t.caption = ("final acc: mean of the last 3 evals, ± half the range over seeds\n"
                 "to target: local steps to the lone node's final acc ((n!): n never did)\n"
                 "merges: per node; ratio: dense/summary bytes; merge%: summary work,\n"
                 "CPU seconds over wall seconds (max over nodes)")
    return t


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console()
    json_path, png_path = args.out / f"{args.name}.json", args.out / f"{args.name}.png"
    if args.replot:
        summary = json.loads(json_path.read_text(encoding="utf-8"))
        plot(summary, png_path)
        console.print(table(summary))
        return 0
    base = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    for arm in args.arms:  # a bad --set fails now, not hours in
        check = args.root / args.name / f"check-{arm}.yaml"
        check.parent.mkdir(parents=True, exist_ok=True)
        check.write_text(yaml.safe_dump(arm_config(base, arm, args)), encoding="utf-8")
        load_config(check, environ={})
        check.unlink()
    finished = args.root / args.name / "runs.json"  # every finished run, written as it ends
    settings = {k: getattr(args, k) for k in ("steps", "nodes", "prompts", "eval_every", "eval_size", "tasks", "lr", "set")}
    runs = kept_runs(finished, settings, args.resume)
    for seed in args.seeds:
        for arm in args.arms:
            if any(r["arm"] == arm and r["seed"] == seed for r in runs):
                console.print(f"[dim]seed {seed}, {arm}: kept from {finished}[/dim]")
                continue
            console.print(f"[bold]seed {seed}, {arm}[/bold]")
            runs.append(run_one(args, base, arm, seed, console))
            finished.write_text(json.dumps({"settings": settings, "runs": runs}), encoding="utf-8")
            finals = [n["final_accuracy"] for n in runs[-1]["nodes"]]
            console.print(f"  final accuracy per node: {finals} ({runs[-1]['seconds']} s)")
    runs = [r for r in runs if r["seed"] in args.seeds and r["arm"] in args.arms]
    write_results(summarise(runs, args), json_path, png_path, plot, table, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
