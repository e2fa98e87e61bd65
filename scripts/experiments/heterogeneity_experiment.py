#!/usr/bin/env python3
"""The compute-aware scheduler on a heterogeneous swarm: time to a held-out target, and whose
rollouts get trained, against the fixed I/J split (real daemons).

For every seed and arm it starts len(--quotas) real `swarmnode run` daemons on 127.0.0.1, node i
in a cgroup of its own with a CPU quota of quotas[i] cores (by default 0.8, 0.4, 0.2, 0.2: CPU
in the ratio 4:2:1:1, 1.6 of this machine's 2 cores, so that no node can take another's CPU;
swarmnode/testing/experiments/cpu_quota.py, checked by quota_check.py; the speeds that gives are
measured, not assumed: each node's plan states its seconds per group). Where quotas cannot be
set (no cgroup CPU controller, or not root) it says so in one line and falls back to `--slowdown
max(quotas) / quotas[i]` (`--quotas none --slowdowns 1,2,4,4` asks for that: the slowdown pauses
after each generated batch and each train step, but every node shares the machine's cores, so a
fast node's work takes CPU from the slow ones), and its own questions (data_seed + 100000 * seed
+ 1000 * i, the same in both arms). The base is configs/local-train.yaml (SAPO 8/8 rollout
sharing) with held-out accuracy every --eval-every-s seconds (wall time, the same clock for
every node) on --eval-size items per task and no step limit: the swarm trains for --minutes of
wall time (the clock starts once every node answers), then it is stopped. Arms:

  scheduler   scheduler.enabled: true, training.external_selection: balanced
  fixed       scheduler.enabled: false, the base's external selection (nonzero_advantage)

After each run it reads each node's held-out curve (metrics.sqlite) and its last status
(training.plan, idle shares, staleness, groups generated, peers' groups trained by sender,
rollout bytes fetched). Time to target: a node's first evaluation at which the mean of its
last 2 evaluations reaches --target (default: the mean initial accuracy + --target-gain); the
swarm's is the max over its nodes. time_to_target_ratio: scheduler / fixed, seed by seed,
then the mean (a fixed run that never gets there counts as its budget: an upper bound).

    .venv/bin/python scripts/experiments/heterogeneity_experiment.py --seeds 0 1 --minutes 8
    .venv/bin/python scripts/experiments/heterogeneity_experiment.py --resume      # go on after a stop
    .venv/bin/python scripts/experiments/heterogeneity_experiment.py --summarise --target 0.25

Writes <out>/<name>.json and <out>/<name>.png (held-out accuracy against wall time, a panel
per arm) and prints the tables; raw runs go to <root>/runs.json as each one ends.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

import yaml
from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from swarmnode.config import load_config
from swarmnode.node.local_swarm import LocalSwarm

from swarmnode.testing.experiments.cpu_quota import CpuQuotas, QuotaUnavailable
from swarmnode.testing.experiments.heterogeneity_results import WINDOW, summarise
from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, parse_overrides

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("scheduler", "fixed")
SEED_STRIDE, NODE_STRIDE = 100_000, 1000
POLL_S = 2.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quotas", default="0.8,0.4,0.2,0.2",
                   help="node i gets quotas[i] cores (a cgroup CPU quota); 'none': --slowdowns instead")
    p.add_argument("--slowdowns", default=None,
                   help="without quotas, node i runs `swarmnode run --slowdown slowdowns[i]` (default: max(quotas) / "
                        "quotas[i], or 1,2,4,4)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--minutes", type=float, default=8.0, help="wall-time budget of every run (both arms)")
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated, of " + ", ".join(ARMS))
    p.add_argument("--target", type=float, default=None,
                   help="held-out mean accuracy to reach, absolute (default: mean initial accuracy + --target-gain)")
    p.add_argument("--target-gain", type=float, default=0.05, help="the default target's gain over the start")
    p.add_argument("--eval-every", type=int, default=1_000_000, help="training.eval_every (policy versions)")
    p.add_argument("--eval-every-s", type=float, default=10.0,
                   help="training.eval_every_s: evaluate every this many seconds of wall time, whatever a node's speed "
                        "(versions would give the arm whose slow nodes take more steps a finer clock)")
    p.add_argument("--eval-size", type=int, default=128, help="training.eval_size (held-out items per task)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="config override for both arms, e.g. training.lr=2e-4 (repeatable)")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "heterogeneity")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", default="heterogeneity", help="results go to <out>/<name>.json and <name>.png")
    p.add_argument("--resume", action="store_true", help="keep the finished runs in <root>/runs.json (same settings)")
    p.add_argument("--summarise", action="store_true", help="write the results of the runs in <root>/runs.json; run nothing")
    p.add_argument("--replot", action="store_true", help="only redraw <name>.png (and the tables) from <name>.json")
    args = p.parse_args(argv)
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if set(args.arms) - set(ARMS):
        p.error(f"unknown arms {sorted(set(args.arms) - set(ARMS))}; pick from {', '.join(ARMS)}")
    try:
        args.quotas = None if args.quotas.strip().lower() == "none" else [float(x) for x in args.quotas.split(",")
                                                                         if x.strip()]
    except ValueError:
        p.error(f"--quotas {args.quotas!r}: expected cores per node, e.g. 0.8,0.4,0.2,0.2, or none")
    if args.quotas is not None and (len(args.quotas) < 2 or min(args.quotas) <= 0):
        p.error("--quotas: at least two nodes, each > 0 cores")
    try:
        args.slowdowns = ([float(x) for x in args.slowdowns.split(",") if x.strip()] if args.slowdowns is not None
                          else [max(args.quotas) / q for q in args.quotas] if args.quotas else [1.0, 2.0, 4.0, 4.0])
    except ValueError:
        p.error(f"--slowdowns {args.slowdowns!r}: expected numbers, e.g. 1,2,4,4")
    if len(args.slowdowns) < 2 or min(args.slowdowns) < 1:
        p.error("--slowdowns: at least two nodes, each slowdown >= 1")
    if args.quotas is not None and len(args.slowdowns) != len(args.quotas):
        p.error(f"--slowdowns gives {len(args.slowdowns)} nodes and --quotas {len(args.quotas)}")
    if args.minutes <= 0:
        p.error("--minutes must be > 0")
    return args


def arm_config(base: dict, arm: str, args: argparse.Namespace) -> dict:
    """The config every node of `arm` runs (pure: `base` is not changed). Only the scheduler
    switch and the external selection differ between the arms."""
    cfg = json.loads(json.dumps(base))
    t = cfg.setdefault("training", {})
    t.pop("max_steps", None)  # the run lasts --minutes, not a number of steps
    t.update(eval_every=args.eval_every, eval_every_s=args.eval_every_s, eval_size=args.eval_size,
             checkpoint_every=1_000_000)
    t.setdefault("data_seed", 1000)
    cfg.setdefault("scheduler", {})["enabled"] = arm == "scheduler"
    if arm == "scheduler":
        t["external_selection"] = "balanced"
    return apply_overrides(cfg, args.set)


def arm_switches(cfg: dict) -> dict:
    """What an arm's config sets that the other's may not."""
    return {"scheduler.enabled": cfg["scheduler"]["enabled"],
            "training.external_selection": cfg["training"].get("external_selection")}


def node_data_seeds(cfg: dict, seed: int, nodes: int) -> list[int]:
    """Node i's question stream, the same for node i of both arms."""
    base = cfg["training"]["data_seed"] + SEED_STRIDE * seed
    return [base + NODE_STRIDE * i for i in range(nodes)]


