"""swarm/transports/libp2p/shard_topics.py and topic_subscriptions.py: a key's GossipSub topic
(against hand-written names), when a node joins and leaves shard topics, which providers it meets,
which topics a relay bridges for its reserved nodes, and the subscriptions those rules drive (on a
fake Pubsub: trio alone, no libp2p)."""
from types import SimpleNamespace

import trio

from swarmnode.swarm.transports.libp2p.shard_topics import (
    ShardTopics, TopicChanges, bridged_next, peers_to_meet, topic_of, topics_to_bridge)
from swarmnode.swarm.transports.libp2p.topic_subscriptions import TopicSubscriptions
from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, summaries_shard_key

SWARM_TOPIC = "swarmnode/s/announcements"
PEERS_2_3 = "swarmnode/s/sharded/peers/2/3"


def test_a_shard_key_is_pushed_on_its_name_without_the_window():
    assert topic_of("s", "swarmnode/s/sharded/peers/7/2/3") == PEERS_2_3
    assert topic_of("s", "swarmnode/s/sharded/peers/8/2/3") == PEERS_2_3  # the next window: same topic
    assert topic_of("s", "swarmnode/s/sharded/peers/7/2/1") == "swarmnode/s/sharded/peers/2/1"
    assert topic_of("s", "swarmnode/s/sharded/peers/7/3/3") == "swarmnode/s/sharded/peers/3/3"
    assert topic_of("s", "swarmnode/s/sharded/rollouts/7/0/0") == "swarmnode/s/sharded/rollouts/0/0"
    assert topic_of("s", "swarmnode/s/sharded/summaries/ab12/7/2/3") == "swarmnode/s/sharded/summaries/ab12/2/3"
    # the names swarm/windows.py writes
    assert topic_of("s", peer_records_shard_key("s", 7, 2, 3)) == PEERS_2_3
    assert topic_of("s", rollouts_shard_key("s", 7, 2, 3)) == "swarmnode/s/sharded/rollouts/2/3"
    assert topic_of("s", summaries_shard_key("s", 7, "ab12", 2, 3)) == "swarmnode/s/sharded/summaries/ab12/2/3"


def test_keys_of_one_per_window_and_others_go_to_the_swarm_wide_topic():
    for key in ("swarmnode/s/peers/7", "swarmnode/s/rollouts/7", "swarmnode/s/summaries/7",
                "swarmnode/other/sharded/peers/7/2/3",  # another swarm's shard
                "swarmnode/s/sharded/peers/7/2",  # not a whole shard key
                "swarmnode/s/sharded/summaries/7/2/3",  # summaries without a base
                "swarmnode/s/sharded/nonsense/7/2/3", "anything"):
        assert topic_of("s", key) == SWARM_TOPIC, key


def test_a_topic_is_joined_at_its_first_store_and_left_when_not_stored_under():
    topics = ShardTopics("s", min_keep_s=100)
    assert topics.stored("swarmnode/s/sharded/peers/7/2/3", now=0, ttl=20) == TopicChanges(join=(PEERS_2_3,))
    assert topics.stored("swarmnode/s/sharded/peers/8/2/3", now=30, ttl=20) == TopicChanges()  # held
    assert topics.stored("swarmnode/s/peers/8", now=30, ttl=20) == TopicChanges()  # swarm-wide: always held
    assert topics.topics() == [PEERS_2_3] and topics.holds(PEERS_2_3)
    assert topics.keep_s(PEERS_2_3) == 100  # 3 x 20 s is under the minimum
    assert topics.sweep(now=129) == TopicChanges()
    assert topics.sweep(now=130) == TopicChanges(leave=(PEERS_2_3,))  # 100 s after the last store
    assert not topics.holds(PEERS_2_3)
    assert topics.sweep(now=131) == TopicChanges(unvalidate=(PEERS_2_3,))  # its validator goes a sweep later
    assert topics.sweep(now=132) == TopicChanges()


def test_the_longest_ttl_stored_with_sets_the_keep_time():
    topics = ShardTopics("s", min_keep_s=10)
    topics.stored("swarmnode/s/sharded/rollouts/7/0/0", now=0, ttl=60)
    topics.stored("swarmnode/s/sharded/rollouts/7/0/0", now=1, ttl=5)
    assert topics.keep_s("swarmnode/s/sharded/rollouts/0/0") == 180
    assert topics.sweep(now=180) == TopicChanges()
    assert topics.sweep(now=181).leave == ("swarmnode/s/sharded/rollouts/0/0",)


def test_a_topic_joined_again_before_the_next_sweep_keeps_its_validator():
    topics = ShardTopics("s", min_keep_s=10)
    topics.stored("swarmnode/s/sharded/peers/7/2/3", now=0, ttl=1)
    assert topics.sweep(now=10).leave == (PEERS_2_3,)
    assert topics.stored("swarmnode/s/sharded/peers/8/2/3", now=10, ttl=1).join == (PEERS_2_3,)
    assert topics.sweep(now=11) == TopicChanges()


