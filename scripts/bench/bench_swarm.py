"""Benchmark a local swarmnode swarm, all on 127.0.0.1 (figures for the issue's closing note).

Measures (1) the time from launching `swarmnode run` (configs/local.yaml, joining a bootstrap
daemon of a LocalSwarm of size 2) to the first peer in its /status; (2) the RSS of a running
daemon, python process plus p2pd child; (3) DHT store-to-visible latency p50/p99 across 8 local
nodes, with swarmnode's HivemindTransport (DHTNode in the node's own event loop) against
hivemind.DHT (DHTNode in a child process, reached over a pipe) as the baseline.

Run from the repository root:  .venv/bin/python scripts/bench/bench_swarm.py
(options: --rounds N, --nodes N, --startup-runs N, --skip-baseline, --json PATH)
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import math
import multiprocessing as mp
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console
from rich.progress import Progress

from swarmnode.home import init_home, read_runtime
from swarmnode.node.local_swarm import LocalNode, LocalSwarm, LocalSwarmError
from swarmnode.status.client import NoDaemon, fetch

ROOT = Path(__file__).resolve().parents[2]
LOCAL_MADDRS = ["/ip4/127.0.0.1/tcp/0"]
POLL_S = 0.005  # readers poll the DHT this often
READ_TIMEOUT_S = 10.0
MSG_TIMEOUT_S = 120.0
MIB = 1024 * 1024


# -- pure computation ------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method); nan for no values."""
    s = sorted(values)
    if not s:
        return math.nan
    k = (len(s) - 1) * q / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def latency_summary(samples_s: list[float], missed: int) -> dict[str, Any]:
    ms = [x * 1000 for x in samples_s]
    return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "max_ms": max(ms, default=math.nan),
            "samples": len(ms), "missed": missed}


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


# -- 1 + 2: `swarmnode run` start-up and RSS -------------------------------------------------------

def wait_first_peer(swarm: LocalSwarm, node: LocalNode, t0: float, timeout: float = 90.0) -> tuple[float, float]:
    """(seconds to /status answering, seconds to >= 1 peer in /status), both from `t0`."""
    up = None
    while time.monotonic() - t0 < timeout:
        for n in swarm.nodes:
            if n.process is not None and n.process.poll() is not None:
                raise LocalSwarmError(f"{n.name} exited with code {n.process.returncode} (log: {n.log_path})")
        runtime = read_runtime(node.home)
        if runtime.get("pid") == node.process.pid and runtime.get("status_url"):
            try:
                peers = fetch(runtime["status_url"], timeout=1.0)["peers"]
                up = up if up is not None else time.monotonic() - t0
                if peers:
                    return up, time.monotonic() - t0
            except NoDaemon:
                pass
        time.sleep(0.05)
    raise LocalSwarmError(f"{node.name} saw no peer within {timeout:.0f}s (log: {node.log_path})")


def node_rss(node: LocalNode) -> dict[str, float]:
    runtime = read_runtime(node.home)
    python = psutil.Process(runtime["pid"]).memory_info().rss
    p2pd = sum(psutil.Process(c["pid"]).memory_info().rss for c in runtime.get("children", []))
    return {"python_mib": python / MIB, "p2pd_mib": p2pd / MIB, "total_mib": (python + p2pd) / MIB}


