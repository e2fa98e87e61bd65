"""Which GossipSub topic carries a stored entry, and which topics a node keeps: no I/O, no libp2p
(times are passed in).

A sharded key (swarm/windows.py's `*_shard_key`) is pushed on its shard's topic, the key's name
without its window: `swarmnode/<swarm>/sharded/<kind>/<bits>/<shard>` (summaries keep their
base: `.../sharded/summaries/<base>/<bits>/<shard>`), the same topic window after window. A push
then reaches the nodes that store under that shard (those whose ids hash into it), not the
whole swarm, and no topic grows with the swarm (a shard holds ~8-16 nodes: swarm/shards.py).
Any other key (one key per window: protocol version 1) goes to the swarm-wide topic
`swarmnode/<swarm>/announcements` as before shards; every node stays subscribed to it, so a
node of the older layout still hears and is heard (it carries nothing in a swarm of shards).

- topic_of / swarm_topic: the topic of a key, the swarm-wide topic
- ShardTopics: the shard topics a node is subscribed to. It joins a topic when it first stores
  under it and leaves it once it has stored nothing there for LEAVE_AFTER_TTLS x the longest
  TTL it stored with there (at least MIN_KEEP_S): its own shard moves only when the shard bits
  do. At most MAX_TOPICS at once: one more pushes out the topic stored under longest ago.
- peers_to_meet: which providers of a shard's key to connect to, so that the shard's topic has
  peers (GossipSub finds a topic's peers only among the connected ones)
- topics_to_bridge, bridged_next: the shard topics a relay joins for the nodes it holds circuit
  reservations for, kept a minute after the last of them left. Two homes behind NAT cannot
  connect, so a shard topic whose nodes are all behind NAT has no mesh; their relay, which both
  are connected to, joins the topics they follow and forwards between them (it does not keep
  what it forwards)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

from swarmnode.swarm.windows import key_window, parse_shard_key, sharded_prefix

MAX_TOPICS = 16  # shard topics at once: 3 kinds x 2 levels while crossing bits is 6
LEAVE_AFTER_TTLS = 3.0  # a topic not stored under for this many TTLs is left ...
MIN_KEEP_S = 180.0  # ... and never sooner than this
MIN_TOPIC_PEERS = 4  # GossipSub's degree_low: with fewer topic peers known, meet some providers
# Shard topics a relay joins for its reserved nodes at most: a few kinds and levels each, many
# shared between nodes of one shard.
MAX_BRIDGED_TOPICS = 32
MAX_BRIDGED_PER_CLIENT = 8  # of one reserved node's topics: a node follows 3 kinds, 2 levels at most
BRIDGE_HOLD_S = 60.0  # a bridged topic no reserved node follows any more is left only after this
MAX_BRIDGE_JOINS = 4  # topics a relay joins per bridging round: a node flipping its topics costs little
MAX_TOPIC_CHARS = 256  # a topic name longer than any this release makes is none of its shard topics

Peer = TypeVar("Peer", bound=Hashable)


def swarm_topic(swarm: str) -> str:
    """The swarm-wide topic: entries under keys that are no shard's (one key per window)."""
    return f"swarmnode/{swarm}/announcements"


def topic_of(swarm: str, key: str) -> str:
    """The topic entries under `key` are pushed on: a shard key's name without its window, else
    the swarm-wide topic."""
    parsed = parse_shard_key(swarm, key)
    if parsed is None:
        return swarm_topic(swarm)
    base = f"{parsed.base_fingerprint}/" if parsed.base_fingerprint else ""
    return f"{sharded_prefix(swarm)}{parsed.kind}/{base}{parsed.bits}/{parsed.shard}"


@dataclass(frozen=True)
class TopicChanges:
    """What the node does with its subscriptions: topics to join, topics to leave, and topics
    left at an earlier sweep whose validator can go (not at once: a message already accepted for
    a topic is validated after, and unvalidated it would be forwarded)."""

    join: tuple[str, ...] = ()
    leave: tuple[str, ...] = ()
    unvalidate: tuple[str, ...] = ()


