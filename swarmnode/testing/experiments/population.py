"""The synthetic population of scripts/bench/scale_population.py: P signed identities (no DHT
node behind any) that store their peer records where honest nodes of a swarm of N + P would, at
the config's intervals, through one DHT node in client mode; and the pure parts of that plan
(which keys each identity writes at which swarm size, the ramp, the slices of an interval)."""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
from pathlib import Path
from typing import Any

from swarmnode import __version__
from swarmnode.config import load_config
from swarmnode.identity import NodeIdentity, SigningKey, create_p2p_identity
from swarmnode.protocol import PeerRecordFields, build_peer_record
from swarmnode.protocol.codec import VersionedSigner
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.versions import THIS_RELEASE
from swarmnode.swarm.key_layout import ShardedKeys
from swarmnode.swarm.shards import SHARDS_READ_PER_WINDOW, next_bits, shard_of
from swarmnode.swarm.windows import peer_records_shard_key, window_index

Item = tuple[str, str, bytes, float]  # (key, subkey, value, expiration) of one store


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
    spread.observe({(spread.bits, shard): total / 2**spread.bits for shard in range(spread.shards_read)},
                   reading_window)


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
