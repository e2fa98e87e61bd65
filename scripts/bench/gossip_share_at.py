"""The demo's gossip column at several commits, side by side (issue 38: what moved it).

For each commit given, checks it out into a temporary git worktree and runs that commit's demo
(`swarmnode swarm local --nodes 3 --config configs/local-train.yaml --duration S`, the same as
./scripts/demo.sh) with that worktree first on PYTHONPATH, then reads each node's last status
(<root>/summary.json): the gossip share (`rollouts.gossip_time_share`: the CPU of the event
loop, gossip worker threads and the transport, over uptime) and its parts, and the size of the
node's sealed gradient summaries (`summaries.bytes_per_summary`), per node. Commits run
one after another on this machine; give the same commit twice to see the run-to-run spread.

    .venv/bin/python scripts/bench/gossip_share_at.py 765ca1e eeca73c HEAD --seconds 100
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swarmnode.testing.experiments.worktrees import environment_of, worktree_at

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("event_loop", "gossip_workers", "transport")


def node_shares(summary: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Per node: the gossip share and each part of its CPU as a share of the node's uptime."""
    shares = []
    for node in summary:
        rollouts = node.get("rollouts") or {}
        uptime = rollouts.get("uptime_s") or 0.0
        parts = dict(rollouts.get("swarm_cpu_breakdown_s") or {})
        parts.setdefault("transport", parts.get("p2pd", 0.0))  # its name before the libp2p transport came
        row = {"gossip": float(rollouts.get("gossip_time_share") or 0.0)}
        row.update({p: (round(parts.get(p, 0.0) / uptime, 6) if uptime else 0.0) for p in PARTS})
        row["bytes_per_summary"] = float((node.get("summaries") or {}).get("bytes_per_summary") or 0.0)
        shares.append(row)
    return shares


def medians(shares: list[dict[str, float]]) -> dict[str, float]:
    keys = ("gossip", *PARTS, "bytes_per_summary")
    return {k: round(statistics.median(s.get(k, 0.0) for s in shares), 5) for k in keys} if shares else {}


def run_commit(commit: str, seconds: float, tmp: Path) -> dict[str, Any]:
    """Run the demo of `commit` (a worktree of it) for `seconds`; its per-node shares."""
    with worktree_at(ROOT, commit, tmp / f"tree-{commit}") as tree:
        root = tmp / f"run-{commit}"
        subprocess.run([sys.executable, "-m", "swarmnode", "swarm", "local", "--nodes", "3", "--root", str(root),
                        "--config", str(tree / "configs" / "local-train.yaml"), "--duration", str(seconds)],
                       cwd=tree, env=environment_of(tree), check=True, capture_output=True, timeout=seconds + 300)
        shares = node_shares(json.loads((root / "summary.json").read_text()))
    return {"commit": commit, "nodes": shares, "median": medians(shares)}


def render(results: list[dict[str, Any]]) -> Table:
    t = Table(title="demo gossip column and its parts (median of 3 nodes, % of uptime)")
    for head in ("commit", "gossip", *PARTS, "KB/summary"):
        t.add_column(head, justify="right")
    for r in results:
        t.add_row(r["commit"], *(f"{100 * r['median'].get(k, 0.0):.2f}" for k in ("gossip", *PARTS)),
                  f"{r['median'].get('bytes_per_summary', 0.0) / 1000:.1f}")
    return t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("commits", nargs="+")
    p.add_argument("--seconds", type=float, default=100.0)
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(argv)
    console = Console(width=80)
    results = []
    with tempfile.TemporaryDirectory(prefix="gossip-share-") as tmp:
        for commit in args.commits:
            results.append(run_commit(commit, args.seconds, Path(tmp)))
            console.print(f"{commit}: {results[-1]['median']}")
    console.print(render(results))
    if args.json is not None:
        args.json.write_text(json.dumps({"command": " ".join(["python", "scripts/bench/gossip_share_at.py",
                                                                 *(argv or sys.argv[1:])]),
                                         "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
