"""swarm/transports/libp2p/host_channel.py: frames cross whole, and a broken channel is named as such."""
import asyncio
import struct

import pytest

from swarmnode.swarm.transports.libp2p.host_channel import MAX_FRAME_BYTES, ChannelClosed, encode_frame, read_frame


def _reader(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


def test_frames_cross_in_order_and_whole():
    async def main():
        reader = _reader(encode_frame(("call", 1, "get", ("k",))) + encode_frame(("pushed", "k", b"\x00" * 70_000)))
        assert await read_frame(reader) == ("call", 1, "get", ("k",))
        assert await read_frame(reader) == ("pushed", "k", b"\x00" * 70_000)
        with pytest.raises(ChannelClosed):
            await read_frame(reader)  # the end of the stream

    asyncio.run(main())


def test_a_cut_frame_or_an_absurd_length_closes_the_channel():
    async def main():
        frame = encode_frame(("result", 3, True, b"abc"))
        with pytest.raises(ChannelClosed):
            await read_frame(_reader(frame[:-1]))
        with pytest.raises(ChannelClosed):
            await read_frame(_reader(struct.pack(">I", MAX_FRAME_BYTES + 1) + b"x"))

    asyncio.run(main())