def settings(args: argparse.Namespace) -> dict:
    """What a kept run must share with this invocation (the target only enters the summary)."""
    return {"quotas": args.quotas, "slowdowns": args.slowdowns, "minutes": args.minutes, "eval_every": args.eval_every,
            "eval_every_s": args.eval_every_s,
            "eval_size": args.eval_size, "set": args.set, "config": str(args.config.resolve())}


# -- one run -------------------------------------------------------------------------------------

def read_curve(metrics_path: Path, t0: float) -> tuple[list[list[float]], list[int]]:
    """[[seconds since t0, held-out mean accuracy]] in time order, and the policy version of each
    evaluation. Version 0's evaluation of the first node may come before t0 (negative time)."""
    if not metrics_path.exists():
        return [], []
    with sqlite3.connect(f"file:{metrics_path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT time, version, value FROM metrics WHERE name = 'heldout_accuracy/mean' "
                            "ORDER BY time, rowid").fetchall()
    return [[round(when - t0, 2), round(value, 4)] for when, _, value in rows], [int(v) for _, v, _ in rows]


def node_record(index: int, slowdown: float, data_seed: int, status: dict, curve: list, versions: list) -> dict:
    """The figures of one node at the end of a run; every status field may be missing (None)."""
    training, rollouts = status.get("training") or {}, status.get("rollouts") or {}
    # A node without the field (an older swarmnode) counts the groups it published instead.
    generated, source = training.get("groups_generated"), "training.groups_generated"
    if "groups_generated" not in training and rollouts.get("groups_published") is not None:
        generated, source = rollouts["groups_published"], "rollouts.groups_published"
    return {
        "node": index, "slowdown": slowdown, "data_seed": data_seed, "peer_id": status.get("peer_id"),
        "status_error": status.get("error"),
        "steps": training.get("steps"), "policy_version": training.get("policy_version"),
        "heldout_accuracy_status": training.get("heldout_accuracy"), "slowdown_reported": training.get("slowdown"),
        "generate_tokens_per_s": training.get("generate_tokens_per_s"),
        "train_samples_per_s": training.get("train_samples_per_s"), "seconds_per_step": training.get("seconds_per_step"),
        "plan": training.get("plan"),
        "generator_idle_share": training.get("generator_idle_share"),
        "trainer_idle_share": training.get("trainer_idle_share"),
        "staleness_local": training.get("staleness_local"), "staleness_external": training.get("staleness_external"),
        "groups_generated": generated, "groups_generated_source": source if generated is not None else None,
        "external_trained": training.get("external_trained"),
        "external_trained_by_sender": training.get("external_trained_by_sender"),
        "groups_published": rollouts.get("groups_published"), "groups_accepted": rollouts.get("groups_accepted"),
        "groups_rejected": rollouts.get("groups_rejected"), "bytes_published": rollouts.get("bytes_published"),
        "bytes_fetched": rollouts.get("bytes_fetched"), "batches_fetched": rollouts.get("batches_fetched"),
        "gossip_time_share": rollouts.get("gossip_time_share"),
        "summaries_merged": (status.get("summaries") or {}).get("merged"),
        "curve": curve, "curve_versions": versions,
    }