def bench_startup(root: Path, config: Path, runs: int, console: Console) -> tuple[dict[str, Any], dict[str, Any]]:
    first_peer, status_up, rss = [], [], {}
    for i in range(runs):
        with LocalSwarm(root / f"startup{i}", 2, config) as swarm:
            boot, joiner = swarm.nodes
            swarm.root.mkdir(parents=True, exist_ok=True)
            swarm._launch(boot)
            swarm.bootstrap_maddrs = swarm.wait_ready(boot)["multiaddrs"]
            init_home(joiner.home.root, config.read_text(encoding="utf-8"))  # keys exist before the clock starts
            t0 = time.monotonic()
            swarm._launch(joiner)
            up, peer = wait_first_peer(swarm, joiner, t0)
            status_up.append(up)
            first_peer.append(peer)
            console.log(f"start-up run {i + 1}/{runs}: /status up after {up:.2f} s, first peer after {peer:.2f} s")
            if i == runs - 1:
                time.sleep(3.0)  # let the capability measurement and first records settle
                rss = {"node0 (bootstrap)": node_rss(boot), "node1": node_rss(joiner)}
    startup = {"first_peer_s": first_peer, "first_peer_median_s": percentile(first_peer, 50),
               "status_up_s": status_up, "status_up_median_s": percentile(status_up, 50)}
    return startup, rss


# -- 3: DHT store-to-visible latency ---------------------------------------------------------------

class SwarmnodeBackend:
    """swarmnode's HivemindTransport: the DHTNode runs in this process's own event loop."""

    def __init__(self, workdir: Path, index: int):
        self.identity, self.t = workdir / f"p2p_identity_{index}.key", None

    async def start(self, bootstrap: bool) -> list[str]:
        from swarmnode.identity import create_p2p_identity
        from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

        create_p2p_identity(self.identity)
        self.t = HivemindTransport(identity_path=self.identity, host_maddrs=LOCAL_MADDRS, announce_maddrs=[],
                                   client_mode=False, startup_timeout_s=30, use_relay=False, auto_nat=False,
                                   wait_timeout_s=2)
        await self.t.start()
        return await self.t.multiaddrs()

    async def join(self, maddr: str) -> None:
        await self.t.join(maddr, timeout=10)

    async def store(self, key: str, value: bytes, expiration: float) -> bool:
        return await self.t.store(key, self.t.peer_id, value, expiration)

    async def values(self, key: str) -> list[Any]:
        return [v.value for v in await self.t.get(key)]

    async def stop(self) -> None:
        if self.t is not None:
            await self.t.stop()


class HivemindDhtBackend:
    """hivemind.DHT: the DHTNode runs in a child process; each call goes over a pipe (awaited as MPFuture)."""

    def __init__(self, workdir: Path, index: int):
        self.dht = None

    def _create(self, initial_peers: list[str]) -> None:
        import hivemind

        self.dht = hivemind.DHT(initial_peers=initial_peers, start=True, host_maddrs=LOCAL_MADDRS,
                                use_relay=False, auto_nat=False, wait_timeout=2)

    async def start(self, bootstrap: bool) -> list[str]:
        if not bootstrap:  # the others start in join(), with the bootstrap as initial peer
            return []
        self._create([])
        return [str(m) for m in self.dht.get_visible_maddrs()]

    async def join(self, maddr: str) -> None:
        self._create([maddr])

    async def store(self, key: str, value: bytes, expiration: float) -> bool:
        return bool(await self.dht.store(key, value, expiration, subkey=str(self.dht.peer_id), return_future=True))

    async def values(self, key: str) -> list[Any]:
        found = await self.dht.get(key, latest=True, return_future=True)
        return [v.value for v in found.value.values()] if found is not None and isinstance(found.value, dict) else []

    async def stop(self) -> None:
        if self.dht is not None:
            self.dht.shutdown()


BACKENDS = {"swarmnode": SwarmnodeBackend, "hivemind.DHT": HivemindDhtBackend}


