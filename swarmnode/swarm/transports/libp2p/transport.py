"""Transport on py-libp2p: pure Python, no daemon binary; the libp2p side runs on trio in a thread.

The node's loop stays asyncio: each method hands its work to the trio thread (TrioThread) and
awaits the answer; requests arriving on the trio side run their handlers on the node's loop.
libp2p is imported only here and in swarmnode.swarm.transports.libp2p.node (never in a process that
imported hivemind: both register the protobuf symbol crypto.pb.KeyType).
"""
from __future__ import annotations

import asyncio
import errno
import logging
import time
from pathlib import Path
from typing import Any, Callable

from swarmnode.identity.keys import load_p2p_identity
from swarmnode.swarm.peers import peer_id_of
from swarmnode.swarm.transports.libp2p.trio_thread import TrioThread, TrioThreadStopped
from swarmnode.swarm.transports.base import (
    JoinError,
    PeerPenalty,
    RecordPolicy,
    RequestFailed,
    RequestHandler,
    StoredValue,
    Transport,
    TransportStartError,
    reason_from_text,
)

log = logging.getLogger(__name__)

CIRCUIT_CALL_TIMEOUT_S = 15.0  # a circuit reservation (transports/libp2p/hole_punch.py bounds it at 10 s)


def explain_failure(error: BaseException) -> str:
    """A short reason for a failed dial or request, in the user's terms."""
    import trio

    if isinstance(error, (trio.TooSlowError, asyncio.TimeoutError)):
        return "timed out"
    if isinstance(error, RequestFailed):
        return error.reason
    if isinstance(error, TrioThreadStopped):
        return "the transport is stopped"
    return reason_from_text(error, (
        ("connection refused", "connection refused: nothing listens on that port"),
        ("no addresses", "no address known"),
        ("unable to connect", "no answer at that address"),
        ("failed to", "no answer at that address"),
        ("peer id", "a different peer answers at that address (wrong /p2p/ part?)"),
    ))