def _f(value, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _plan(plan) -> str:
    if not isinstance(plan, dict) or plan.get("local_rollouts") is None:
        return "-"
    return f"{plan['local_rollouts']}/{plan.get('external_rollouts', '?')}"


ERROR_WORDS = {"not running": "down", "not answering": "busy", "starting": "start"}


def live_table(rows: list[dict], caption: str, quotas: list[float] | None = None) -> Table:
    """One line per node within 80 columns: its CPU quota (cores) or slowdown, steps, held-out accuracy, the plan (I/J,
    wait), idle shares, groups made, peers' groups this node trained, its groups peers trained."""
    table = Table(title="heterogeneous swarm (I/J: planned local/external groups per step)", title_justify="left",
                  caption=caption, caption_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 0))
    cols = ("node", "cores" if quotas else "slow", "steps", "acc", "I/J", "wait", "gen idle", "trn idle", "made", "used", "by peers")
    for col in cols:
        table.add_column(col, justify="left" if col == "node" else "right", no_wrap=True)
    peers_trained: dict[str, int] = {}
    reported = any((r.get("training") or {}).get("external_trained_by_sender") is not None for r in rows)
    for r in rows:
        for sender, n in ((r.get("training") or {}).get("external_trained_by_sender") or {}).items():
            peers_trained[sender] = peers_trained.get(sender, 0) + n
    for i, r in enumerate(rows):
        if "error" in r:
            word = ERROR_WORDS.get(r["error"], r["error"][:5])
            table.add_row(r["name"], "", Text(word, style="red"), *[""] * (len(cols) - 3))
            continue
        t, ro = r.get("training") or {}, r.get("rollouts") or {}
        plan = t.get("plan")
        wait = plan.get("external_wait_s") if isinstance(plan, dict) else None
        made = t.get("groups_generated") if t.get("groups_generated") is not None else ro.get("groups_published")
        speed = f"{quotas[i]:g}" if quotas and i < len(quotas) else f"{t['slowdown']:g}x" if t.get("slowdown") else "-"
        table.add_row(r["name"], speed, _f(t.get("steps")),
                      _f(t.get("heldout_accuracy"), ".3f"), _plan(plan), _f(wait, ".1f"),
                      _pct(t.get("generator_idle_share")), _pct(t.get("trainer_idle_share")), _f(made),
                      _f(t.get("external_trained")), _f(peers_trained.get(r.get("peer_id"), 0) if reported else None))
    return table


