"""A node's cost against the swarm's identities on the real transport: N model-less daemons plus a
synthetic population of P valid signed identities publishing at honest intervals.

Per N of --nodes and P of --population: N `swarmnode run` daemons of one config on 127.0.0.1
(scale_bench.py's PatientSwarm), then one population process (this script, --serve-population):
its own hivemind DHT node (client mode: it serves no DHT request) joined through node0, holding P
in-memory ed25519 identities. Every records.publish_interval_s it stores each identity's signed
PeerRecord (a VersionedSigner of THIS_RELEASE; its multiaddr an unused 127.0.0.1 port) under the
keys an honest node of that identity writes (a ShardedKeys fed what an honest reader sees in a
swarm of N + P, at the identity's own shard), expiring after records.ttl_s, spread evenly over the
interval (--ticks slices), one DHT store per identity and key (--store-mode batched: one
store_many per slice). A population that made under 95% of its planned stores, or whose slices
mostly started late, fell behind (the machine could not sustain P): its run is marked (!).
The swarm grows by doubling every --ramp-step s (2N, 4N, ... N + P): daemons start on one shard
and read only the level their estimate picked, so a population appearing at once on 2^7 shards
would never be seen. Once the population writes one level and each daemon lists half the peers
it should keep, the daemons are measured as scale_bench measures them, over --seconds (CPU of
daemon + p2pd, p2pd syscall MB, DHT requests, entries judged, records accepted, per minute; peers
kept); the population process's own CPU (python + p2pd) is reported apart, never per node.

CAVEAT: the population's identities are not DHT nodes, so the N daemons hold every shard key
between them: the holder side (values stored onto a daemon, gets it serves, their bytes and CPU)
grows with P here, unlike a real swarm, where holders grow with the swarm. What transfers to a
real swarm is what a node spends READING (its requests, the entries it parses, the peers it
keeps); the holder side is sized by scripts/bench/scale_sim.py.

Prints a table at 80 columns and, per N, the log-log slope of each per-node median against N + P
(unsaturated runs whose population kept up); writes docs/results/scale_population.json (--json)
and a PNG beside it (with matplotlib). From the repository root:

    .venv/bin/python scripts/bench/scale_population.py --nodes 8 --population 0 64 256 1024 2048 --seconds 60
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import yaml
from rich import box
from rich.console import Console
from rich.table import Table

from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import child_environment
from swarmnode.status.client import fetch
from swarmnode.testing.experiments.figures import loglog_slope
from swarmnode.testing.experiments.local_runs import parse_overrides, write_results
from swarmnode.testing.experiments.population import (  # noqa: F401 - some only for the tests
    Population,
    active_at,
    expected_peers,
    identity_keys,
    level_spread,
    observe_total,
    ramp_totals,
    read_state,
    serve_population,
    steady_bits,
    tick_slices,
)
from swarmnode.testing.experiments.process_samples import cpu_seconds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _scale_bench():
    """scripts/bench/scale_bench.py as a module (the one already loaded, e.g. by a test, or loaded here)."""
    path = HERE / "scale_bench.py"
    loaded = sys.modules.get("scale_bench")
    if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path:
        return loaded
    spec = importlib.util.spec_from_file_location("scale_bench", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _scale_bench()

CAVEAT = " ".join(__doc__.split("CAVEAT: ")[1].split("\n\n")[0].split())
FIGURES = {**bench.FIGURES, "peers": "peers"}  # scale_bench's per-node figures, and the peers a node keeps
KEPT_UP = 0.95  # a population that made under this share of its planned stores fell behind
LATE_SHARE = 0.1  # ... as did one whose slices started a slice late more often than this
SETTLED_PEERS = 0.5  # a daemon has settled once it lists this share of expected_peers


# -- pure: the report ------------------------------------------------------------------------------

def population_figures(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, Any]:
    """What the population process planned and stored between two of its state documents."""
    grew = {k: after.get(k, 0) - before.get(k, 0)
            for k in ("intervals", "planned", "stored", "failed", "ticks", "late_ticks", "lag_s_sum", "rebased")}
    intervals, ticks = max(grew["intervals"], 1), max(grew["ticks"], 1)
    stored_share = grew["stored"] / grew["planned"] if grew["planned"] else 1.0
    late_share = grew["late_ticks"] / ticks
    return {"stores_per_min": round(grew["stored"] * 60.0 / seconds, 1),
            "planned_per_interval": round(grew["planned"] / intervals, 1),
            "stored_per_interval": round(grew["stored"] / intervals, 1),
            "failed_per_interval": round(grew["failed"] / intervals, 1),
            "stored_share": round(stored_share, 3), "late_tick_share": round(late_share, 3),
            "mean_lag_s": round(grew["lag_s_sum"] / ticks, 3), "rebased": grew["rebased"],
            "behind": stored_share < KEPT_UP or late_share > LATE_SHARE or grew["rebased"] > 0}


NO_POPULATION = {"cpu_percent": {"python": 0.0, "p2pd": 0.0, "total": 0.0}, **population_figures({}, {}, 1.0)}


def peers_spread(nodes: list[dict[str, Any]]) -> dict[str, float]:
    """The median and the max of the peers each daemon lists."""
    kept = [n["peers"] for n in nodes]
    return {"median": float(statistics.median(kept)), "max": float(max(kept))}


def counted(run: dict[str, Any]) -> bool:
    """Whether a run goes into the slopes: its machine not saturated, its population kept up."""
    return run["machine_cpu_share"] < bench.SATURATED_SHARE and not run["population_process"]["behind"]


def slopes(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per N, per FIGURES key: the log-log slope of the per-node median against N + P (counted runs)."""
    out = {}
    for n in sorted({r["nodes"] for r in runs}):
        kept = [r for r in runs if r["nodes"] == n and counted(r)]
        out[str(n)] = {k: loglog_slope([(r["identities"], r["per_node"][k]["median"]) for r in kept
                                        if r["per_node"][k]["median"] > 0]) for k in FIGURES}
    return out


