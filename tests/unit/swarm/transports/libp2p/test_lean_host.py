"""swarm/transports/libp2p/lean_host.py: the host's advertised addresses are those BasicHost
computes, recomputed once ADDRS_FRESH_FOR_S have passed (on a clock the check sets), and an empty
answer (nothing listening yet) is never kept; its streams carry what a plain host's carry, with
fewer yamux stream reads on the side that asks and on the side that answers. In fresh interpreters: py-libp2p cannot be
imported in this process beside hivemind."""
from tests.unit.swarm.transports.libp2p.fresh_interpreter import run_check

ADDRESSES = """
import json
import multiaddr, trio
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.host.basic_host import BasicHost
from libp2p.security.noise.transport import PROTOCOL_ID, Transport as NoiseTransport
from swarmnode.swarm.transports.libp2p import lean_host

now = [100.0]
computed = [0]

class CountingHost(lean_host.LeanHost):
    clock = staticmethod(lambda: now[0])

    def get_transport_addrs(self):
        computed[0] += 1
        return super().get_transport_addrs()

lean_host.LeanHost = CountingHost  # what new_lean_host builds, in this check only
keys = create_new_key_pair()
listen = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
host = lean_host.new_lean_host(keys, {PROTOCOL_ID: NoiseTransport(keys, noise_privkey=new_x25519_key_pair().private_key)},
                               listen, None)

async def main():
    before = host.get_addrs()
    async with host.run(listen):
        first = host.get_addrs()
        start = computed[0]
        repeated = [host.get_addrs() for _ in range(50)]
        within = computed[0] - start
        now[0] += lean_host.ADDRS_FRESH_FOR_S
        host.get_addrs()
        after = computed[0] - start
        return {"before_listening": [str(a) for a in before], "same_as_basic_host": first == BasicHost.get_addrs(host),
                "listening": bool(first), "repeated_equal": all(r == first for r in repeated),
                "computed_within": within, "computed_after": after, "a_copy": host.get_addrs() is not host.get_addrs()}

print(json.dumps(trio.run(main)))
"""

STREAMS = """
import json
import multiaddr, trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.noise.transport import PROTOCOL_ID, Transport as NoiseTransport
from libp2p.stream_muxer.yamux import yamux
from libp2p.utils.varint import encode_varint_prefixed, read_varint_prefixed_bytes
from swarmnode.swarm.transports.libp2p.lean_host import new_lean_host

ASK = "/check/ask/1"
reads_by_remote = {}
plain_read = yamux.YamuxStream.read

async def counted_read(self, n=-1):  # this check counts each connection's yamux stream reads
    key = self.conn.peer_id.to_base58()
    reads_by_remote[key] = reads_by_remote.get(key, 0) + 1
    return await plain_read(self, n)

yamux.YamuxStream.read = counted_read

def noise():
    keys = create_new_key_pair()
    return keys, {PROTOCOL_ID: NoiseTransport(keys, noise_privkey=new_x25519_key_pair().private_key)}

async def answer(stream):
    question = await read_varint_prefixed_bytes(stream)
    await stream.write(encode_varint_prefixed(question[::-1] * 50))
    await stream.close()

async def main():
    listen = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
    lean_server, lean_asker = (new_lean_host(*noise(), listen, None) for _ in range(2))
    plain_server, plain_asker = (new_host(key_pair=k, sec_opt=s, muxer_preference="YAMUX") for k, s in (noise(), noise()))
    answered, reads = {}, {}
    async with lean_server.run(listen), plain_server.run(listen), lean_asker.run(listen), plain_asker.run(listen):
        for name, server, asker in (("lean", lean_server, lean_asker), ("plain", plain_server, plain_asker)):
            server.set_stream_handler(ASK, answer)
            await asker.connect(info_from_p2p_addr(server.get_addrs()[0]))
            right = 0
            for i in range(20):
                stream = await asker.new_stream(server.get_id(), [ASK])
                await stream.write(encode_varint_prefixed(b"question %d" % i))
                right += await read_varint_prefixed_bytes(stream) == (b"question %d" % i)[::-1] * 50
            answered[name] = right
            reads[name] = {"server": reads_by_remote.get(asker.get_id().to_base58(), 0),
                           "asker": reads_by_remote.get(server.get_id().to_base58(), 0)}
    return {"answered": answered,
            "lean_server_reads_fewer": 0 < reads["lean"]["server"] < reads["plain"]["server"],
            "lean_asker_reads_fewer": 0 < reads["lean"]["asker"] < reads["plain"]["asker"]}

print(json.dumps(trio.run(main)))
"""



def test_advertised_addresses_are_basic_hosts_recomputed_once_they_are_stale():
    assert run_check(ADDRESSES) == {
        "before_listening": [],  # nothing listening: computed, not kept
        "same_as_basic_host": True,
        "listening": True,
        "repeated_equal": True,
        "computed_within": 0,  # 50 asks within the freshness time: none recomputed
        "computed_after": 1,  # stale: recomputed once
        "a_copy": True,  # a caller changing its list does not change the host's
    }


def test_streams_carry_what_a_plain_hosts_do_with_fewer_stream_reads_on_both_ends():
    assert run_check(STREAMS) == {"answered": {"lean": 20, "plain": 20}, "lean_server_reads_fewer": True,
                                  "lean_asker_reads_fewer": True}
