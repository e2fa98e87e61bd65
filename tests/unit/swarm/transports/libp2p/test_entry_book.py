"""swarm/transports/libp2p/entry_book.py: the libp2p transport's rules for heard entries, DHT reads and
DHT writes (times and values worked out by hand)."""
from swarmnode.protocol.libp2p_messages import DhtEntry
from swarmnode.swarm.transports.libp2p.entry_book import HeardEntries, due_pushes, due_writes

K = "swarmnode/s/peers/1"


def entry(subkey, expiration, key=K, value=b"v"):
    return DhtEntry(key, subkey, value, expiration)


def test_the_newest_entry_per_subkey_is_kept_within_the_bounds():
    book = HeardEntries(max_keys=2, max_per_key=2, lookup_every_s=10)
    assert book.hear(entry("a", 100), clock=0) and not book.hear(entry("a", 100), clock=1)  # same: not new
    assert not book.hear(entry("a", 90), clock=2)  # older: ignored
    assert book.hear(entry("a", 110, value=b"w"), clock=3)
    assert book.hear(entry("b", 100), clock=3) and not book.hear(entry("c", 100), clock=3)  # key full
    assert {s: e.value for s, e in book.unexpired(K, now=50).items()} == {"a": b"w", "b": b"v"}
    assert set(book.unexpired(K, now=105)) == {"a"}  # b expired at 100
    book.hear(entry("x", 100, key="swarmnode/s/peers/2"), clock=4)
    book.hear(entry("x", 100, key="swarmnode/s/peers/3"), clock=4)  # a third key: the oldest (K) goes
    assert book.unexpired(K, now=50) == {}


def test_reads_look_providers_up_when_nothing_is_heard_or_every_interval():
    book = HeardEntries(max_keys=4, max_per_key=8, lookup_every_s=10)
    assert book.lookup_due(K, now=50, clock=0)  # nothing heard: look up
    book.hear(entry("a", 100), clock=0)
    assert not book.lookup_due(K, now=50, clock=5)  # heard, looked up 5 s ago
    assert book.lookup_due(K, now=50, clock=10) and not book.lookup_due(K, now=50, clock=11)


def shard_of(key):
    return key.rsplit("/", 1)[0]  # "swarmnode/s/peers/1/<window>" -> its shard "swarmnode/s/peers/1"


def test_a_shard_found_empty_is_looked_up_again_only_after_the_recheck_interval():
    book = HeardEntries(max_keys=4, max_per_key=8, lookup_every_s=10, family=shard_of, empty_recheck_s=60)
    window_1, window_2, other_shard = "swarmnode/s/peers/1/100", "swarmnode/s/peers/1/101", "swarmnode/s/peers/2/101"
    assert book.lookup_due(window_1, now=50, clock=0)
    book.looked_up(window_1, providers=0, began=0, now=50)  # nobody writes there
    assert not book.lookup_due(window_1, now=50, clock=20)  # nothing heard, but found empty 20 s ago
    assert not book.lookup_due(window_2, now=50, clock=59)  # the next window's key: the same shard
    assert book.lookup_due(other_shard, now=50, clock=20)  # another shard: its own lookup
    assert book.lookup_due(window_2, now=50, clock=60)  # 60 s on: asked again
    book.looked_up(window_2, providers=0, began=60, now=110)
    book.hear(entry("a", 200, key=window_1), clock=61)  # a push of the shard ends it at once
    assert book.lookup_due(window_2, now=110, clock=62)


def test_a_shard_with_providers_or_with_entries_held_is_not_marked_empty():
    book = HeardEntries(max_keys=4, max_per_key=8, lookup_every_s=10, family=shard_of, empty_recheck_s=60)
    key, next_key = "swarmnode/s/peers/1/100", "swarmnode/s/peers/1/101"
    book.looked_up(key, providers=3, began=0, now=50)
    assert book.lookup_due(next_key, now=50, clock=1)  # providers found: nothing held back
    book.hear(entry("a", 70, key=key), clock=5)  # the last window's entry, alive until 70
    book.looked_up(next_key, providers=0, began=6, now=56)  # asked before its writers stored there
    assert book.lookup_due(next_key, now=57, clock=7)  # a live shard: asked again at the next read
    book.looked_up(next_key, providers=0, began=20, now=71)  # its entries expired: now it is quiet
    assert not book.lookup_due(next_key, now=72, clock=21)


def test_without_a_recheck_interval_an_unheard_key_is_looked_up_at_every_read():
    book = HeardEntries(max_keys=4, max_per_key=8, lookup_every_s=10)
    book.looked_up(K, providers=0, began=0, now=50)
    assert book.lookup_due(K, now=50, clock=0) and book.lookup_due(K, now=50, clock=1)


def test_a_lookup_fetches_providers_not_heard_expired_or_not_renewed():
    book = HeardEntries(max_keys=4, max_per_key=8, lookup_every_s=10)
    book.hear(entry("fresh", 100), clock=95)
    book.hear(entry("quiet", 100), clock=80)  # not renewed for 20 s
    book.hear(entry("gone", 40), clock=95)  # expired by now=50
    assert book.to_fetch(K, ["fresh", "quiet", "gone", "new", "new"], now=50, clock=100) == ["quiet", "gone", "new"]


def test_each_stored_entry_is_written_at_once_then_at_most_every_interval():
    unwritten, written_at = {("k", "me"): b"v1"}, {}
    assert due_writes(unwritten, written_at, clock=0, every_s=10) == [(("k", "me"), b"v1")] and unwritten == {}
    unwritten[("k", "me")] = b"v2"
    unwritten[("k2", "me")] = b"w1"  # a new key (a new window): at once
    assert due_writes(unwritten, written_at, clock=3, every_s=10) == [(("k2", "me"), b"w1")]
    unwritten[("k", "me")] = b"v3"  # only the newest version waits
    assert due_writes(unwritten, written_at, clock=9, every_s=10) == []
    assert due_writes(unwritten, written_at, clock=10, every_s=10) == [(("k", "me"), b"v3")]


def test_pushes_are_due_when_new_every_interval_or_at_a_third_of_a_short_life():
    unpushed, pushed = {("k", "me"): entry("me", expiration=160)}, {}
    assert [k for k, _ in due_pushes(unpushed, pushed, now=100, every_s=5)] == [("k", "me")]  # new: at once
    assert pushed == {("k", "me"): (100, 160)} and unpushed == {}
    unpushed[("k", "me")] = entry("me", expiration=162)
    assert due_pushes(unpushed, pushed, now=104, every_s=5) == []  # 60 s of life: every 5 s
    assert [e.expiration for _, e in due_pushes(unpushed, pushed, now=105, every_s=5)] == [162]
    unpushed[("r", "me")] = entry("me", expiration=108, key="r")  # a record living 8 s
    due_pushes(unpushed, pushed, now=100, every_s=5)
    unpushed[("r", "me")] = entry("me", expiration=110, key="r")
    assert due_pushes(unpushed, pushed, now=102, every_s=5) == []
    assert len(due_pushes(unpushed, pushed, now=102.7, every_s=5)) == 1  # a third of 8 s: 2.67 s
