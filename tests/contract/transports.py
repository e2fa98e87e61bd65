"""What the transport contract cases are built from: one factory that opens a transport of a
named kind, node identities on disk, free ports, the real record policy, and polling.

Neither hivemind nor libp2p is imported here at module level (they cannot share a process):
open_transport imports the one class it is asked for, inside the case's own interpreter.
"""
from __future__ import annotations

import asyncio
import importlib.util
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, TypeVar

import psutil

from swarmnode.identity import NodeIdentity, create_node_key, create_p2p_identity, load_identity
from swarmnode.protocol import build_peer_record
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.transports.base import RecordPolicy, Transport
from swarmnode.swarm.windows import peer_records_key, window_index
from tests.helpers import record_fields

KINDS = ("hivemind", "libp2p", "libp2p-process")  # libp2p-process: the libp2p host in a child process
SWARM = "contract"
WINDOW_S = 30.0
RECORD_TTL_S = 60.0
STARTUP_TIMEOUT_S = 60.0
DHT_WAIT_TIMEOUT_S = 2.0  # configs/local.yaml's: a lost DHT request on 127.0.0.1 is lost for good

T = TypeVar("T")
TransportT = TypeVar("TransportT", bound=Transport)


def why_unavailable(kind: str) -> str | None:
    """Why transports of `kind` cannot be opened here, or None (found without importing them)."""
    if kind == "hivemind":
        return None if importlib.util.find_spec("hivemind") else "hivemind is not installed"
    if kind in ("libp2p", "libp2p-process"):
        if importlib.util.find_spec("swarmnode.swarm.transports.libp2p.transport") is None:
            return "swarmnode/swarm/transports/libp2p/transport.py (LibP2PTransport) does not exist yet"
        if importlib.util.find_spec("libp2p") is None:
            return "py-libp2p (import name libp2p) is not installed"
        return None
    raise ValueError(f"unknown transport kind {kind!r}; known: {', '.join(KINDS)}")


def open_transport(kind: str, identity_path: Path, port: int, policy: RecordPolicy | None) -> Transport:
    """A transport of `kind` (not started) listening on 127.0.0.1:`port`, settings as configs/local.yaml."""
    host_maddrs = [f"/ip4/127.0.0.1/tcp/{port}"]
    if kind == "hivemind":
        from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

        return HivemindTransport(identity_path=identity_path, host_maddrs=host_maddrs, announce_maddrs=[],
                                 client_mode=False, startup_timeout_s=STARTUP_TIMEOUT_S, use_relay=False,
                                 auto_nat=False, wait_timeout_s=DHT_WAIT_TIMEOUT_S, policy=policy)
    if kind == "libp2p":
        from swarmnode.swarm.transports.libp2p.transport import LibP2PTransport

        return LibP2PTransport(identity_path=identity_path, host_maddrs=host_maddrs, announce_maddrs=[],
                               client_mode=False, startup_timeout_s=STARTUP_TIMEOUT_S, policy=policy, swarm=SWARM)
    if kind == "libp2p-process":
        from swarmnode.swarm.transports.libp2p.process_transport import LibP2PProcessTransport

        return LibP2PProcessTransport(identity_path=identity_path, host_maddrs=host_maddrs, announce_maddrs=[],
                                      client_mode=False, startup_timeout_s=STARTUP_TIMEOUT_S, policy=policy,
                                      swarm=SWARM)
    raise ValueError(f"unknown transport kind {kind!r}; known: {', '.join(KINDS)}")


@dataclass
class Node:
    """A node's key files and what it needs to hold a transport: its identity, port and policy."""

    identity: NodeIdentity
    p2p_identity_path: Path
    port: int
    policy: RecordIntake

    @property
    def peer_id(self) -> str:
        return self.identity.peer_id

    def open(self, kind: str, checks_records: bool = True) -> Transport:
        """Its transport; without its policy (`checks_records=False`) for a peer that stores
        whatever it likes, as a hostile one would."""
        return open_transport(kind, self.p2p_identity_path, self.port, self.policy if checks_records else None)

    def peer_record(self, now: float, swarm: str = SWARM) -> bytes:
        return build_peer_record(self.identity, record_fields(swarm), now, RECORD_TTL_S)


def make_node(directory: Path, port: int | None = None) -> Node:
    """A node home's two keys under `directory` (kept if there: a restarted node is the same
    node), a free port unless one is given, and the node's own record policy."""
    directory.mkdir(parents=True, exist_ok=True)
    create_node_key(directory / "node.key", None)
    create_p2p_identity(directory / "p2p.key")
    identity = load_identity(directory / "node.key", directory / "p2p.key")
    policy = RecordIntake(PeerTable(identity.peer_id), MessageStats(), SWARM, WINDOW_S)
    return Node(identity, directory / "p2p.key", port or free_port(), policy)


def free_port() -> int:
    """A TCP port nothing on 127.0.0.1 listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records_key(now: float) -> str:
    return peer_records_key(SWARM, window_index(now, WINDOW_S))


async def eventually(probe: Callable[[], Awaitable[T]], timeout: float, what: str, interval: float = 0.5) -> T:
    """probe()'s first truthy result; fails naming `what` and the last result (or error) after
    `timeout` seconds. The deadline is generous: it bounds a hang, it times nothing. A failed
    assertion inside probe() fails at once: it says something is wrong, not late."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = await probe()
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 - a probe that fails now may work later; the last error is reported
            last = e
        if last and not isinstance(last, Exception):
            return last  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not so after {timeout:g}s (last: {last!r})")
        await asyncio.sleep(interval)


async def start_all(transports: list[TransportT]) -> list[TransportT]:
    """Start the transports at once; a failed start stops the ones that started."""
    results = await asyncio.gather(*(t.start() for t in transports), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        await stop_all([t for t, r in zip(transports, results) if not isinstance(r, BaseException)])
        raise failed[0]
    return transports


async def stop_all(transports: list[Transport]) -> None:
    await asyncio.gather(*(t.stop() for t in transports), return_exceptions=True)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
