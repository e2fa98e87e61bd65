#!/usr/bin/env python3
"""An honest node among dishonest same-base partners, on real daemons (issue 26).

For every seed and arm it starts real `swarmnode run` daemons on 127.0.0.1 (configs/
local-train.yaml as the base, no rollout sharing, gradient summaries on): node 0 is the
victim, whose held-out accuracy is the figure; honest partners run `swarmnode run`; dishonest
partners run the same daemon with its published summaries bent (swarmnode/testing/hostile/dishonest.py:
sign flip at k x its honest norm, a random direction at k x, an ALIE-style bias, a turncoat
after 6 summaries at 8x and one after 90 s at 3x (turncoat:3@90), colluders pushing one fixed
direction, a replayer, and an echo sending the victim's own latest summary back as its own).
Every node takes --steps local steps (the dishonest ones train on until the victim is done);
node i draws the same questions in every arm. Arms:

  lone             the victim alone
  clean            the victim and 3 honest partners
  clean-2          the victim and 2 honest partners: an attack arm without its dishonest peers
  clean-1          the victim and 1 honest partner: what a 1/1 arm would be with an honest partner
                   (what a perfect defence would leave at 1/3)
  <attack> 1/1     the victim and 1 dishonest partner, no honest one (--shares 1/1)
  <attack> 1/3     the victim, 2 honest partners and 1 dishonest
  <attack> 2/4     the victim, 2 honest partners and 2 dishonest

    .venv/bin/python scripts/experiments/byzantine_experiment.py --seeds 0 1
    .venv/bin/python scripts/experiments/byzantine_experiment.py --attacks sign_flip:8 --shares 1/3 --seeds 0 --name byz-quick
    .venv/bin/python scripts/experiments/byzantine_experiment.py --set summaries.robust_merge=false --attacks sign_flip:8 \
        --shares 1/3 --baselines clean --name byzantine-plain      # the same attack on the plain mean

Writes <out>/<name>.json and <out>/<name>.png and prints the table: attack, dishonest share,
the victim's gain as a share of the clean swarm's gain (gain: final minus initial held-out
accuracy, final = mean of the last 3 evaluations), against the lone node, merges and skips of
dishonest summaries, and their trust at the end. While it waits, it records the victim's view
of each dishonest partner (merged, skipped, judged, trust) whenever it changes; for a turncoat,
which says when it turned on its console, "hostile" counts its summaries made after the turn
that the victim judged and merged (from the victim's DEBUG log: each verdict names the sender
and when the sender made the summary); merged_after_turn in the JSON is the cruder count of
merges after the turn (it includes honest summaries still in flight).
"""
from __future__ import annotations

import argparse
import json
import re
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
from swarmnode.testing.experiments.figures import arm_curve, last_mean, spread
from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, kept_runs, read_curve, wait_until_trained, write_results
from swarmnode.testing.hostile.dishonest import parse_bend

ROOT = Path(__file__).resolve().parents[2]

ATTACKS = ("sign_flip:1", "sign_flip:8", "random:4", "alie:1", "turncoat:8", "turncoat:3@90", "collude:4", "replay",
           "echo")