def table_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """One row per run: N (* saturated machine, ! population behind), P, N + P, each FIGURES median,
    the busiest daemon's CPU over the median's, the population process's CPU % and the share of
    its planned stores it made."""
    rows = []
    for r in runs:
        pop = r["population_process"]
        mark = ("*" if r["machine_cpu_share"] >= bench.SATURATED_SHARE else "") + ("!" if pop["behind"] else "")
        cells = [bench.short(r["per_node"][k]["median"]) for k in FIGURES]
        rows.append([f"{r['nodes']}{mark}", str(r["population"]), str(r["identities"]), *cells,
                     f"{bench.busiest_ratio(r):.1f}x", bench.short(pop["cpu_percent"]["total"]),
                     f"{100 * pop['stored_share']:.0f}%"])
    return rows


def slope_row(n: str, found: dict[str, float | None]) -> list[str]:
    return ["slope", f"N={n}", "", *["-" if found[k] is None else f"{found[k]:.2f}" for k in FIGURES], "", "", ""]


def render(runs: list[dict[str, Any]], label: str) -> Table:
    t = Table(title=f"per daemon, median ({label})", box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True,
              pad_edge=False,
              caption="P: synthetic identities; ids: N+P; /m: per minute; MB: p2pd syscall bytes; top: "
                      "busiest daemon's CPU over the median's; pop%: population process CPU (not in the "
                      f"per-node figures); kept: its stores made of planned; *: machine over "
                      f"{bench.SATURATED_SHARE:.0%} busy; !: population fell behind (both left out of slopes). "
                      "Daemons hold every shard here: only the reading side transfers to a real swarm")
    for head in ("N", "P", "ids", *FIGURES.values(), "top", "pop%", "kept"):
        t.add_column(head, justify="right")
    for row in table_rows(runs):
        t.add_row(*row)
    for n, found in slopes(runs).items():
        t.add_row(*slope_row(n, found), style="bold")
    return t


# -- measuring -------------------------------------------------------------------------------------

def start_population(args: argparse.Namespace, cfg_file: Path, work: Path, join: str, n: int,
                     p: int) -> subprocess.Popen:
    """This script in --serve-population mode, its output in work/population.log."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-population", "--join", join, "--config",
           str(cfg_file), "--nodes", str(n), "--population", str(p), "--workdir", str(work), "--state",
           str(work / "state.json"), "--ramp-step", str(args.ramp_step), "--ticks", str(args.ticks),
           "--store-mode", args.store_mode, "--max-in-flight", str(args.max_in_flight)]
    with open(work / "population.log", "wb") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_environment(), cwd=ROOT)


def stop_process(proc: subprocess.Popen | None, timeout_s: float = 20.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_until(check: Callable[[], bool], timeout_s: float, proc: subprocess.Popen | None, what: str,
               log: Path | None = None) -> float:
    """Seconds until check() holds; raises when it does not within timeout_s or `proc` exits (with
    the last lines of its `log`)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log and log.exists() else []
            raise RuntimeError(f"the population process exited ({proc.returncode}) while waiting for {what}: "
                               + "\n".join(tail))
        if check():
            return time.monotonic() - started
        time.sleep(1.0)
    raise RuntimeError(f"{what}: not within {timeout_s:.0f}s")


