"""swarm/transports/libp2p/buffered_noise.py: a host whose Noise reads its connections in chunks
speaks the same Noise as py-libp2p's own: each side, one buffered and one plain, echoes 300 KB
(many Noise frames) whole in both directions, and the buffered side reads its socket fewer than the
two times a frame plain Noise does (its length, then its body). In a fresh interpreter: py-libp2p cannot be imported in this process
beside hivemind."""
from tests.unit.swarm.transports.libp2p.fresh_interpreter import run_check

CHECK = """
import json
import multiaddr, trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.noise import io as noise_io
from libp2p.security.noise.transport import PROTOCOL_ID, Transport as NoiseTransport
from swarmnode.swarm.transports.libp2p import buffered_reads
from swarmnode.swarm.transports.libp2p.buffered_noise import BufferedNoiseTransport

ECHO = "/bench/echo/1"
PAYLOAD = bytes(range(256)) * 1200  # 300 KB: five or more Noise frames each way
socket_reads, frames = [0], [0]

class CountedReads(buffered_reads.BufferedReads):
    def __init__(self, stream):
        super().__init__(stream)
        self._counted = stream

    async def read(self, n=None):
        if self._start >= len(self._held):
            socket_reads[0] += 1
        return await super().read(n)

class CountedFrames(noise_io.NoiseTransportReadWriter):
    async def read_msg(self, prefix_encoded=False):
        if isinstance(self.read_writer.read_write_closer, CountedReads):
            frames[0] += 1
        return await super().read_msg(prefix_encoded)

import swarmnode.swarm.transports.libp2p.buffered_noise as buffered_noise
buffered_noise.BufferedReads = CountedReads  # this check counts what the buffered side reads
import libp2p.security.noise.patterns as patterns
patterns.NoiseTransportReadWriter = CountedFrames

def host_with(noise_class):
    keys = create_new_key_pair()
    noise = noise_class(keys, noise_privkey=new_x25519_key_pair().private_key)
    return new_host(key_pair=keys, sec_opt={PROTOCOL_ID: noise}, muxer_preference="YAMUX")

async def read_all(stream, n):
    got = bytearray()
    while len(got) < n:
        got += await stream.read(n - len(got))
    return bytes(got)

async def main():
    plain, buffered = host_with(NoiseTransport), host_with(BufferedNoiseTransport)
    listen = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
    results = {}
    async with plain.run(listen), buffered.run(listen):
        for server, client, name in ((plain, buffered, "buffered_dials_plain"), (buffered, plain, "plain_dials_buffered")):
            async def echo(stream):
                await stream.write(await read_all(stream, len(PAYLOAD)))
            server.set_stream_handler(ECHO, echo)
            await client.connect(info_from_p2p_addr(server.get_addrs()[0]))
            stream = await client.new_stream(server.get_id(), [ECHO])
            await stream.write(PAYLOAD)
            results[name] = await read_all(stream, len(PAYLOAD)) == PAYLOAD
            await stream.close()
    results["fewer_socket_reads_than_two_a_frame"] = 0 < socket_reads[0] < 2 * frames[0]
    return results

print(json.dumps(trio.run(main)))
"""


def test_buffered_noise_talks_to_plain_noise_and_reads_its_socket_less():
    assert run_check(CHECK) == {
        "buffered_dials_plain": True, "plain_dials_buffered": True, "fewer_socket_reads_than_two_a_frame": True}
