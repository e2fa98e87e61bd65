"""A node's cost against the swarm's size on the real transport (issue 38): N model-less daemons.

For each N of --nodes and each key layout of --layouts, starts N `swarmnode run` daemons of one
config on 127.0.0.1
(swarmnode.node.local_swarm.LocalSwarm: node0 first, the rest join through it), waits until
every node lists all the others (the join time), then measures each node over --seconds:
  CPU        CPU seconds of the daemon and its p2pd child (psutil) as % of one core;
  records    what the node itself counts in its status document (docs/status.md): `messages`
             accepted (by kind: peer records that advanced its peer table) and rejected (by
             reason), `limits.values_over_key_cap`, `network.counters`: deltas per minute;
  p2pd I/O   the node counts no DHT bytes or requests, and /proc/<pid>/net/* is per network
             namespace, not per process (every node here shares one loopback), so bytes are
             read from p2pd's syscall byte counters (/proc/<pid>/io rchar/wchar, psutil
             io_counters): what it read and wrote on its TCP connections to peers (the wire,
             encrypted) and on the unix socket to its daemon alike, so roughly each DHT byte
             twice (a peer's answer comes in on TCP and goes on to the daemon). An upper bound
             of the wire bytes that grows with them. The daemon's own side cannot be
             subtracted: Python's send/recv (sendto/recvfrom) are not in rchar/wchar.
  DHT req    the gets and stores the node started (hivemind transport's `network.counters`:
             dht_gets + dht_stores) per minute;
  entries    values its record validator judged per minute (dht_entries_judged: stored onto it
             by peers and brought back by its reads), the entries it parsed.
Layouts: `sharded` is this release (protocol version 2: keys spread over shards); `one-key` is the
previous release's layout (one key per window for everyone), run as this code speaking version 1
(swarmnode/testing/other_version.py, SWARMNODE_TEST_PROTOCOL=1), so both run in the same bench.

Also the machine's CPU share over each window (psutil.cpu_times, all cores), and the log-log
slope of each per-node median against N (first to last N). Prints a table at 80 columns and
writes docs/results/scale_bench.json and a PNG beside it (if matplotlib is installed).

The node configuration is a parameter (--config, --set), so the same bench measures another
layout once it is a config switch. Run from the repository root:

    .venv/bin/python scripts/bench/scale_bench.py --nodes 8 16 32 --seconds 60 --layouts sharded one-key
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml
from rich import box
from rich.console import Console
from rich.table import Table

from swarmnode.config import bundled_config_path
from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalNode, LocalSwarm, wait_ready
from swarmnode.status.client import fetch
from swarmnode.testing.experiments.figures import loglog_slope
from swarmnode.testing.experiments.local_runs import apply_overrides, parse_overrides, write_results
from swarmnode.testing.experiments.process_samples import cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
MB = 1_000_000
# The per-node figures of the table and the slopes: key -> column head.
FIGURES = {
    "cpu_percent": "CPU%",
    "records_per_min": "rec/m",
    "p2pd_mb_per_min": "MB/m",
    "dht_requests_per_min": "req/m",
    "entries_per_min": "ent/m",
}
# How a daemon of each key layout is started: (module, environment).
LAYOUTS = {
    "sharded": ("swarmnode", {}),
    "one-key": ("swarmnode.testing.other_version", {"SWARMNODE_TEST_PROTOCOL": "1"}),
}


@dataclass(frozen=True)
class Sample:
    """One node at one moment: its status document, CPU seconds and syscall bytes per process."""

    at: float  # time.monotonic()
    status: dict[str, Any]
    cpu_s: dict[str, float]  # "daemon", "p2pd" -> user + system seconds
    io_chars: dict[str, tuple[int, int]]  # "daemon", "p2pd" -> (read_chars, write_chars)


# -- pure computation ------------------------------------------------------------------------------

def node_config(base: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`base` with each --set section.field=value applied (`base` is not changed)."""
    return apply_overrides(copy.deepcopy(base), overrides)


def status_counters(status: dict[str, Any]) -> dict[str, int]:
    """The counters a status document holds that grow with DHT traffic, flat: `accepted/<kind>`,
    `rejected/<reason>`, `values_over_key_cap`, `network/<counter>`."""
    messages = status.get("messages") or {}
    out = {f"accepted/{k}": int(v) for k, v in (messages.get("accepted") or {}).items()}
    out.update({f"rejected/{k}": int(v) for k, v in (messages.get("rejected") or {}).items()})
    out["values_over_key_cap"] = int((status.get("limits") or {}).get("values_over_key_cap", 0))
    counters = ((status.get("network") or {}).get("counters") or {})
    out.update({f"network/{k}": int(v) for k, v in counters.items() if isinstance(v, (int, float))})
    return out