async def _worker_main(index: int, backend_name: str, workdir: Path, inbox_mp: Any, outbox: Any) -> None:
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    inbox: asyncio.Queue = asyncio.Queue()

    def feed() -> None:  # a daemon thread, so a blocked get never holds up the exit
        while True:
            item = inbox_mp.get()
            loop.call_soon_threadsafe(inbox.put_nowait, item)
            if item[0] == "stop":
                return

    threading.Thread(target=feed, daemon=True).start()
    from hivemind.utils import get_dht_time  # what both backends stamp records with

    backend = BACKENDS[backend_name](workdir, index)
    try:
        outbox.put(("ready", index, await backend.start(bootstrap=index == 0)))
        while True:
            cmd, *args = await inbox.get()
            if cmd == "stop":
                break
            if cmd == "join":
                await backend.join(args[0])
                outbox.put(("joined", index))
            elif cmd == "write":
                key, value = args
                expiration = get_dht_time() + 60
                t0 = time.time()
                ok = await backend.store(key, value, expiration)
                outbox.put(("stored", index, t0, time.time(), ok))
            elif cmd == "read":
                key, value = args
                outbox.put(("polling", index))
                deadline, seen = time.time() + READ_TIMEOUT_S, None
                while seen is None and time.time() < deadline:
                    if value in await backend.values(key):
                        seen = time.time()
                    else:
                        await asyncio.sleep(POLL_S)
                outbox.put(("seen", index, seen))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which aborts the run
        outbox.put(("error", index, f"{type(e).__name__}: {e}"))
    finally:
        await backend.stop()


def worker(index: int, backend_name: str, workdir: str, inbox: Any, outbox: Any) -> None:
    os.setpgid(0, 0)  # Ctrl-C reaches only the parent, which then stops us in order
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # SIGTERM (clean stop) if the parent dies
    os.environ.setdefault("HIVEMIND_LOGLEVEL", "WARNING")
    asyncio.run(_worker_main(index, backend_name, Path(workdir), inbox, outbox))


def collect(outbox: Any, procs: list[Any], want: dict[str, int]) -> dict[str, list[tuple]]:
    """Read worker messages until `want[kind]` of each kind have come; raise on an error or a death."""
    got: dict[str, list[tuple]] = {kind: [] for kind in want}
    deadline = time.monotonic() + MSG_TIMEOUT_S
    while any(len(got[k]) < n for k, n in want.items()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"workers did not answer within {MSG_TIMEOUT_S:.0f}s (waiting for {want})")
        try:
            msg = outbox.get(timeout=0.5)
        except queue.Empty:
            dead = [p.name for p in procs if p.exitcode is not None]
            if dead:
                raise RuntimeError(f"worker(s) {', '.join(dead)} died") from None
            continue
        if msg[0] == "error":
            raise RuntimeError(f"worker {msg[1]}: {msg[2]}")
        got[msg[0]].append(msg[1:])
    return got


def stop_workers(procs: list[Any], inboxes: list[Any], timeout: float = 30.0) -> None:
    """Ask every worker to stop (they shut their DHT and p2pd down); terminate, then kill, stragglers."""
    for q in inboxes:
        q.put(("stop",))
    deadline = time.monotonic() + timeout
    for p in (p for p in procs if p.pid is not None):
        p.join(timeout=max(0.1, deadline - time.monotonic()))
        for end in (p.terminate, p.kill):
            if p.is_alive():
                end()
                p.join(timeout=10)


