#!/usr/bin/env python3
"""A request's round trip between two nodes' transports when each process also runs a Python-busy
thread (as a node's trainer and generator do between their torch calls), per GIL switch interval.

Two processes on 127.0.0.1, each holding one transport (hivemind, libp2p, or libp2p with its host
in a child process); the server answers
20 KB, the client times --requests requests in a row. Each case runs with no busy thread (the
baseline) and with --busy Python threads per process, at each --switch interval (Python's
default is 5 ms). Prints p50/p90/max and each case's p50 as a ratio to the same transport's
baseline. (A shorter interval helped this round trip but not a swarm of training nodes:
docs/transports.md.)

    .venv/bin/python scripts/bench/transport_gil.py --transport libp2p
    .venv/bin/python scripts/bench/transport_gil.py --transport hivemind
    .venv/bin/python scripts/bench/transport_gil.py --transport libp2p-process --switch 0.005
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

PROTOCOL = "swarmnode/v1/bench-gil"
ANSWER = b"x" * 20_000


def busy() -> None:
    """Python work that holds the GIL between bytecodes, forever."""
    total = 0
    while True:
        for i in range(1000):
            total += i * i


def open_transport(kind: str, identity: Path):
    maddrs = ["/ip4/127.0.0.1/tcp/0"]
    if kind == "libp2p-process":
        from swarmnode.swarm.transports.libp2p.process_transport import LibP2PProcessTransport

        return LibP2PProcessTransport(identity_path=identity, host_maddrs=maddrs, announce_maddrs=[], client_mode=False,
                                      startup_timeout_s=60, policy=None, swarm="bench")
    if kind == "libp2p":
        from swarmnode.swarm.transports.libp2p.transport import LibP2PTransport

        return LibP2PTransport(identity_path=identity, host_maddrs=maddrs, announce_maddrs=[], client_mode=False,
                               startup_timeout_s=60, policy=None, swarm="bench")
    from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

    return HivemindTransport(identity_path=identity, host_maddrs=maddrs, announce_maddrs=[], client_mode=False,
                             startup_timeout_s=60, use_relay=False, auto_nat=False, wait_timeout_s=3, policy=None)


async def start(kind: str, busy_threads: int, switch_s: float):
    from swarmnode.identity import create_p2p_identity

    for _ in range(busy_threads):
        threading.Thread(target=busy, daemon=True).start()
    folder = Path(tempfile.mkdtemp(prefix="bench-gil-"))
    create_p2p_identity(folder / "p2p.key")
    transport = open_transport(kind, folder / "p2p.key")
    await transport.start()
    sys.setswitchinterval(switch_s)  # after start: this bench sets the interval, not the transport
    return transport


async def serve(kind: str, busy_threads: int, switch_s: float, address_file: Path) -> None:
    transport = await start(kind, busy_threads, switch_s)

    async def answer(payload: bytes, requester: str) -> bytes:
        return ANSWER

    await transport.serve(PROTOCOL, answer)
    address_file.write_text((await transport.multiaddrs())[0])
    await asyncio.sleep(3600)


async def measure(kind: str, busy_threads: int, switch_s: float, maddr: str, requests: int) -> list[float]:
    transport = await start(kind, busy_threads, switch_s)
    try:
        await transport.join(maddr, 30)
        peer = maddr.rsplit("/p2p/", 1)[1]
        await transport.request(peer, PROTOCOL, b"warm-up", 30)
        seconds = []
        for _ in range(requests):
            started = time.perf_counter()
            await transport.request(peer, PROTOCOL, b"q", 30)
            seconds.append(time.perf_counter() - started)
        return seconds
    finally:
        await transport.stop()


def run_case(kind: str, busy_threads: int, switch_s: float, requests: int) -> list[float]:
    """Start a server process, then a client process; the client's timings (seconds)."""
    address_file = Path(tempfile.mktemp(prefix="bench-gil-addr-"))
    args = [kind, str(busy_threads), repr(switch_s)]
    server = subprocess.Popen([sys.executable, __file__, "--role", "serve", *args, str(address_file)])
    try:
        while not (address_file.exists() and address_file.read_text()):
            if server.poll() is not None:
                raise SystemExit(f"the server process exited with {server.returncode}")
            time.sleep(0.2)
        out = subprocess.run([sys.executable, __file__, "--role", "client", *args, address_file.read_text(), str(requests)],
                             capture_output=True, text=True, check=True).stdout
        return [float(x) for x in out.split()]
    finally:
        server.kill()
        server.wait()
        address_file.unlink(missing_ok=True)


def summary(seconds: list[float]) -> dict[str, float]:
    """p50, p90 and max in milliseconds (p90: the value at index int(0.9 n) of the sorted list)."""
    ordered = sorted(seconds)
    return {"p50_ms": statistics.median(ordered) * 1000, "p90_ms": ordered[int(0.9 * len(ordered))] * 1000,
            "max_ms": ordered[-1] * 1000}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--role":
        role, kind, threads, switch = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
        if role == "serve":
            asyncio.run(serve(kind, threads, switch, Path(sys.argv[6])))
        else:
            print(" ".join(repr(s) for s in asyncio.run(measure(kind, threads, switch, sys.argv[6], int(sys.argv[7])))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=("libp2p", "libp2p-process", "hivemind"), default="libp2p",
                        help="libp2p-process: the libp2p host in a child process (network.libp2p_host: process)")
    parser.add_argument("--busy", type=int, default=1, help="Python-busy threads per process")
    parser.add_argument("--switch", type=float, nargs="+", default=[0.005, 0.001, 0.0002], help="GIL switch intervals (s)")
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    cases = [(0, 0.005)] + [(args.busy, s) for s in args.switch]
    table = Table(title=f"{args.transport}: request round trip, 20 KB answer, {args.requests} requests")
    for column in ("busy threads", "switch (ms)", "p50 (ms)", "p90 (ms)", "max (ms)", "p50 / baseline"):
        table.add_column(column, justify="right")
    baseline = None
    for threads, switch in cases:
        figures = summary(run_case(args.transport, threads, switch, args.requests))
        baseline = baseline or figures["p50_ms"]
        table.add_row(str(threads), f"{switch * 1000:g}", f"{figures['p50_ms']:.1f}", f"{figures['p90_ms']:.1f}",
                      f"{figures['max_ms']:.1f}", f"{figures['p50_ms'] / baseline:.2f}")
    Console(width=80).print(table)


if __name__ == "__main__":
    main()