class ShardTopics:
    """The shard topics this node is subscribed to (the swarm-wide one is always, and not here)."""

    def __init__(self, swarm: str, *, max_topics: int = MAX_TOPICS, leave_after_ttls: float = LEAVE_AFTER_TTLS,
                 min_keep_s: float = MIN_KEEP_S):
        self.swarm = swarm
        self.swarm_topic = swarm_topic(swarm)
        self.max_topics = max_topics
        self.leave_after_ttls = leave_after_ttls
        self.min_keep_s = min_keep_s
        self._stored: dict[str, tuple[float, float]] = {}  # topic -> (last stored under, longest TTL)
        self._left: set[str] = set()  # left, its validator still set

    def topic_of(self, key: str) -> str:
        return topic_of(self.swarm, key)

    def topics(self) -> list[str]:
        """The shard topics subscribed to, the one stored under longest ago first."""
        return sorted(self._stored, key=lambda t: self._stored[t][0])

    def holds(self, topic: str) -> bool:
        return topic in self._stored

    def stored(self, key: str, now: float, ttl: float) -> TopicChanges:
        """Note a store under `key` at `now` of an entry living `ttl` s: its topic to join if it is
        a shard's not joined yet, and the topic stored under longest ago to leave if that makes
        more than max_topics."""
        topic = self.topic_of(key)
        if topic == self.swarm_topic:
            return TopicChanges()
        held = self._stored.get(topic)
        self._stored[topic] = (now, max(ttl, held[1] if held is not None else 0.0))
        if held is not None:
            return TopicChanges()
        self._left.discard(topic)
        others = [t for t in self.topics() if t != topic]
        leave = tuple(others[: max(len(self._stored) - self.max_topics, 0)])
        return TopicChanges(join=(topic,), leave=self._forget(leave))

    def sweep(self, now: float) -> TopicChanges:
        """The topics not stored under for their keep time by `now`, to leave; and the validators
        of the topics left before this sweep, to remove."""
        unvalidate = tuple(sorted(self._left))
        self._left.clear()
        idle = tuple(t for t in self.topics() if now - self._stored[t][0] >= self.keep_s(t))
        return TopicChanges(leave=self._forget(idle), unvalidate=unvalidate)

    def drop(self, topic: str) -> None:
        """Forget `topic` as if left (its subscription failed): the next store joins it again."""
        if topic in self._stored:
            self._forget((topic,))

    def keep_s(self, topic: str) -> float:
        """How long `topic` is kept after its last store."""
        return max(self.leave_after_ttls * self._stored[topic][1], self.min_keep_s)

    def _forget(self, topics: tuple[str, ...]) -> tuple[str, ...]:
        for topic in topics:
            del self._stored[topic]
            self._left.add(topic)
        return topics


def peers_to_meet(providers: Sequence[Peer], topic_peers: Iterable[Peer], connected: Iterable[Peer], me: Peer,
                  want: int = MIN_TOPIC_PEERS) -> list[Peer]:
    """The providers of a shard's key to connect to while fewer than `want` peers are known on its
    topic: up to the shortfall, not this node, not known on the topic, not connected already (a
    connected peer announces its topics by itself), in the order given."""
    known = set(topic_peers)
    shortfall = want - len(known)
    if shortfall <= 0:
        return []
    skip = known | set(connected) | {me}
    return [p for p in dict.fromkeys(providers) if p not in skip][:shortfall]


def is_shard_topic(swarm: str, topic: str) -> bool:
    """Whether `topic` is a shard topic of `swarm` as topic_of names one: a kind, a base for
    summaries, bits and a shard in range (a name a peer merely subscribed to is not enough)."""
    prefix = sharded_prefix(swarm)
    if len(topic) > MAX_TOPIC_CHARS or not topic.startswith(prefix):
        return False
    head, _, tail = topic.rpartition("/")
    head, _, bits = head.rpartition("/")
    key = f"{head}/0/{bits}/{tail}"  # the topic's key in window 0
    return key_window(swarm, key, sharded=True) is not None and topic_of(swarm, key) == topic


def topics_to_bridge(swarm: str, peer_topics: Mapping[str, Iterable[Peer]], clients: Iterable[Peer],
                     max_topics: int = MAX_BRIDGED_TOPICS, per_client: int = MAX_BRIDGED_PER_CLIENT) -> list[str]:
    """The shard topics of `swarm` that `clients` (the nodes a relay holds circuit reservations
    for) are subscribed to, as `peer_topics` (topic -> subscribed peers) says, counting at most
    `per_client` topics of each client (the first by name): those with more clients first
    (then by name), at most `max_topics`. The swarm-wide topic is never bridged (every node is
    on it already), nor a name that is no shard topic of `swarm`."""
    members = set(clients)
    followed: dict[Peer, list[str]] = {}
    for topic in sorted(peer_topics):
        following = members.intersection(peer_topics[topic])
        if following and is_shard_topic(swarm, topic):
            for peer in following:
                followed.setdefault(peer, []).append(topic)
    counts: dict[str, int] = {}
    for topics in followed.values():
        for topic in topics[:per_client]:
            counts[topic] = counts.get(topic, 0) + 1
    return sorted(counts, key=lambda t: (-counts[t], t))[:max_topics]


def bridged_next(held: Mapping[str, float], ranked: Sequence[str], now: float, *, hold_s: float = BRIDGE_HOLD_S,
                 max_topics: int = MAX_BRIDGED_TOPICS, max_joins: int = MAX_BRIDGE_JOINS) -> dict[str, float]:
    """The topics a relay bridges after this round (topic -> when last wanted), from those it
    bridges (`held`) and those its reserved nodes follow now (`ranked`, topics_to_bridge's
    order): the wanted ones it holds, up to `max_joins` wanted ones it does not, then those
    wanted within `hold_s`, the most recently wanted first; at most `max_topics` in all."""
    wanted = [t for t in ranked if t in held]
    wanted += [t for t in ranked if t not in held][:max_joins]
    out = {t: now for t in wanted[:max_topics]}
    recent = sorted((t for t, at in held.items() if t not in out and now - at < hold_s), key=lambda t: -held[t])
    for topic in recent[:max(0, max_topics - len(out))]:
        out[topic] = held[topic]
    return out