def wait_for_minutes(swarm: LocalSwarm, deadline: float, t0: float, caption: str, console: Console,
                     quotas: list[float] | None = None) -> list[dict]:
    """Poll with the live table until the wall clock passes `deadline`; each node's last status
    that answered (a node busy for a second keeps its previous row). Stops if a node fails."""
    last: list[dict] = [{"name": n.name, "error": "no status"} for n in swarm.nodes]

    def refresh() -> list[dict]:
        rows = swarm.poll()
        bad = [r["name"] for r in rows if r.get("exited")
               or str((r.get("training") or {}).get("phase", "")).startswith("failed")]
        if bad:
            raise SystemExit(f"{', '.join(bad)} failed; see the logs under {swarm.root}")
        for i, r in enumerate(rows):
            if "error" not in r:
                last[i] = r
        return rows

    def view(rows: list[dict]) -> Table:
        elapsed = time.time() - t0
        return live_table(rows, f"{caption}, {elapsed:.0f}/{deadline - t0:.0f} s", quotas)

    rows = refresh()
    with Live(view(rows), console=console, refresh_per_second=1) as live:
        while time.time() < deadline:
            time.sleep(min(POLL_S, max(0.0, deadline - time.time())))
            rows = refresh()
            live.update(view(rows))
    if not console.is_terminal:
        console.print()  # Live's last frame ends without a newline off a terminal
    return last


def run_one(args, base: dict, arm: str, seed: int, console: Console) -> dict:
    root = fresh_home(args.root / f"seed{seed}" / arm)
    cfg = arm_config(base, arm, args)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    slowdowns, quotas = args.slowdowns, args.quotas
    seeds = node_data_seeds(cfg, seed, len(slowdowns))
    groups = CpuQuotas.open("heterogeneity") if quotas else None
    budget = 60.0 * args.minutes
    started = time.monotonic()
    try:
        made = [groups.group(f"node{i}", q) for i, q in enumerate(quotas)] if groups else []
        swarm = LocalSwarm(root, len(slowdowns), config_path,
                           node_env=lambda i: {"SWARMNODE__TRAINING__DATA_SEED": str(seeds[i])},
                           node_args=lambda i: [] if groups else ["--slowdown", str(slowdowns[i])],
                           node_preexec=(lambda i: CpuQuotas.preexec(made[i])) if groups else None)
        with swarm:
            swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
            t0 = time.time()  # the run's clock: every node answers
            rows = wait_for_minutes(swarm, t0 + budget, t0, f"seed {seed}, {arm}", console, quotas if groups else None)
        throttle = [g.throttle() for g in made]
    finally:
        if groups is not None:
            groups.close()
    nodes = []
    for i, row in enumerate(rows):
        curve, versions = read_curve(swarm.nodes[i].home.root / "metrics.sqlite", t0)
        nodes.append({**node_record(i, slowdowns[i], seeds[i], row, curve, versions),
                      "cpu_quota": quotas[i] if quotas else None, "throttle": throttle[i] if throttle else None})
    return {"arm": arm, "seed": seed, "budget_s": budget, "t0": t0,
            "seconds": round(time.monotonic() - started, 1), "nodes": nodes}


# -- output --------------------------------------------------------------------------------------

def speed_label(node: dict) -> str:
    """A node's CPU budget (`0.2 core`) or, without quotas, its slowdown (`4x`)."""
    return f"{node['cpu_quota']:g} core" if node.get("cpu_quota") else f"{node['slowdown']:g}x"


