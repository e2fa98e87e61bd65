"""swarm/relaying/relay_book.py: reservations, the order homes ask relays in, skips, the route of
a request, failures per peer."""
import random
from collections import Counter

from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC, REACHABILITY_UNKNOWN
from swarmnode.swarm.relaying.relay_book import FailureLog, RecentCount, Reservations, Skips, relay_order, route


def test_reservations_are_bounded_expire_and_renew():
    book = Reservations(capacity=2, ttl_s=60)
    assert book.reserve("a", now=0) and book.reserve("b", now=0)
    assert not book.reserve("c", now=10) and book.refused == 1
    assert book.reserve("a", now=50)  # renewal: a now lasts until 110
    assert book.holds("a", now=100) and not book.holds("b", now=60)
    assert book.reserve("c", now=61)  # b's expired slot is free again
    assert book.peers(now=61) == ["a", "c"]


def test_route_goes_through_relays_only_for_a_private_peer_not_reserved_here():
    relays = ("r1", "me", "r2")
    assert route(REACHABILITY_PRIVATE, relays, "me", reserved_here=False) == ("r1", "r2")
    assert route(REACHABILITY_PRIVATE, relays, "me", reserved_here=True) == ()
    assert route(REACHABILITY_PUBLIC, relays, "me", reserved_here=False) == ()
    assert route(REACHABILITY_UNKNOWN, relays, "me", reserved_here=False) == ()
    assert route(REACHABILITY_PRIVATE, (), "me", reserved_here=False) == ()


def test_failures_are_counted_and_logged_at_most_once_per_interval():
    failures = FailureLog(capacity=2, log_every_s=300)
    assert failures.failed("a", "timed out", now=0)
    assert not failures.failed("a", "refused", now=10)
    assert failures.failed("a", "refused", now=301)
    assert failures.snapshot()["a"] == {"count": 3, "last_reason": "refused", "last_at": 301}
    failures.failed("b", "x", now=1)
    failures.failed("c", "x", now=2)  # capacity 2: the least recently failed peer goes
    assert set(failures.snapshot()) == {"b", "c"}


def test_homes_spread_over_the_relays_they_know():
    relays = [f"relay-{i}" for i in range(20)]
    initial = relays[:2]  # two bootstrap nodes among them
    loads = Counter(r for home in range(1000) for r in relay_order(f"home-{home}", relays, initial)[:2])
    mean = 1000 * 2 / 20
    assert set(loads) == set(relays) and max(loads.values()) <= 2 * mean
    assert all(loads[r] <= 2 * mean for r in initial)  # bootstrap nodes take a share, not everyone
    # Each home knowing only some of the others (12 of 18 at random) besides the initial peers
    # spreads too; the initial peers, known to all, take a larger share (2/14 of the homes each).
    rng = random.Random(7)
    loads = Counter(r for home in range(1000)
                    for r in relay_order(f"home-{home}", rng.sample(relays[2:], 12) + initial, initial)[:2])
    assert max(loads.values()) <= 2 * mean


def test_initial_peers_lead_while_a_home_knows_few_others_and_remain_its_fallback():
    assert sorted(relay_order("home", ["boot1", "boot2"], ["boot1", "boot2"])) == ["boot1", "boot2"]
    for home in range(20):
        order = relay_order(f"home-{home}", ["boot", "a", "b"], ["boot"])
        assert order[0] == "boot" and sorted(order[1:]) == ["a", "b"]
    leads = {relay_order(f"home-{home}", ["boot", "a", "b", "c"], ["boot"])[0] for home in range(50)}
    assert leads == {"boot", "a", "b", "c"}  # three others known: boot is drawn like them
    assert relay_order("home", ["a", "b", "c"]) == relay_order("home", ["c", "b", "a", "a"])  # stable per home


def test_recent_count_counts_the_last_minute_only():
    count = RecentCount(span_s=60, slots=6)
    count.add(0.0)
    count.add(5.0, 2)
    count.add(35.0)
    assert count.total(35.0) == 4
    assert count.total(65.0) == 1  # the first slot (0-10 s) is out of the minute
    assert count.total(200.0) == 0


def test_skips_last_until_their_time_and_are_bounded():
    skips = Skips(capacity=2)
    skips.skip("a", "full", until=10.0)
    assert skips.skipped("a", now=5.0) and not skips.skipped("a", now=10.0)
    skips.skip("a", "full", until=10.0)
    skips.skip("b", "failed", until=10.0)
    skips.skip("c", "refused", until=10.0)  # "a" is forgotten: it is only asked again
    assert skips.snapshot(now=0.0) == {"b": "failed", "c": "refused"}
    skips.clear("b")
    assert not skips.skipped("b", now=0.0)
