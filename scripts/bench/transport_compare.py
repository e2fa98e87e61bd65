#!/usr/bin/env python3
"""The transports side by side: the same local training swarm on hivemind, on libp2p with its host
on a thread of the node (network.libp2p_host: thread) and with its host in a child process
(`libp2p-process`: network.libp2p_host: process).

Each arm starts N real `swarmnode run` daemons on 127.0.0.1 (configs/local-train.yaml, the
bundled tiny policy, SAPO 4/4 rollout sharing, network.transport set to the arm's), every node
taking --steps local optimizer steps with its own questions (data seed 1000 + 100000 * seed +
1000 * i, the same in both arms), and one model-less node (model.name_or_path null, like a
bootstrap node) joined to them. Per arm it measures:

  publish-to-visible latency  a peer's rollout batch from its signing (sender's clock) to its
                              acceptance here (fetched, checked, handed to training): median of
                              the nodes' p50s, largest of their p99s, at the end of training
  gossip share                swarm-I/O CPU (event loop + gossip workers + transport: p2pd or the
                              trio thread) per second of node uptime, and that sum's parts
  RSS per node                node process plus its children (p2pd for hivemind), each node's
                              peak over the run's polls; mean and max over nodes
  start-to-first-peer         a joining node's process launch to the first status poll listing
                              a peer (node 0, the one they join through, apart: its first peer
                              is the first joiner's arrival)
  idle node CPU               the model-less node's process + children, % of one core over
                              --idle-seconds, from when it lists every training node

Then the ratio of each figure to hivemind's, per libp2p arm, a table, and --json
(docs/results/transports.json). The arms run one after the other on the same machine; other load
on it stretches them all.

    .venv/bin/python scripts/bench/transport_compare.py --nodes 8 --steps 100 --seed 0
    .venv/bin/python scripts/bench/transport_compare.py --arms hivemind,libp2p-process
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import yaml
from rich.console import Console
from rich.table import Table

from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.status.client import NoDaemon, fetch
from swarmnode.testing.experiments.figures import swarm_latency_s
from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, node_memory_mib
from swarmnode.testing.experiments.process_samples import sample

ROOT = Path(__file__).resolve().parents[2]

ARMS = ("hivemind", "libp2p", "libp2p-process")  # libp2p-process: network.libp2p_host: process
SEED_STRIDE, NODE_STRIDE, BASE_DATA_SEED = 100_000, 1000, 1000
POLL_S, WATCH_S, JOIN_TIMEOUT_S = 2.0, 0.25, 120.0
# (key, label, format) of each figure in the table and the ratio line
FIGURES = (
    ("latency_p50_s", "publish-to-visible p50 (s)", "{:.2f}"),
    ("latency_p99_s", "publish-to-visible p99 (s)", "{:.2f}"),
    ("gossip_time_share", "gossip CPU / node uptime (%)", "{:.2%}"),
    ("share_event_loop", "  event loop (%)", "{:.2%}"),
    ("share_gossip_workers", "  gossip workers (%)", "{:.2%}"),
    ("share_transport", "  transport (%)", "{:.2%}"),
    ("rss_mean_mib", "RSS per node, mean (MiB)", "{:.0f}"),
    ("rss_max_mib", "RSS per node, max (MiB)", "{:.0f}"),
    ("first_peer_p50_s", "launch to first peer, p50 (s)", "{:.1f}"),
    ("first_peer_max_s", "launch to first peer, max (s)", "{:.1f}"),
    ("idle_cpu_percent", "idle node CPU (% of a core)", "{:.2f}"),
)


# -- pure summaries --------------------------------------------------------------------------------

def gossip_shares(gossip: list[dict]) -> dict[str, float | None]:
    """Mean over nodes of gossip_time_share and of each swarm_cpu_breakdown_s part per second of uptime."""
    figures: dict[str, float | None] = {}
    shares = [g["gossip_time_share"] for g in gossip if g.get("gossip_time_share") is not None]
    figures["gossip_time_share"] = round(statistics.fmean(shares), 5) if shares else None
    timed = [g for g in gossip if g.get("uptime_s") and g.get("swarm_cpu_breakdown_s")]
    for part in ("event_loop", "gossip_workers", "transport"):
        parts = [g["swarm_cpu_breakdown_s"][part] / g["uptime_s"] for g in timed if part in g["swarm_cpu_breakdown_s"]]
        figures[f"share_{part}"] = round(statistics.fmean(parts), 5) if parts else None
    return figures


def rss_figures(peaks_mib: list[float | None]) -> dict[str, float | None]:
    """Mean and max over nodes of each node's peak RSS (MiB); nodes never read are left out."""
    known = [p for p in peaks_mib if p is not None]
    return {"rss_mean_mib": round(statistics.fmean(known), 1) if known else None,
            "rss_max_mib": round(max(known), 1) if known else None}