def plot(summary: dict, path: Path) -> None:
    """Held-out accuracy against wall time, a panel per arm: a colour per node, a line style per
    seed, the target (black dashed) and each seed's swarm time to target (grey, the seed's style)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.lines import Line2D
    import matplotlib.pyplot as plt

    arms = summary["results"]
    fig, axes = plt.subplots(1, max(1, len(arms)), figsize=(6 * max(1, len(arms)), 4.5), sharex=True, sharey=True,
                             squeeze=False)
    styles = ["-", "--", ":", "-."]
    budget = (summary.get("settings") or {}).get("minutes")
    for ax, (arm, a) in zip(axes[0], arms.items()):
        for k, seed in enumerate(a["seeds"]):
            run = a["runs"][str(seed)]
            for n in run["nodes"]:
                if not n["curve"]:
                    continue
                t, acc = zip(*n["curve"])
                ax.plot([x / 60 for x in t], acc, color=f"C{n['node']}", linestyle=styles[k % len(styles)],
                        linewidth=1.0, label=f"node{n['node']} {speed_label(n)}" if k == 0 else None)
            if run["swarm_time_to_target_s"] is not None:
                ax.axvline(run["swarm_time_to_target_s"] / 60, color="grey", linestyle=styles[k % len(styles)],
                           linewidth=0.8)
        if summary.get("target") is not None:
            ax.axhline(summary["target"], color="black", linestyle="--", linewidth=0.8, label=f"target {summary['target']:.3f}")
        handles, _ = ax.get_legend_handles_labels()
        handles += [Line2D([], [], color="grey", linestyle=styles[k % len(styles)], label=f"seed {seed}")
                    for k, seed in enumerate(a["seeds"])]
        tt = a["swarm_time_to_target_s"]["mean"]
        ax.set_title(f"{arm}: swarm time to target {'never' if tt is None else f'{tt:.0f} s'} (mean of seeds)", fontsize=9)
        ax.set_xlabel("wall time, minutes (grey: the swarm reached the target)")
        if budget:
            ax.set_xlim(right=budget)
        ax.legend(handles=handles, fontsize=7)
    axes[0][0].set_ylabel("held-out accuracy (mean over tasks)")
    ratio = summary.get("time_to_target_ratio")
    bound = " (upper bound: a fixed run never got there)" if summary.get("time_to_target_ratio_is_upper_bound") else ""
    fig.suptitle(f"{len(summary['seeds'])} seeds; time to target, scheduler / fixed: "
                 f"{'-' if ratio is None else f'{ratio:.2f}'}{bound}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _pm(sp: dict | None, spec: str, scale: float = 1.0, suffix: str = "") -> str:
    """mean±half range of a spread, '-' without a mean; '(n!)' when n seeds have no value."""
    if not sp or sp.get("mean") is None:
        return "-"
    missing = sum(v is None for v in sp.get("by_seed", []))
    text = f"{scale * sp['mean']:{spec}}±{scale * (sp['half_range'] or 0):{spec}}{suffix}"
    return text + (f"({missing}!)" if missing else "")


def _table(title: str, cols: tuple[str, ...], left: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left", caption_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, padding=(0, 0))
    for col in cols:
        table.add_column(col, justify="left" if col in left else "right", no_wrap=True)
    return table


def tables(summary: dict) -> Group:
    """The arms, then their nodes, each within 80 columns (accuracies in %)."""
    ratio, goals = summary.get("time_to_target_ratio"), summary.get("goals") or {}
    target = summary.get("target")
    arms = _table(f"{len(summary['seeds'])} seeds, target {_f(None if target is None else 100 * target, '.1f')}% "
                  "held-out (± half range over seeds)",
                  ("arm", "to target", "final acc", "slow/fast", "gen idle", "trn idle", "ext tau", "wire KB/s"),
                  ("arm",))
    for arm, a in summary["results"].items():
        arms.add_row(arm, _pm(a["swarm_time_to_target_s"], ".0f", suffix="s"),
                     _pm(a["final_accuracy_mean"], ".1f", 100, "%"), _pm(a["slow_fast_share_ratio"], ".2f"),
                     _pm(a["generator_idle_share"], ".0f", 100, "%"), _pm(a["trainer_idle_share"], ".0f", 100, "%"),
                     _f(a["staleness_external"]["mean_tau"], ".2f"), _pm(a["wire_bytes_per_s"], ".1f", 1 / 1024))
    ok = lambda g: "met" if (goals.get(g) or {}).get("met") else "not met"
    bound = " (upper bound)" if summary.get("time_to_target_ratio_is_upper_bound") else ""
    later = ", ".join(f"{100 * float(t):.1f}% {'<=' if r['upper_bound'] else ''}{_f(r['mean'], '.2f')}"
                      for t, r in (summary.get("time_to_target_ratio_at_targets") or {}).items())
    arms.caption = (f"time to target, scheduler/fixed: {_f(ratio, '.2f')}{bound}, goal <= 0.7:\n"
                    + (f"by target: {later}\n" if later else "")
                    + f"{ok('time_to_target_ratio')}; slow/fast trained share (scheduler), goal >= 0.5: "
                    f"{ok('slow_fast_trained_share')}\n"
                    "to target: the swarm's last node; (n!): n seeds never got there\n"
                    "slow/fast: share of the slowest node's groups peers trained, over the\n"
                    "fastest's; ext tau: mean staleness of peers' groups trained")
    nodes = _table("per node", ("arm", "node", "steps", "to target", "final acc", "trained", "gen idle", "trn idle"),
                   ("arm", "node"))
    for arm, a in summary["results"].items():
        for n in a["per_node"]:
            nodes.add_row(arm, f"n{n['node']} {speed_label(n)}", _pm(n["steps"], ".0f"),
                          _pm(n["time_to_target_s"], ".0f", suffix="s"), _pm(n["final_accuracy"], ".1f", 100, "%"),
                          _pm(n["share_trained"], ".2f"), _pm(n["generator_idle_share"], ".0f", 100, "%"),
                          _pm(n["trainer_idle_share"], ".0f", 100, "%"))
    nodes.caption = "trained: share of the node's generated groups that peers trained on"
    return Group(arms, Text(""), nodes)


# -- main ----------------------------------------------------------------------------------------

def check_configs(args, base: dict) -> None:
    """Every arm's config loads with this swarmnode, or stop now (not hours in)."""
    for arm in args.arms:
        check = args.root / f"check-{arm}.yaml"
        check.parent.mkdir(parents=True, exist_ok=True)
        check.write_text(yaml.safe_dump(arm_config(base, arm, args)), encoding="utf-8")
        try:
            load_config(check, environ={})
        except Exception as e:  # noqa: BLE001 - ConfigError, one readable line
            raise SystemExit(f"the {arm} arm's config does not load ({e}); does this swarmnode have the scheduler "
                             "(scheduler.enabled, training.external_selection: balanced)?") from None
        finally:
            check.unlink(missing_ok=True)


