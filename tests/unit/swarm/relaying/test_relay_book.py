"""swarm/relaying/relay_book.py: reservations, the route of a request, failures per peer."""
from swarmnode.protocol.generated.peer_record_pb2 import REACHABILITY_PRIVATE, REACHABILITY_PUBLIC, REACHABILITY_UNKNOWN
from swarmnode.swarm.relaying.relay_book import FailureLog, Reservations, route


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