def first_peer_figures(launched: dict[int, float], first_peer: dict[int, float]) -> dict[str, Any]:
    """Seconds from launch to first peer per node; p50 and max over the joining nodes (index > 0)."""
    seconds = {i: round(first_peer[i] - launched[i], 2) for i in sorted(launched) if i in first_peer}
    joiners = [s for i, s in seconds.items() if i > 0]
    return {"first_peer_p50_s": round(statistics.median(joiners), 2) if joiners else None,
            "first_peer_max_s": max(joiners) if joiners else None,
            "first_peer_s_by_node": seconds, "never_saw_a_peer": sorted(set(launched) - set(first_peer))}


def ratios(hivemind: dict[str, Any], libp2p: dict[str, Any]) -> dict[str, float | None]:
    """libp2p / hivemind of each figure; None where either is missing or hivemind's is 0."""
    out = {}
    for key, _, _ in FIGURES:
        a, b = hivemind.get(key), libp2p.get(key)
        out[key] = round(b / a, 2) if a and b is not None else None
    return out


def log_findings(text: str, keep: int = 5) -> dict[str, Any]:
    """Counts of ERROR (and CRITICAL) and WARNING lines and of tracebacks in a node log, and its
    first `keep` distinct such lines (level, logger and message, without the time)."""
    found = {"errors": 0, "warnings": 0, "tracebacks": 0, "first": []}
    for line in text.splitlines():
        found["tracebacks"] += line.startswith("Traceback")
        level = re.match(r"^\S+ \S+ ((ERROR|CRITICAL|WARNING) .*)$", line)
        if not level:
            continue
        found["warnings" if level.group(2) == "WARNING" else "errors"] += 1
        if level.group(1) not in found["first"] and len(found["first"]) < keep:
            found["first"].append(level.group(1))
    return found


# -- measuring -------------------------------------------------------------------------------------

class TimedSwarm(LocalSwarm):
    """A LocalSwarm that notes when it launches each node's process (time.monotonic)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.launched: dict[int, float] = {}

    def _launch(self, node) -> None:
        self.launched[node.index] = time.monotonic()
        super()._launch(node)


def peer_count(node) -> int | None:
    url = read_runtime(node.home).get("status_url")
    if not url:
        return None
    try:
        return len(fetch(url, timeout=1.0).get("peers") or [])
    except NoDaemon:
        return None


class FirstPeerWatch(threading.Thread):
    """Polls every launched node's status until it lists a peer; first_peer: index -> monotonic time."""

    def __init__(self, swarm: TimedSwarm):
        super().__init__(daemon=True)
        self.swarm, self.first_peer, self.done = swarm, {}, threading.Event()

    def run(self) -> None:
        while not self.done.wait(WATCH_S):
            for index in [i for i in list(self.swarm.launched) if i not in self.first_peer]:
                if (peer_count(self.swarm.nodes[index]) or 0) >= 1:
                    self.first_peer[index] = time.monotonic()
            if len(self.first_peer) == len(self.swarm.nodes):
                return


def idle_node_cpu(idle: LocalSwarm, peers: int, seconds: float) -> dict[str, Any]:
    """The model-less node's CPU % and RSS over `seconds`, from when it lists `peers` peers
    (or JOIN_TIMEOUT_S, whichever first)."""
    node, started = idle.nodes[0], time.monotonic()
    while time.monotonic() - started < JOIN_TIMEOUT_S and (peer_count(node) or 0) < peers:
        time.sleep(0.5)
    seen = peer_count(node)
    daemon = psutil.Process(read_runtime(node.home)["pid"])
    processes = {"node": daemon, **{f"{c.name()} {c.pid}": c for c in daemon.children(recursive=True)}}
    window_start = time.monotonic()
    figures = sample(processes, seconds)
    return {"join_s": round(window_start - started, 1), "peers_at_start": seen, "peers_at_end": peer_count(node),
            "window_s": seconds, "window_end_monotonic": time.monotonic(),
            "idle_cpu_percent": figures["cpu_percent"]["total"], **figures}


