#!/usr/bin/env python3
"""Do per-node CPU quotas hold? A probe node's training rate alone, then beside busy neighbours.

The heterogeneity experiment gives each daemon a CPU budget of its own (a cgroup with a CFS
quota, swarmnode/testing/experiments/cpu_quota.py). A budget holds if a node's steps/s do not
change when its neighbours' work changes. For each mode this starts the probe node (--probe,
by default the last of --quotas) alone, measures its steps/s and CPU over --seconds, then starts
every other node of --quotas (training too), measures the probe again, stops the neighbours and
measures it alone once more. The budget holds if the probe's CPU (cores) beside its neighbours
is what it was alone (the cores ratio: beside over the mean of the two alone windows). Its
steps/s are printed too, but on a VM they also follow how busy the whole machine is (a vCPU
that idles between a quota's bursts does less per CPU-second), which no quota controls:

  quota      each node in its own cgroup at its quota (cores)
  slowdown   no quotas: each node at `--slowdown` max(quotas) / quota (the fallback), all
             nodes sharing the machine's cores

Nodes train alone (rollouts.share false, no summaries), so only CPU links them. Prints a table
and writes <out> (docs/results/quota_check.json).

    .venv/bin/python scripts/experiments/quota_check.py --quotas 0.8,0.4,0.2,0.2 --seconds 40
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.experiments.cpu_quota import CpuQuotas, QuotaUnavailable
from swarmnode.testing.experiments.local_runs import fresh_home
from swarmnode.testing.experiments.process_samples import tree_cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
MODES = ("quota", "slowdown")
WARM_STEPS = 20  # a window opens only after this many steps: start-up and the first evaluation are over


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quotas", default="0.8,0.4,0.2,0.2", help="cores per node, comma-separated")
    p.add_argument("--probe", type=int, default=None, help="the node measured (default: the last)")
    p.add_argument("--seconds", type=float, default=40.0, help="each measurement window")
    p.add_argument("--warmup", type=float, default=20.0, help="seconds of training before a window opens")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES))
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "quota_check")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "quota_check.json")
    args = p.parse_args(argv)
    try:
        args.quotas = [float(x) for x in args.quotas.split(",") if x.strip()]
    except ValueError:
        p.error(f"--quotas {args.quotas!r}: expected numbers of cores, e.g. 0.8,0.4,0.2,0.2")
    if len(args.quotas) < 2 or min(args.quotas) <= 0:
        p.error("--quotas: at least two nodes, each > 0 cores")
    args.probe = len(args.quotas) - 1 if args.probe is None else args.probe
    if not 0 <= args.probe < len(args.quotas):
        p.error(f"--probe {args.probe}: pick a node of 0..{len(args.quotas) - 1}")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(args.modes) - set(MODES):
        p.error(f"unknown modes {sorted(set(args.modes) - set(MODES))}; pick from {', '.join(MODES)}")
    return args


def lone_config(base: Path, out: Path) -> Path:
    """`base` with sharing and summaries off and no evaluations or checkpoints to speak of."""
    cfg = yaml.safe_load(base.read_text())
    cfg.setdefault("rollouts", {})["share"] = False
    cfg.setdefault("summaries", {})["enabled"] = False
    t = cfg.setdefault("training", {})
    t.pop("max_steps", None)
    t.update(eval_every=1_000_000, checkpoint_every=1_000_000)
    out.write_text(yaml.safe_dump(cfg))
    return out


def steps_of(swarm: LocalSwarm) -> int:
    row = swarm.poll()[0]
    return int((row.get("training") or {}).get("steps") or 0)


def warm_up(swarm: LocalSwarm, steps: int, seconds: float, timeout_s: float = 600.0) -> None:
    """Until the first node has taken `steps` steps (start-up, the first evaluation), then `seconds` more."""
    deadline = time.monotonic() + timeout_s
    while steps_of(swarm) < steps and time.monotonic() < deadline:
        time.sleep(1.0)
    time.sleep(seconds)


def measure(swarm: LocalSwarm, seconds: float) -> dict:
    """The first node's steps/s and cores over the next `seconds`."""
    pid = swarm.nodes[0].process.pid
    s0, c0, t0 = steps_of(swarm), tree_cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    s1, c1, t1 = steps_of(swarm), tree_cpu_seconds(pid), time.monotonic()
    return {"steps_per_s": round((s1 - s0) / (t1 - t0), 3), "cores": round((c1 - c0) / (t1 - t0), 3)}


