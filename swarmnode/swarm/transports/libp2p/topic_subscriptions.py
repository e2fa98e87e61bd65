"""The trio side of the node's GossipSub topics: it subscribes to and leaves them as
shard_topics.ShardTopics says, sets the node's push check as the validator of every topic it
subscribes to, and meets a shard topic's peers among the providers of its keys. A relay also
joins the shard topics of the nodes it holds circuit reservations for (shard_topics.
topics_to_bridge), to forward between nodes that cannot connect to each other.

Every method runs on the node's trio thread. No libp2p import: the host and Pubsub come in.
"""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Iterable

import trio

from swarmnode.swarm.transports.libp2p.shard_topics import (
    ShardTopics, TopicChanges, bridged_next, peers_to_meet, topics_to_bridge)
from swarmnode.swarm.transports.libp2p.trio_thread import TrioThread

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0  # connecting to a provider of a shard's key, to meet the shard's topic


class TopicSubscriptions:
    """The swarm-wide topic (subscribed for good at start), the shard topics of the keys this
    node stores under, and, on a relay, the shard topics it bridges. Each subscription's
    messages pass `validator` (py-libp2p's topic validator: a message it refuses is neither
    delivered nor forwarded) and then go to `receive(subscription)`, spawned per topic, which
    returns when the topic is left; `keeps(topic)` says whether a message's entry is this
    node's to keep (a bridged topic's are only forwarded)."""

    def __init__(self, swarm: str, thread: TrioThread, validator: Callable[[Any, Any], bool],
                 receive: Callable[[Any], Awaitable[None]]):
        self.shards = ShardTopics(swarm)
        self.swarm_topic = self.shards.swarm_topic
        self.thread = thread
        self.validator = validator
        self.receive = receive
        self.host: Any = None
        self.pubsub: Any = None
        self._changing = trio.Lock()  # one subscribe or unsubscribe at a time
        self._bridged_at: dict[str, float] = {}  # shard topics joined for reserved nodes -> last wanted
        self._bridges_left: set[str] = set()  # bridged topics left, their validators still set

    def topic_of(self, key: str) -> str:
        return self.shards.topic_of(key)

    @property
    def bridged(self) -> frozenset[str]:
        """The shard topics this relay bridges for the nodes it holds circuit reservations for."""
        return frozenset(self._bridged_at)

    def keeps(self, topic: str) -> bool:
        """Whether entries pushed on `topic` are this node's (not only forwarded as a bridge)."""
        return topic == self.swarm_topic or self.shards.holds(topic)

    def _wanted(self, topic: str) -> bool:
        return self.shards.holds(topic) or topic in self._bridged_at

    async def start(self, host: Any, pubsub: Any) -> None:
        """Subscribe to the swarm-wide topic (a node of one key per window pushes there)."""
        self.host, self.pubsub = host, pubsub
        async with self._changing:
            await self._subscribe(self.swarm_topic)

    async def stored(self, key: str, now: float, ttl: float) -> None:
        """Join `key`'s shard topic if this is the first store under it (ShardTopics.stored)."""
        await self._follow(self.shards.stored(key, now, ttl))

    async def sweep(self, now: float) -> None:
        """Leave the shard topics not stored under lately (ShardTopics.sweep)."""
        await self._follow(self.shards.sweep(now))

    async def _follow(self, changes: TopicChanges) -> None:
        """Leave and join topics as `changes` says, each as self.shards still says when its turn
        comes (a store may have joined again a topic that a sweep left meanwhile)."""
        if not (changes.join or changes.leave or changes.unvalidate):
            return
        async with self._changing:
            for topic in changes.leave:
                if not self._wanted(topic):
                    await self.pubsub.unsubscribe(topic)  # its receive() ends
            self._drop_validators(changes.unvalidate)
            for topic in changes.join:
                if self.shards.holds(topic):
                    try:
                        await self._subscribe(topic)
                    except Exception as e:  # noqa: BLE001 - not joined: the next store under it tries again
                        self.shards.drop(topic)
                        log.debug("subscribing to %s failed: %r", topic, e)

    async def bridge(self, clients: list[Any], now: float) -> None:
        """Join the shard topics `clients` (libp2p IDs of the nodes this relay holds circuit
        reservations for) follow and leave those none of them followed for a while
        (topics_to_bridge, bridged_next; `now` in monotonic s); drop the validators of the
        topics left at the call before."""
        if self.pubsub is None:
            return
        ranked = topics_to_bridge(self.shards.swarm, self.pubsub.peer_topics, clients)
        async with self._changing:
            self._drop_validators(self._bridges_left)
            before, self._bridged_at = self._bridged_at, bridged_next(self._bridged_at, ranked, now)
            self._bridges_left = set(before) - set(self._bridged_at)
            for topic in sorted(self._bridges_left):
                if not self._wanted(topic):
                    try:
                        await self.pubsub.unsubscribe(topic)
                    except Exception as e:  # noqa: BLE001 - left as far as the node is concerned
                        log.debug("leaving bridged %s failed: %r", topic, e)
            for topic in sorted(set(self._bridged_at) - set(before)):
                try:
                    await self._subscribe(topic)
                except Exception as e:  # noqa: BLE001 - tried again at the next call
                    del self._bridged_at[topic]
                    self._bridges_left.add(topic)  # its validator goes at the next call
                    log.debug("bridging %s failed: %r", topic, e)

    def _drop_validators(self, topics: Iterable[str]) -> None:
        """Remove the validators of `topics` that are neither wanted nor subscribed any more
        (left at an earlier call: a message accepted before may still have been validated)."""
        for topic in topics:
            if not self._wanted(topic) and topic not in self.pubsub.topic_ids:
                self.pubsub.remove_topic_validator(topic)

    async def _subscribe(self, topic: str) -> None:
        self.pubsub.set_topic_validator(topic, self.validator, False)  # before any message of it
        if topic not in self.pubsub.topic_ids:
            self.thread.spawn(self.receive, await self.pubsub.subscribe(topic))

    def meet_peers(self, key: str, providers: list[Any]) -> None:
        """Connect to a few of `key`'s providers (libp2p PeerInfo) while the key's shard topic,
        which this node pushes on, has fewer than MIN_TOPIC_PEERS peers known: GossipSub finds a
        topic's peers only among connected ones, and a shard's nodes need not be connected."""
        topic = self.topic_of(key)
        if self.pubsub is None or not self.shards.holds(topic):
            return
        network = self.host.get_network()
        connected = [p.peer_id for p in providers if network.get_connections(p.peer_id)]
        meet = peers_to_meet([p.peer_id for p in providers], self.pubsub.peer_topics.get(topic, ()), connected,
                             self.host.get_id())
        infos = {p.peer_id: p for p in providers}
        for peer in meet:
            self.thread.spawn(self._connect_quietly, infos[peer])

    async def _connect_quietly(self, info: Any) -> None:
        with trio.move_on_after(CONNECT_TIMEOUT_S):
            try:
                await self.host.connect(info)
            except Exception as e:  # noqa: BLE001 - a provider out of reach is read from the DHT only
                log.debug("meeting %s failed: %r", info.peer_id, e)