def follow_training(swarm: TimedSwarm, label: str, console: Console) -> tuple[list[dict], list[float | None]]:
    """Poll until every node took its steps; (final status rows, each node's peak RSS MiB)."""
    peaks: list[float | None] = [None] * len(swarm.nodes)
    last_print = 0.0
    while True:
        rows = swarm.poll()
        for i, node in enumerate(swarm.nodes):
            rss = node_memory_mib(read_runtime(node.home))
            if rss is not None:
                peaks[i] = max(rss, peaks[i] or 0.0)
        failed = [r["name"] for r in rows if r.get("exited") or str((r.get("training") or {}).get("phase", "")).startswith("failed")]
        if failed:
            raise SystemExit(f"{label}: {', '.join(failed)} failed; see the logs under {swarm.root}")
        if swarm.training_done(rows):
            return rows, peaks
        if time.monotonic() - last_print > 20:
            steps = [(r.get("training") or {}).get("steps") or 0 for r in rows]
            console.print(f"[dim]{label}: steps {min(steps)}..{max(steps)}[/dim]")
            last_print = time.monotonic()
        time.sleep(POLL_S)


# -- one arm ---------------------------------------------------------------------------------------

def arm_config(base: dict, arm: str, args: argparse.Namespace) -> dict:
    """The config of every training node of the arm (pure: `base` is not changed)."""
    cfg = json.loads(json.dumps(base))
    network = cfg.setdefault("network", {})
    network.update(transport="hivemind" if arm == "hivemind" else "libp2p", p2pd_startup_timeout_s=120)
    if arm != "hivemind":
        network["libp2p_host"] = "process" if arm == "libp2p-process" else "thread"
    cfg.setdefault("training", {}).update(
        max_steps=args.steps, local_rollouts=4, external_rollouts=4, external_wait_s=2.0, threads=1,
        data_seed=BASE_DATA_SEED + SEED_STRIDE * args.seed, eval_every=1_000_000, checkpoint_every=1_000_000)
    cfg.setdefault("rollouts", {})["share"] = True
    return apply_overrides(cfg, args.set)


