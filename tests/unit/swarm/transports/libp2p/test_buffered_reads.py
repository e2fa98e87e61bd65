"""swarm/transports/libp2p/buffered_reads.py: a peer's stream read in chunks hands a frame reader the
same frames, however the bytes arrive, with one stream read per arrival instead of several per
frame. The reader here reads as py-libp2p's read_varint_prefixed_bytes_limited does (the length
a byte at a time, then the body until it is whole): py-libp2p itself cannot be imported in this
process beside hivemind; the real pubsub path runs in every libp2p test."""
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmnode.swarm.transports.libp2p.buffered_reads import READ_CHUNK, BufferedReads


def varint_prefixed(frame: bytes) -> bytes:
    n, out = len(frame), bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out) + frame


async def read_frame(reader) -> bytes:
    length, shift = 0, 0
    while True:
        byte = (await reader.read(1))[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    body = bytearray()
    while len(body) < length:
        chunk = await reader.read(length - len(body))
        assert chunk, "the stream ended mid-frame"
        body += chunk
    return bytes(body)


class ArrivingStream:
    """A stream whose bytes arrive in the given pieces: a read returns (up to n of) the next one."""

    def __init__(self, pieces):
        self.pieces = [bytearray(p) for p in pieces if p]
        self.reads = 0
        self.muxed_conn = "the peer's connection"

    async def read(self, n=None):
        self.reads += 1
        if not self.pieces:
            return b""
        piece = self.pieces[0]
        taken = bytes(piece[:n] if n else piece)
        del piece[: len(taken)]
        if not piece:
            self.pieces.pop(0)
        return taken


def pieces_of(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:])]


@settings(max_examples=200, deadline=None)
@given(frames=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=12),
       cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_frames_come_out_whole_however_the_bytes_arrive(frames, cuts):
    wire = b"".join(varint_prefixed(f) for f in frames)
    stream = ArrivingStream(pieces_of(wire, cuts))
    reader = BufferedReads(stream)

    async def read_all():
        return [await read_frame(reader) for _ in frames]

    assert trio.run(read_all) == frames
    assert stream.reads == len(pieces_of(wire, cuts))  # one read per arrival (unbuffered: 2+ per frame)


def test_a_read_takes_what_is_held_first_and_asks_the_stream_for_a_chunk():
    stream = ArrivingStream([b"abcdef", b"gh"])
    reader = BufferedReads(stream)

    async def reads():
        return [await reader.read(2), await reader.read(10), await reader.read(), await reader.read(1)]

    assert trio.run(reads) == [b"ab", b"cdef", b"gh", b""]
    assert stream.reads == 3 and READ_CHUNK >= 64 * 1024
    assert reader.muxed_conn == "the peer's connection"  # the rest is the stream's own
