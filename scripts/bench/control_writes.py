#!/usr/bin/env python3
"""What hivemind's control-message framing costs: requests between two hivemind transports on
127.0.0.1 with the bindings' own writer (a message's varint length a byte at a time, each byte
its own write and drain, then the body) against swarm/transports/hivemind/control_writes.py's
(length and body in one write), in the same run, arms alternated --rounds times.

Both transports live in this process, each with its own p2pd; a round sends --requests requests
(--concurrency in flight, 20 KB answers, the size of a rollout fetch's) and reads the CPU seconds
of this process and of both p2pd per 1,000 requests. Prints each arm's median over the rounds and
the one-send arm's ratio to the bindings' writer.

    .venv/bin/python scripts/bench/control_writes.py --rounds 4 --requests 2000
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

from swarmnode.identity import create_p2p_identity
from swarmnode.swarm.transports.hivemind.control_writes import write_pbmsg as one_send
from swarmnode.swarm.transports.hivemind.transport import HivemindTransport
from swarmnode.testing.experiments.process_samples import cpu_seconds

PROTOCOL = "swarmnode/v1/bench-control-writes"
ANSWER = b"x" * 20_000


def transport(folder: Path, name: str) -> HivemindTransport:
    create_p2p_identity(folder / f"{name}.key")
    return HivemindTransport(identity_path=folder / f"{name}.key", host_maddrs=["/ip4/127.0.0.1/tcp/0"],
                             announce_maddrs=[], client_mode=False, startup_timeout_s=60, use_relay=False,
                             auto_nat=False, wait_timeout_s=3, policy=None)


def cpu_now(p2pds: list[psutil.Process]) -> dict[str, float]:
    return {"python": time.process_time(), "p2pd": sum(cpu_seconds(p.cpu_times()) for p in p2pds)}


async def one_round(client: HivemindTransport, peer: str, requests: int, concurrency: int,
                    p2pds: list[psutil.Process]) -> dict[str, float]:
    """CPU seconds per 1,000 requests of this process and of both p2pd, and the wall time."""
    left = iter(range(requests))

    async def worker() -> None:
        for _ in left:
            await client.request(peer, PROTOCOL, b"q", 30)

    before, started = cpu_now(p2pds), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    after, wall = cpu_now(p2pds), time.perf_counter() - started
    per = 1000.0 / requests
    return {k: (after[k] - before[k]) * per for k in before} | {"wall": wall * per}


async def run(args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    from hivemind.p2p.p2p_daemon_bindings import control

    byte_at_a_time = control.write_pbmsg  # the bindings' own, before a transport starts
    folder = Path(tempfile.mkdtemp(prefix="bench-control-writes-"))
    server, client = transport(folder, "server"), transport(folder, "client")
    await server.start()
    await client.start()

    async def answer(payload: bytes, requester: str) -> bytes:
        return ANSWER

    try:
        await server.serve(PROTOCOL, answer)
        maddr = (await server.multiaddrs())[0]
        await client.join(maddr, 30)
        peer = maddr.rsplit("/p2p/", 1)[1]
        p2pds = [psutil.Process(pid) for t in (server, client) for pid in t.child_processes()]
        arms = {"bindings' writer": byte_at_a_time, "one send": one_send}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
        await one_round(client, peer, 200, args.concurrency, p2pds)  # warm-up
        for _ in range(args.rounds):
            for name, writer in arms.items():
                control.write_pbmsg = writer  # the bench's own switch between the two framings
                results[name].append(await one_round(client, peer, args.requests, args.concurrency, p2pds))
        return results
    finally:
        control.write_pbmsg = one_send
        await client.stop()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    results = asyncio.run(run(args))
    medians = {arm: {k: statistics.median(r[k] for r in rounds) for k in rounds[0]} for arm, rounds in results.items()}
    table = Table(title=f"per 1,000 requests (20 KB answers, {args.concurrency} in flight), median of {args.rounds}")
    for head in ("framing", "python CPU s", "p2pd CPU s", "wall s"):
        table.add_column(head, justify="right")
    for arm, m in medians.items():
        table.add_row(arm, f"{m['python']:.3f}", f"{m['p2pd']:.3f}", f"{m['wall']:.3f}")
    base, new = medians["bindings' writer"], medians["one send"]
    table.add_row("ratio", *(f"{new[k] / base[k]:.2f}x" for k in ("python", "p2pd", "wall")), style="bold")
    console = Console(width=80)
    console.print(table)
    spread = {arm: [round(r["python"] + r["p2pd"], 3) for r in rounds] for arm, rounds in results.items()}
    console.print(f"python + p2pd CPU s per 1,000, each round: {spread}")


if __name__ == "__main__":
    main()
