"""swarm/transports/libp2p/bounded_gossipsub.py: py-libp2p's GossipSub router keeps at most its bound
of messages for equivocation, the newest, and still refuses a second version of one it holds."""
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11
from libp2p.pubsub.pb import rpc_pb2

from swarmnode.swarm.transports.libp2p.bounded_gossipsub import BoundedGossipSub


def message(sender: bytes, seqno: int, data: bytes) -> rpc_pb2.Message:
    return rpc_pb2.Message(from_id=sender, seqno=seqno.to_bytes(8, "big"), data=data, topicIDs=["t"])


def test_the_equivocation_memory_keeps_the_newest_messages_up_to_its_bound():
    router = BoundedGossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12, max_remembered=3)
    assert all(router._check_equivocation(message(b"peer", n, b"first")) for n in range(10))
    assert len(router.equivocation_detection) == 3  # py-libp2p's own router would hold all ten
    assert not router._check_equivocation(message(b"peer", 9, b"second"))  # held: a second version is refused
    assert router._check_equivocation(message(b"peer", 9, b"first"))  # the same again is no equivocation
    assert router._check_equivocation(message(b"peer", 0, b"second"))  # forgotten: checked like a new message
