"""What a bootstrap node costs (docs/operators.md): its memory and CPU, idle and with N nodes on it.

Starts `swarmnode bootstrap` on 127.0.0.1 (swarmnode.testing.BootstrapNode) and samples its
daemon and p2pd (RSS every second; CPU seconds over the window) in phases of --seconds each:
  idle              no node joined;
  model-less        N nodes of configs/local.yaml joined only through it: the DHT and peer
                    record traffic alone;
  training          N nodes of configs/local-train.yaml joined only through it: training nodes
                    that also announce rollouts and gradient summaries in the DHT.
For comparison it samples one training node too. Prints a table and writes
docs/results/bootstrap_cost.json.

Every node here dials the others directly on 127.0.0.1, so the bootstrap node relays nothing:
the cost of relaying NATed nodes is measured once relaying lands (a phase added to PHASES).

Run from the repository root:  .venv/bin/python scripts/bench/bootstrap_cost.py
(options: --nodes N, --seconds S, --json PATH, --skip-training)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console
from rich.table import Table

from swarmnode.config import bundled_config_path
from swarmnode.home import NodeHome, read_runtime
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.status.client import fetch
from swarmnode.testing.bootstrap_node import BootstrapNode, free_tcp_port
from swarmnode.testing.experiments.process_samples import sample

ROOT = Path(__file__).resolve().parents[2]
JOIN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Phase:
    name: str
    node_config: str | None  # a bundled config of the N nodes; None: no node


PHASES = [Phase("idle", None), Phase("model-less", "local.yaml"), Phase("training", "local-train.yaml")]
SETTLE_S = 5.0  # after the bootstrap node starts, before the idle window (its start-up is no idle cost)


# -- pure computation ------------------------------------------------------------------------------

# -- measuring -------------------------------------------------------------------------------------

def processes_of(pid: int) -> dict[str, psutil.Process]:
    """{"daemon": the swarmnode process, "p2pd": its p2pd child}."""
    daemon = psutil.Process(pid)
    children = [c for c in daemon.children() if "p2pd" in c.name()]
    return {"daemon": daemon, **({"p2pd": children[0]} if children else {})}


def wait_joined(boot: BootstrapNode, swarm: LocalSwarm, nodes: int) -> float:
    """Seconds until the bootstrap node lists every node and every node lists all the others."""
    started = time.monotonic()
    boot_url = read_runtime(boot.home)["status_url"]
    urls = [read_runtime(n.home)["status_url"] for n in swarm.nodes]
    while time.monotonic() - started < JOIN_TIMEOUT_S:
        counts = [len(fetch(url, "/status")["peers"]) for url in urls]
        if len(fetch(boot_url, "/status")["peers"]) == nodes and all(c == nodes for c in counts):
            return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"the nodes did not all join within {JOIN_TIMEOUT_S:.0f}s (peer counts {counts})")


def run_phase(phase: Phase, boot: BootstrapNode, root: Path, nodes: int, seconds: float, console: Console) -> dict[str, Any]:
    result: dict[str, Any] = {"phase": phase.name, "nodes": 0 if phase.node_config is None else nodes,
                              "node_config": phase.node_config and f"configs/{phase.node_config}"}
    if phase.node_config is None:
        console.print(f"[dim]{phase.name}: sampling the bootstrap node for {seconds:.0f}s[/dim]")
        time.sleep(SETTLE_S)
        return {**result, "bootstrap": sample(processes_of(boot.process.pid), seconds)}
    swarm = LocalSwarm(root / phase.name, nodes, bundled_config_path(phase.node_config),
                       extra_args=["--initial-peer", boot.address], join_through_first=False,
                       node_env=lambda i: {"SWARMNODE__TRAINING__DATA_SEED": str(1000 + 1000 * i)})
    with swarm:
        swarm.start(on_progress=lambda m: console.print(f"[dim]{phase.name}: {m}[/dim]"))
        result["join_s"] = round(wait_joined(boot, swarm, nodes), 1)
        console.print(f"[dim]{phase.name}: all joined in {result['join_s']}s; sampling for {seconds:.0f}s[/dim]")
        node0 = processes_of(read_runtime(swarm.nodes[0].home)["pid"])
        both = {**{f"boot {k}": p for k, p in processes_of(boot.process.pid).items()},
                **{f"node0 {k}": p for k, p in node0.items()}}
        figures = sample(both, seconds)
        boot_status = fetch(read_runtime(boot.home)["status_url"], "/status")  # while the nodes still run
    result["bootstrap"] = _part(figures, "boot ")
    result["node0"] = _part(figures, "node0 ")
    result["bootstrap_routing_table"] = boot_status["routing_table_size"]
    result["bootstrap_peers"] = len(boot_status["peers"])
    return result


def _part(figures: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The figures of one node's processes (their names without `prefix`), with their own total."""
    rss = {k[len(prefix):]: v for k, v in figures["rss_mib"].items() if k.startswith(prefix)}
    cpu = {k[len(prefix):]: v for k, v in figures["cpu_percent"].items() if k.startswith(prefix)}
    rss["total"] = {stat: round(sum(v[stat] for v in rss.values()), 1) for stat in ("mean", "max")}
    cpu["total"] = round(sum(cpu.values()), 2)
    return {"rss_mib": rss, "cpu_percent": cpu}


def table(phases: list[dict[str, Any]]) -> Table:
    t = Table(title="bootstrap node cost (RSS MiB mean/max; CPU % of one core)")
    for col in ("phase", "nodes", "daemon RSS", "p2pd RSS", "total RSS", "daemon CPU", "p2pd CPU", "total CPU"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    for p in phases:
        for who in ("bootstrap", "node0"):
            if who not in p:
                continue
            f = p[who]
            rss = [f"{f['rss_mib'][k]['mean']:.0f}/{f['rss_mib'][k]['max']:.0f}" for k in ("daemon", "p2pd", "total")]
            cpu = [f"{f['cpu_percent'][k]:.1f}" for k in ("daemon", "p2pd", "total")]
            label = f"{p['phase']}: bootstrap node" if who == "bootstrap" else f"{p['phase']}: one of the nodes"
            t.add_row(label, str(p["nodes"]) if who == "bootstrap" else "", *rss, *cpu)
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="nodes joined through the bootstrap node")
    parser.add_argument("--seconds", type=float, default=60.0, help="sampling window of each phase")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "results" / "bootstrap_cost.json")
    parser.add_argument("--skip-training", action="store_true", help="leave out the phase with training nodes")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    phases = [p for p in PHASES if not (args.skip_training and p.node_config == "local-train.yaml")]
    results = []
    with tempfile.TemporaryDirectory(prefix="bootstrap-cost-") as tmp:
        root = Path(tmp)
        boot = BootstrapNode(NodeHome(root / "boot"), free_tcp_port(), bundled_config_path("local.yaml"))
        try:
            boot.start()
            console.print(f"[dim]bootstrap node {boot.address} (pid {boot.process.pid})[/dim]")
            for phase in phases:
                results.append(run_phase(phase, boot, root, args.nodes, args.seconds, console))
        finally:
            boot.stop()
    console.print(table(results))
    report = {"command": " ".join(["python", "scripts/bench/bootstrap_cost.py", *sys.argv[1:]]),
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
              "seconds_per_phase": args.seconds, "relayed_nodes": 0,
              "note": "every node dials the others directly on 127.0.0.1: the bootstrap node relays nothing here",
              "phases": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