def test_topics_are_capped_and_the_one_stored_under_longest_ago_leaves_first():
    topics = ShardTopics("s", max_topics=2)
    topics.stored("swarmnode/s/sharded/peers/7/1/0", now=0, ttl=20)
    topics.stored("swarmnode/s/sharded/rollouts/7/1/0", now=1, ttl=20)
    topics.stored("swarmnode/s/sharded/peers/8/1/0", now=2, ttl=20)  # peers stored under after rollouts
    assert topics.stored("swarmnode/s/sharded/peers/8/2/1", now=3, ttl=20) == TopicChanges(
        join=("swarmnode/s/sharded/peers/2/1",), leave=("swarmnode/s/sharded/rollouts/1/0",))
    assert topics.topics() == ["swarmnode/s/sharded/peers/1/0", "swarmnode/s/sharded/peers/2/1"]
    assert topics.sweep(now=4).unvalidate == ("swarmnode/s/sharded/rollouts/1/0",)


def test_a_dropped_topic_is_joined_again_at_the_next_store():
    topics = ShardTopics("s")
    topics.stored("swarmnode/s/sharded/peers/7/2/3", now=0, ttl=20)
    topics.drop(PEERS_2_3)
    assert not topics.holds(PEERS_2_3)
    assert topics.stored("swarmnode/s/sharded/peers/7/2/3", now=1, ttl=20).join == (PEERS_2_3,)


def test_providers_are_met_while_the_topic_has_few_peers():
    providers = ["me", "a", "b", "a", "c", "d", "e"]
    assert peers_to_meet(providers, topic_peers=[], connected=[], me="me", want=4) == ["a", "b", "c", "d"]
    assert peers_to_meet(providers, topic_peers=["b"], connected=["c"], me="me", want=4) == ["a", "d", "e"]
    assert peers_to_meet(providers, topic_peers=["x", "y", "z", "w"], connected=[], me="me", want=4) == []


def test_a_relay_bridges_the_shard_topics_its_reserved_nodes_follow():
    peer_topics = {
        SWARM_TOPIC: {"a", "b", "x"},  # everyone is on it already: never bridged
        PEERS_2_3: {"a", "x"},
        "swarmnode/s/sharded/rollouts/2/3": {"a", "b"},
        "swarmnode/s/sharded/rollouts/2/1": {"x"},  # no reserved node follows it
        "swarmnode/other/sharded/peers/2/3": {"a"},  # another swarm's
    }
    assert topics_to_bridge("s", peer_topics, ["a", "b"]) == ["swarmnode/s/sharded/rollouts/2/3", PEERS_2_3]
    assert topics_to_bridge("s", peer_topics, ["a", "b"], max_topics=1) == ["swarmnode/s/sharded/rollouts/2/3"]
    assert topics_to_bridge("s", peer_topics, []) == []


def test_a_reserved_node_cannot_make_its_relay_bridge_made_up_topics_or_many_of_its_own():
    made_up = ["swarmnode/s/sharded/weights/2/3", "swarmnode/s/sharded/peers/2/4",  # no such kind; shard >= 2^bits
               "swarmnode/s/sharded/peers/02/3", "swarmnode/s/sharded/summaries/2/3",  # not canonical; no base
               "swarmnode/s/sharded/peers/17/0", "swarmnode/s/sharded/peers/x/0"]  # bits out of range
    assert topics_to_bridge("s", {t: {"evil"} for t in made_up}, ["evil"]) == []
    assert topics_to_bridge("s", {"swarmnode/s/sharded/summaries/ab12/2/3": {"a"}}, ["a"]) == [
        "swarmnode/s/sharded/summaries/ab12/2/3"]
    # one node on 16 real topics counts on 8 of them; two honest nodes' shared topic comes first
    evil = {f"swarmnode/s/sharded/peers/4/{shard}": {"evil"} for shard in range(16)}
    bridged = topics_to_bridge("s", {**evil, PEERS_2_3: {"a", "b"}}, ["a", "b", "evil"])
    assert bridged[0] == PEERS_2_3 and len(bridged) == 9
    # a name too long to be one (its digits would not even parse as an int) is refused, not raised on
    assert topics_to_bridge("s", {"swarmnode/s/sharded/peers/2/" + "1" * 5000: {"evil"}}, ["evil"]) == []


def test_a_bridged_topic_is_held_a_minute_after_it_is_last_wanted_and_joins_are_paced():
    t1, t2, t3 = (f"swarmnode/s/sharded/peers/2/{i}" for i in range(3))
    held = bridged_next({}, [t1, t2, t3], 100.0, max_joins=2)
    assert held == {t1: 100.0, t2: 100.0}  # two joins a round
    held = bridged_next(held, [t3], 110.0, max_joins=2)
    assert held == {t3: 110.0, t1: 100.0, t2: 100.0}  # t1 and t2 held: wanted 10 s ago
    held = bridged_next(held, [t3], 160.0, max_joins=2)
    assert held == {t3: 160.0}  # 60 s since t1 and t2 were wanted: left
    # at most max_topics: the wanted first, then the most recently wanted
    assert bridged_next({t1: 100.0, t2: 150.0}, [t3], 155.0, max_topics=2) == {t3: 155.0, t2: 150.0}


