"""Transport on py-libp2p with the host in a child process (`network.libp2p_host: process`).

The node's side of host_process.py: it starts the child with one end of a Unix socket pair,
turns each Transport call into a "call" frame and awaits its "result", runs its own handlers
for the peers' requests the host forwards ("handle"), hands pushes to the watchers, and takes
the host's news (HostNews): counters and routing table for status, and what the host's record
policy refused or learned, counted and kept by the node's own intake. It answers with the
node's penalties for the peers the host is connected to, for their GossipSub scores. The child
dies with the channel: it exits when the node stops or is killed; a child that exits while the
node runs is the transport's failure (the node stops on it, as when p2pd exits).
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import time
from pathlib import Path
from typing import Any, Callable

from swarmnode.protocol import RejectReason
from swarmnode.swarm.peers import RecordIntake
from swarmnode.swarm.transports.base import (
    JoinError,
    PeerPenalty,
    RequestFailed,
    RequestHandler,
    StoredValue,
    Transport,
    TransportStartError,
)
from swarmnode.swarm.transports.libp2p.host_channel import ChannelClosed, FrameWriter, HostNews, read_frame
from swarmnode.swarm.transports.libp2p.host_process import HostSettings, PolicySettings
from swarmnode.utils.child_process import child_environment, python_module_command

log = logging.getLogger(__name__)

HOST_MODULE = "swarmnode.swarm.transports.libp2p.host_process"
CALL_SLACK_S = 5.0  # a call with its own timeout is given up this much later if the host never answers
STOP_WAIT_S = 12.0  # for the host to stop on its own (its trio thread gets 10 s) before it is killed


def policy_settings(policy: RecordIntake | None) -> PolicySettings | None:
    """What the host process builds its own intake from: the node's intake's settings."""
    if policy is None:
        return None
    return PolicySettings(policy.swarm, policy.window_s, policy.max_ttl_s, policy.max_values_per_key, policy.versions)


def penalty_table(penalties: PeerPenalty, peers: list[str]) -> dict[str, float]:
    """What this node holds against each of `peers`, the peers held nothing against left out."""
    return {peer: p for peer in peers if (p := penalties.penalty(peer)) > 0}


class LibP2PProcessTransport(Transport):
    def __init__(self, *, identity_path: Path, host_maddrs: list[str], announce_maddrs: list[str], client_mode: bool,
                 startup_timeout_s: float, policy: RecordIntake | None, swarm: str,
                 penalties: PeerPenalty | None = None, relay_slots: int = 0):
        self._settings = HostSettings(identity_path=Path(identity_path), host_maddrs=list(host_maddrs),
                                      announce_maddrs=list(announce_maddrs), client_mode=client_mode,
                                      startup_timeout_s=startup_timeout_s, swarm=swarm, relay_slots=relay_slots,
                                      policy=policy_settings(policy),
                                      log_level=logging.getLogger().getEffectiveLevel())
        self._startup_timeout_s = startup_timeout_s
        self._policy = policy
        self._penalties = penalties
        self._process: asyncio.subprocess.Process | None = None
        self._out: FrameWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._handler_tasks: set[asyncio.Task] = set()
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._handlers: dict[str, RequestHandler] = {}
        self._push_watchers: list[Callable[[str, str], None]] = []
        self._peer_id = ""
        self._news = HostNews()
        self._routing_table_size = 0  # from the latest news or call result
        self._stopping = False
        self._channel_closed = False

    @property
    def peer_id(self) -> str:
        return self._peer_id

    async def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # A session of its own: a Ctrl-C or SIGTERM for the node's process group must not
            # kill the host while the node shuts down in order (it exits when the channel closes).
            self._process = await asyncio.create_subprocess_exec(
                *python_module_command(HOST_MODULE, str(theirs.fileno())), pass_fds=(theirs.fileno(),),
                env=child_environment(), stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
            reader, writer = await asyncio.open_unix_connection(sock=ours)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._out = FrameWriter(writer)
        self._out.send(("settings", self._settings))
        try:
            first = await asyncio.wait_for(self._first_word(reader), self._startup_timeout_s + CALL_SLACK_S)
        except (asyncio.TimeoutError, ChannelClosed) as e:
            await self.stop()
            why = "did not start in time" if isinstance(e, asyncio.TimeoutError) else "exited while starting"
            raise TransportStartError(f"the libp2p host process {why}; raise network.p2pd_startup_timeout_s "
                                      "or check network.host_maddrs") from None
        if first[0] != "started":
            await self.stop()
            raise TransportStartError(str(first[1]) if first[0] == "failed" else f"the libp2p host said {first[0]!r}")
        self._peer_id = first[1]
        self._reader_task = asyncio.create_task(self._read(reader), name="libp2p-host-channel")

    @staticmethod
    async def _first_word(reader: asyncio.StreamReader) -> tuple:
        """The host's "started" or "failed", its log records before it written as they come."""
        while True:
            message = await read_frame(reader)
            if message[0] != "log":
                return message
            _log_record(message)

    async def stop(self, timeout_s: float = STOP_WAIT_S) -> None:
        self._stopping = True
        if self._out is not None:
            with contextlib.suppress(ChannelClosed):
                self._out.send(("stop",))
                await self._out.drain()
        if self._process is not None and self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), timeout_s)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                await self._process.wait()
        for task in [self._reader_task, *self._handler_tasks]:
            if task is not None:
                task.cancel()
        if self._out is not None:
            self._out.close()
        self._fail_pending()

    def child_processes(self) -> list[int]:
        return [self._process.pid] if self._process is not None else []

    def failure(self) -> str | None:
        process = self._process
        if process is None or self._stopping:
            return None
        if process.returncode is not None:
            return f"the libp2p host process exited (code {process.returncode}): the node has no network"
        if self._channel_closed:
            return "the libp2p host process stopped answering (its channel closed): the node has no network"
        return None

    def watch_pushes(self, callback: Callable[[str, str], None]) -> None:
        self._push_watchers.append(callback)

    def counters(self) -> dict[str, int]:
        return dict(self._news.counters)

    def routing_table_size(self) -> int:
        return self._routing_table_size

    def dht_time(self) -> float:
        return time.time()

    # -- calls -------------------------------------------------------------------------------

    async def _call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        if self._out is None or self._stopping or self._channel_closed:
            raise ChannelClosed("the libp2p host process is not running")
        call_id = next(self._ids)
        future = self._pending[call_id] = asyncio.get_running_loop().create_future()
        try:
            self._out.send(("call", call_id, method, args))
            return await (future if timeout is None else asyncio.wait_for(asyncio.shield(future), timeout))
        except (asyncio.CancelledError, asyncio.TimeoutError):
            with contextlib.suppress(ChannelClosed):
                self._out.send(("cancel", call_id))  # nobody waits for it any more
            raise
        finally:
            self._pending.pop(call_id, None)

    async def multiaddrs(self) -> list[str]:
        return await self._call("multiaddrs")

    async def join(self, maddr: str, timeout: float) -> None:
        try:
            await self._call("join", maddr, timeout, timeout=timeout + CALL_SLACK_S)
        except (asyncio.TimeoutError, ChannelClosed) as e:
            reason = "timed out" if isinstance(e, asyncio.TimeoutError) else "the transport is stopped"
            raise JoinError(f"could not connect ({reason})") from None

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        return await self._call("store", key, subkey, value, expiration)

    async def get(self, key: str, *, nearest_holders: bool = False) -> list[StoredValue]:
        return await self._call("get", key)

    async def serve(self, protocol: str, handler: RequestHandler) -> None:
        self._handlers[protocol] = handler
        await self._call("serve", protocol)

    async def request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        try:
            return await self._call("request", peer_id, protocol, payload, timeout, timeout=timeout + CALL_SLACK_S)
        except (asyncio.TimeoutError, ChannelClosed) as e:
            reason = "timed out" if isinstance(e, asyncio.TimeoutError) else "the transport is stopped"
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: {reason}", reason) from None

    async def remote_ip(self, peer_id: str) -> str | None:
        return await self._call("remote_ip", peer_id)

    async def connect(self, peer_id: str, maddrs: list[str], timeout: float) -> None:
        try:
            await self._call("connect", peer_id, maddrs, timeout, timeout=timeout + CALL_SLACK_S)
        except (asyncio.TimeoutError, ChannelClosed) as e:
            reason = "timed out" if isinstance(e, asyncio.TimeoutError) else "the transport is stopped"
            raise RequestFailed(f"connect to {peer_id[:16]}: {reason}", reason) from None

    async def reserve_circuit(self, relay_peer_id: str) -> bool:
        with contextlib.suppress(ChannelClosed):
            return await self._call("reserve_circuit", relay_peer_id)
        return False

    async def punch_hole(self, peer_id: str, relays: tuple[str, ...], timeout: float) -> bool:
        with contextlib.suppress(ChannelClosed, asyncio.TimeoutError):
            return await self._call("punch_hole", peer_id, tuple(relays), timeout, timeout=timeout + CALL_SLACK_S)
        return False

    # -- what the host sends -----------------------------------------------------------------

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                message = await read_frame(reader)
                try:
                    self._dispatch(message)
                except Exception as e:  # noqa: BLE001 - one message must not end the channel
                    log.warning("a %r message of the libp2p host failed here (%s: %s)", message[0],
                                type(e).__name__, e)
        except ChannelClosed:
            if not self._stopping:
                log.warning("the libp2p host process closed its channel")
        finally:
            self._channel_closed = True  # later calls fail at once
            self._fail_pending()

    def _dispatch(self, message: tuple) -> None:
        kind = message[0]
        if kind == "result":
            self._settle(*message[1:])
        elif kind == "handle":
            task = asyncio.create_task(self._handle(*message[1:]))
            self._handler_tasks.add(task)
            task.add_done_callback(self._handler_tasks.discard)
        elif kind == "pushed":
            for callback in self._push_watchers:
                asyncio.get_running_loop().call_soon(callback, message[1], message[2])  # as the thread transport does
        elif kind == "news":
            self._take_news(message[1])
        elif kind == "log":
            _log_record(message)

    def _settle(self, call_id: int, ok: bool, value: Any, routing_table_size: int) -> None:
        self._routing_table_size = routing_table_size
        future = self._pending.get(call_id)
        if future is None or future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value if isinstance(value, BaseException) else RuntimeError(str(value)))

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ChannelClosed("the libp2p host process is gone"))

    async def _handle(self, handle_id: int, protocol: str, payload: bytes, requester: str) -> None:
        handler = self._handlers.get(protocol)
        try:
            if handler is None:
                raise LookupError(f"no handler for {protocol}")
            answer: tuple = ("answer", handle_id, True, await handler(payload, requester))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the requester gets a reason (node.py), the node goes on
            answer = ("answer", handle_id, False, type(e).__name__)
        if self._out is not None:
            with contextlib.suppress(ChannelClosed):
                self._out.send(answer)

    def _take_news(self, news: HostNews) -> None:
        """Keep the host's counters; count and keep what its intake saw as the node's own did."""
        self._news = news
        self._routing_table_size = news.routing_table_size
        if self._policy is not None:
            for reason, sender in news.rejections:
                with contextlib.suppress(ValueError):
                    self._policy.stats.reject(RejectReason(reason), sender)
            for origin in news.foreign:
                self._policy.remember_foreign(origin)
            for peer in news.incompatible:
                self._policy.remember_incompatible(peer)
            self._policy.count_over_key_cap(news.over_key_cap)
        if self._penalties is not None and self._out is not None and news.connected is not None:
            with contextlib.suppress(ChannelClosed):
                self._out.send(("penalties", penalty_table(self._penalties, news.connected)))


def _log_record(message: tuple) -> None:
    """A ("log", level, logger, text) frame of the host, written as this process's own record."""
    _, level, name, text = message
    logging.getLogger(name).log(level, "%s", text)