def counter_deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """How much each counter of status_counters grew from `before` to `after` (absent: 0)."""
    old, new = status_counters(before), status_counters(after)
    return {k: new[k] - old.get(k, 0) for k in sorted(new)}


def io_bytes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]],
             name: str = "p2pd") -> tuple[int, int]:
    """(read, written) syscall bytes of process `name` between two (read_chars, write_chars)."""
    return after[name][0] - before[name][0], after[name][1] - before[name][1]


def node_figures(before: Sample, after: Sample) -> dict[str, Any]:
    """One node's figures over the window between two samples of it."""
    wall = after.at - before.at
    per_min = 60.0 / wall
    cpu = {k: round(100.0 * (after.cpu_s[k] - before.cpu_s[k]) / wall, 2) for k in after.cpu_s}
    cpu["total"] = round(sum(cpu.values()), 2)
    deltas = counter_deltas(before.status, after.status)
    accepted = sum(v for k, v in deltas.items() if k.startswith("accepted/"))
    rejected = sum(v for k, v in deltas.items() if k.startswith("rejected/"))
    read, written = io_bytes(before.io_chars, after.io_chars)
    requests = deltas.get("network/dht_gets", 0) + deltas.get("network/dht_stores", 0)
    return {
        "seconds": round(wall, 2),
        "cpu_percent": cpu,
        "records_per_min": round(accepted * per_min, 1),
        "rejected_per_min": round(rejected * per_min, 1),
        "p2pd_mb_per_min": round((read + written) * per_min / MB, 3),
        "p2pd_read_mb_per_min": round(read * per_min / MB, 3),
        "p2pd_written_mb_per_min": round(written * per_min / MB, 3),
        "dht_requests_per_min": round(requests * per_min, 1),
        "entries_per_min": round(deltas.get("network/dht_entries_judged", 0) * per_min, 1),
        "counters": deltas,
        "peers": len(after.status.get("peers") or []),
        # Peers listed through the whole window: one whose record lapsed meanwhile was dropped
        # and, seen again, listed anew (its age restarts).
        "peers_kept_through": sum(1 for p in after.status.get("peers") or [] if (p.get("age_s") or 0.0) >= wall),
        "routing_table_size": after.status.get("routing_table_size"),
    }


def headline(node: dict[str, Any]) -> dict[str, float]:
    """The FIGURES of one node's figures."""
    return {"cpu_percent": node["cpu_percent"]["total"], **{k: node[k] for k in FIGURES if k != "cpu_percent"}}


