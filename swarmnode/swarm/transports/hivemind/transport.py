"""Transport over hivemind's Kademlia DHT, run inside the node's own event loop.

The DHTNode lives in this process (no DHT child process, no pipe: the DHT-pipe hang on large
values cannot happen here, though values still stay small). p2pd is its only child; it is
started with a parent-death signal so a SIGKILLed node leaves no p2pd behind.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ctypes
import logging
import os
import signal
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from swarmnode.swarm.transports.base import (
    JoinError,
    RecordPolicy,
    RequestFailed,
    RequestHandler,
    StoredValue,
    Transport,
    TransportStartError,
    reason_from_text,
)

log = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1
# Set while P2P.create runs; asyncio tasks inherit it, so only p2pd spawned from there gets the
# parent-death hook, even when several transports start at once.
_spawning_for: contextvars.ContextVar[int | None] = contextvars.ContextVar("swarmnode_p2pd_parent", default=None)
_original_spawn = asyncio.subprocess.create_subprocess_exec


def _parent_death_hook(parent_pid: int) -> Callable[[], None]:
    """A preexec_fn for p2pd: SIGKILL when the node process dies, however it dies.

    prctl is looked up here, in the parent: between fork and exec only async-signal-safe work
    is allowed, and loading a library is not. p2pd also gets its own process group, so a
    Ctrl-C or `timeout` aimed at the node's group reaches only the node, which then shuts p2pd
    down in order (p2pd dying first would leave hivemind's shutdown waiting on a dead daemon).
    The signal fires when the *thread* that spawned p2pd ends: the node runs its event loop,
    and so starts p2pd, on the main thread.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    kill = int(signal.SIGKILL)

    def hook() -> None:
        os.setpgid(0, 0)
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook


async def _spawn(*args: Any, **kwargs: Any):
    parent = _spawning_for.get()
    if parent is not None:
        kwargs.setdefault("preexec_fn", _parent_death_hook(parent))
    return await _original_spawn(*args, **kwargs)


@contextlib.contextmanager
def _children_die_with_parent() -> Iterator[None]:
    """Within this block (and tasks it starts), p2pd gets a parent-death signal (Linux only).

    hivemind starts p2pd with asyncio.subprocess.create_subprocess_exec and no way to pass a
    preexec_fn, so that function is wrapped once; the wrapper acts only inside this block.
    """
    if not sys.platform.startswith("linux"):
        yield
        return
    asyncio.subprocess.create_subprocess_exec = _spawn  # type: ignore[assignment]
    token = _spawning_for.set(os.getpid())
    try:
        yield
    finally:
        _spawning_for.reset(token)


def _explain_connect_failure(error: BaseException) -> str:
    """A short reason for a failed dial, in the user's terms (p2pd's errors are verbose)."""
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    return reason_from_text(error, (
        ("connection refused", "connection refused: nothing listens on that port"),
        ("mismatch", "a different peer answers at that address (wrong /p2p/ part?)"),
        ("no route", "network unreachable"),
        ("i/o timeout", "timed out"),
        ("deadline", "timed out"),
        ("all dials failed", "no answer at that address"),
        ("dial backoff", "no answer at that address"),
    ))


def _explain_start_failure(error: BaseException, host_maddrs: list[str], timeout_s: float) -> str:
    """One line for a p2pd that did not start: a taken port is no slow machine."""
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
    if "address already in use" in str(error).lower():
        return (f"p2pd cannot listen on {', '.join(host_maddrs)}: address already in use; pick a free port "
                "(--host-port, or network.host_maddrs; 0 for any free port)")
    return (f"p2pd did not start: {text}; raise network.p2pd_startup_timeout_s (now {timeout_s:g}s) "
            f"or check network.host_maddrs {host_maddrs}")


# Holders a read of a shard's key asks: hivemind stores each value on its 5 nearest nodes.
NEAREST_HOLDERS = 5


@dataclass
class DHTCounters:
    """What this node asked of the DHT, and what came of it (status `network.counters`)."""

    dht_gets: int = 0  # reads of a key this node started
    dht_stores: int = 0  # stores of a value this node started
    dht_entries_read: int = 0  # values its reads brought back (one per subkey)


class HivemindTransport(Transport):
    def __init__(
        self,
        *,
        identity_path: Path,
        host_maddrs: list[str],
        announce_maddrs: list[str],
        client_mode: bool,
        startup_timeout_s: float,
        use_relay: bool,
        auto_nat: bool,
        wait_timeout_s: float,
        policy: RecordPolicy | None = None,
    ):
        self._identity_path = identity_path
        self._host_maddrs = host_maddrs
        self._announce_maddrs = announce_maddrs
        self._client_mode = client_mode
        self._startup_timeout_s = startup_timeout_s
        self._use_relay = use_relay
        self._auto_nat = auto_nat
        self._wait_timeout_s = wait_timeout_s
        self._policy = policy
        self._p2p: Any = None
        self._node: Any = None
        self._dial_reasons: dict[str, str] = {}  # initial peer -> the reason its last real dial failed
        self._counts = DHTCounters()
        self._validator: Any = None

    @property
    def peer_id(self) -> str:
        return str(self._p2p.peer_id)

    async def start(self) -> None:
        from hivemind.dht.node import DHTNode
        from hivemind.p2p import P2P
        from hivemind.p2p.p2p_daemon_bindings.utils import P2PDaemonError

        try:
            with _children_die_with_parent():
                self._p2p = await P2P.create(
                    host_maddrs=self._host_maddrs,
                    announce_maddrs=self._announce_maddrs or None,
                    identity_path=str(self._identity_path),
                    startup_timeout=self._startup_timeout_s,
                    use_relay=self._use_relay,
                    auto_nat=self._auto_nat,
                )
        except P2PDaemonError as e:
            raise TransportStartError(_explain_start_failure(e, self._host_maddrs, self._startup_timeout_s)) from None
        validator = None
        if self._policy is not None:
            from swarmnode.swarm.transports.hivemind.validator import PolicyValidator

            validator = self._validator = PolicyValidator(self._policy)
        try:
            # A node whose reads ask only a key's nearest holders keeps no copies of what it
            # found or stored (hivemind would merge an old one and push each answer to one
            # more node: a store per read).
            caching = self._policy is None or not self._policy.reads_nearest_holders()
            self._node = await DHTNode.create(
                p2p=self._p2p, client_mode=self._client_mode, wait_timeout=self._wait_timeout_s,
                record_validator=validator, cache_locally=caching, cache_on_store=caching,
                cache_nearest=1 if caching else 0,
            )
        except BaseException:
            await self.stop()
            raise

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Shut the DHT node and p2pd down; kill p2pd if it does not go within `timeout_s`."""
        if self._node is not None:
            try:
                await asyncio.wait_for(self._node.shutdown(), timeout_s)
            except Exception as e:  # noqa: BLE001 - shutdown goes on; p2pd is stopped below
                log.warning("DHT node shutdown failed: %r", e)
            self._node = None
        if self._p2p is not None:
            child = getattr(self._p2p, "_child", None)
            try:
                await asyncio.wait_for(self._p2p.shutdown(), timeout_s)
            except Exception as e:  # noqa: BLE001 - whatever went wrong, p2pd must not outlive us
                log.warning("p2pd did not stop cleanly (%r); killing it", e)
                if child is not None and child.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        child.kill()
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(child.wait(), timeout_s)
            self._p2p = None

    def failure(self) -> str | None:
        child = getattr(self._p2p, "_child", None)
        if child is not None and child.returncode is not None:
            return f"p2pd exited (code {child.returncode}): the node has no network"
        return None

    def child_processes(self) -> list[int]:
        child = getattr(self._p2p, "_child", None)
        return [child.pid] if child is not None else []

    async def multiaddrs(self) -> list[str]:
        return [str(m) for m in await self._p2p.get_visible_maddrs()]

    async def join(self, maddr: str, timeout: float) -> None:
        from hivemind.p2p import PeerID
        from hivemind.utils.multiaddr import Multiaddr

        try:
            full = Multiaddr(maddr)
            peer = PeerID.from_base58(full["p2p"])
            address = full.decapsulate(Multiaddr(f"/p2p/{full['p2p']}"))
        except Exception as e:  # noqa: BLE001 - any parse failure means a bad address
            raise JoinError(f"{maddr} is not a valid multiaddr with /p2p/<peer id> ({e})") from None
        if str(peer) == self.peer_id:
            raise JoinError(f"{maddr} is this node itself")
        try:
            await self._dial(peer, [address], timeout)
        except Exception as e:  # noqa: BLE001 - report any dial failure as one line
            raise JoinError(f"could not connect ({self._stable_dial_reason(maddr, e)})") from None
        node_id = await self._node.protocol.call_ping(peer)
        if node_id is None:
            raise JoinError("connected, but it did not answer a DHT ping (is it a swarmnode node?)")
        try:
            # Fill the routing table with the peer's neighbours (Kademlia self-lookup).
            await asyncio.wait_for(self._node.find_nearest_nodes([self._node.node_id]), timeout)
        except Exception as e:  # noqa: BLE001 - the peer answered; a failed lookup is retried by the caller
            raise JoinError(f"connected, but the neighbour lookup failed ({type(e).__name__})") from None

    def _stable_dial_reason(self, maddr: str, error: BaseException) -> str:
        """The reason a dial failed; libp2p answers a redial soon after a failure with "dial
        backoff", which says nothing new: the reason stays the one the last real dial gave."""
        reason = _explain_connect_failure(error)
        if "dial backoff" in str(error).lower() and maddr in self._dial_reasons:
            return self._dial_reasons[maddr]
        self._dial_reasons[maddr] = reason
        return reason

    def routing_table_size(self) -> int:
        if self._node is None:
            return 0
        return len(self._node.protocol.routing_table.peer_id_to_uid)

    def dht_time(self) -> float:
        from hivemind.utils import get_dht_time

        return get_dht_time()

    def counters(self) -> dict[str, int]:
        judged = {} if self._validator is None else {"dht_entries_judged": self._validator.judged}
        return {**asdict(self._counts), **judged}

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        self._counts.dht_stores += 1
        return bool(await self._node.store(key, value, expiration, subkey=subkey))

    async def get(self, key: str, *, nearest_holders: bool = False) -> list[StoredValue]:
        self._counts.dht_gets += 1
        # A search bounded by the replica count: it merges what the key's nearest holders keep.
        # Not latest=False (the first fresh answer): that is this node's own storage whenever
        # it holds the key, which behind NAT holds little more than its own entry.
        beam = {"beam_size": NEAREST_HOLDERS} if nearest_holders else {}
        found = await self._node.get(key, latest=True, **beam)
        if found is None:
            return []
        if not isinstance(found.value, dict):  # someone stored a plain value under our key
            self._counts.dht_entries_read += 1
            return [StoredValue(subkey=None, value=found.value, expiration=found.expiration_time)]
        self._counts.dht_entries_read += len(found.value)
        return [
            StoredValue(subkey=subkey, value=getattr(item, "value", item), expiration=getattr(item, "expiration_time", 0.0))
            for subkey, item in found.value.items()
        ]

    async def serve(self, protocol: str, handler: RequestHandler) -> None:
        from google.protobuf.wrappers_pb2 import BytesValue

        async def answer(request: BytesValue, context) -> BytesValue:
            return BytesValue(value=await handler(request.value, str(context.remote_id)))

        # Unary protobuf handlers ride p2pd's persistent multiplexed connection (one stream per
        # call, no extra sockets); BytesValue carries our own signed bytes untouched.
        await self._p2p.add_protobuf_handler(protocol, answer, BytesValue)

    async def request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        from google.protobuf.wrappers_pb2 import BytesValue
        from hivemind.p2p import PeerID

        try:
            peer = PeerID.from_base58(peer_id)
            response = await asyncio.wait_for(
                self._p2p.call_protobuf_handler(peer, protocol, BytesValue(value=payload), BytesValue), timeout
            )
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of a remote call is the peer's problem
            reason = _explain_connect_failure(e)
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: {reason}", reason) from None
        return response.value

    async def remote_ip(self, peer_id: str) -> str | None:
        for info in await self._p2p.list_peers():
            if str(info.peer_id) != peer_id:
                continue
            for addr in info.addrs:  # the connections' remote addresses, as p2pd sees them
                parts = str(addr).split("/")
                if len(parts) > 2 and parts[1] in ("ip4", "ip6") and "p2p-circuit" not in parts:
                    return parts[2]
        return None

    async def connect(self, peer_id: str, maddrs: list[str], timeout: float) -> None:
        from hivemind.p2p import PeerID
        from hivemind.utils.multiaddr import Multiaddr

        try:
            suffix = Multiaddr(f"/p2p/{peer_id}")
            # hivemind's Multiaddr encodes a /p2p/ part p2pd cannot read: dial the bare address
            addresses = [Multiaddr(m).decapsulate(suffix) if m.endswith(f"/p2p/{peer_id}") else Multiaddr(m) for m in maddrs]
            await self._dial(PeerID.from_base58(peer_id), addresses, timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any dial failure is one reason
            reason = _explain_connect_failure(e)
            raise RequestFailed(f"connect to {peer_id[:16]}: {reason}", reason) from None

    async def _dial(self, peer: Any, addresses: list[Any], timeout: float) -> None:
        """Connect p2pd to `peer` at `addresses` (hivemind Multiaddrs without their /p2p/ part):
        hivemind's P2P has no public "dial this address"; its daemon client does."""
        await asyncio.wait_for(self._p2p._client.connect(peer, addresses), timeout)