SHARES = {"1/1": (0, 1), "1/3": (2, 1), "2/4": (2, 2)}  # honest, dishonest partners
BASELINES = ("lone", "clean", "clean-2", "clean-1")
SEED_STRIDE, NODE_STRIDE = 100_000, 1000
TRUST_KEYS = ("trust", "judged", "merged", "skipped", "harmful")
VIEW_KEYS = ("merged", "skipped", "judged", "trust")  # the timeline's view of a dishonest partner
TURNED = re.compile(r"^\[dishonest\] turned at ([0-9.]+), summary (\d+)", re.M)  # a turncoat's console


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=500, help="local optimizer steps per node (training.max_steps)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--attacks", default=",".join(ATTACKS), help="comma-separated SWARMNODE_BEND values")
    p.add_argument("--shares", default="1/3,2/4", help="dishonest shares of the partners: 1/1, 1/3, 2/4")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated, of " + ", ".join(BASELINES))
    p.add_argument("--prompts", type=int, default=8, help="groups per step")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-size", type=int, default=256, help="held-out items per task")
    p.add_argument("--tasks", default="sum2")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="config override for every node of every arm (repeatable)")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "byzantine")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--name", default="byzantine", help="results go to <out>/<name>.json and <name>.png")
    p.add_argument("--replot", action="store_true", help="only redraw <name>.png (and the table) from <name>.json")
    p.add_argument("--resume", action="store_true", help="keep the runs already finished under <root>/<name>/runs.json")
    args = p.parse_args(argv)
    args.attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    for a in args.attacks:
        try:
            parse_bend(a)
        except ValueError as e:
            p.error(str(e))
    args.baselines = [b.strip() for b in args.baselines.split(",") if b.strip()]
    if set(args.baselines) - set(BASELINES):
        p.error(f"--baselines: pick from {', '.join(BASELINES)}")
    args.shares = [s.strip() for s in args.shares.split(",") if s.strip()]
    if set(args.shares) - set(SHARES):
        p.error(f"--shares: pick from {', '.join(SHARES)}")
    return args


def arms(args: argparse.Namespace) -> list[tuple[str, str | None, str | None]]:
    """(arm name, attack, share): the baselines first, then every attack at every share."""
    out = [(arm, None, None) for arm in BASELINES if arm in args.baselines]
    return out + [(f"{a} {s}", a, s) for a in args.attacks for s in args.shares]


def node_bends(arm: str, attack: str | None, share: str | None) -> list[str | None]:
    """Per node, its SWARMNODE_BEND (None: honest); node 0 is the victim."""
    if arm == "lone":
        return [None]
    if attack is None:
        return [None] * {"clean-2": 3, "clean-1": 2}.get(arm, 4)  # the victim and its honest partners
    honest, dishonest = SHARES[share]
    return [None] * (1 + honest) + [attack] * dishonest


def node_environment(i: int, bends: list[str | None], seeds: list[int], steps: int, root: Path) -> dict[str, str]:
    """Node i's environment: its questions, its bend, and for an echo the victim's home (node 0's)."""
    out = {"SWARMNODE__TRAINING__DATA_SEED": str(seeds[i]), "PYTHONPATH": str(ROOT)}
    if i > 0:
        out["SWARMNODE__TRAINING__MAX_STEPS"] = str(10 * steps)  # partners train on until the victim is done
    if bends[i]:
        out["SWARMNODE_BEND"] = bends[i]
    if bends[i] and parse_bend(bends[i]).attack == "echo":
        out["SWARMNODE_ECHO_HOME"] = str(root / "node0")  # LocalSwarm's home of node i is <root>/node<i>
    return out


def arm_config(base: dict, args: argparse.Namespace) -> dict:
    """Every node's config (pure: `base` is not changed)."""
    cfg = json.loads(json.dumps(base))
    t, r, s = (cfg.setdefault(k, {}) for k in ("training", "rollouts", "summaries"))
    t.update(max_steps=args.steps, eval_every=args.eval_every, eval_size=args.eval_size, threads=1,
             tasks=[x.strip() for x in args.tasks.split(",")], checkpoint_every=1_000_000,
             local_rollouts=args.prompts, external_rollouts=0, external_wait_s=0.0)
    t.setdefault("data_seed", 1000)
    r["share"] = False
    s["enabled"] = True
    return apply_overrides(cfg, args.set)


def victim_view(rows: list[dict], dishonest: list[int]) -> dict[str, dict]:
    """The victim's (row 0's) view of each dishonest partner whose peer id is known yet:
    {peer id: {merged, skipped, judged, trust}} (None where the victim has not judged it yet)."""
    trust = (rows[0].get("summaries") or {}).get("trust") or {}
    ids = [rows[i].get("peer_id") for i in dishonest if i < len(rows)]
    return {pid: {k: (trust.get(pid) or {}).get(k) for k in VIEW_KEYS} for pid in ids if pid}


