"""BoundedGossipSub: py-libp2p's GossipSub router, with its memory of forwarded messages bounded.

py-libp2p 0.8.1 keeps the first copy of every message it accepts, keyed by sender and sequence
number, to catch a sender that signs two different messages under one number (equivocation),
and never forgets any: a node's memory grew with all the traffic it ever saw (~1 MB a minute
for an idle host of 8 model-less nodes). Here only the newest MAX_REMEMBERED are kept. A second
version of a message older than that is caught by the seen-message cache as long as that holds
it (GossipSub's own time-to-live), and after that it is a message like any other: checked by the
node's push validator (it must still be a well-formed, unexpired, signed entry) before it is
kept or forwarded.
"""
from __future__ import annotations

from libp2p.pubsub.gossipsub import GossipSub

# Messages remembered for equivocation: ~2 minutes of a shard topic's pushes at 30 a second,
# about 1.5 KB each (an entry and its signature): a few MiB at most.
MAX_REMEMBERED = 4096


class BoundedGossipSub(GossipSub):
    """GossipSub whose equivocation memory holds at most `max_remembered` messages (oldest out)."""

    def __init__(self, *args, max_remembered: int = MAX_REMEMBERED, **kwargs):  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.max_remembered = max_remembered

    def _check_equivocation(self, msg) -> bool:  # noqa: ANN001 - py-libp2p's rpc_pb2.Message
        valid = super()._check_equivocation(msg)
        remembered = self.equivocation_detection
        while len(remembered) > self.max_remembered:  # dicts keep insertion order: the oldest first
            del remembered[next(iter(remembered))]
        return valid