def settled(urls: list[str], state_path: Path | None, total: int) -> bool:
    """The population (if any) ramped and on one level, and every daemon lists half the peers it should keep."""
    state = read_state(state_path) if state_path is not None else {"ramped": True, "levels": [0]}
    if not (state.get("ramped") and len(state.get("levels", [])) == 1):
        return False
    want = SETTLED_PEERS * expected_peers(total)
    return all(len(fetch(u, "/status", timeout=5.0).get("peers") or []) >= want for u in urls)


def process_cpu(proc: psutil.Process) -> dict[str, float]:
    """CPU seconds of the population process and of its p2pd (its children, all)."""
    out = {"python": cpu_seconds(proc.cpu_times()), "p2pd": 0.0}
    for child in proc.children(recursive=True):
        try:
            out["p2pd"] += cpu_seconds(child.cpu_times())
        except psutil.NoSuchProcess:
            pass
    return out


def sample_all(urls: list[str], procs: list[dict[str, psutil.Process]], pop: subprocess.Popen | None,
               state_path: Path | None, seconds: float) -> dict[str, Any]:
    """scale_bench's samples of every daemon `seconds` apart, the machine's busy share, and the
    population process's CPU and stores over the same window."""
    pop_proc = psutil.Process(pop.pid) if pop is not None else None
    pop_before = (process_cpu(pop_proc), read_state(state_path)) if pop_proc else None
    machine_before, at = psutil.cpu_times()._asdict(), time.monotonic()
    before = [bench.take_sample(u, p) for u, p in zip(urls, procs)]
    time.sleep(seconds)
    after = [bench.take_sample(u, p) for u, p in zip(urls, procs)]
    machine_after, wall = psutil.cpu_times()._asdict(), time.monotonic() - at
    figures = dict(NO_POPULATION)
    if pop_proc is not None:
        cpu1, state1 = process_cpu(pop_proc), read_state(state_path)
        cpu = {k: round(100.0 * (cpu1[k] - pop_before[0][k]) / wall, 2) for k in cpu1}
        figures = {"cpu_percent": {**cpu, "total": round(sum(cpu.values()), 2)},
                   **population_figures(pop_before[1], state1, wall), "state": state1}
    nodes = [{"name": f"node{i}", **bench.node_figures(b, a)} for i, (b, a) in enumerate(zip(before, after))]
    return {"machine_cpu_share": bench.machine_share(machine_before, machine_after), "nodes": nodes,
            "population_process": figures}


