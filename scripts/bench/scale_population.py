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
import json
import math
import os
import signal
import socket
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

from swarmnode import __version__
from swarmnode.config import load_config
from swarmnode.home import read_runtime
from swarmnode.identity import NodeIdentity, SigningKey, create_p2p_identity
from swarmnode.node.local_swarm import child_environment
from swarmnode.protocol import PeerRecordFields, build_peer_record
from swarmnode.protocol.codec import VersionedSigner
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.versions import THIS_RELEASE
from swarmnode.status.client import fetch
from swarmnode.swarm.key_layout import ShardedKeys
from swarmnode.swarm.shards import SHARDS_READ_PER_WINDOW, next_bits, shard_of
from swarmnode.swarm.windows import peer_records_shard_key, window_index
from swarmnode.testing.experiments.figures import loglog_slope
from swarmnode.testing.experiments.local_runs import parse_overrides, write_results
from swarmnode.testing.experiments.process_samples import cpu_seconds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
Item = tuple[str, str, bytes, float]  # (key, subkey, value, expiration) of one store


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


# -- pure: which keys, when ------------------------------------------------------------------------

def steady_bits(total: int) -> int:
    """The shard bits of a swarm of `total` identities once every estimate is exact."""
    return next_bits(0, total)


def level_spread(shards_read: int = SHARDS_READ_PER_WINDOW) -> ShardedKeys:
    """An honest node's ShardedKeys whose "keys" are the bits levels it writes (its key_of returns
    the bits): every identity of the population is at the same levels, each at its own shard."""
    key_of = lambda window, bits, shard: bits  # noqa: E731
    return ShardedKeys(key_of, "", shards_read=shards_read)  # type: ignore[arg-type]


def observe_total(spread: ShardedKeys, total: int, reading_window: int) -> None:
    """What an honest reader of `spread`'s level sees in a swarm of `total`: total / 2^bits per shard."""
    spread.observe([total / 2**spread.bits] * spread.shards_read, reading_window)


def identity_keys(swarm: str, window: int, peer_id: str, levels: list[int]) -> list[str]:
    """The peer-record keys `peer_id` writes in `window` at each bits level: its own shard's."""
    return [peer_records_shard_key(swarm, window, bits, shard_of(peer_id, bits)) for bits in levels]


def ramp_totals(nodes: int, population: int) -> list[int]:
    """The swarm's size (daemons + active identities) at each ramp step: 2N, 4N, ... then N + P."""
    total, steps, size = nodes + population, [], 2 * max(nodes, 1)
    while size < total:
        steps.append(size)
        size *= 2
    return [*steps, total]


