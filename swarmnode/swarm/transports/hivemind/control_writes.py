"""p2pd control messages written in one send each, not one send per byte of their length.

hivemind 1.1.12's daemon bindings (p2p_daemon_bindings/utils.py, `write_pbmsg`) write a
message's varint length one byte at a time, each byte with its own `write` and `drain`, then the
body: a message of 128 B to 16 KiB goes to p2pd's Unix socket as three send() calls, and p2pd's
reader wakes for each. Every DHT RPC and every request or answer over a stream is such a message.
`write_in_one_send` points the bindings' control client at `write_pbmsg` below, which sends the
same bytes, length and body, as one buffer (docs/experiments/scale.md, the demo's gossip column).
"""
from __future__ import annotations

import asyncio
from typing import Any


def varint(value: int) -> bytes:
    """Unsigned LEB128, as hivemind's bindings and p2pd frame a message: 7 bits a byte, least
    significant group first, the high bit set on every byte but the last (300 -> ac 02)."""
    if value < 0:
        raise ValueError(f"negative length: {value}")
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def length_prefixed(body: bytes) -> bytes:
    """varint(len(body)) + body: one framed control message."""
    return varint(len(body)) + body


async def write_pbmsg(stream: asyncio.StreamWriter, message: Any) -> None:
    """hivemind's write_pbmsg, in one write: the framed message, then one drain."""
    stream.write(length_prefixed(message.SerializeToString()))
    await stream.drain()


def write_in_one_send() -> None:
    """Make hivemind's control client (which imported write_pbmsg by name) and the bindings'
    utils use `write_pbmsg` above; idempotent, for every transport of this process."""
    from hivemind.p2p.p2p_daemon_bindings import control, utils

    control.write_pbmsg = write_pbmsg
    utils.write_pbmsg = write_pbmsg
