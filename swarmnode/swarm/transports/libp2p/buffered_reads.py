"""BufferedReads: a connection or stream read in chunks, for py-libp2p's frame readers.

py-libp2p reads varint lengths (a pubsub RPC's, a Kademlia message's, each multistream line's) a
byte at a time, and each read of a yamux stream takes its locks, formats its debug lines whether
or not they are logged, and sends the peer a window update. Under Noise it reads each frame's
2-byte length and then its body from the socket: two receive calls, each a trip through trio's
scheduler, for every yamux frame. Reading what has arrived, up to READ_CHUNK bytes at once,
turns those into one read per arrival, however many frames it holds. No libp2p import: the
stream comes in.
"""
from __future__ import annotations

READ_CHUNK = 64 * 1024  # the most read from a peer's stream at once (what is held beyond one frame)


class BufferedReads:
    """`stream` read READ_CHUNK bytes at a time (what has arrived, up to that), handed out as
    asked; every other attribute is the stream's own."""

    def __init__(self, stream):  # noqa: ANN001 - py-libp2p's INetStream or IRawConnection
        self._stream = stream
        self._held = b""
        self._start = 0  # the first byte of _held not handed out (a chunk is cut without copying its rest)

    async def read(self, n: int | None = None) -> bytes:
        """Up to `n` bytes: those held, else those that arrive next. With `n` None or negative,
        as the stream's own read(n) (a yamux stream's: all until it ends) after those held."""
        if n is None or n < 0:
            held, self._held, self._start = self._held[self._start:], b"", 0
            return held + await self._stream.read(n)
        if self._start >= len(self._held):
            self._held, self._start = await self._stream.read(max(n, READ_CHUNK)), 0
        end = min(self._start + n, len(self._held))
        taken = self._held[self._start:end]  # a whole bytes chunk sliced whole is the same object, not a copy
        self._start = end
        return taken

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
