"""The transport interface the node talks to; hivemind (default) and py-libp2p implement it.

One process imports one transport library: hivemind and libp2p both register the protobuf
symbol `crypto.pb.KeyType`, so each implementation imports its library lazily, inside itself.
"""
from __future__ import annotations

import abc
import os
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Protocol


def process_cpu_s(pid: int) -> float:
    """utime + stime of process `pid` in seconds (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def reason_from_text(error: BaseException, meanings: tuple[tuple[str, str], ...]) -> str:
    """A short reason for a failed dial or request: the meaning of the first needle found in the
    error's text (libraries' errors are verbose), else the text's first line."""
    text = str(error) or type(error).__name__
    lowered = text.lower()
    for needle, meaning in meanings:
        if needle in lowered:
            return meaning
    return text.splitlines()[0][:200]


class JoinError(Exception):
    """Could not reach an initial peer; `str(e)` says what failed and what to check."""


class TransportStartError(Exception):
    """The transport (e.g. p2pd) could not start; `str(e)` says why and what to change."""


@dataclass(frozen=True)
class StoredValue:
    """One value read from the DHT. `value` is whatever the peer stored: check before use."""

    subkey: object
    value: object
    expiration: float


class RequestFailed(Exception):
    """A request to a peer failed (unreachable, no such handler, the handler raised, timeout).
    `str(e)` names the request and the peer; `e.reason` is only why (for status and log lines)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = message if reason is None else reason

    def __reduce__(self):  # pickled whole (with its reason) across a host process's channel
        return type(self), (str(self), self.reason)


# (request bytes, the requesting peer's id) -> response bytes
RequestHandler = Callable[[bytes, str], Awaitable[bytes]]


class PeerPenalty(Protocol):
    """What this node holds against a peer, for transports that score peers (libp2p's GossipSub).
    Called from the transport's own thread: an implementation must be thread-safe."""

    def penalty(self, peer_id: str) -> float:
        """0 for a peer held nothing against; more the worse (100: an ignored peer)."""


class RecordPolicy(Protocol):
    """What the DHT may hold. Enforced where values enter: stores from peers and found values.

    Refusing bad values inside the DHT (not only when reading them) keeps a forged value from
    replacing an honest node's record under its subkey on honest nodes.
    """

    def known_keys(self, now: float) -> Iterable[str]:
        """The DHT keys this swarm uses around `now`; values under any other key are refused."""

    def knows_key(self, key: str, now: float) -> bool:
        """Whether `key` (a name) is one the swarm uses around `now` (a known key or a shard's)."""

    def candidate_keys(self, subkey: object, value: object, expiration: float, now: float) -> Iterable[str]:
        """Names of the keys other than known_keys' that `value` may be stored under (shards'),
        for a DHT that sees only a key's hash."""

    def reads_nearest_holders(self) -> bool:
        """Whether this node's reads ask only a key's nearest holders: a DHT must then not cache
        what it found or stored (a read would merge an old copy, and copy each answer to one
        more node: a store per read)."""

    def admit(self, key: str, subkey: object, value: object, expiration: float, now: float) -> bool:
        """Whether `value` (stored under `key`/`subkey` until `expiration`) may be kept."""

    def refuse_unknown_key(self, key_id: bytes, value: object) -> None:
        """Count a value under a key the swarm does not use."""


class Transport(abc.ABC):
    """DHT records plus peer connectivity. Knows nothing about models or losses."""

    @property
    @abc.abstractmethod
    def peer_id(self) -> str: ...

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    @abc.abstractmethod
    def child_processes(self) -> list[int]:
        """Pids of helper processes the transport started (killed at next start if left over)."""

    def transport_cpu_s(self) -> float:
        """CPU seconds the transport spent outside the node's own threads (its helper processes,
        or threads of its own)."""
        return sum(process_cpu_s(pid) for pid in self.child_processes())

    def failure(self) -> str | None:
        """Why the transport stopped working on its own (its helper process or thread ended), or
        None while it works. The node stops on it rather than run on without a network."""
        return None

    def watch_pushes(self, callback: Callable[[str, str], None]) -> None:
        """Call `callback(key, subkey)` on the node's loop when a peer's value arrives unasked
        (pushed; first heard). A transport without push (hivemind) never calls it."""

    def counters(self) -> dict[str, int]:
        """The transport's own counts for status (e.g. pushed entries kept and refused)."""
        return {}

    async def reserve_circuit(self, relay_peer_id: str) -> bool:
        """Hold a circuit relay slot on `relay_peer_id` (a peer that holds this node's swarm relay
        reservation), so that peers can open a circuit to this node there to punch a hole
        through its NAT. Whether one is held; a transport without hole punching holds none."""
        return False

    async def punch_hole(self, peer_id: str, relays: tuple[str, ...], timeout: float) -> bool:
        """Try for a direct connection to `peer_id` (behind NAT, reachable through `relays`) by
        hole punching; whether one exists now. A transport without hole punching says False."""
        return False

    @abc.abstractmethod
    async def multiaddrs(self) -> list[str]:
        """Full multiaddrs (with /p2p/<peer id>) other nodes can join through."""

    @abc.abstractmethod
    async def join(self, maddr: str, timeout: float) -> None:
        """Connect to the peer at `maddr` and fill the routing table through it; raise JoinError."""

    @abc.abstractmethod
    def routing_table_size(self) -> int: ...

    @abc.abstractmethod
    def dht_time(self) -> float:
        """Swarm time, seconds since the epoch (what windows and expirations are measured in)."""

    @abc.abstractmethod
    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool: ...

    @abc.abstractmethod
    async def get(self, key: str, *, nearest_holders: bool = False) -> list[StoredValue]:
        """All unexpired values under `key` (one per subkey). `nearest_holders`: the answers of the
        key's few nearest holders will do (a shard's key, which each of them keeps whole): a
        search bounded whatever the swarm's size, not a walk of the whole beam."""

    @abc.abstractmethod
    async def serve(self, protocol: str, handler: RequestHandler) -> None:
        """Answer requests on `protocol` (a direct libp2p stream) with `handler`."""

    @abc.abstractmethod
    async def request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        """Send `payload` to `peer_id` on `protocol` and return its answer; raise RequestFailed."""

    @abc.abstractmethod
    async def remote_ip(self, peer_id: str) -> str | None:
        """The IP address a connected peer's connection comes from (what NAT made of it), or None."""

    @abc.abstractmethod
    async def connect(self, peer_id: str, maddrs: list[str], timeout: float) -> None:
        """Dial `peer_id` at `maddrs` (multiaddrs without or with its /p2p/ part); raise RequestFailed."""