def check_quotas(args, console: Console) -> None:
    """Whether this machine can set CPU quotas; if not, one line and --slowdown from here on."""
    if not args.quotas:
        return
    try:
        CpuQuotas.trial("check")
    except QuotaUnavailable as e:
        console.print(f"CPU quotas unavailable ({e}): falling back to --slowdown {','.join(f'{x:g}' for x in args.slowdowns)}")
        args.quotas = None


def load_runs(path: Path, args) -> list[dict]:
    if not (args.resume or args.summarise):
        return []
    if not path.is_file():
        if args.summarise:
            raise SystemExit(f"--summarise: no {path}")
        return []
    kept = json.loads(path.read_text(encoding="utf-8"))
    if kept.get("settings") != settings(args):
        raise SystemExit(f"{path} was run with {kept.get('settings')}, not {settings(args)}")
    return kept["runs"]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console()
    json_path, png_path = args.out / f"{args.name}.json", args.out / f"{args.name}.png"
    if args.replot:
        summary = json.loads(json_path.read_text(encoding="utf-8"))
        plot(summary, png_path)
        console.print(tables(summary))
        return 0
    base = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    runs_path = args.root / "runs.json"
    if not args.summarise:
        check_quotas(args, console)  # before the kept runs are matched: a fallback run's settings say so
    runs = load_runs(runs_path, args)
    if not args.summarise:
        check_configs(args, base)
        for seed in args.seeds:
            for arm in args.arms:
                if any((r["arm"], r["seed"]) == (arm, seed) for r in runs):
                    console.print(f"[dim]seed {seed}, {arm}: kept from {runs_path}[/dim]")
                    continue
                speeds = f"CPU quotas {args.quotas}" if args.quotas else f"slowdowns {args.slowdowns}"
                console.print(f"[bold]seed {seed}, {arm}, {args.minutes:g} min, {speeds}[/bold]")
                runs.append(run_one(args, base, arm, seed, console))
                runs_path.write_text(json.dumps({"settings": settings(args), "runs": runs}), encoding="utf-8")
                finals = [n["curve"][-1][1] if n["curve"] else None for n in runs[-1]["nodes"]]
                console.print(f"  last held-out accuracy per node: {finals} ({runs[-1]['seconds']} s)")
    runs = [r for r in runs if r["seed"] in args.seeds and r["arm"] in args.arms]
    seeds = [s for s in args.seeds if any(r["seed"] == s for r in runs)]
    summary = summarise(runs, arms=args.arms, seeds=seeds, target=args.target, target_gain=args.target_gain,
                        settings={**settings(args), "arms": args.arms, "target": args.target,
                                  "target_gain": args.target_gain, "window": WINDOW,
                                  "overrides": parse_overrides(args.set),
                                  "arm_configs": {arm: arm_switches(arm_config(base, arm, args)) for arm in args.arms}},
                        command="scripts/experiments/heterogeneity_experiment.py " + " ".join(argv))
    args.out.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    plot(summary, png_path)
    console.print(tables(summary))
    console.print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
