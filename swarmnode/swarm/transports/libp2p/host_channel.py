"""The local channel between a node and its libp2p host process: framed messages over one
Unix socket pair, both ends this project's own processes (a peer's bytes travel inside as
opaque `bytes`, never as a frame).

A frame is a 4-byte big-endian length and a pickled tuple whose first item names the message:

    node -> host   ("call", id, method, args)     run a Transport method (host_process.CALLS)
                   ("cancel", id)                 its caller gave up: cancel it
                   ("answer", id, ok, value)      the node's handler answered a "handle"
                   ("penalties", {peer: penalty}) what the node holds against the peers named
    host -> node   ("started", peer_id) / ("failed", line)
                   ("result", id, ok, value, routing_table_size)   a call's value, or its exception
                   ("handle", id, protocol, payload, requester)   a peer's request to serve
                   ("pushed", key, subkey)        an entry that came by push, first heard
                   ("news", HostNews)             counters and what the host's record policy saw
                   ("log", level, logger, message)   a log record, for the node's own log
"""
from __future__ import annotations

import asyncio
import pickle
import struct
from dataclasses import dataclass, field
from typing import Any

MAX_FRAME_BYTES = 256 * 2**20  # above any reply or request the wire allows (libp2p_messages)
_LENGTH = struct.Struct(">I")


class ChannelClosed(ConnectionError):
    """The other end of the channel is gone."""


@dataclass
class HostNews:
    """What the host process tells the node every tick: its transport's counters, and what its
    record policy refused or learned since the last tick (the node counts and keeps them as if
    its own policy had: one intake, seen from both processes)."""

    counters: dict[str, int] = field(default_factory=dict)
    routing_table_size: int = 0
    connected: list[str] | None = field(default_factory=list)  # peers with a connection now (None: not known)
    rejections: list[tuple[str, str | None]] = field(default_factory=list)  # (RejectReason value, sender)
    over_key_cap: int = 0  # values refused for a key holding max_values_per_key peers, since the last tick
    foreign: list[Any] = field(default_factory=list)  # RecordOrigin, new or newer
    incompatible: list[Any] = field(default_factory=list)  # IncompatiblePeer, new or newer


def encode_frame(message: tuple) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(body) > MAX_FRAME_BYTES:
        raise ValueError(f"a {message[0]!r} frame of {len(body)} bytes is over the channel's {MAX_FRAME_BYTES}")
    return _LENGTH.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple:
    """The next message; ChannelClosed at the end of the stream."""
    try:
        head = await reader.readexactly(_LENGTH.size)
        (size,) = _LENGTH.unpack(head)
        if size > MAX_FRAME_BYTES:
            raise ChannelClosed(f"a frame of {size} bytes announced: the channel is out of step")
        return pickle.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError) as e:
        raise ChannelClosed("the other end closed the channel") from e


class FrameWriter:
    """Writes frames in order from any task of one loop (a frame is one write: never interleaved)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    def send(self, message: tuple) -> None:
        if self._writer.is_closing():
            raise ChannelClosed("the channel is closed")
        self._writer.write(encode_frame(message))

    async def drain(self) -> None:
        try:
            await self._writer.drain()
        except ConnectionError as e:
            raise ChannelClosed("the other end closed the channel") from e

    def close(self) -> None:
        self._writer.close()