class LibP2PTransport(Transport):
    def __init__(
        self,
        *,
        identity_path: Path,
        host_maddrs: list[str],
        announce_maddrs: list[str],
        client_mode: bool,
        startup_timeout_s: float,
        policy: RecordPolicy | None,
        swarm: str,
        penalties: PeerPenalty | None = None,
        relay_slots: int = 0,
    ):
        self._identity_path = identity_path
        self._host_maddrs = host_maddrs
        self._announce_maddrs = announce_maddrs
        self._client_mode = client_mode
        self._startup_timeout_s = startup_timeout_s
        self._policy = policy
        self._swarm = swarm
        self._penalties = penalties
        self._relay_slots = relay_slots
        self._thread = TrioThread("libp2p")
        self._node: Any = None
        self._push_watchers: list[Callable[[str, str], None]] = []
        self._stopping = False

    @property
    def peer_id(self) -> str:
        return self._node.peer_id

    async def start(self) -> None:
        from swarmnode.swarm.transports.libp2p.node import Libp2pNode, key_pair_from_seed

        _quiet_libp2p_logs()
        key = load_p2p_identity(self._identity_path)
        self._node = Libp2pNode(thread=self._thread, key_pair=key_pair_from_seed(key.seed_bytes),
                                listen_maddrs=self._host_maddrs, announce_maddrs=self._announce_maddrs,
                                client_mode=self._client_mode, swarm=self._swarm, policy=self._policy,
                                penalties=self._penalties, on_pushed=self._on_pushed,
                                relay_slots=self._relay_slots)
        try:
            await self._thread.start(self._node.run, self._startup_timeout_s)
        except asyncio.TimeoutError:
            raise TransportStartError(f"libp2p did not start within {self._startup_timeout_s:g}s; raise "
                                      "network.p2pd_startup_timeout_s or check network.host_maddrs") from None
        except Exception as e:  # noqa: BLE001 - any start failure becomes one line
            raise TransportStartError(_explain_start_failure(e, self._host_maddrs)) from None

    async def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping = True
        await self._thread.stop(timeout_s)

    def child_processes(self) -> list[int]:
        return []  # everything runs in this process

    def failure(self) -> str | None:
        if self._node is None or self._stopping or self._thread.running:
            return None
        error = self._thread.error
        why = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}" if error is not None else "it ended"
        return f"the libp2p transport stopped ({why}): the node has no network"

    def watch_pushes(self, callback: Callable[[str, str], None]) -> None:
        self._push_watchers.append(callback)

    def _on_pushed(self, key: str, subkey: str) -> None:
        """On the trio thread: hand the news to the watchers on the node's loop."""
        for callback in self._push_watchers:
            self._thread.call_soon_in_asyncio(callback, key, subkey)

    def transport_cpu_s(self) -> float:
        return self._thread.cpu_s()

    async def multiaddrs(self) -> list[str]:
        return await self._thread.call(_sync, self._node.multiaddrs)

    async def join(self, maddr: str, timeout: float) -> None:
        import multiaddr

        try:
            multiaddr.Multiaddr(maddr)
            peer = peer_id_of(maddr) if "/p2p/" in maddr else ""
            if not peer:
                raise ValueError("no /p2p/ part")
        except Exception as e:  # noqa: BLE001 - any parse failure means a bad address
            raise JoinError(f"{maddr} is not a valid multiaddr with /p2p/<peer id> ({e})") from None
        if peer == self.peer_id:
            raise JoinError(f"{maddr} is this node itself")
        try:
            size = await asyncio.wait_for(self._thread.call(self._node.join, peer, [maddr]), timeout)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as e:  # noqa: BLE001 - report any dial failure as one line
            raise JoinError(f"could not connect ({explain_failure(e)})") from None
        if size == 0:
            raise JoinError("connected, but it did not answer a DHT lookup (is it a swarmnode node?)")

    async def connected_peers(self) -> list[str]:
        """The peers this host has a connection with now."""
        return await self._thread.call(_sync, self._node.connected_peers)

    def routing_table_size(self) -> int:
        return self._node.routing_table_size() if self._node is not None else 0

    def dht_time(self) -> float:
        return time.time()

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        return await self._thread.call(self._node.store, key, subkey, value, expiration)

    async def get(self, key: str, *, nearest_holders: bool = False) -> list[StoredValue]:
        return await self._thread.call(self._node.get, key)

    async def serve(self, protocol: str, handler: RequestHandler) -> None:
        await self._thread.call(_sync, self._node.serve, protocol, handler)

    async def request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        try:
            return await asyncio.wait_for(self._thread.call(self._node.request, peer_id, protocol, payload), timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of a remote call is the peer's problem
            reason = explain_failure(e)
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: {reason}", reason) from None

    async def remote_ip(self, peer_id: str) -> str | None:
        return await self._thread.call(_sync, self._node.remote_ip, peer_id)

    async def connect(self, peer_id: str, maddrs: list[str], timeout: float) -> None:
        try:
            await asyncio.wait_for(self._thread.call(self._node.connect, peer_id, maddrs), timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any dial failure is one reason
            reason = explain_failure(e)
            raise RequestFailed(f"connect to {peer_id[:16]}: {reason}", reason) from None

    async def reserve_circuit(self, relay_peer_id: str) -> bool:
        # Without a circuit slot peers still reach this node through the swarm relay.
        return await self._best_effort(f"circuit reservation on {relay_peer_id[:16]}", CIRCUIT_CALL_TIMEOUT_S,
                                       self._node.reserve_circuit, relay_peer_id)

    async def punch_hole(self, peer_id: str, relays: tuple[str, ...], timeout: float) -> bool:
        # Without a punched hole the relays carry the requests.
        return await self._best_effort(f"hole punch to {peer_id[:16]}", timeout, self._node.punch_hole, peer_id, list(relays))

    async def _best_effort(self, what: str, timeout: float, fn: Callable[..., Any], *args: Any) -> bool:
        """`fn(*args)` on the trio side within `timeout`: its answer, or False (logged at debug)
        if it failed or ran out of time."""
        try:
            return await asyncio.wait_for(self._thread.call(fn, *args), timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a best-effort step: any failure means "not done"
            log.debug("%s: %s", what, explain_failure(e))
            return False

    def counters(self) -> dict[str, int]:
        """Entries received on the swarm's GossipSub topic (kept, and refused by the record policy),
        peers' pubsub streams ended on an RPC that did not parse or could not be handled, request
        streams closed unanswered (over this node's per-peer or total bound), hole
        punches (DCUtR sessions this node started or answered, and those that ended direct), and
        on a relay the shard topics it bridges for the nodes it holds circuit reservations for."""
        node = self._node
        if node is None:
            return {}
        punching = node.hole_punching
        return {"pushed_entries": node.pushed_entries, "pushed_entries_refused": node.refused_pushes,
                "pubsub_streams_ended_on_bad_rpcs": node.pubsub.bad_rpc_streams if node.pubsub else 0,
                "streams_refused": node.streams_refused, "requests_too_large": node.requests_too_large,
                "hole_punches_tried": punching.tried if punching else 0,
                "hole_punches_succeeded": punching.succeeded if punching else 0,
                "bridged_topics": len(node.topics.bridged)}


async def _sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a plain function on the trio thread (libp2p's objects belong to it)."""
    return fn(*args)


def _explain_start_failure(error: BaseException, host_maddrs: list[str]) -> str:
    """One line for a host that did not start: a taken port is named as such."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno == errno.EADDRINUSE or "address already in use" in str(cause).lower():
            return (f"libp2p cannot listen on {', '.join(host_maddrs)}: address already in use (or not an address "
                    "of this machine); pick a free port (--host-port, or network.host_maddrs; 0 for any free port)")
        cause = cause.__cause__ or cause.__context__
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
    return f"libp2p did not start: {text}; check network.host_maddrs {host_maddrs}"


def _quiet_libp2p_logs() -> None:
    """py-libp2p logs every stream hiccup, some at ERROR with a screenful of detail (a peer that
    does not serve a protocol); the node reports what matters itself, in one line."""
    logging.getLogger("libp2p").setLevel(logging.CRITICAL)
