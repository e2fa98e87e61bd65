"""scripts/experiments/sapo_experiment.py's results: runs -> docs/results/sapo.json and its table
(the script draws the PNG: matplotlib is the `experiments` extra, which nothing here imports).

Pure functions over the runs the experiment recorded (no daemons here), so the JSON can be
rebuilt from <root>/<name>/runs.json and the plot from the JSON.
"""
from __future__ import annotations

import statistics

from rich import box
from rich.table import Table

PAPER = {"8/0": 561.79, "6/2": 854.43, "4/4": 1093.31, "2/6": 945.87}
PAPER_SELECTION = "nonzero_advantage"
ALONE = "alone"
TAIL = 0.2  # the last fifth of the rounds: where a split that collapses shows it


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.mean(values), 4) if values else None


def half_range(values) -> float:
    return round((max(values) - min(values)) / 2, 4) if len(values) > 1 else 0.0


def tail_mean(curve: list[float]) -> float:
    """Mean of the last TAIL of a per-round curve."""
    tail = curve[-max(1, int(len(curve) * TAIL)):]
    return sum(tail) / len(tail)


def split_summary(runs: list[dict]) -> dict:
    """One split under one selection, over seeds: cumulative rewards (own and all rollouts),
    held-out accuracy at the start and the end (mean over nodes; per task; per node)."""
    by_seed = [statistics.mean(n["cumulative_reward"] for n in r["nodes"]) for r in runs]
    final_by_seed = [statistics.mean(n["final_heldout"]["mean"] for n in r["nodes"]) for r in runs]
    nodes = len(runs[0]["nodes"])
    tasks = [t for t in runs[0]["nodes"][0]["final_heldout"] if t != "mean"]
    curves = [n["own_reward_per_round"] for r in runs for n in r["nodes"]]
    length = min(len(c) for c in curves)
    per_node = []
    for i in range(nodes):
        mine = [r["nodes"][i] for r in runs]
        trained: dict[str, int] = {}
        for n in mine:
            for task, count in (n.get("external_trained_by_task") or {}).items():
                trained[task] = trained.get(task, 0) + count
        per_node.append({
            "node": i, "model": mine[0]["model"],
            "cumulative_reward": mean(n["cumulative_reward"] for n in mine),
            "initial_heldout": mine[0]["initial_heldout"],
            "final_heldout": {t: mean(n["final_heldout"][t] for n in mine) for t in [*tasks, "mean"]},
            "final_heldout_by_seed": [n["final_heldout"]["mean"] for n in mine],
            "external_trained_by_task": trained,
        })
    return {
        "cumulative_reward": round(statistics.mean(by_seed), 3),
        "cumulative_reward_by_seed": [round(x, 3) for x in by_seed],
        "cumulative_reward_half_range": half_range(by_seed),
        "cumulative_reward_std_over_seeds": round(statistics.stdev(by_seed), 3) if len(by_seed) > 1 else 0.0,
        "cumulative_reward_by_node": [[n["cumulative_reward"] for n in r["nodes"]] for r in runs],
        "cumulative_reward_all_rollouts": mean(statistics.mean(n["cumulative_reward_all_rollouts"] for n in r["nodes"])
                                               for r in runs),
        "seeds": [r["seed"] for r in runs],
        "initial_heldout_accuracy": mean(n["initial_heldout"]["mean"] for n in runs[0]["nodes"]),
        "initial_heldout_by_task": {t: mean(n["initial_heldout"][t] for n in runs[0]["nodes"]) for t in tasks},
        "final_heldout_accuracy_mean": mean(final_by_seed),
        "final_heldout_by_seed": [round(x, 4) for x in final_by_seed],
        "final_heldout_half_range": half_range(final_by_seed),
        "final_heldout_by_task": {t: mean(n["final_heldout"][t] for r in runs for n in r["nodes"]) for t in tasks},
        "own_reward_last_fifth": mean(tail_mean(c) for c in curves),
        "reward_per_round": [round(statistics.mean(c[i] for c in curves), 4) for i in range(length)],
        "per_node": per_node,
        "gossip_time_share_mean": mean(n.get("gossip_time_share") for r in runs for n in r["nodes"]),
        "bytes_per_batch_mean": mean(n.get("bytes_per_batch") for r in runs for n in r["nodes"]),
        "groups_rejected": sum(n.get("groups_rejected") or 0 for r in runs for n in r["nodes"]),
        "memory_mib_mean": mean(n.get("memory_mib") for r in runs for n in r["nodes"]),
        "seconds": [r["seconds"] for r in runs],
    }


def weakest_node(selections: dict) -> dict:
    """The node that starts weakest (lowest initial held-out mean) and, per split and selection,
    its final held-out accuracy against the same node alone (8/0)."""
    alone = selections[next(iter(selections))]["8/0"]["per_node"]
    weakest = min(alone, key=lambda n: n["initial_heldout"]["mean"])
    i, alone_final = weakest["node"], weakest["final_heldout"]["mean"]
    gains = {sel: {split: {"final_heldout": c["per_node"][i]["final_heldout"],
                           "gain_vs_alone_points": round(100 * (c["per_node"][i]["final_heldout"]["mean"] - alone_final), 2)}
                   for split, c in splits.items() if split != "8/0"} for sel, splits in selections.items()}
    return {"node": i, "model": weakest["model"], "initial_heldout": weakest["initial_heldout"],
            "alone_final_heldout": weakest["final_heldout"], "with_sharing": gains}