def active_at(nodes: int, population: int, elapsed_s: float, step_s: float) -> int:
    """Identities of the population publishing `elapsed_s` into the ramp (steps of `step_s`)."""
    totals = ramp_totals(nodes, population)
    step = min(int(elapsed_s // step_s) if step_s > 0 else len(totals), len(totals) - 1)
    return max(0, min(population, totals[step] - nodes))


def tick_slices(count: int, ticks: int) -> list[tuple[int, int]]:
    """`count` identities over `ticks` slices of an interval, as evenly as whole identities go:
    slice t is [t * count // ticks, (t + 1) * count // ticks)."""
    return [(t * count // ticks, (t + 1) * count // ticks) for t in range(max(ticks, 1))]


def expected_peers(total: int, shards_read: int = SHARDS_READ_PER_WINDOW) -> int:
    """The peers a settled daemon keeps in a swarm of `total`: its shards' share, itself excepted."""
    shards = 2 ** steady_bits(total)
    return max(0, min(total, math.ceil(total * min(shards_read, shards) / shards)) - 1)


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


# -- the population process (--serve-population) ---------------------------------------------------

def identity_fields(swarm: str, multiaddr: str) -> PeerRecordFields:
    """What a running model-less CPU node says about itself."""
    return PeerRecordFields(software_version=__version__, swarm=swarm, multiaddrs=(multiaddr,), model_fingerprint="",
                            device=peer_record_pb2.DeviceInfo(kind="cpu", cpu_cores=2),
                            capability=peer_record_pb2.Capability(), state=peer_record_pb2.NODE_STATE_RUNNING,
                            client_mode=False)


class Population:
    """P identities (no p2pd behind any) storing their records through one DHT node, counted."""

    def __init__(self, transport: Any, cfg: Any, args: argparse.Namespace):
        self.transport, self.cfg, self.args = transport, cfg, args
        ids = [NodeIdentity(SigningKey.generate(), SigningKey.generate(), Path("/nonexistent"))
               for _ in range(args.population)]
        with socket.socket() as s:  # bound and released: nothing listens there
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.signers = [VersionedSigner(i, THIS_RELEASE) for i in ids]
        self.fields = [identity_fields(cfg.swarm.name, f"/ip4/127.0.0.1/tcp/{port}/p2p/{i.peer_id}") for i in ids]
        self.spread = level_spread()
        self.in_flight = asyncio.Semaphore(args.max_in_flight)
        self.tasks: set[asyncio.Task] = set()
        self.active, self.levels = 0, []
        self.counts = dict.fromkeys(("intervals", "planned", "stored", "failed", "ticks", "late_ticks",
                                     "lag_s_sum", "rebased"), 0)

    def observe(self, elapsed_s: float, now: float) -> None:
        """The ramp's active count, and what an honest reader sees (one read per poll_interval_s)."""
        a, r = self.args, self.cfg.records
        self.active = active_at(a.nodes, a.population, elapsed_s, a.ramp_step)
        for _ in range(max(1, round(r.publish_interval_s / r.poll_interval_s))):
            observe_total(self.spread, a.nodes + self.active, window_index(now, self.cfg.swarm.window_s))

    def items(self, lo: int, hi: int, now: float) -> list[Item]:
        """The stores of identities lo..hi-1: each one's record under each of its keys of now's window."""
        ttl, window = self.cfg.records.ttl_s, window_index(now, self.cfg.swarm.window_s)
        self.levels = self.spread.write_keys(window)  # the bits (level_spread)
        out = []
        for signer, fields in zip(self.signers[lo:hi], self.fields[lo:hi]):
            value = build_peer_record(signer, fields, now, ttl)
            out += [(k, signer.peer_id, value, now + ttl)
                    for k in identity_keys(self.cfg.swarm.name, window, signer.peer_id, self.levels)]
        return out

    async def launch(self, items: list[Item]) -> None:
        """Start the stores of `items` (one per item, or one store_many); waits while too many are in flight."""
        self.counts["planned"] += len(items)
        for group in ([items] if self.args.store_mode == "batched" else [[item] for item in items]):
            if group:
                await self.in_flight.acquire()
                task = asyncio.create_task(self._store(group))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _store(self, items: list[Item]) -> None:
        try:
            done = await self.transport._node.store_many(  # noqa: SLF001 - exclude_self: it is no holder
                [k for k, _, _, _ in items], [v for _, _, v, _ in items], [e for _, _, _, e in items],
                subkeys=[s for _, s, _, _ in items], exclude_self=True)
            ok = sum(1 for k, s, _, _ in items if done.get((k, s)))
        except Exception:  # noqa: BLE001 - counted as failed stores
            ok = 0
        finally:
            self.in_flight.release()
        self.counts["stored"] += ok
        self.counts["failed"] += len(items) - ok

    def state(self, peer_id: str) -> dict[str, Any]:
        return {"peer_id": peer_id, "population": self.args.population, "active": self.active,
                "total": self.args.nodes + self.active, "ramped": self.active == self.args.population,
                "bits": self.spread.bits, "levels": list(self.levels), "in_flight": len(self.tasks), **self.counts}


def write_state(path: Path, state: dict[str, Any]) -> None:
    path.with_suffix(".tmp").write_text(json.dumps(state), encoding="utf-8")
    os.replace(path.with_suffix(".tmp"), path)


def read_state(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


async def run_intervals(pop: Population, stop: asyncio.Event, peer_id: str) -> None:
    """Every publish interval, each active identity's stores, spread over args.ticks slices."""
    loop = asyncio.get_running_loop()
    interval, ticks = pop.cfg.records.publish_interval_s, pop.args.ticks
    started = begin = loop.time()
    while not stop.is_set():
        if loop.time() - begin > interval:  # a whole interval late: start afresh from now
            begin = loop.time()
            pop.counts["rebased"] += 1
        pop.observe(begin - started, pop.transport.dht_time())
        for t, (lo, hi) in enumerate(tick_slices(pop.active, ticks)):
            deadline = begin + t * interval / ticks
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, deadline - loop.time()))
                return
            except asyncio.TimeoutError:
                pass
            lag = loop.time() - deadline
            pop.counts["ticks"] += 1
            pop.counts["lag_s_sum"] += lag
            pop.counts["late_ticks"] += lag > interval / ticks
            await pop.launch(pop.items(lo, hi, pop.transport.dht_time()))
        begin += interval
        pop.counts["intervals"] += 1
        write_state(pop.args.state, pop.state(peer_id))


async def serve_population(args: argparse.Namespace) -> None:
    from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

    cfg = load_config(Path(args.config))
    key_path = args.workdir / "population.p2p.key"
    create_p2p_identity(key_path)
    transport = HivemindTransport(identity_path=key_path, host_maddrs=["/ip4/127.0.0.1/tcp/0"], announce_maddrs=[],
                                  client_mode=True, startup_timeout_s=120.0, use_relay=False, auto_nat=False,
                                  wait_timeout_s=cfg.network.dht_wait_timeout_s, policy=None)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await transport.start()
    try:
        for attempt in range(10):
            try:
                await transport.join(args.join, 30.0)
                break
            except Exception:  # noqa: BLE001 - retried: node0 may be busy
                if attempt == 9:
                    raise
                await asyncio.sleep(2.0)
        pop = Population(transport, cfg, args)
        write_state(args.state, pop.state(transport.peer_id))
        await run_intervals(pop, stop, transport.peer_id)
    finally:
        await transport.stop()


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
