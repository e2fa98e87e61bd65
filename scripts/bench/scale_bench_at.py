"""The real-daemon scale bench (scale_bench.py) at several commits, one after another (issue 43:
what moved the libp2p host's CPU).

For each commit given, checks it out into a temporary git worktree and runs that commit's
scripts/bench/scale_bench.py with the same arguments (everything after `--`), that worktree first
on PYTHONPATH; then prints, per run, the median node's CPU split into the daemon and its
transport's helper (p2pd, or the libp2p host process), all nodes' cores, the peer listings that
lapsed, and each run's helper CPU over the first commit's mean. Give commits more than once,
interleaved, to see the run-to-run spread:

    .venv/bin/python scripts/bench/scale_bench_at.py aba42b8 HEAD aba42b8 HEAD -- \\
        --nodes 8 --seconds 60 --set network.transport=libp2p --join-timeout 120
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


def run_figures(run: dict[str, Any]) -> dict[str, Any]:
    """One scale_bench run's figures: median daemon and helper CPU (% of a core), all nodes'
    cores, listings lapsed, join seconds, pushed entries refused (median node)."""
    nodes = run["node_figures"]
    return {
        "daemon_cpu": statistics.median(n["cpu_percent"]["daemon"] for n in nodes),
        "helper_cpu": statistics.median(n["cpu_percent"]["p2pd"] for n in nodes),
        "nodes_cores": run["nodes_cores"],
        "listings_lapsed": run["listings_lapsed"],
        "join_s": run["join_s"],
        "pushes_refused": statistics.median(n["counters"].get("network/pushed_entries_refused", 0) for n in nodes),
    }


def helper_ratios(results: list[dict[str, Any]]) -> list[float]:
    """Each run's helper CPU over the mean of the first commit's runs."""
    first = results[0]["commit"]
    base = statistics.mean(r["figures"]["helper_cpu"] for r in results if r["commit"] == first)
    return [round(r["figures"]["helper_cpu"] / base, 3) if base else float("nan") for r in results]


def run_commit(commit: str, bench_args: list[str], tmp: Path, index: int) -> list[dict[str, Any]]:
    with worktree_at(ROOT, commit, tmp / f"tree-{index}") as tree:
        out = tmp / f"run-{index}.json"
        subprocess.run([sys.executable, str(tree / "scripts" / "bench" / "scale_bench.py"), *bench_args,
                        "--layouts", "sharded", "--json", str(out)], cwd=tree, env=environment_of(tree), check=True,
                       capture_output=True)
        runs = json.loads(out.read_text())["runs"]
    return [{"commit": commit, "nodes": r["nodes"], "figures": run_figures(r)} for r in runs]


def render(results: list[dict[str, Any]]) -> Table:
    t = Table(title="scale bench per commit (median node; CPU in % of a core)")
    for head in ("commit", "N", "daemon", "helper", "x first", "cores", "lapsed", "refused"):
        t.add_column(head, justify="right")
    for r, ratio in zip(results, helper_ratios(results)):
        f = r["figures"]
        t.add_row(r["commit"], str(r["nodes"]), f"{f['daemon_cpu']:.2f}", f"{f['helper_cpu']:.2f}", f"{ratio:.2f}",
                  f"{f['nodes_cores']:.2f}", str(f["listings_lapsed"]), f"{f['pushes_refused']:g}")
    return t


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, bench_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("commits", nargs="+")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(ours)
    console = Console(width=80)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="scale-at-") as tmp:
        for i, commit in enumerate(args.commits):
            results += run_commit(commit, bench_args, Path(tmp), i)
            console.print(f"{commit}: {results[-1]['figures']}")
    console.print(render(results))
    if args.json is not None:
        args.json.write_text(json.dumps({"command": " ".join(["python", "scripts/bench/scale_bench_at.py", *argv]),
                                         "helper_cpu_over_first": helper_ratios(results), "results": results},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