class Timeline:
    """Given every poll's rows: the victim's view of its dishonest partners, one time-stamped
    point each time it changed (so the view at any poll is that of the last point before it)."""

    def __init__(self, dishonest: list[int], clock=time.time):
        self.dishonest, self.clock = dishonest, clock
        self.points: list[dict] = []

    def __call__(self, rows: list[dict]) -> None:
        now, view = self.clock(), victim_view(rows, self.dishonest)
        if not self.points or self.points[-1]["view"] != view:
            self.points.append({"t": round(now, 3), "view": view})


def turned_at(console_text: str) -> float | None:
    """When a turncoat turned (unix time), from its console's `[dishonest] turned at` line."""
    m = TURNED.search(console_text)
    return float(m.group(1)) if m else None


def merged_after_turn(points: list[dict], peer_id: str, turned: float | None, merged_end: int | None) -> int | None:
    """The victim's merges of the peer's summaries at the end minus at the last poll before it
    turned (None: it never turned, or no count at the end)."""
    if turned is None or merged_end is None:
        return None
    before = [(p["view"].get(peer_id) or {}).get("merged") for p in points if p["t"] < turned]
    return merged_end - ((before[-1] or 0) if before else 0)


JUDGED = re.compile(r"judged the summary of (\S+) made at ([0-9.]+): .*, (\S+)$", re.M)  # the victim's DEBUG log


def hostile_verdicts(victim_log: str, peer_id: str, turned: float | None) -> dict | None:
    """Of the peer's summaries made at or after it turned, how many the victim judged and merged
    (from its DEBUG log's verdict lines; None: it never turned)."""
    if turned is None:
        return None
    outcomes = [m.group(3) for m in JUDGED.finditer(victim_log) if m.group(1) == peer_id and float(m.group(2)) >= turned]
    return {"judged": len(outcomes), "merged": outcomes.count("merged")}


def partner_records(status: dict, bends: list[str | None], ids: list[str], points: list[dict],
                    turns: dict[int, float | None], victim_log: str = "") -> list[dict]:
    """Per partner: its bend, id, the victim's trust record of it, its strikes, and for a turncoat
    when it turned and what the victim merged of it after."""
    trust = (status.get("summaries") or {}).get("trust") or {}
    by_sender = (status.get("messages") or {}).get("rejected_by_sender") or {}
    out = []
    for i in range(1, len(bends)):
        record = {k: (trust.get(ids[i]) or {}).get(k) for k in TRUST_KEYS}
        out.append({"node": i, "bend": bends[i], "peer_id": ids[i], **record, "struck": by_sender.get(ids[i], {}),
                    "turned_at": turns.get(i),
                    "merged_after_turn": merged_after_turn(points, ids[i], turns.get(i), record["merged"]),
                    "hostile": hostile_verdicts(victim_log, ids[i], turns.get(i))})
    return out


