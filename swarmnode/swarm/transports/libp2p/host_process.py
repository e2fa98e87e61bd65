"""The libp2p host in a process of its own: `python -m swarmnode.swarm.transports.libp2p.host_process <fd>`.

py-libp2p's whole stack is Python; on a thread of the node's process it shares the GIL with the
trainer and the generator, and a request's round trip went from 6.5 ms to 45.5 ms beside one busy
Python thread (docs/transports.md). Here it runs as hivemind's p2pd does: in a child process the
node starts and owns (process_transport.py), with the thread transport (transport.py) inside and
nothing else competing for this process's GIL but the loop that talks to the node.

The channel is the socket `fd` the node passed (host_channel.py says what travels on it). The
first frame is ("settings", HostSettings). Values stored into this host's DHT or pushed to it are
checked here, by a RecordIntake of the node's own settings (`PolicySettings`); what it refuses
and learns goes to the node every NEWS_EVERY_S (HostNews), so the node's counters, strikes and
GossipSub penalties are what they would be in one process. The node's penalties for the peers
connected here come back as ("penalties", ...). When the channel closes (the node stopped, or
was killed) the host stops and the process exits.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmnode.identity.keys import load_p2p_identity, peer_id_from_ed25519
from swarmnode.protocol.versions import ProtocolVersions
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.protocol import RejectReason
from swarmnode.swarm.transports.base import Transport
from swarmnode.swarm.transports.libp2p.host_channel import ChannelClosed, FrameWriter, HostNews, read_frame

log = logging.getLogger(__name__)

# The Transport methods the node may call here (the rest are answered on the node's side).
CALLS = frozenset({"store", "get", "request", "join", "connect", "multiaddrs", "remote_ip", "reserve_circuit",
                   "punch_hole"})
NEWS_EVERY_S = 0.5


@dataclass(frozen=True)
class PolicySettings:
    """What the node's RecordIntake was built from."""

    swarm: str
    window_s: float
    max_ttl_s: float
    max_values_per_key: int
    versions: ProtocolVersions


@dataclass(frozen=True)
class HostSettings:
    identity_path: Path
    host_maddrs: list[str]
    announce_maddrs: list[str]
    client_mode: bool
    startup_timeout_s: float
    swarm: str
    relay_slots: int
    policy: PolicySettings | None
    log_level: int = logging.INFO  # the node's: the host's records at or above it go to the node's log


class ForwardedStats(MessageStats):
    """The host's message counts: each rejection is also kept for the node's next HostNews,
    except incompatible_version (the node counts a peer of other versions once itself, from
    the IncompatiblePeer it is sent: its own reads may meet the same peer first)."""

    def __init__(self) -> None:
        super().__init__(max_senders=64)
        self._outbox: list[tuple[str, str | None]] = []

    def reject(self, reason: RejectReason, sender: str | None) -> None:
        super().reject(reason, sender)
        if reason != RejectReason.INCOMPATIBLE_VERSION:
            with self._lock:
                self._outbox.append((reason.value, sender))

    def take_rejections(self) -> list[tuple[str, str | None]]:
        with self._lock:
            taken, self._outbox = self._outbox, []
        return taken


class ChannelLogHandler(logging.Handler):
    """Sends each log record to the node (from any thread: the send is made on the host's loop),
    so that the transport's lines (hole punching, failures) land in the node's own log."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send):
        super().__init__()
        self._loop = loop
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = ("log", record.levelno, record.name, record.getMessage())
            self._loop.call_soon_threadsafe(self._send, message)
        except Exception:  # noqa: BLE001 - a closed loop or a bad format: the record is dropped
            pass


class CachedPenalties:
    """PeerPenalty from the table the node last sent (read on the trio thread: one dict swap)."""

    def __init__(self) -> None:
        self._table: dict[str, float] = {}

    def replace(self, table: dict[str, float]) -> None:
        self._table = dict(table)

    def penalty(self, peer_id: str) -> float:
        return self._table.get(peer_id, 0.0)


def intake_of(settings: PolicySettings, peer_id: str, stats: MessageStats) -> RecordIntake:
    return RecordIntake(PeerTable(peer_id), stats, settings.swarm, settings.window_s,
                        max_ttl_s=settings.max_ttl_s, max_values_per_key=settings.max_values_per_key,
                        versions=settings.versions)


class IntakeWatch:
    """Which of an intake's remembered foreign and incompatible peers are new or newer since the
    last look, and how many values it refused over a key's cap."""

    def __init__(self, intake: RecordIntake):
        self._intake = intake
        self._foreign_seen: dict[str, float] = {}
        self._incompatible_seen: dict[str, float] = {}
        self._over_cap_seen = 0

    def changes(self) -> tuple[list[Any], list[Any], int]:
        """(foreign peers new or newer, incompatible peers new or newer, values over a key's cap)
        since the last call."""
        try:  # the maps change on the trio thread: a copy taken mid-change is taken again next tick
            foreign, incompatible = list(self._intake.foreign.values()), list(self._intake.incompatible.values())
        except RuntimeError:
            foreign, incompatible = [], []
        over_cap = self._intake.values_over_key_cap
        over_cap_since, self._over_cap_seen = over_cap - self._over_cap_seen, over_cap
        return (_changed(foreign, self._foreign_seen, "expires_at"),
                _changed(incompatible, self._incompatible_seen, "timestamp"), over_cap_since)