def spread_of(nodes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per FIGURES key, the median and the max over the nodes."""
    lines = [headline(n) for n in nodes]
    return {k: {"median": round(statistics.median(line[k] for line in lines), 3),
                "max": round(max(line[k] for line in lines), 3)} for k in FIGURES}


def machine_share(before: dict[str, float], after: dict[str, float]) -> float:
    """Busy share of all cores between two psutil.cpu_times() (as dicts): 1 - (idle + iowait) / total."""
    grew = {k: after[k] - before.get(k, 0.0) for k in after}
    total = sum(v for k, v in grew.items() if k not in ("guest", "guest_nice"))  # guest is counted in user
    idle = grew.get("idle", 0.0) + grew.get("iowait", 0.0)
    return round(1.0 - idle / total, 4) if total > 0 else 0.0


def nodes_cores(nodes: list[dict[str, Any]]) -> float:
    """The cores the nodes used in all (daemons and p2pds): their CPU % summed, / 100."""
    return round(sum(n["cpu_percent"]["total"] for n in nodes) / 100.0, 3)


# A run whose machine was this busy measured the machine, not the nodes: each node got what was
# left of the cores, so its CPU (and what it managed to do) is capped there.
SATURATED_SHARE = 0.9


def unsaturated(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs whose machine stayed under SATURATED_SHARE busy."""
    return [r for r in runs if r["machine_cpu_share"] < SATURATED_SHARE]


def slopes(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Per FIGURES key, the log-log slope of the per-node median against N, over the unsaturated
    runs only (None with fewer than two)."""
    kept = unsaturated(runs)
    return {k: loglog_slope([(r["nodes"], r["per_node"][k]["median"]) for r in kept if r["per_node"][k]["median"] > 0])
            for k in FIGURES}


def slopes_by_layout(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """slopes() of each layout's runs."""
    return {layout: slopes([r for r in runs if r.get("layout", "sharded") == layout])
            for layout in dict.fromkeys(r.get("layout", "sharded") for r in runs)}


def busiest_ratio(run: dict[str, Any], key: str = "cpu_percent") -> float:
    """The busiest node's figure over the median node's (1.0 when the median is 0)."""
    spread = run["per_node"][key]
    return round(spread["max"] / spread["median"], 2) if spread["median"] > 0 else 1.0


def short(x: float) -> str:
    """A figure in at most 4 characters' worth of digits: 123, 12.3, 1.23."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def table_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """One row per run: N, layout, join seconds ("-": not every node listed all the others by
    --join-timeout), each FIGURES median, the busiest node's CPU over
    the median's, the cores all nodes used / the machine's busy share."""
    rows = []
    for r in runs:
        cells = [short(r["per_node"][k]["median"]) for k in FIGURES]
        saturated = "*" if r["machine_cpu_share"] >= SATURATED_SHARE else ""
        join = "-" if r["join_s"] is None else f"{r['join_s']:.0f}"
        rows.append([str(r["nodes"]) + saturated, r.get("layout", "sharded"), join, *cells,
                     f"{busiest_ratio(r):.1f}x", f"{r['nodes_cores']:.2f}/{100 * r['machine_cpu_share']:.0f}%"])
    return rows


def slope_row(layout: str, found: dict[str, float | None]) -> list[str]:
    return ["slope", layout, "", *["-" if found[k] is None else f"{found[k]:.2f}" for k in FIGURES], "", ""]


def render(runs: list[dict[str, Any]], config_label: str) -> Table:
    t = Table(title=f"per node, median ({config_label})", box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False,
              caption="/m: per minute; MB: p2pd's syscall bytes; top/med: busiest node's CPU over the "
                      "median's; cores: all nodes' cores / machine busy; *: machine "
                      f"over {SATURATED_SHARE:.0%} busy, left out of the slopes")
    for head in ("N", "layout", "join", *FIGURES.values(), "top/med", "cores"):
        t.add_column(head, justify="right")
    for row in table_rows(runs):
        t.add_row(*row)
    for layout, found in slopes_by_layout(runs).items():
        t.add_row(*slope_row(layout, found), style="bold")
    return t


class PatientSwarm(LocalSwarm):
    """A LocalSwarm whose nodes may take `start_timeout_s` to come up: 32 daemons started at once on
    2 cores take longer than LocalSwarm's 90 s."""

    def __init__(self, *args: Any, start_timeout_s: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.start_timeout_s = start_timeout_s

    def wait_ready(self, node: LocalNode, timeout: float = 0.0) -> dict[str, Any]:
        return wait_ready(node, max(timeout, self.start_timeout_s))


# -- measuring -------------------------------------------------------------------------------------

def config_path(name: str) -> Path:
    """A path as given, else a bundled config's (`local` or `local.yaml`)."""
    path = Path(name)
    if path.exists():
        return path
    return bundled_config_path(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


def daemon_processes(runtime: dict[str, Any]) -> dict[str, psutil.Process]:
    """{"daemon": the node's process, "p2pd": its transport's child} from its runtime file: p2pd
    on hivemind, the host process on libp2p (`network.libp2p_host: process`; its figures go
    under the same key). A transport without a child (libp2p on a thread) is an error."""
    procs = {"daemon": psutil.Process(runtime["pid"])}
    children = runtime.get("children", [])
    named = [c for c in children if "p2pd" in str(c.get("name", ""))]
    for child in named or children[:1]:
        procs["p2pd"] = psutil.Process(child["pid"])
    if "p2pd" not in procs:
        raise RuntimeError(f"no transport child in the runtime file of pid {runtime['pid']}")
    return procs


def take_sample(url: str, procs: dict[str, psutil.Process]) -> Sample:
    at = time.monotonic()
    cpu = {k: cpu_seconds(p.cpu_times()) for k, p in procs.items()}
    io = {k: (c.read_chars, c.write_chars) for k, c in ((k, p.io_counters()) for k, p in procs.items())}
    return Sample(at, fetch(url, "/status", timeout=5.0), cpu, io)


def wait_all_listed(urls: list[str], timeout_s: float) -> float:
    """Seconds until every node lists all the others in its peer table."""
    started = time.monotonic()
    counts: list[int] = []
    while time.monotonic() - started < timeout_s:
        counts = [len(fetch(url, "/status", timeout=5.0)["peers"]) for url in urls]
        if all(c == len(urls) - 1 for c in counts):
            return time.monotonic() - started
        time.sleep(1.0)
    raise RuntimeError(f"not every node listed all the others within {timeout_s:.0f}s (peer counts {counts})")


def measure(n: int, layout: str, cfg: Path, root: Path, args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """Start n nodes of `layout`, wait until they all know each other, sample every node over args.seconds."""
    say = lambda m: console.print(f"[dim]N={n} {layout}: {m}[/dim]")  # noqa: E731
    started = time.monotonic()
    module, env = LAYOUTS[layout]
    with PatientSwarm(root / f"n{n}-{layout}", n, cfg, start_timeout_s=args.start_timeout,
                      node_module=lambda i: module, node_env=lambda i: dict(env)) as swarm:
        swarm.start(on_progress=lambda m: None)
        start_s = time.monotonic() - started
        runtimes = [read_runtime(node.home) for node in swarm.nodes]
        urls = [r["status_url"] for r in runtimes]
        say(f"all {n} up in {start_s:.0f}s; waiting until each lists the others")
        try:
            join_s: float | None = wait_all_listed(urls, args.join_timeout)
            say(f"all listed in {join_s:.0f}s; measuring for {args.seconds:.0f}s")
        except RuntimeError as e:  # measured all the same: what a swarm that never settles costs
            join_s = None
            say(f"{e}; measuring for {args.seconds:.0f}s anyway")
        procs = [daemon_processes(r) for r in runtimes]
        machine_before = psutil.cpu_times()._asdict()
        before = [take_sample(u, p) for u, p in zip(urls, procs)]
        time.sleep(args.seconds)
        after = [take_sample(u, p) for u, p in zip(urls, procs)]
        machine_after = psutil.cpu_times()._asdict()
    nodes = [{"name": f"node{i}", **node_figures(b, a)} for i, (b, a) in enumerate(zip(before, after))]
    lapsed = sum(n - 1 - node["peers_kept_through"] for node in nodes)
    say(f"{lapsed} of {n * (n - 1)} peer listings lapsed or missing during the window")
    return {"nodes": n, "layout": layout, "start_s": round(start_s, 1), "listings_lapsed": lapsed,
            "join_s": None if join_s is None else round(join_s, 1),
            "machine_cpu_share": machine_share(machine_before, machine_after),
            "nodes_cores": nodes_cores(nodes), "per_node": spread_of(nodes), "node_figures": nodes}


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def machine() -> dict[str, Any]:
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1)}


def plot(report: dict[str, Any], path: Path) -> None:
    """Per-node medians against N on log-log axes (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for layout, style in zip(report["slopes"], ("o-", "s--", "^:")):
        runs = [r for r in report["runs"] if r.get("layout", "sharded") == layout]
        ns = [r["nodes"] for r in runs]
        for key, head in FIGURES.items():
            ys = [r["per_node"][key]["median"] for r in runs]
            if ys and all(y > 0 for y in ys):
                ax.plot(ns, ys, style, label=f"{layout} {head} (slope {report['slopes'][layout][key]})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes (N)")
    ax.set_ylabel("per node, median")
    ax.set_title(f"{report['config']} at {report['commit']}: per-node cost against N")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[4, 8, 16], help="swarm sizes, one run each")
    p.add_argument("--layouts", nargs="+", choices=sorted(LAYOUTS), default=["sharded", "one-key"],
                   help="key layouts, each run at every N (sharded: this release; one-key: the previous one)")
    p.add_argument("--seconds", type=float, default=60.0, help="measuring window of each run, once all joined")
    p.add_argument("--config", default="local.yaml", help="a bundled config name (local, local.yaml) or a path")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override a key of the config, e.g. records.poll_interval_s=2 (repeatable)")
    p.add_argument("--start-timeout", type=float, default=300.0, help="seconds each node may take to come up")
    p.add_argument("--join-timeout", type=float, default=600.0, help="seconds to wait until all know each other")
    p.add_argument("--json", type=Path, default=ROOT / "docs" / "results" / "scale_bench.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(width=80)
    source = config_path(args.config)
    cfg = node_config(yaml.safe_load(source.read_text(encoding="utf-8")) or {}, args.set)
    label = Path(args.config).name + "".join(f" {s}" for s in args.set)
    runs = []
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        cfg_file = Path(tmp) / "config.yaml"
        cfg_file.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        for n in sorted(args.nodes):
            for layout in args.layouts:
                runs.append(measure(n, layout, cfg_file, Path(tmp), args, console))
    report = {"command": " ".join(["python", "scripts/bench/scale_bench.py", *(argv or sys.argv[1:])]),
              "commit": git_commit(), "machine": machine(), "config": label, "config_source": str(source),
              "overrides": parse_overrides(args.set), "seconds": args.seconds,
              "bytes_note": ("p2pd_*: p2pd's syscall bytes (rchar/wchar): TCP to peers and the unix socket to its "
                             "daemon alike, so ~each DHT byte twice; no per-process socket counter on one loopback"),
              "slopes": slopes_by_layout(runs), "runs": runs}
    write_results(report, args.json, args.json.with_suffix(".png"), plot, lambda r: render(r["runs"], label), console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