def run_one(args, cfg: dict, arm: str, attack: str | None, share: str | None, seed: int, console: Console) -> dict:
    safe = arm.replace("/", "of").replace(" ", "_").replace(":", "x").replace("@", "at")
    root = fresh_home(args.root / args.name / f"seed{seed}" / safe)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    bends = node_bends(arm, attack, share)
    seeds = [cfg["training"]["data_seed"] + SEED_STRIDE * seed + NODE_STRIDE * i for i in range(len(bends))]
    dishonest = [i for i, b in enumerate(bends) if b]
    # The victim logs every verdict (DEBUG), with when the sender made the summary.
    swarm = LocalSwarm(root, len(bends), config_path, node_env=lambda i: node_environment(i, bends, seeds, args.steps, root),
                       node_args=lambda i: ["--log-level", "DEBUG"] if i == 0 else [],
                       node_module=lambda i: "swarmnode.testing.hostile.dishonest" if bends[i] else "swarmnode")
    timeline = Timeline(dishonest)
    started = time.monotonic()
    with swarm:
        swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
        # The victim alone decides when the run is over.
        rows = wait_until_trained(swarm, args.steps, f"seed {seed}, {arm}, {args.steps} steps", console, first=1,
                                  on_poll=timeline)
    ids = [row.get("peer_id") for row in rows]
    if None in ids:  # a partner we cannot name would count as one whose summaries were never merged
        raise SystemExit(f"seed {seed}, {arm}: no status (peer id) from {[r['name'] for r in rows if not r.get('peer_id')]}")
    turns = {i: turned_at(swarm.nodes[i].stdout_path.read_text(errors="replace")) for i in dishonest}
    curve, (first, last) = read_curve(root / "node0" / "metrics.sqlite")
    status = rows[0]
    summ = status.get("summaries") or {}
    seconds = last - first
    return {
        "arm": arm, "attack": attack, "share": share, "seed": seed, "seconds": round(time.monotonic() - started, 1),
        "curve": curve, "initial_accuracy": curve[0][1] if curve else None, "final_accuracy": last_mean(curve),
        "steps": (status.get("training") or {}).get("steps"), "merged": summ.get("merged"),
        "skipped": summ.get("skipped"), "down_weighted": summ.get("down_weighted"), "clipped": summ.get("clipped"),
        "merge_share": round((summ.get("merge_cpu_seconds") or 0.0) / seconds, 5) if seconds else None,
        "partners": partner_records(status, bends, ids, timeline.points, turns, victim_log(root / "node0")),
        "timeline": timeline.points,
    }