def probe_ratios(alone: dict, beside: dict, again: dict) -> dict:
    """The three windows and their ratios: beside over the mean of the two alone windows, for
    steps/s and for cores; and how far the two alone windows differ in steps/s (again / alone),
    the node's own drift, against which a steps ratio has to be read."""
    def ratio(key: str) -> float | None:
        base = (alone[key] + again[key]) / 2
        return round(beside[key] / base, 3) if base else None

    return {"alone": alone, "beside_neighbours": beside, "alone_again": again,
            "ratio_steps": ratio("steps_per_s"), "ratio_cores": ratio("cores"),
            "alone_drift_steps": round(again["steps_per_s"] / alone["steps_per_s"], 3) if alone["steps_per_s"] else None}


def run_mode(args: argparse.Namespace, mode: str, config: Path, console: Console) -> dict:
    quotas = args.quotas
    order = [args.probe] + [i for i in range(len(quotas)) if i != args.probe]
    slowdowns = [max(quotas) / q for q in quotas]
    groups = CpuQuotas.open("quota-check") if mode == "quota" else None
    try:
        def preexec_of(nodes: list[int]):
            if groups is None:
                return None
            made = [groups.group(f"node{i}", quotas[i]) for i in nodes]
            return lambda k: CpuQuotas.preexec(made[k])

        def args_of(nodes: list[int]):
            return lambda k: [] if groups is not None else ["--slowdown", f"{slowdowns[nodes[k]]:g}"]

        root = fresh_home(args.root / mode)
        probe = LocalSwarm(root / "probe", 1, config, node_args=args_of(order[:1]), node_preexec=preexec_of(order[:1]))
        others = LocalSwarm(root / "others", len(order) - 1, config, node_args=args_of(order[1:]),
                            node_preexec=preexec_of(order[1:]))
        with probe, others:
            probe.start()
            console.print(f"{mode}: node{args.probe} alone, measuring {args.seconds:g}s")
            warm_up(probe, WARM_STEPS, args.warmup)
            alone = measure(probe, args.seconds)
            others.start()
            console.print(f"{mode}: node{args.probe} beside {len(order) - 1} training neighbours")
            warm_up(others, WARM_STEPS, args.warmup)
            busy = measure(probe, args.seconds)
            neighbours = [int((r.get("training") or {}).get("steps") or 0) for r in others.poll()]
            others.stop()
            console.print(f"{mode}: node{args.probe} alone again")
            time.sleep(args.warmup)
            again = measure(probe, args.seconds)
        return {"mode": mode, "cgroup_version": groups.version if groups else None,
                "probe": args.probe, "probe_quota": quotas[args.probe] if groups else None,
                "probe_slowdown": None if groups else slowdowns[args.probe],
                **probe_ratios(alone, busy, again), "neighbour_steps": neighbours,
                "throttle": groups.groups[0].throttle() if groups else None}
    finally:
        if groups is not None:
            groups.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = Console(width=80)
    args.root.mkdir(parents=True, exist_ok=True)
    config = lone_config(args.config, args.root / "lone.yaml")
    results = []
    for mode in args.modes:
        try:
            results.append(run_mode(args, mode, config, console))
        except QuotaUnavailable as e:
            console.print(f"CPU quotas unavailable here: {e}; the experiments fall back to --slowdown")
    table = Table(title=f"node{args.probe}'s training rate alone and beside busy neighbours", width=80)
    for col in ("mode", "alone\nsteps/s", "cores", "beside\nsteps/s", "cores", "alone\nagain", "cores", "cores\nratio"):
        table.add_column(col, justify="right")
    for r in results:
        cells = [f"{r[k]['steps_per_s']:.2f}|{r[k]['cores']:.2f}" for k in ("alone", "beside_neighbours", "alone_again")]
        table.add_row(r["mode"], *(x for c in cells for x in c.split("|")),
                      f"{r['ratio_cores']:.2f}x" if r["ratio_cores"] else "-")
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": "scripts/experiments/quota_check.py " + " ".join(sys.argv[1:]),
                                    "quotas": args.quotas, "seconds": args.seconds, "results": results}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