class FakePubsub:
    """What TopicSubscriptions uses of py-libp2p's Pubsub."""

    def __init__(self):
        self.channels = {}
        self.validators = {}
        self.peer_topics = {}
        self.log = []

    @property
    def topic_ids(self):
        return self.channels.keys()

    def set_topic_validator(self, topic, validator, is_async):
        self.validators[topic] = validator

    def remove_topic_validator(self, topic):
        self.validators.pop(topic, None)

    async def subscribe(self, topic):
        assert topic in self.validators, "a topic is subscribed to with its validator set first"
        send, receive = trio.open_memory_channel(10)
        self.channels[topic] = send
        self.log.append(("subscribe", topic))
        return receive

    async def unsubscribe(self, topic):
        await self.channels.pop(topic).aclose()
        self.log.append(("unsubscribe", topic))


class FakeHost:
    def __init__(self, connected):
        self.connected = set(connected)
        self.dialed = []

    def get_id(self):
        return "me"

    def get_network(self):
        return SimpleNamespace(get_connections=lambda peer: [peer] if peer in self.connected else [])

    async def connect(self, info):
        self.dialed.append(info.peer_id)


def test_subscriptions_follow_the_stores_with_a_validator_on_every_topic():
    received = []
    validator = object()

    async def receive(subscription):
        async for message in subscription:
            received.append(message)
        received.append("ended")

    async def main():
        async with trio.open_nursery() as nursery:
            pubsub, host = FakePubsub(), FakeHost(connected=["b"])
            subs = TopicSubscriptions("s", SimpleNamespace(spawn=nursery.start_soon), validator, receive)
            subs.shards.min_keep_s = 100
            await subs.start(host, pubsub)
            await subs.stored("swarmnode/s/peers/7", now=0, ttl=20)  # one per window: the swarm topic
            await subs.stored("swarmnode/s/sharded/peers/7/2/3", now=0, ttl=20)
            await subs.stored("swarmnode/s/sharded/peers/8/2/3", now=50, ttl=20)
            assert pubsub.log == [("subscribe", SWARM_TOPIC), ("subscribe", PEERS_2_3)]
            assert pubsub.validators == {SWARM_TOPIC: validator, PEERS_2_3: validator}
            await pubsub.channels[PEERS_2_3].send("push")
            await trio.sleep(0.01)
            assert received == ["push"]

            providers = [SimpleNamespace(peer_id=p) for p in ("me", "a", "b", "c")]
            subs.meet_peers("swarmnode/s/sharded/rollouts/8/2/3", providers)  # a topic not held: no one met
            subs.meet_peers("swarmnode/s/sharded/peers/9/2/3", providers)
            await trio.sleep(0.01)
            assert sorted(host.dialed) == ["a", "c"]  # not itself, not b (connected already)

            await subs.sweep(now=149)
            await subs.sweep(now=150)
            await trio.sleep(0.01)
            assert pubsub.log[-1] == ("unsubscribe", PEERS_2_3) and received == ["push", "ended"]
            assert PEERS_2_3 in pubsub.validators
            await subs.sweep(now=150.5)
            assert pubsub.validators == {SWARM_TOPIC: validator} and list(pubsub.topic_ids) == [SWARM_TOPIC]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_bridged_topic_is_joined_forwarded_only_and_left_when_no_reserved_node_follows_it():
    rollouts_2_3 = "swarmnode/s/sharded/rollouts/2/3"

    async def receive(subscription):
        async for _ in subscription:
            pass

    async def main():
        async with trio.open_nursery() as nursery:
            pubsub = FakePubsub()
            subs = TopicSubscriptions("s", SimpleNamespace(spawn=nursery.start_soon), object(), receive)
            await subs.start(FakeHost(connected=[]), pubsub)
            await subs.stored("swarmnode/s/sharded/peers/7/2/3", now=0, ttl=20)  # a topic of its own
            pubsub.peer_topics = {PEERS_2_3: {"a"}, rollouts_2_3: {"a", "b"}}
            await subs.bridge(["a", "b"], now=0.0)
            assert subs.bridged == {PEERS_2_3, rollouts_2_3}
            assert set(pubsub.topic_ids) == {SWARM_TOPIC, PEERS_2_3, rollouts_2_3}
            assert subs.keeps(PEERS_2_3) and subs.keeps(SWARM_TOPIC) and not subs.keeps(rollouts_2_3)

            pubsub.peer_topics = {}  # the reserved nodes left (or moved shards)
            await subs.bridge(["a", "b"], now=30.0)
            assert subs.bridged == {PEERS_2_3, rollouts_2_3}  # held a minute: they may come back
            await subs.bridge(["a", "b"], now=60.0)
            assert subs.bridged == set()
            assert set(pubsub.topic_ids) == {SWARM_TOPIC, PEERS_2_3}  # its own topic stays
            assert rollouts_2_3 in pubsub.validators  # a message accepted before may still be validated
            await subs.bridge(["a", "b"], now=62.0)
            assert set(pubsub.validators) == {SWARM_TOPIC, PEERS_2_3}
            nursery.cancel_scope.cancel()

    trio.run(main)