def write_config(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def run_arm(base: dict, transport: str, args: argparse.Namespace, console: Console) -> dict[str, Any]:
    cfg = arm_config(base, transport, args)
    root = fresh_home(args.root / transport)
    train_config = write_config(root / "config.yaml", cfg)
    idle_config = write_config(root / "idle-config.yaml", {**cfg, "model": {**cfg.get("model", {}), "name_or_path": None}})
    seeds = [cfg["training"]["data_seed"] + NODE_STRIDE * i for i in range(args.nodes)]
    swarm = TimedSwarm(root / "swarm", args.nodes, train_config,
                       node_env=lambda i: {"SWARMNODE__TRAINING__DATA_SEED": str(seeds[i])})
    watch = FirstPeerWatch(swarm)
    started = time.monotonic()
    with swarm, concurrent.futures.ThreadPoolExecutor(1) as pool:
        watch.start()
        swarm.start(on_progress=lambda m: console.print(f"[dim]{transport}: {m}[/dim]"))
        idle = LocalSwarm(root / "idle", 1, idle_config, join_through_first=False,
                          extra_args=[a for m in swarm.bootstrap_maddrs for a in ("--initial-peer", m)])
        with idle:
            idle.start()
            window = pool.submit(idle_node_cpu, idle, args.nodes, args.idle_seconds)
            rows, peaks = follow_training(swarm, transport, console)
            trained_s = time.monotonic() - started
            idle_figures = window.result()
        watch.done.set()
    return summarise_arm(transport, rows, peaks, swarm, watch, idle_figures, started, trained_s, seeds)


def summarise_arm(transport: str, rows: list[dict], peaks: list[float | None], swarm: TimedSwarm, watch: FirstPeerWatch,
                  idle: dict[str, Any], started: float, trained_s: float, seeds: list[int]) -> dict[str, Any]:
    gossip = [r.get("rollouts") or {} for r in rows]
    accepted = [g.get("groups_accepted") or 0 for g in gossip]
    idle_end = idle.pop("window_end_monotonic") - started
    return {
        "transport": transport, "data_seeds": seeds, "seconds_to_trained": round(trained_s, 1),
        "idle_window_overlaps_training_s": round(max(0.0, min(trained_s, idle_end) - (idle_end - idle["window_s"])), 1),
        **swarm_latency_s(gossip), **gossip_shares(gossip), **rss_figures(peaks),
        **first_peer_figures(swarm.launched, watch.first_peer), "idle_cpu_percent": idle["idle_cpu_percent"], "idle_node": idle,
        "rss_peak_mib_by_node": [round(p, 1) if p is not None else None for p in peaks],
        "steps_by_node": [(r.get("training") or {}).get("steps") for r in rows],
        "groups_accepted_by_node": accepted, "nodes_that_accepted_none": [r["name"] for r, a in zip(rows, accepted) if not a],
        "peers_by_node": [len(r.get("peers") or []) for r in rows],
        "cpu_breakdown_s_by_node": [g.get("swarm_cpu_breakdown_s") for g in gossip],
        "logs": {str(p.parent.parent.relative_to(swarm.root.parent)): log_findings(p.read_text(errors="replace"))
                 for p in sorted(swarm.root.parent.glob("*/*/logs/node.log"))},
    }


# -- report ----------------------------------------------------------------------------------------

def figures_table(arms: dict[str, dict], over_hivemind: dict[str, dict[str, float | None]], title: str) -> Table:
    table = Table(title=title, width=80)
    table.add_column("figure", justify="left")
    for name in (*arms, *(f"{arm}/hm" for arm in over_hivemind)):
        table.add_column(name, justify="right")
    for key, label, fmt in FIGURES:
        cells = [fmt.format(a[key]) if a.get(key) is not None else "-" for a in arms.values()]
        cells += [f"{r[key]:.2f}" if r[key] is not None else "-" for r in over_hivemind.values()]
        table.add_row(label, *cells)
    return table


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    return {"cores": os.cpu_count(), "cpu": model.group(1) if model else platform.processor(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1), "platform": platform.platform(),
            "python": platform.python_version()}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=8, help="training nodes per arm")
    p.add_argument("--steps", type=int, default=100, help="local optimizer steps per node (training.max_steps), both arms")
    p.add_argument("--seed", type=int, default=0, help="node i's data seed is 1000 + 100000 * seed + 1000 * i")
    p.add_argument("--idle-seconds", type=float, default=60.0, help="the idle node's CPU window")
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "local-train.yaml")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a key of the config in both arms (repeatable)")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "transport-compare", help="the nodes' homes")
    p.add_argument("--json", type=Path, default=ROOT / "docs" / "results" / "transports.json")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    args = p.parse_args(argv)
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown or not args.arms:
        p.error(f"--arms {','.join(unknown) or '(none)'}: choose from {', '.join(ARMS)}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console(width=80)
    base = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    began, arms = time.monotonic(), {}
    for arm in args.arms:
        arms[arm] = run_arm(base, arm, args, console)
        console.print(f"{arm}: trained in {arms[arm]['seconds_to_trained']:.0f} s")
    over_hivemind = {arm: ratios(arms["hivemind"], arms[arm]) for arm in args.arms
                     if arm != "hivemind" and "hivemind" in arms}
    for arm, ratio in over_hivemind.items():
        console.print(f"{arm}/hivemind: " + ", ".join(f"{k} {v}" for k, v in ratio.items()))
    console.print(figures_table(arms, over_hivemind, f"transports, {args.nodes} nodes x {args.steps} steps "
                                                     f"(seed {args.seed})"))
    report = {"command": " ".join(["python", "scripts/bench/transport_compare.py", *argv]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "nodes": args.nodes, "steps": args.steps, "seed": args.seed,
              "idle_seconds": args.idle_seconds, "config": str(args.config.resolve().relative_to(ROOT)), "set": args.set,
              "wall_s": round(time.monotonic() - began, 1), "latency": "publish (signed, sender's clock) to accepted "
              "(fetched, checked, handed to training) at a peer: median of nodes' p50, max of nodes' p99",
              "arms": arms, "over_hivemind": over_hivemind}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.json} ({report['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