def _changed(items: list[Any], seen: dict[str, float], stamp: str) -> list[Any]:
    """The items whose `stamp` moved since `seen` (which is updated; bounded like the intake's maps)."""
    fresh = [item for item in items if seen.get(item.peer_id) != getattr(item, stamp)]
    for item in fresh:
        seen[item.peer_id] = getattr(item, stamp)
    if len(seen) > 4 * max(1, len(items)):
        keep = {item.peer_id for item in items}
        for peer in [p for p in seen if p not in keep]:
            del seen[peer]
    return fresh


class Host:
    """The host process's side: the thread transport, the calls the node makes on it, the
    node's handlers for peers' requests, and the news it sends back."""

    def __init__(self, out: FrameWriter, transport: Transport, stats: ForwardedStats, penalties: CachedPenalties,
                 watch: IntakeWatch | None):
        self.out = out
        self.transport = transport  # a LibP2PTransport (connected_peers besides the Transport's methods)
        self.stats = stats
        self.penalties = penalties
        self.watch = watch
        self._calls: dict[int, asyncio.Task] = {}
        self._handled: dict[int, asyncio.Future] = {}
        self._next_handle = 0
        self.failed: str | None = None  # why the host stopped on its own (its trio side ended)

    async def run(self, reader: asyncio.StreamReader) -> None:
        try:
            await self.transport.start()
        except Exception as e:  # noqa: BLE001 - the node reports it in one line
            self.out.send(("failed", str(e) or type(e).__name__))
            await self.out.drain()
            return
        self.transport.watch_pushes(lambda key, subkey: self.send(("pushed", key, subkey)))
        self.out.send(("started", self.transport.peer_id))
        receive = asyncio.create_task(self._receive(reader))
        news = asyncio.create_task(self._news_loop())
        try:
            # Until the node stops (or is gone), or the host itself fails: then this process
            # exits, and the node's transport reports it as it reports p2pd's death.
            await asyncio.wait([receive, news], return_when=asyncio.FIRST_COMPLETED)
            self.failed = self.transport.failure()  # before stop(), after which it says None
        finally:
            for task in [receive, news, *self._calls.values()]:
                task.cancel()
            await self.transport.stop()

    def send(self, message: tuple) -> None:
        """Send to the node, if it is still there (on the host's loop)."""
        with contextlib.suppress(ChannelClosed):
            self.out.send(message)

    async def _receive(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                message = await read_frame(reader)
            except ChannelClosed:
                return  # the node is gone: stop
            kind = message[0]
            if kind == "call":
                _, call_id, method, args = message
                task = asyncio.create_task(self._call(call_id, method, args))
                self._calls[call_id] = task
                task.add_done_callback(lambda _, i=call_id: self._calls.pop(i, None))
            elif kind == "cancel":
                task = self._calls.get(message[1])
                if task is not None:
                    task.cancel()
            elif kind == "answer":
                future = self._handled.pop(message[1], None)
                if future is not None and not future.done():
                    future.set_result(message[2:])
            elif kind == "penalties":
                self.penalties.replace(message[1])
            elif kind == "stop":
                return

    async def _call(self, call_id: int, method: str, args: tuple) -> None:
        """Run one call of the node's and always answer it (unless the node cancelled it)."""
        try:
            if method == "serve":
                value = await self.transport.serve(args[0], self._handler_for(args[0]))
            elif method in CALLS:
                value = await getattr(self.transport, method)(*args)
            else:
                raise ValueError(f"no such call: {method}")
        except asyncio.CancelledError:
            return  # the node gave up on it: nobody waits for an answer
        except BaseException as e:  # noqa: BLE001 - handed to the node's caller, groups included
            self._answer(call_id, False, _picklable(e))
            return
        self._answer(call_id, True, value)

    def _answer(self, call_id: int, ok: bool, value: Any) -> None:
        # The routing table rides along: after a join the node reads it at once, not at the next news.
        size = self.transport.routing_table_size()
        try:
            self.send(("result", call_id, ok, value, size))
        except Exception as e:  # noqa: BLE001 - e.g. a value over the frame bound: the caller still hears
            self.send(("result", call_id, False, RuntimeError(f"the answer could not be sent ({e})"), size))

    def _handler_for(self, protocol: str):
        async def handle(payload: bytes, requester: str) -> bytes:
            self._next_handle += 1
            handle_id = self._next_handle
            future = self._handled[handle_id] = asyncio.get_running_loop().create_future()
            try:
                self.out.send(("handle", handle_id, protocol, payload, requester))
                ok, value = await future
            finally:
                self._handled.pop(handle_id, None)
            if not ok:
                raise RuntimeError(value)
            return value

        return handle

    async def _news_loop(self) -> None:
        """Every NEWS_EVERY_S: the news to the node. Ends when the host's trio side has failed."""
        while self.transport.failure() is None:
            await asyncio.sleep(NEWS_EVERY_S)
            try:
                self.send(("news", await self._news()))
                await self.out.drain()
            except ChannelClosed:
                return
            except Exception as e:  # noqa: BLE001 - one bad tick must not end the news for the run
                log.warning("the host's news failed (%s: %s)", type(e).__name__, e)
        log.error("%s", self.transport.failure())

    async def _news(self) -> HostNews:
        foreign, incompatible, over_cap = self.watch.changes() if self.watch is not None else ([], [], 0)
        return HostNews(counters=self.transport.counters(), routing_table_size=self.transport.routing_table_size(),
                        connected=await self._connected(), rejections=self.stats.take_rejections(),
                        over_key_cap=over_cap, foreign=foreign, incompatible=incompatible)

    async def _connected(self) -> list[str] | None:
        try:
            return await self.transport.connected_peers()
        except Exception:  # noqa: BLE001 - no list this tick (None): the node leaves the penalties as they are
            return None


def _picklable(error: BaseException) -> BaseException:
    """`error` if it crosses the channel whole, else a RuntimeError saying what it was."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - any exception type that does not pickle
        return RuntimeError(f"{type(error).__name__}: {error}")


def host_of(settings: HostSettings, out: FrameWriter) -> Host:
    """The host the node's settings describe: a thread-mode LibP2PTransport checking values with
    an intake of the node's settings, scoring peers by the penalties the node sends."""
    from swarmnode.swarm.transports.libp2p.transport import LibP2PTransport

    stats, penalties = ForwardedStats(), CachedPenalties()
    peer_id = peer_id_from_ed25519(load_p2p_identity(settings.identity_path).public_bytes)
    intake = intake_of(settings.policy, peer_id, stats) if settings.policy is not None else None
    transport = LibP2PTransport(
        identity_path=settings.identity_path, host_maddrs=settings.host_maddrs,
        announce_maddrs=settings.announce_maddrs, client_mode=settings.client_mode,
        startup_timeout_s=settings.startup_timeout_s, policy=intake, swarm=settings.swarm,
        penalties=penalties, relay_slots=settings.relay_slots)
    return Host(out, transport, stats, penalties, IntakeWatch(intake) if intake is not None else None)


async def serve_node(fd: int) -> int:
    """Serve the node on the channel `fd` until it stops; 1 if the host failed on its own."""
    sock = socket.socket(fileno=fd)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    out = FrameWriter(writer)
    try:
        kind, settings = await read_frame(reader)
    except ChannelClosed:
        return 0
    if kind != "settings":
        return 2
    host = host_of(settings, out)
    root = logging.getLogger()
    root.handlers[:] = [ChannelLogHandler(asyncio.get_running_loop(), host.send)]
    root.setLevel(settings.log_level)
    await host.run(reader)
    with contextlib.suppress(ChannelClosed):
        await out.drain()  # the last log records (why it failed) before the exit
    out.close()
    return 1 if host.failed else 0


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m swarmnode.swarm.transports.libp2p.host_process",
                                     description="The libp2p host of a node that started it (network.libp2p_host: "
                                                 "process); not a command for people to run.")
    parser.add_argument("fd", type=int, help="the channel: this process's end of the node's Unix socket pair")
    fd = parser.parse_args(argv).fd
    # Until the channel is up (and if it never is): to stderr, which is the node's console.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s libp2p host: %(message)s")
    # The node stops this process by closing the channel; a Ctrl-C or SIGTERM meant for the node
    # must not kill it mid-shutdown (it runs in a session of its own too).
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)
    return asyncio.run(serve_node(fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