def bench_dht(backend: str, nodes: int, rounds: int, workdir: Path, console: Console) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    outbox, inboxes = ctx.Queue(), [ctx.Queue() for _ in range(nodes)]
    procs = [ctx.Process(target=worker, args=(i, backend, str(workdir), inboxes[i], outbox), name=f"{backend}-{i}")
             for i in range(nodes)]
    samples, store_calls, missed, run_id = [], [], 0, f"{os.getpid()}-{time.time_ns()}"
    try:
        for p in procs:
            p.start()
        ready = collect(outbox, procs, {"ready": nodes})["ready"]
        bootstrap = next(maddrs for index, maddrs in ready if index == 0)[0]
        for i in range(1, nodes):  # join one at a time, as nodes coming up one after another would
            inboxes[i].put(("join", bootstrap))
            collect(outbox, procs, {"joined": 1})
        console.log(f"{backend}: {nodes} nodes up and joined through {bootstrap}")
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task(f"{backend}: store -> visible", total=rounds)
            for r in range(rounds):
                writer, key, value = r % nodes, f"bench/{run_id}/{r}", f"{run_id}/{r}".encode()
                readers = [i for i in range(nodes) if i != writer]
                for i in readers:
                    inboxes[i].put(("read", key, value))
                collect(outbox, procs, {"polling": len(readers)})
                inboxes[writer].put(("write", key, value))
                got = collect(outbox, procs, {"stored": 1, "seen": len(readers)})
                (_, t0, t1, ok), = got["stored"]
                store_calls.append((t1 - t0) * 1000)
                if not ok:
                    console.log(f"[yellow]round {r}: store by node {writer} reported failure")
                for _, seen in got["seen"]:
                    if seen is None:
                        missed += 1
                    else:
                        samples.append(seen - t0)
                progress.advance(task)
    finally:
        stop_workers(procs, inboxes)
    result = {**latency_summary(samples, missed), "store_call_p50_ms": percentile(store_calls, 50)}
    console.log(f"{backend}: p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms ({len(samples)} samples)")
    return result


# -- main ------------------------------------------------------------------------------------------

def summary_lines(res: dict[str, Any], nodes: int, rounds: int) -> list[str]:
    st = res["startup"]
    lines = [f"== swarmnode bench: {nodes} nodes, {rounds} rounds, all on 127.0.0.1 ==",
             "launch `swarmnode run` -> first peer: " + ", ".join(f"{x:.2f} s" for x in st["first_peer_s"])
             + f"  (median {st['first_peer_median_s']:.2f} s; /status up median {st['status_up_median_s']:.2f} s)"]
    for name, r in res["rss"].items():
        lines.append(f"RSS {name}: python {r['python_mib']:.1f} MiB + p2pd {r['p2pd_mib']:.1f} MiB"
                     f" = {r['total_mib']:.1f} MiB")
    for name, d in res["dht"].items():
        lines.append(f"DHT store->visible, {name}: p50 {d['p50_ms']:.1f} ms, p99 {d['p99_ms']:.1f} ms,"
                     f" max {d['max_ms']:.1f} ms ({d['samples']} samples, {d['missed']} missed;"
                     f" store call itself p50 {d['store_call_p50_ms']:.1f} ms)")
    if "ratio" in res:
        lines.append("in-process DHTNode (swarmnode) vs hivemind.DHT (child process + pipe):"
                     f" p50 x{res['ratio']['p50']:.2f}, p99 x{res['ratio']['p99']:.2f} (below 1 = swarmnode faster)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="DHT rounds per backend (default 40)")
    parser.add_argument("--nodes", type=int, default=8, help="local DHT nodes (default 8)")
    parser.add_argument("--startup-runs", type=int, default=3, help="start-up measurements (default 3)")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "local.yaml")
    parser.add_argument("--skip-baseline", action="store_true", help="skip the hivemind.DHT baseline")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    console = Console(stderr=True)
    res: dict[str, Any] = {"nodes": args.nodes, "rounds": args.rounds, "dht": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="swarmnode-bench-") as tmp:
            res["startup"], res["rss"] = bench_startup(Path(tmp), args.config.resolve(), args.startup_runs, console)
            res["dht"]["swarmnode"] = bench_dht("swarmnode", args.nodes, args.rounds, Path(tmp), console)
            if not args.skip_baseline:
                base = res["dht"]["hivemind.DHT"] = bench_dht("hivemind.DHT", args.nodes, args.rounds, Path(tmp), console)
                own = res["dht"]["swarmnode"]
                res["ratio"] = {"p50": ratio(own["p50_ms"], base["p50_ms"]), "p99": ratio(own["p99_ms"], base["p99_ms"])}
    except KeyboardInterrupt:
        console.print("[red]interrupted; every node and worker has been stopped")
        return 130
    print("\n".join(summary_lines(res, args.nodes, args.rounds)))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2), encoding="utf-8")
        console.log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
