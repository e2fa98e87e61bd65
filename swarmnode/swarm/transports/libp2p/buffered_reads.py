"""BufferedReads: a peer's stream read in chunks, for py-libp2p's frame readers.

py-libp2p reads an RPC's varint length a byte at a time, and each read of a yamux stream takes
its locks and formats its debug lines whether or not they are logged. Reading what has arrived,
up to READ_CHUNK bytes at once, turns the two to three stream reads of every pubsub RPC into one
per batch of RPCs. No libp2p import: the stream comes in.
"""
from __future__ import annotations

READ_CHUNK = 64 * 1024  # the most read from a peer's stream at once (what is held beyond one RPC)


class BufferedReads:
    """`stream` read READ_CHUNK bytes at a time (what has arrived, up to that), handed out as
    asked; every other attribute is the stream's own."""

    def __init__(self, stream):  # noqa: ANN001 - py-libp2p's INetStream
        self._stream = stream
        self._held = b""

    async def read(self, n: int | None = None) -> bytes:
        """Up to `n` bytes (all held, if None): those held, else those that arrive next."""
        if not self._held:
            self._held = await self._stream.read(max(n or 0, READ_CHUNK))
        if n is None or n < 0 or n >= len(self._held):
            taken, self._held = self._held, b""
        else:
            taken, self._held = self._held[:n], self._held[n:]
        return taken

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
