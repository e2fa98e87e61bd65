#!/usr/bin/env python3
"""What rollout gossip costs: the same local swarm with sharing on (4/4 SAPO split) and off.

Starts N real daemons on 127.0.0.1 (configs/local-train.yaml) twice, each node training R
steps: once with I=4 local + J=4 external groups per step and rollout sharing on, once with
I=8, J=0 and sharing off (the baseline: peer records and status only). Prints, per run:
bytes per rollout batch on the wire, publish-to-accepted latency p50/p99 across the swarm,
swarm-I/O CPU per second of node uptime (event-loop thread + gossip workers + p2pd) and RSS
per node (python + p2pd), and the ratio of the two runs' swarm-I/O CPU shares.

Other processes on the machine stretch wall time, so each run also reports swarm-I/O CPU as a
share of the nodes' own CPU (every thread of the node process plus its p2pd, /proc), both taken
from the first poll at which every node trains to the end, and (from nodes that count them) how
many fetch requests, held long-polls, DHT announcement reads and stores a node made per second
of uptime. --set overrides a key of configs/local-train.yaml for both runs (repeatable).

    .venv/bin/python scripts/bench/bench_gossip.py --nodes 4 --rounds 150
    .venv/bin/python scripts/bench/bench_gossip.py --nodes 4 --rounds 150 --set rollouts.long_poll_s=0
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from swarmnode.config import load_config
from swarmnode.home import read_runtime
from swarmnode.swarm.transports.base import process_cpu_s
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.experiments.figures import swarm_latency_s
from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, node_memory_mib

ROOT = Path(__file__).resolve().parents[2]


RATES = ("fetch_requests", "fetches_deferred", "empty_fetches", "requests_served", "requests_held", "announcement_reads", "announcements")


def per_node_second(gossip: list[dict], key: str) -> float | None:
    rates = [g[key] / g["uptime_s"] for g in gossip if g.get(key) is not None and g.get("uptime_s")]
    return round(statistics.mean(rates), 2) if rates else None


def cpu_sample(swarm: LocalSwarm, rows: list[dict]) -> list[tuple[float, float]] | None:
    """(swarm-I/O CPU, node process + p2pd CPU) per node, in seconds; None until every node trains."""
    sample = []
    for node, row in zip(swarm.nodes, rows):
        gossip, training = row.get("rollouts") or {}, row.get("training") or {}
        if gossip.get("swarm_cpu_s") is None or not training.get("policy_version"):
            return None
        runtime = read_runtime(node.home)
        pids = [runtime.get("pid")] + [c.get("pid") for c in runtime.get("children", [])]
        sample.append((gossip["swarm_cpu_s"], sum(process_cpu_s(pid) for pid in pids if pid)))
    return sample


def share_of_node_cpu(first: list[tuple[float, float]] | None, last: list[tuple[float, float]] | None) -> float | None:
    """Mean over nodes of (swarm-I/O CPU) / (node CPU) between two samples."""
    if not first or not last:
        return None
    shares = [(s1 - s0) / (n1 - n0) for (s0, n0), (s1, n1) in zip(first, last) if n1 > n0]
    return round(statistics.mean(shares), 4) if shares else None


def run(args, name: str, local: int, external: int, share: bool, console: Console) -> dict:
    base = yaml.safe_load((ROOT / "configs" / "local-train.yaml").read_text(encoding="utf-8"))
    apply_overrides(base, args.set)
    base["training"].update(local_rollouts=local, external_rollouts=external, external_wait_s=2.0 if external else 0.0,
                            eval_every=100_000, checkpoint_every=100_000)
    base["rollouts"]["share"] = share
    root = fresh_home(args.root / name)
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(base), encoding="utf-8")
    seed = load_config(config_path, environ={}).training.data_seed
    swarm = LocalSwarm(root, args.nodes, config_path, node_env=lambda i: {
        "SWARMNODE__TRAINING__DATA_SEED": str(seed + 1000 * i), "SWARMNODE__TRAINING__MAX_STEPS": str(args.rounds)})
    started = time.monotonic()
    with swarm:
        swarm.start()
        rows = swarm.poll()
        first = cpu_sample(swarm, rows)
        while not swarm.training_done(rows):
            time.sleep(2.0)
            rows = swarm.poll()
            first = first or cpu_sample(swarm, rows)
        last = cpu_sample(swarm, rows)
        memory = [node_memory_mib(read_runtime(n.home)) for n in swarm.nodes]
    gossip = [r.get("rollouts") or {} for r in rows]
    accepted = sum(g.get("groups_accepted") or 0 for g in gossip)
    trained = sum((r.get("training") or {}).get("external_trained") or 0 for r in rows)
    values = lambda key: [g[key] for g in gossip if g.get(key) is not None]  # noqa: E731
    result = {
        "name": name, "seconds": round(time.monotonic() - started, 1),
        "bytes_per_batch": round(statistics.mean(values("bytes_per_batch")), 1) if values("bytes_per_batch") else None,
        **swarm_latency_s(gossip),
        "swarm_cpu_share": round(statistics.mean(values("gossip_time_share")), 4),
        "swarm_share_of_node_cpu": share_of_node_cpu(first, last),
        "per_node_s": {key: per_node_second(gossip, key) for key in RATES},
        # peers' groups checked and re-scored per one trained: the rest aged out of the pool
        "accepted_per_trained": round(accepted / trained, 2) if trained else None,
        "cpu_breakdown_s": [g.get("swarm_cpu_breakdown_s") for g in gossip],
        "memory_mib": round(statistics.mean(m for m in memory if m is not None), 1),
    }
    console.print(result)
    return result


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rounds", type=int, default=150)
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "bench-gossip")
    p.add_argument("--json", action="store_true", help="last line: one JSON object with the figures")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a key of configs/local-train.yaml in both runs (repeatable)")
    args = p.parse_args(argv)
    console = Console()
    sharing = run(args, "sharing-4-4", 4, 4, True, console)
    baseline = run(args, "no-sharing-8-0", 8, 0, False, console)
    table = Table(title=f"rollout gossip, {args.nodes} nodes x {args.rounds} rounds")
    for col in ("run", "bytes/batch", "latency p50", "latency p99", "swarm I/O CPU share", "of node CPU", "RSS/node MiB"):
        table.add_column(col, justify="right")
    for r in (sharing, baseline):
        of_node = f"{100 * r['swarm_share_of_node_cpu']:.2f}%" if r["swarm_share_of_node_cpu"] is not None else "-"
        table.add_row(r["name"], str(r["bytes_per_batch"] or "-"), f"{r['latency_p50_s'] or 0:.3f} s", f"{r['latency_p99_s'] or 0:.3f} s",
                      f"{100 * r['swarm_cpu_share']:.2f}%", of_node, f"{r['memory_mib']:.0f}")
    console.print(table)
    added = sharing["swarm_cpu_share"] - baseline["swarm_cpu_share"]
    ratio = sharing["swarm_cpu_share"] / baseline["swarm_cpu_share"] if baseline["swarm_cpu_share"] else float("inf")
    console.print(f"gossip adds {100 * added:.2f}% of node wall time in CPU (swarm I/O share x{ratio:.2f} the no-sharing baseline)")
    added_of_node = None
    if sharing["swarm_share_of_node_cpu"] is not None and baseline["swarm_share_of_node_cpu"] is not None:
        added_of_node = round(sharing["swarm_share_of_node_cpu"] - baseline["swarm_share_of_node_cpu"], 4)
        console.print(f"gossip adds {100 * added_of_node:.2f}% of the nodes' own CPU")
    console.print(f"per node and second of uptime (sharing run): {sharing['per_node_s']}")
    console.print(f"peers' groups checked per group trained (sharing run): {sharing['accepted_per_trained']}")
    if args.json:
        print(json.dumps({"sharing": sharing, "baseline": baseline, "gossip_cpu_share_added": round(added, 4),
                          "swarm_cpu_share_ratio": round(ratio, 3), "gossip_share_of_node_cpu_added": added_of_node}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
