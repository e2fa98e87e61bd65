"""Run in a fresh interpreter by test_guarded_pubsub.py (libp2p is never imported in the pytest
process): host A runs GuardedPubsub with GossipSub; peer B opens a pubsub stream to it and sends
one frame that is not an RPC, then a second stream that says hello properly. Prints a JSON line:
whether A's pubsub service still runs, how many streams it ended, whether B's second stream was
served (A learned B's subscription)."""
from __future__ import annotations

import json

import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
from libp2p.pubsub.pb import rpc_pb2
from libp2p.tools.anyio_service import background_trio_service
from libp2p.utils.varint import encode_varint_prefixed

from swarmnode.swarm.transports.libp2p.guarded_pubsub import GuardedPubsub

LOOPBACK = multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")


async def main() -> dict:
    a = new_host(key_pair=create_new_key_pair(), listen_addrs=[LOOPBACK])
    b = new_host(key_pair=create_new_key_pair(), listen_addrs=[LOOPBACK])
    async with a.run([LOOPBACK]), b.run([LOOPBACK]):
        router = GossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12)
        pubsub = GuardedPubsub(a, router)
        async with background_trio_service(pubsub), background_trio_service(router):
            await pubsub.wait_until_ready()
            address = f"{a.get_addrs()[0]}"
            await b.connect(info_from_p2p_addr(multiaddr.Multiaddr(address)))
            bad = await b.new_stream(a.get_id(), [PROTOCOL_ID_V11])
            await bad.write(encode_varint_prefixed(b"\xff\xff\xff\xff\x0f not a protobuf message"))
            await trio.sleep(1.0)
            good = await b.new_stream(a.get_id(), [PROTOCOL_ID_V11])
            hello = rpc_pb2.RPC(subscriptions=[rpc_pb2.RPC.SubOpts(subscribe=True, topicid="t")])
            await good.write(encode_varint_prefixed(hello.SerializeToString()))
            with trio.move_on_after(10.0):
                while b.get_id() not in pubsub.peer_topics.get("t", set()):
                    await trio.sleep(0.1)
            return {"running": pubsub.manager.is_running, "bad_rpc_streams": pubsub.bad_rpc_streams,
                    "second_stream_served": b.get_id() in pubsub.peer_topics.get("t", set())}


if __name__ == "__main__":
    print(json.dumps(trio.run(main)))