def measure(n: int, p: int, cfg: Path, root: Path, args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """N daemons, the population of P once they all know each other, then everything over args.seconds."""
    say = lambda m: console.print(f"[dim]N={n} P={p}: {m}[/dim]")  # noqa: E731
    started, total, work = time.monotonic(), n + p, root / f"n{n}-p{p}"
    with bench.PatientSwarm(work, n, cfg, start_timeout_s=args.start_timeout) as swarm:
        swarm.start(on_progress=lambda m: None)
        start_s = time.monotonic() - started
        runtimes = [read_runtime(node.home) for node in swarm.nodes]
        urls = [r["status_url"] for r in runtimes]
        join_s = bench.wait_all_listed(urls, args.join_timeout)
        say(f"all {n} up in {start_s:.0f}s, listed in {join_s:.0f}s; the population ramps to {p}")
        pop_dir = work / "population"
        pop = start_population(args, cfg, pop_dir, runtimes[0]["multiaddrs"][0], n, p) if p else None
        state_path, log = pop_dir / "state.json" if p else None, pop_dir / "population.log"
        try:
            if pop is not None:
                wait_until(lambda: bool(read_state(state_path)), args.start_timeout, pop, "the population to join", log)
            settle_s = wait_until(lambda: settled(urls, state_path, total), args.settle_timeout, pop, "settling", log)
            say(f"settled in {settle_s:.0f}s; measuring for {args.seconds:.0f}s")
            sampled = sample_all(urls, [bench.daemon_processes(r) for r in runtimes], pop, state_path, args.seconds)
        finally:
            stop_process(pop)
    nodes = sampled["nodes"]
    return {"nodes": n, "population": p, "identities": total, "bits": steady_bits(total),
            "expected_peers": expected_peers(total), "start_s": round(start_s, 1), "join_s": round(join_s, 1),
            "settle_s": round(settle_s, 1), "machine_cpu_share": sampled["machine_cpu_share"],
            "nodes_cores": bench.nodes_cores(nodes),
            "per_node": {**bench.spread_of(nodes), "peers": peers_spread(nodes)},
            "population_process": sampled["population_process"], "node_figures": nodes}


def plot(report: dict[str, Any], path: Path) -> None:
    """Per-node medians against N + P on log-log axes, one style per N (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n, style in zip(report["slopes"], ("o-", "s--", "^:", "d-.")):
        runs = [r for r in report["runs"] if str(r["nodes"]) == n]
        for key, head in FIGURES.items():
            ys = [r["per_node"][key]["median"] for r in runs]
            if ys and all(y > 0 for y in ys):
                ax.plot([r["identities"] for r in runs], ys, style,
                        label=f"N={n} {head} (slope {report['slopes'][n][key]})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("identities (N daemons + P synthetic)")
    ax.set_ylabel("per daemon, median")
    ax.set_title(f"{report['config']} at {report['commit']}: per-node cost against identities")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--nodes", type=int, nargs="+", default=[8], help="real daemons, one sweep each")
    p.add_argument("--population", type=int, nargs="+", default=[0, 64, 256, 1024, 2048], help="synthetic identities")
    p.add_argument("--seconds", type=float, default=60.0, help="measuring window of each run, once settled")
    p.add_argument("--config", default="local.yaml", help="a bundled config name (local, local.yaml) or a path")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override a key of the config, e.g. records.poll_interval_s=2 (repeatable)")
    p.add_argument("--store-mode", choices=("each", "batched"), default="each",
                   help="each: one DHT store per identity and key (as honest nodes); batched: one store_many a slice")
    p.add_argument("--ticks", type=int, default=20, help="slices each publish interval's stores are spread over")
    p.add_argument("--max-in-flight", type=int, default=256, help="population stores in flight at most")
    p.add_argument("--ramp-step", type=float, default=10.0, help="seconds between doublings of the swarm")
    p.add_argument("--start-timeout", type=float, default=300.0, help="seconds each process may take to come up")
    p.add_argument("--join-timeout", type=float, default=600.0, help="seconds until all daemons know each other")
    p.add_argument("--settle-timeout", type=float, default=600.0, help="seconds until the daemons settle")
    p.add_argument("--json", type=Path, default=ROOT / "docs" / "results" / "scale_population.json")
    p.add_argument("--serve-population", action="store_true", help=argparse.SUPPRESS)  # the population process
    p.add_argument("--join", help=argparse.SUPPRESS)  # ... joins through this multiaddr,
    p.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)  # keeps its p2p key here
    p.add_argument("--state", type=Path, help=argparse.SUPPRESS)  # and writes its counts here
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_population:
        args.nodes, args.population = args.nodes[0], args.population[0]
        asyncio.run(serve_population(args))
        return 0
    console = Console(width=80)
    source = bench.config_path(args.config)
    cfg = bench.node_config(yaml.safe_load(source.read_text(encoding="utf-8")) or {}, args.set)
    label = Path(args.config).name + "".join(f" {s}" for s in args.set) + f", stores {args.store_mode}"
    runs = []
    with tempfile.TemporaryDirectory(prefix="scale-population-") as tmp:
        cfg_file = Path(tmp) / "config.yaml"
        cfg_file.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        for n in sorted(args.nodes):
            for p in sorted(args.population):
                runs.append(measure(n, p, cfg_file, Path(tmp), args, console))
    report = {"command": " ".join(["python", "scripts/bench/scale_population.py", *(argv or sys.argv[1:])]),
              "commit": bench.git_commit(), "machine": bench.machine(), "config": label, "config_source": str(source),
              "overrides": parse_overrides(args.set), "seconds": args.seconds, "store_mode": args.store_mode,
              "caveat": CAVEAT, "bytes_note": "p2pd_*: p2pd's syscall bytes (rchar/wchar): TCP to peers and the "
                                              "unix socket to its daemon alike, so ~each DHT byte twice",
              "slopes": slopes(runs), "runs": runs}
    write_results(report, args.json, args.json.with_suffix(".png"), plot, lambda r: render(r["runs"], label), console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