def goals(selections: dict, ours: str | None) -> dict:
    paper = selections.get(PAPER_SELECTION, {})
    alone = next(iter(selections.values()))["8/0"]
    out: dict = {"alone_heldout_gain_points": round(100 * (alone["final_heldout_accuracy_mean"] - alone["initial_heldout_accuracy"]), 2)}
    for sel, splits in selections.items():
        if "4/4" in splits:
            out[f"{sel}_4_4_vs_8_0_cumulative"] = splits["4/4"]["vs_8_0"]
            out[f"{sel}_4_4_heldout_minus_8_0_points"] = round(
                100 * (splits["4/4"]["final_heldout_accuracy_mean"] - alone["final_heldout_accuracy_mean"]), 2)
        if "2/6" in splits:
            out[f"{sel}_2_6_last_fifth_vs_8_0"] = round(splits["2/6"]["own_reward_last_fifth"] / alone["own_reward_last_fifth"], 3)
    if ours and "4/4" in paper and "4/4" in selections.get(ours, {}):
        out[f"{ours}_vs_{PAPER_SELECTION}_4_4_cumulative"] = round(
            selections[ours]["4/4"]["cumulative_reward"] / paper["4/4"]["cumulative_reward"], 3)
        out[f"{ours}_minus_{PAPER_SELECTION}_4_4_heldout_points"] = round(
            100 * (selections[ours]["4/4"]["final_heldout_accuracy_mean"] - paper["4/4"]["final_heldout_accuracy_mean"]), 2)
    return out


def summarise(runs: list[dict], args, command: str) -> dict:
    splits = [s.strip() for s in args.splits.split(",")]
    policies = [s.strip() for s in args.selections.split(",")]
    alone = [r for r in runs if r["selection"] == ALONE]
    selections: dict = {}
    for sel in policies:
        selections[sel] = {}
        for split in splits:
            mine = alone if split.endswith("/0") else [r for r in runs if r["split"] == split and r["selection"] == sel]
            if mine:
                selections[sel][split] = split_summary(mine)
        base = selections[sel].get("8/0", {}).get("cumulative_reward")
        for split, c in selections[sel].items():
            c["selection"] = ALONE if split.endswith("/0") else sel
            c["vs_8_0"] = round(c["cumulative_reward"] / base, 3) if base else None
            c["paper_vs_8_0"] = round(PAPER[split] / PAPER["8/0"], 3) if split in PAPER else None
    ours = next((s for s in policies if s != PAPER_SELECTION), None)
    return {
        "command": command, "nodes": args.nodes, "rounds": args.rounds, "seeds": args.seeds, "tasks": args.tasks.split(","),
        "models": [m.strip() for m in args.models.split(",")], "eval_size_per_task": args.eval_size, "overrides": args.set,
        "group_scale": args.group_scale,
        "paper_selection": PAPER_SELECTION, "paper_cumulative_reward": PAPER,
        "cumulative_reward_definition": "sum over rounds of the mean reward of the node's own rollouts, mean over nodes",
        "cumulative_reward_all_rollouts_definition": "the same over every group trained, peers' included (the paper's code logs this)",
        "configs": selections.get(PAPER_SELECTION) or selections[policies[0]],
        "selections": selections,
        "weakest_node": weakest_node(selections) if "8/0" in splits else None,
        "goals": goals(selections, ours) if "8/0" in splits else None,
    }


def short_label(selection: str) -> str:
    """A selection label that fits the 80-column table: nonzero_advantage+positive -> nonzero+pos."""
    return selection.replace("nonzero_advantage", "nonzero").replace("+positive", "+pos").replace("+shaped", "+shp")


def table(summary: dict) -> Table:
    t = Table(title=f"{summary['rounds']} rounds, {summary['nodes']} nodes, seeds {summary['seeds']} (± half range)",
              box=box.SIMPLE, pad_edge=False, padding=(0, 1, 0, 0))
    for col in ("split", "selection", "cum. reward", "vs 8/0", "paper", "held-out", "weakest", "gossip"):
        t.add_column(col, justify="right", no_wrap=True)
    weak = summary.get("weakest_node") or {}
    for sel, splits in summary["selections"].items():
        for split, c in splits.items():
            if split.endswith("/0") and sel != next(iter(summary["selections"])):
                continue
            w = (weak.get("with_sharing") or {}).get(sel, {}).get(split)
            t.add_row(split, short_label(c["selection"]), f"{c['cumulative_reward']:.1f}±{c['cumulative_reward_half_range']:.1f}",
                      f"{c['vs_8_0']:.2f}x" if c["vs_8_0"] else "-", f"{c['paper_vs_8_0']:.2f}x" if c["paper_vs_8_0"] else "-",
                      f"{100 * c['final_heldout_accuracy_mean']:.1f}±{100 * c['final_heldout_half_range']:.1f}%",
                      f"{w['gain_vs_alone_points']:+.1f}" if w else "-",
                      f"{100 * c['gossip_time_share_mean']:.1f}%" if c["gossip_time_share_mean"] is not None else "-")
    return t
