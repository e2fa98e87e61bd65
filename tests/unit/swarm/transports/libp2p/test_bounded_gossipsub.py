"""swarm/transports/libp2p/bounded_gossipsub.py: py-libp2p's GossipSub router keeps at most its bound
of messages for equivocation, the newest, and still refuses a second version of one it holds. In a
fresh interpreter: py-libp2p cannot be imported in this process beside hivemind."""
from tests.unit.swarm.transports.libp2p.fresh_interpreter import run_check

CHECK = """
import json
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11
from libp2p.pubsub.pb import rpc_pb2
from swarmnode.swarm.transports.libp2p.bounded_gossipsub import BoundedGossipSub

def message(seqno, data):
    return rpc_pb2.Message(from_id=b"peer", seqno=seqno.to_bytes(8, "big"), data=data, topicIDs=["t"])

router = BoundedGossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12, max_remembered=3)
first_ten = all(router._check_equivocation(message(n, b"first")) for n in range(10))
held = len(router.equivocation_detection)
print(json.dumps({
    "first_ten_valid": first_ten, "held": held,
    "second_version_of_a_held_one": router._check_equivocation(message(9, b"second")),
    "the_same_again": router._check_equivocation(message(9, b"first")),
    "second_version_of_a_forgotten_one": router._check_equivocation(message(0, b"second")),
}))
"""


def test_the_equivocation_memory_keeps_the_newest_messages_up_to_its_bound():
    assert run_check(CHECK) == {
        "first_ten_valid": True,
        "held": 3,  # py-libp2p's own router would hold all ten
        "second_version_of_a_held_one": False,  # equivocation: refused
        "the_same_again": True,  # a duplicate is no equivocation
        "second_version_of_a_forgotten_one": True,  # forgotten: checked like a new message
    }
