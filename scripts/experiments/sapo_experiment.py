#!/usr/bin/env python3
"""SAPO at tiny scale on a diverse swarm: 8/0, 6/2, 4/4 and 2/6 local/external splits, the
paper's selection against ours, real daemons.

The swarm differs the way public nodes do: node i starts from --models[i % len] (by default
the bundled sums policy and bundled:tiny-sum3-some-sum2, a sum3 specialist that has begun to
learn sum2, so every node can learn both tasks alone) and every node trains every task in
--tasks (by default sum2 and sum3), so each node is better at something than its peers. The
swarm whose specialists cannot learn sum2 alone is `--models
bundled:tiny-policy,bundled:tiny-sum3 --rounds 800 --name sapo-hard`. A split I/J trains I*K
own and J*K peers' groups a step (K = --group-scale, 4 by default: at 8 groups a step the tiny
policy barely learns). For every seed it runs 8/0 once (no peers' groups, no selection) and
every other split once per --selections policy: N real `swarmnode run` daemons on 127.0.0.1 (configs/local-train.yaml,
node i with its own questions), each training R steps ("rounds") with I local and J external
groups per step. Then it reads each node's metrics.sqlite:
- cumulative reward, as in the paper (arXiv 2509.08721): the sum over rounds of the mean
  reward of the node's own rollouts; and the paper code's all-rollouts variant (the mean
  over every group trained, peers' included);
- held-out greedy accuracy per task at the start and the end (--eval-size items per task,
  the node's own evaluator, the same items for every node).

    .venv/bin/python scripts/experiments/sapo_experiment.py --rounds 1300 --seeds 0 1 --splits 8/0,4/4,2/6,6/2

(the defaults; about 90 minutes on 2 cores: at 1,000 rounds 8/0 gained 8.9 and 10.2 held-out
points, short of the 10 a conclusive run asks for). Splits run in --splits order, so a run cut
short has 8/0 and 4/4 first.

Writes docs/results/sapo.json (`configs` -> split: the paper's selection; `selections` ->
policy -> split: each) and docs/results/sapo.png, and prints the table.
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

from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalSwarm

from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, node_memory_mib, wait_until_trained

ROOT = Path(__file__).resolve().parents[2]
PAPER_SELECTION = "nonzero_advantage"  # drop zero-advantage groups, then draw uniformly
ALONE = "alone"  # the selection label of 8/0: no peers' groups (as in swarmnode/testing/experiments/sapo_results.py)
SEED_STRIDE, NODE_STRIDE = 100_000, 1000


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rounds", type=int, default=1300, help="training steps per node")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--splits", default="8/0,4/4,2/6,6/2", help="local/external groups per step")
    p.add_argument("--selections", default=f"{PAPER_SELECTION},{PAPER_SELECTION}+positive",
                   help="external selection policies, each run on every split but 8/0 "
                        "(<policy>+shaped: the shaped objective for another model's text; "
                        "<policy>+positive: peers' samples with positive advantage only)")
    p.add_argument("--models", default="bundled:tiny-policy,bundled:tiny-sum3-some-sum2", help="node i starts from models[i %% len]")
    p.add_argument("--tasks", default="sum2,sum3", help="tasks every node trains")
    p.add_argument("--group-scale", type=int, default=4,
                   help="a split I/J trains I*K own and J*K peers' groups a step (the labels stay the paper's)")
    p.add_argument("--eval-size", type=int, default=256, help="held-out items per task")
    p.add_argument("--evals", type=int, default=4, help="held-out evaluations per run after the first")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override, e.g. training.lr=2e-4")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "sapo")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", default="sapo", help="results go to <out>/<name>.json and <name>.png")
    p.add_argument("--resume", action="store_true", help="keep finished runs found in <root>/<name>/runs.json")
    p.add_argument("--summarise", action="store_true", help="write the results of the runs kept by --resume; run nothing")
    p.add_argument("--replot", action="store_true", help="only redraw <name>.png from <name>.json")
    args = p.parse_args(argv)
    for label in args.selections.split(","):
        try:
            parse_selection(label.strip())
        except ValueError as e:  # before any run starts, not when the plan reaches that label
            p.error(f"--selections: {e}")
    return args


# Training settings per selection-label variant; the paper's protocol is neither.
VARIANTS = {"shaped": {"foreign_text_objective": "shaped"}, "positive": {"external_positive_only": True}}


def parse_selection(label: str) -> tuple[str, dict]:
    """A selection label -> (selection policy, training settings of the run).

    "<policy>+shaped" also trains another model's text with LUFFY's shaped objective,
    "<policy>+positive" only peers' samples with positive advantage, so one experiment
    compares each variant to 8/0. Without a variant the run is the paper's protocol (plain
    re-scoring, every sample), whatever the base config ships. ValueError on an unknown variant.
    """
    policy, *variants = label.split("+")
    training = {"foreign_text_objective": "plain", "external_positive_only": False}
    for variant in variants:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r} in {label!r} (<policy>+{', <policy>+'.join(VARIANTS)})")
        training.update(VARIANTS[variant])
    return policy, training


def run_config(base: dict, args, local: int, external: int, selection: str) -> dict:
    cfg = json.loads(json.dumps(base))
    t = cfg.setdefault("training", {})
    # --group-scale K keeps the paper's ratio at K times the groups: at 8 groups a step the
    # bundled 1M-parameter policy barely learns (scripts/experiments/sapo_sim.py: +1.3 held-out points in
    # 400 rounds at 8/0, +7.8 in 200 rounds at 32 groups), so no split can show a gain.
    local, external = local * args.group_scale, external * args.group_scale
    selection, variant_settings = parse_selection(selection)
    t.update(variant_settings)
    t.update(tasks=[x.strip() for x in args.tasks.split(",")], local_rollouts=local, external_rollouts=external,
             external_selection=selection if external else PAPER_SELECTION,
             # No wait: a step takes what the pool holds. Before the wait counted only groups a
             # step can draw, flat ones ended it at once, so the published runs never waited.
             external_wait_s=0.0, eval_every=max(1, args.rounds // args.evals),
             eval_size=args.eval_size, checkpoint_every=100_000)
    cfg.setdefault("rollouts", {})["share"] = bool(external)
    # Rollout sharing alone, as in the paper: 8/0 is a node on its own, and no split merges
    # gradient summaries between its same-base nodes.
    cfg.setdefault("summaries", {})["enabled"] = False
    return apply_overrides(cfg, args.set)


def read_metrics(metrics_path: Path) -> dict:
    """Per step, in step order: own-rollout reward and all-rollouts reward; held-out accuracy per
    task at each evaluation, keyed by the local step it followed (0: before the first step)."""
    with sqlite3.connect(str(metrics_path)) as conn:
        rows = conn.execute("SELECT name, value FROM metrics WHERE name IN ('step', 'local_reward_mean', 'reward_mean') "
                            "OR name LIKE 'heldout_accuracy/%' ORDER BY rowid").fetchall()
    step, own, every, evals = 0, {}, {}, {}
    for name, value in rows:
        if name == "step":
            step = int(value)
        elif name == "local_reward_mean":
            own[step] = float(value)
        elif name == "reward_mean":
            every[step] = float(value)
        else:
            evals.setdefault(step, {})[name.split("/", 1)[1]] = round(float(value), 4)
    # A step's rewards precede its step counter in row order (keyed one step early here);
    # only their order is used. An evaluation follows the counter of the step it came after.
    return {"own": [own[s] for s in sorted(own)], "all": [every[s] for s in sorted(every)],
            "evals": [[s, evals[s]] for s in sorted(evals)]}


def node_record(index: int, model: str, data_seed: int, status: dict, metrics: dict) -> dict:
    training, rollouts = status.get("training") or {}, status.get("rollouts") or {}
    evals = metrics["evals"]
    return {
        "node": index, "model": model, "data_seed": data_seed, "steps": training.get("steps"),
        "cumulative_reward": round(sum(metrics["own"]), 3), "cumulative_reward_all_rollouts": round(sum(metrics["all"]), 3),
        "own_reward_per_round": [round(r, 4) for r in metrics["own"]],
        "initial_heldout": evals[0][1] if evals else None, "final_heldout": evals[-1][1] if evals else None,
        "heldout_curve": evals, "external_trained_by_task": training.get("external_trained_by_task"),
        "own_success": training.get("own_success"),
        "groups_accepted": rollouts.get("groups_accepted"), "groups_rejected": rollouts.get("groups_rejected"),
        "groups_skipped_other_task": rollouts.get("groups_skipped_other_task"),
        "gossip_time_share": rollouts.get("gossip_time_share"), "bytes_per_batch": rollouts.get("bytes_per_batch"),
    }


def run_one(args, base: dict, split: str, selection: str, seed: int, console: Console) -> dict:
    local, external = (int(x) for x in split.split("/"))
    root = fresh_home(args.root / args.name / f"seed{seed}" / f"{split.replace('/', '-')}-{selection}")
    cfg = run_config(base, args, local, external, selection)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    models = [m.strip() for m in args.models.split(",")]
    node_models = [models[i % len(models)] for i in range(args.nodes)]
    data_seeds = [cfg["training"]["data_seed"] + SEED_STRIDE * seed + NODE_STRIDE * i for i in range(args.nodes)]
    swarm = LocalSwarm(root, args.nodes, config_path, node_env=lambda i: {
        "SWARMNODE__TRAINING__DATA_SEED": str(data_seeds[i]), "SWARMNODE__TRAINING__MAX_STEPS": str(args.rounds),
        "SWARMNODE__MODEL__NAME_OR_PATH": node_models[i]})
    started = time.monotonic()
    with swarm:
        swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
        t = cfg["training"]
        caption = f"seed {seed}, {split} (I={t['local_rollouts']}, J={t['external_rollouts']}), {selection}, {args.rounds} rounds"
        rows = wait_until_trained(swarm, args.rounds, caption, console)
        memory = [node_memory_mib(read_runtime(n.home)) for n in swarm.nodes]
    nodes = [node_record(i, node_models[i], data_seeds[i], rows[i], read_metrics(swarm.nodes[i].home.root / "metrics.sqlite"))
             for i in range(args.nodes)]
    for n, mib in zip(nodes, memory):
        n["memory_mib"] = round(mib, 1) if mib else None
    return {"split": split, "selection": selection, "seed": seed, "seconds": round(time.monotonic() - started, 1), "nodes": nodes}


def plan(args) -> list[tuple[str, str, int]]:
    """(split, selection, seed) in --splits order, every seed of a split before the next split:
    a run cut short still has whole comparisons (use --resume to go on, --summarise to stop)."""
    splits = [s.strip() for s in args.splits.split(",")]
    selections = [s.strip() for s in args.selections.split(",")]
    return [(split, selection, seed) for split in splits for seed in args.seeds
            for selection in ([ALONE] if split.endswith("/0") else selections)]


def load_finished(path: Path, args) -> list[dict]:
    """Runs kept by --resume: only those made with the same settings."""
    if not ((args.resume or args.summarise) and path.is_file()):
        return []
    saved = json.loads(path.read_text(encoding="utf-8"))
    return saved["runs"] if saved.get("settings") == settings(args) else []


def settings(args) -> dict:
    return {k: getattr(args, k) for k in ("nodes", "rounds", "models", "tasks", "eval_size", "evals", "set", "group_scale")}


def plot(summary: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bars) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    labels, finals, spreads = [], [], []
    for sel, splits in summary["selections"].items():
        for split, c in splits.items():
            alone = split.endswith("/0")
            if alone and sel != next(iter(summary["selections"])):
                continue
            curve, window = c["reward_per_round"], 20
            smooth = [statistics.mean(curve[max(0, i - window + 1): i + 1]) for i in range(len(curve))]
            label = split if alone else f"{split} {sel}"
            ax.plot(range(1, len(curve) + 1), smooth, label=f"{label} ({c['cumulative_reward']:.1f})",
                    color="black" if alone else None, linestyle="-" if alone or sel == PAPER_SELECTION else "--")
            labels.append(label)
            finals.append(100 * c["final_heldout_accuracy_mean"])
            spreads.append(100 * c["final_heldout_half_range"])
    ax.set_xlabel("round (training step)")
    ax.set_ylabel("own rollouts' mean reward (20-round average)")
    ax.set_title(f"{summary['nodes']} nodes ({', '.join(summary['models'])}), seeds {summary['seeds']}", fontsize=8)
    ax.legend(fontsize=7)
    bars.barh(range(len(labels)), finals, xerr=spreads, color=["black" if "/0" in lbl else "tab:blue" for lbl in labels])
    initial = 100 * summary["configs"]["8/0"]["initial_heldout_accuracy"]
    bars.axvline(initial, color="grey", linestyle=":", label=f"start {initial:.1f}%")
    bars.set_yticks(range(len(labels)), labels, fontsize=7)
    bars.set_xlabel(f"held-out accuracy at the end, %\n({summary['eval_size_per_task']} items per task, mean of nodes)")
    bars.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str]) -> int:
    from swarmnode.testing.experiments.sapo_results import summarise, table

    args = parse_args(argv)
    console = Console()
    if args.replot:
        plot(json.loads((args.out / f"{args.name}.json").read_text(encoding="utf-8")), args.out / f"{args.name}.png")
        return 0
    base = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    runs_path = args.root / args.name / "runs.json"
    runs = load_finished(runs_path, args)
    if args.summarise:
        args.splits = ",".join(s for s in args.splits.split(",") if any(r["split"] == s.strip() for r in runs))
    for split, selection, seed in [] if args.summarise else plan(args):
        if any((r["split"], r["selection"], r["seed"]) == (split, selection, seed) for r in runs):
            continue
        console.print(f"[bold]seed {seed}, split {split}, {selection}[/bold]")
        runs.append(run_one(args, base, split, selection, seed, console))
        per_node = ", ".join(f"{n['cumulative_reward']:.1f}" for n in runs[-1]["nodes"])
        console.print(f"  cumulative own reward per node: {per_node} ({runs[-1]['seconds']} s)")
        runs_path.write_text(json.dumps({"settings": settings(args), "runs": runs}), encoding="utf-8")
    command = "scripts/experiments/sapo_experiment.py " + " ".join(argv)
    summary = summarise(runs, args, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    plot(summary, args.out / f"{args.name}.png")
    console.print(table(summary))
    console.print(f"wrote {args.out / (args.name + '.json')} and {args.out / (args.name + '.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