def victim_log(home: Path) -> str:
    """The victim's node log, rotated parts included (oldest first)."""
    parts = sorted((home / "logs").glob("node.log.*"), key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    return "".join(p.read_text(errors="replace") for p in [*parts, home / "logs" / "node.log"] if p.exists())


# -- summary ------------------------------------------------------------------------------------

def hostile_total(dishonest: list[dict]) -> str | None:
    """'merged/judged' of turned turncoats' summaries made after their turn, all runs together."""
    counts = [p["hostile"] for p in dishonest if p.get("hostile")]
    if not counts:
        return None
    return f"{sum(c['merged'] for c in counts)}/{sum(c['judged'] for c in counts)}"


def after_turn_total(dishonest: list[dict]) -> int | None:
    """The merges of turned turncoats' summaries after their turn (None: none turned)."""
    counts = [p["merged_after_turn"] for p in dishonest if p.get("merged_after_turn") is not None]
    return sum(counts) if counts else None


def summarise(runs: list[dict], args) -> dict:
    by = {}
    for r in runs:
        by.setdefault(r["arm"], []).append(r)
    gain = {r["seed"]: r["final_accuracy"] - r["initial_accuracy"] for r in by.get("clean", [])}
    clean2 = {r["seed"]: r["final_accuracy"] for r in by.get("clean-2", [])}
    lone = {r["seed"]: r["final_accuracy"] for r in by.get("lone", [])}
    arms_out = {}
    for arm, rs in by.items():
        rs = sorted(rs, key=lambda r: r["seed"])
        # Per seed, and as a ratio of the means over seeds (a seed whose clean gain is near 0
        # would blow its own ratio up).
        shares = [(r["final_accuracy"] - r["initial_accuracy"]) / gain[r["seed"]]
                  for r in rs if gain.get(r["seed"])]
        paired = [r for r in rs if r["seed"] in gain]
        of_means = (statistics.mean(r["final_accuracy"] - r["initial_accuracy"] for r in paired)
                    / statistics.mean(gain[r["seed"]] for r in paired)) if paired else None
        dishonest = [p for r in rs for p in r["partners"] if p["bend"]]
        vs_lone = [r["final_accuracy"] - lone[r["seed"]] for r in rs if r["seed"] in lone]
        vs_clean2 = [r["final_accuracy"] - clean2[r["seed"]] for r in rs if r["seed"] in clean2]
        arms_out[arm] = {
            "attack": rs[0]["attack"], "share": rs[0]["share"],
            "final_accuracy": spread([r["final_accuracy"] for r in rs]),
            "gain_points": spread([100 * (r["final_accuracy"] - r["initial_accuracy"]) for r in rs]),
            "gain_share_of_clean": spread(shares) if shares else None,
            "gain_share_of_clean_of_means": round(of_means, 3) if of_means is not None else None,
            "vs_lone_points": spread([100 * v for v in vs_lone]) if vs_lone else None,
            "never_below_lone": all(v >= 0 for v in vs_lone) if vs_lone else None,
            "vs_clean2_points": spread([100 * v for v in vs_clean2]) if vs_clean2 else None,
            "dishonest_merged": sum(p["merged"] or 0 for p in dishonest),
            "dishonest_skipped": sum(p["skipped"] or 0 for p in dishonest),
            "dishonest_judged": sum(p["judged"] or 0 for p in dishonest),
            "dishonest_trust_end": [p["trust"] for p in dishonest],
            "dishonest_struck": sum(sum(p["struck"].values()) for p in dishonest),
            "dishonest_merged_after_turn": after_turn_total(dishonest),
            "hostile_merged": hostile_total(dishonest),
            "merge_share_max": max((r["merge_share"] or 0.0 for r in rs), default=None),
            "runs": rs,
        }
    return {
        "command": "scripts/experiments/byzantine_experiment.py " + " ".join(sys.argv[1:]),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "seeds": args.seeds, "steps": args.steps,
        "final_accuracy_definition": "the victim's (node 0's) mean of its last 3 evaluations",
        "gain_share_definition": "per seed, (victim's final - initial accuracy) / (the clean arm's same), then over seeds; "
                                 "_of_means: mean gain over seeds / the clean arm's mean gain. The clean arm has 3 honest "
                                 "partners, an attack arm 2: a perfect defence scores under 1",
        "arms": arms_out,
    }


# -- output -------------------------------------------------------------------------------------

def table(summary: dict) -> Table:
    t = Table(title=f"the victim after {summary['steps']} local steps (seeds {summary['seeds']})",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1), caption_justify="left")
    for col in ("attack", "bad", "acc", "gain/clean", "vs lone", "mrg", "skip", "hostile", "trust"):
        t.add_column(col, justify="left" if col == "attack" else "right", no_wrap=True)
    for arm, a in summary["arms"].items():
        acc, share, lone = a["final_accuracy"], a["gain_share_of_clean"], a["vs_lone_points"]
        trust = a["dishonest_trust_end"]
        t.add_row(a["attack"] or arm, a["share"] or "-", f"{acc['mean']:.3f}",
                  "-" if share is None else f"{a['gain_share_of_clean_of_means']:.2f} ({share['min']:.2f})",
                  "-" if lone is None else f"{lone['mean']:+.1f} ({lone['min']:+.1f})",
                  str(a["dishonest_merged"]) if a["attack"] else "-",
                  str(a["dishonest_skipped"]) if a["attack"] else "-",
                  a.get("hostile_merged") or "-",
                  f"{max(trust):.2f}" if trust and all(x is not None for x in trust) else "-")
    t.caption = ("acc: victim's mean of its last 3 evals; gain/clean: its mean gain over\n"
                 "the clean swarm's (min over seeds); vs lone: points above the lone\n"
                 "node, mean (min); mrg / skip: dishonest summaries merged / skipped;\n"
                 "hostile: a turncoat's summaries made after it turned, merged /\n"
                 "judged; trust: the highest dishonest peer's trust at the end")
    return t


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = summary["arms"]
    fig, (curves, bars) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 1.3]})
    worst = sorted((a for a in arms if a not in BASELINES), key=lambda a: arms[a]["final_accuracy"]["mean"])[:3]
    for arm in [a for a in ("lone", "clean") if a in arms] + worst:
        curve = arm_curve([{"nodes": [r]} for r in arms[arm]["runs"]], summary["steps"], summary["config"]["eval_every"])
        curves.plot(curve["steps"], curve["mean"], label=arm if arm in ("lone", "clean") else f"{arm} (among the lowest)",
                    linewidth=2 if arm in ("lone", "clean") else 1, linestyle="-" if arm in ("lone", "clean") else "--")
    curves.set_xlabel("victim's local steps")
    curves.set_ylabel("victim's held-out accuracy (mean over seeds)")
    curves.legend(fontsize=7)
    names = [a for a in arms if a not in ("lone",)]
    means = [arms[a]["final_accuracy"]["mean"] for a in names]
    lows = [arms[a]["final_accuracy"]["mean"] - arms[a]["final_accuracy"]["min"] for a in names]
    highs = [arms[a]["final_accuracy"]["max"] - arms[a]["final_accuracy"]["mean"] for a in names]
    bars.barh(range(len(names)), means, xerr=[lows, highs],
              color=["tab:green" if a.startswith("clean") else "tab:red" for a in names], alpha=0.7)
    bars.set_yticks(range(len(names)), names, fontsize=7)
    bars.invert_yaxis()
    if "lone" in arms:
        bars.axvline(arms["lone"]["final_accuracy"]["mean"], color="black", linestyle="--", label="lone node")
    if "clean" in arms:
        bars.axvline(arms["clean"]["final_accuracy"]["mean"], color="tab:green", linestyle=":", label="clean swarm")
    start = statistics.mean(r["initial_accuracy"] for a in arms.values() for r in a["runs"])
    bars.set_xlim(left=start - 0.02)
    bars.axvline(start, color="grey", linewidth=1, label="at the start")
    bars.set_xlabel("victim's final held-out accuracy (min-max over seeds)")
    bars.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"an honest node among dishonest same-base partners, {summary['steps']} steps, "
                 f"seeds {summary['seeds']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    cfg = arm_config(base, args)
    check = args.root / args.name / "check.yaml"  # a bad --set fails now, not hours in
    check.parent.mkdir(parents=True, exist_ok=True)
    check.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    load_config(check, environ={})
    check.unlink()
    finished = args.root / args.name / "runs.json"
    settings = {k: getattr(args, k) for k in ("steps", "prompts", "eval_every", "eval_size", "tasks", "set")}
    runs = kept_runs(finished, settings, args.resume)
    for seed in args.seeds:
        for arm, attack, share in arms(args):
            if any(r["arm"] == arm and r["seed"] == seed for r in runs):
                console.print(f"[dim]seed {seed}, {arm}: kept from {finished}[/dim]")
                continue
            console.print(f"[bold]seed {seed}, {arm}[/bold]")
            runs.append(run_one(args, cfg, arm, attack, share, seed, console))
            finished.write_text(json.dumps({"settings": settings, "runs": runs}), encoding="utf-8")
            r = runs[-1]
            console.print(f"  victim {r['initial_accuracy']} -> {r['final_accuracy']} ({r['seconds']} s); "
                          f"dishonest: {[(p['merged'], p['skipped'], p['trust']) for p in r['partners'] if p['bend']]}"
                          + "".join(f"; node{p['node']} merged {p['merged_after_turn']} after it turned"
                                    for p in r["partners"] if p.get("merged_after_turn") is not None))
    wanted = {a for a, _, _ in arms(args)} | set(BASELINES)  # baselines kept from a run before are used
    runs = [r for r in runs if r["seed"] in args.seeds and r["arm"] in wanted]
    write_results(summarise(runs, args), json_path, png_path, plot, table, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
