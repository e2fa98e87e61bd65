"""RoutedTransport: a Transport that reaches peers behind NAT through their relays.

It wraps the real transport and adds four small protocols (protocol/relay_messages.py):
- dial-back: a peer asks this node to open TCP connections back to the IP its connection comes
  from, on the ports it listens on (only that IP: this node cannot be made to scan others);
- reserve / forward: while this node is publicly reachable it relays for up to
  `relay_capacity` nodes that cannot be dialled (one more is answered "no free reservation",
  `RESERVE_FULL`, and asks another relay); a request for one of them comes in on `forward` and
  goes out on `deliver`, over the connection that node keeps open to this one. Forwarding is
  bounded too: at most `max_forwards` at once and `requests_per_s` per requester, the rest
  answered "relay busy". Its load (reservations of capacity, refusals, forwards in the last
  minute) is in `snapshot()["relay_load"]`;
- deliver: a request a relay forwards to this node, from the peer the relay authenticated,
  accepted only from this node's own relays and answered by the same handler as a direct one;
- ping: an empty answer, to find out now and then whether a relayed peer can be dialled
  directly after all (then requests go direct, and back through its relays if that fails).
  Before that ping the transport may punch a hole to the peer through one of its relays
  (py-libp2p: circuit relay v2 and DCUtR; hivemind: nothing), so that the ping finds a direct
  connection where both NATs allow one.

It is given, per peer, what that peer's record says (`PeerRoutes`: the node's PeerTable); it is
told whether to offer relaying (`offer_relaying`) and which peers hold this node's reservations
(`use_relays`); node/network.py runs the probes and, with relay_keeper.py, the reservations.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from swarmnode.protocol import relay_messages
from swarmnode.utils.backoff import backoff_delay
from swarmnode.utils.lru_map import LRUMap
from swarmnode.swarm.peers import short_id
from swarmnode.utils.ratelimit import PeerRateLimiter
from swarmnode.swarm.relaying.relay_book import FailureLog, RecentCount, Reservations, route
from swarmnode.swarm.transports.base import RequestFailed, RequestHandler, StoredValue, Transport

log = logging.getLogger(__name__)

RELAY_PROTOCOLS = (relay_messages.RELAY_RESERVE_PROTOCOL, relay_messages.RELAY_FORWARD_PROTOCOL,
                   relay_messages.RELAY_DELIVER_PROTOCOL)
DIAL_TIMEOUT_S = 2.0  # one dial-back TCP connect
# A relayed peer is tried directly again FIRST_DIRECT_RETRY_S after a failed try, twice as long
# after each further one, at most every DIRECT_RETRY_S: a punch tried while the peer's relay
# reservation was still being set up does not cost the pair a direct connection for minutes.
FIRST_DIRECT_RETRY_S = 60.0
DIRECT_RETRY_S = 300.0
MAX_COUNTED_FAILURES = 8  # past DIRECT_RETRY_S already: more would only grow the exponent
MAX_DIRECT_PROBES = 4  # direct tries at once
PUNCH_TIMEOUT_S = 60.0  # a hole punch before a direct ping (the transport bounds it more tightly)
REDIAL_S = 30.0  # a peer's record addresses are dialled at most this often
DIAL_BY_RECORD_TIMEOUT_S = 10.0
RESERVE_FULL = "no free reservation"  # a full relay's reason (relay_keeper.py tells it from others)


class PeerRoutes(Protocol):
    """What a peer's record says about reaching it (swarm/peers.py's PeerTable is one)."""

    def route_of(self, peer_id: str) -> tuple[int, tuple[str, ...]]:
        """Its reachability and the relays it names (REACHABILITY_UNKNOWN, () for a stranger)."""
        ...

    def addresses_of(self, peer_id: str) -> list[str]:
        """The multiaddrs in its record ([] for a stranger)."""
        ...


@dataclass(slots=True)
class RelayCounters:
    """What the relaying did, for status `network.counters`."""

    dialled_by_record: int = 0
    relayed_requests: int = 0
    failed_requests: int = 0
    direct_upgrades: int = 0
    dialbacks_answered: int = 0
    forwards_refused: int = 0
    forwards_failed: int = 0
    forwarded: int = 0
    forwarded_bytes: int = 0
    deliveries_refused: int = 0
    delivered: int = 0

    def counted(self) -> dict[str, int]:
        """The counters above 0: status names a counter once it has counted something."""
        return {name: value for name, value in dataclasses.asdict(self).items() if value}


async def tcp_port_open(ip: str, port: int, timeout_s: float) -> bool:
    """Whether a TCP connection to ip:port completes within `timeout_s` (closed at once)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout_s)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), timeout_s)
    except (OSError, asyncio.TimeoutError):
        pass
    return True


@dataclass(frozen=True)
class DirectTry:
    """The last direct try of a relayed peer (a punch and a ping): whether it answered, when
    (monotonic s), and how many tries in a row failed."""

    works: bool
    at: float
    failures: int = 0

    def due(self, now: float) -> bool:
        """Whether to try again: FIRST_DIRECT_RETRY_S after a failure, doubling, at most every
        DIRECT_RETRY_S (and every DIRECT_RETRY_S after one that worked, then stopped)."""
        wait = backoff_delay(self.failures, FIRST_DIRECT_RETRY_S, DIRECT_RETRY_S) if self.failures else DIRECT_RETRY_S
        return now - self.at >= wait


class RoutedTransport(Transport):
    def __init__(self, inner: Transport, *, routes: PeerRoutes, relay_capacity: int, reservation_ttl_s: float,
                 relay_timeout_cap_s: float, max_forwards: int, requests_per_s: float, burst: int,
                 max_tracked_peers: int, failure_log_every_s: float = 300.0):
        self.inner = inner
        self.routes = routes
        self.reservations = Reservations(relay_capacity, reservation_ttl_s)
        self.failures = FailureLog(max_tracked_peers, failure_log_every_s)
        self.counters = RelayCounters()
        self._relaying = False  # offer relay reservations (node/network.py: only while public)
        self._my_relays: frozenset[str] = frozenset()  # peers holding this node's reservations
        self._dialled: LRUMap[str, float] = LRUMap(max_tracked_peers)  # peer -> when dialled by its record
        self._relay_timeout_cap_s = relay_timeout_cap_s
        self._max_forwards = max_forwards
        self._forwards = 0  # in flight now, at most max_forwards
        self._recent_forwards = RecentCount(60.0)
        self._limiter = PeerRateLimiter(requests_per_s, burst, max_tracked_peers)
        self._dialback_limiter = PeerRateLimiter(0.2, 3, max_tracked_peers)
        self._handlers: dict[str, RequestHandler] = {}
        self._direct: LRUMap[str, DirectTry] = LRUMap(max_tracked_peers)  # peer -> its last direct try
        self._probes: set[asyncio.Task] = set()
        self._probing: set[str] = set()  # peers a direct try is under way to

    # -- relaying, as node/network.py decides it ---------------------------------------------

    @property
    def relaying(self) -> bool:
        return self._relaying

    def offer_relaying(self, offer: bool) -> None:
        """Grant relay reservations and forward for their holders (only while public), or not."""
        self._relaying = offer

    @property
    def my_relays(self) -> frozenset[str]:
        return self._my_relays

    def use_relays(self, relays: Iterable[str]) -> None:
        """The peers that hold this node's reservations now: deliveries come only from them."""
        self._my_relays = frozenset(relays)

    # -- the wrapped transport -------------------------------------------------------------

    @property
    def peer_id(self) -> str:
        return self.inner.peer_id

    async def start(self) -> None:
        await self.inner.start()
        for protocol, handler in ((relay_messages.DIALBACK_PROTOCOL, self._answer_dialback),
                                  (relay_messages.RELAY_RESERVE_PROTOCOL, self._answer_reserve),
                                  (relay_messages.RELAY_FORWARD_PROTOCOL, self._answer_forward),
                                  (relay_messages.RELAY_DELIVER_PROTOCOL, self._answer_delivery),
                                  (relay_messages.PING_PROTOCOL, self._answer_ping)):
            await self.serve(protocol, handler)

    async def stop(self) -> None:
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        await self.inner.stop()

    def child_processes(self) -> list[int]:
        return self.inner.child_processes()

    def transport_cpu_s(self) -> float:
        return self.inner.transport_cpu_s()

    def watch_pushes(self, callback: Callable[[str, str], None]) -> None:
        self.inner.watch_pushes(callback)

    def failure(self) -> str | None:
        return self.inner.failure()

    async def multiaddrs(self) -> list[str]:
        return await self.inner.multiaddrs()

    async def join(self, maddr: str, timeout: float) -> None:
        await self.inner.join(maddr, timeout)

    async def connect(self, peer_id: str, maddrs: list[str], timeout: float) -> None:
        await self.inner.connect(peer_id, maddrs, timeout)

    async def reserve_circuit(self, relay_peer_id: str) -> bool:
        return await self.inner.reserve_circuit(relay_peer_id)

    async def punch_hole(self, peer_id: str, relays: tuple[str, ...], timeout: float) -> bool:
        return await self.inner.punch_hole(peer_id, relays, timeout)

    def routing_table_size(self) -> int:
        return self.inner.routing_table_size()

    def dht_time(self) -> float:
        return self.inner.dht_time()

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        return await self.inner.store(key, subkey, value, expiration)

    async def get(self, key: str, *, nearest_holders: bool = False) -> list[StoredValue]:
        return await self.inner.get(key, nearest_holders=nearest_holders)

    async def remote_ip(self, peer_id: str) -> str | None:
        return await self.inner.remote_ip(peer_id)

    async def serve(self, protocol: str, handler: RequestHandler) -> None:
        self._handlers[protocol] = handler
        await self.inner.serve(protocol, handler)

    # -- requests ----------------------------------------------------------------------------

    async def request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        """Directly, or through the peer's relays when its record says it cannot be dialled."""
        now = time.monotonic()
        relays = route(*self.routes.route_of(peer_id), self.peer_id, self.reservations.holds(peer_id, now))
        direct = self._direct.peek(peer_id)
        if relays and direct is not None and direct.works:
            relays = ()  # it answered a direct ping: try it directly (its relays if that fails)
        if not relays:
            try:
                return await self._direct_request(peer_id, protocol, payload, timeout)
            except RequestFailed as e:
                if direct is None or not direct.works:
                    self._note_failure(peer_id, protocol, e.reason)
                    raise
                self._direct[peer_id] = DirectTry(False, now, failures=1)
                relays = route(*self.routes.route_of(peer_id), self.peer_id, False)
        self._maybe_probe_direct(peer_id, relays, now)
        return await self._through_relays(peer_id, relays, protocol, payload, timeout)

    async def _direct_request(self, peer_id: str, protocol: str, payload: bytes, timeout: float) -> bytes:
        """A request straight to the peer. p2pd finds a peer's address only where its own DHT
        knows it; when that fails, dial the addresses of the peer's signed record once (at most
        every 30 s per peer) and ask again."""
        try:
            return await self.inner.request(peer_id, protocol, payload, timeout)
        except RequestFailed:
            addresses = self.routes.addresses_of(peer_id)
            last = self._dialled.peek(peer_id)
            now = time.monotonic()
            if not addresses or (last is not None and now - last < REDIAL_S):
                raise
            self._dialled[peer_id] = now
            await self.inner.connect(peer_id, addresses, min(timeout, DIAL_BY_RECORD_TIMEOUT_S))
            self.counters.dialled_by_record += 1
            return await self.inner.request(peer_id, protocol, payload, timeout)

    async def _through_relays(self, peer_id: str, relays: tuple[str, ...], protocol: str, payload: bytes,
                              timeout: float) -> bytes:
        errors = []
        inner_ms = max(1, int((timeout - 0.5) * 1000))  # the relay answers before the requester gives up
        for relay in relays:
            try:
                raw = await self.inner.request(relay, relay_messages.RELAY_FORWARD_PROTOCOL,
                                               relay_messages.forward(peer_id, protocol, payload, inner_ms), timeout)
            except RequestFailed as e:
                errors.append(f"relay {short_id(relay)}: {e.reason}")
                continue
            answer = relay_messages.parse_answer(raw)
            if answer is None:
                errors.append(f"relay {short_id(relay)}: malformed answer")
            elif answer.error:
                errors.append(f"via relay {short_id(relay)}: {answer.error}")
            else:
                self.counters.relayed_requests += 1
                return answer.payload
        reason = "; ".join(errors) or "it cannot be dialled and names no relay"
        self._note_failure(peer_id, protocol, reason)
        raise RequestFailed(f"{protocol} to {short_id(peer_id)}: {reason}", reason)

    def _note_failure(self, peer_id: str, protocol: str, reason: str) -> None:
        self.counters.failed_requests += 1
        if self.failures.failed(peer_id, reason, time.time()):
            log.warning("request to peer %s failed (%s): %s", short_id(peer_id), protocol, reason)

    def _maybe_probe_direct(self, peer_id: str, relays: tuple[str, ...], now: float) -> None:
        """At the first request through its relays, and again after each failed try (DirectTry.due),
        punch a hole to a relayed peer and ping it directly (in the background): where that works
        (a punched hole, a port forward, an open firewall) requests stop going through the relay."""
        last = self._direct.peek(peer_id)
        if (peer_id in self._probing or (last is not None and not last.due(now))
                or len(self._probes) >= MAX_DIRECT_PROBES):
            return
        self._probing.add(peer_id)
        task = asyncio.create_task(self._probe_direct(peer_id, relays, last.failures if last else 0))
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    async def _probe_direct(self, peer_id: str, relays: tuple[str, ...], failures: int) -> None:
        try:
            await self.inner.punch_hole(peer_id, relays, PUNCH_TIMEOUT_S)
            await self.inner.request(peer_id, relay_messages.PING_PROTOCOL, b"", 5.0)
        except RequestFailed:
            self._direct[peer_id] = DirectTry(False, time.monotonic(), min(failures + 1, MAX_COUNTED_FAILURES))
            return
        finally:
            self._probing.discard(peer_id)
        self.counters.direct_upgrades += 1
        self._direct[peer_id] = DirectTry(True, time.monotonic())
        log.info("peer %s answers directly: requests to it no longer go through its relay", short_id(peer_id))

    # -- answering ---------------------------------------------------------------------------

    async def _answer_ping(self, request: bytes, remote: str) -> bytes:
        return b""

    async def _answer_dialback(self, request: bytes, remote: str) -> bytes:
        ports = relay_messages.parse_dialback_request(request)
        if ports is None or not self._dialback_limiter.allow(remote, time.monotonic()):
            return b""
        ip = await self.inner.remote_ip(remote)
        if not ip:
            return relay_messages.dialback_response("", [])
        reached = await asyncio.gather(*(tcp_port_open(ip, port, DIAL_TIMEOUT_S) for port in ports))
        self.counters.dialbacks_answered += 1
        return relay_messages.dialback_response(ip, [port for port, ok in zip(ports, reached) if ok])

    async def _answer_reserve(self, request: bytes, remote: str) -> bytes:
        ttl = self.reservations.ttl_s
        if not relay_messages.parse_reserve_request(request):
            return relay_messages.reserve_response(False, 0.0, "malformed request")
        if not self._relaying:
            return relay_messages.reserve_response(False, 0.0, "this node does not relay (not publicly reachable)")
        if not self.reservations.reserve(remote, time.monotonic()):
            return relay_messages.reserve_response(False, 0.0, RESERVE_FULL)
        return relay_messages.reserve_response(True, ttl)

    async def _answer_forward(self, request: bytes, remote: str) -> bytes:
        forward = relay_messages.parse_forward(request)
        if forward is None or forward.protocol in RELAY_PROTOCOLS:
            return relay_messages.answer(error="malformed forward")
        if not self._relaying or not self.reservations.holds(forward.target, time.monotonic()):
            return relay_messages.answer(error="the target holds no reservation here")
        if not self._limiter.allow(remote, time.monotonic()) or self._forwards >= self._max_forwards:
            self.counters.forwards_refused += 1
            return relay_messages.answer(error="relay busy")
        self._forwards += 1
        self._recent_forwards.add(time.monotonic())
        try:
            timeout = min(forward.timeout_ms / 1000, self._relay_timeout_cap_s)
            raw = await self.inner.request(forward.target, relay_messages.RELAY_DELIVER_PROTOCOL,
                                           relay_messages.delivery(remote, forward.protocol, forward.payload), timeout)
        except RequestFailed as e:
            self.counters.forwards_failed += 1
            return relay_messages.answer(error=f"target unreachable from the relay ({e.reason})")
        finally:
            self._forwards -= 1
        self.counters.forwarded += 1
        self.counters.forwarded_bytes += len(forward.payload) + len(raw)
        return raw  # the target's RelayAnswer, passed through: the requester parses it

    async def _answer_delivery(self, request: bytes, remote: str) -> bytes:
        if remote not in self._my_relays:
            self.counters.deliveries_refused += 1
            return relay_messages.answer(error="not a relay of this node")
        delivery = relay_messages.parse_delivery(request)
        if delivery is None:
            return relay_messages.answer(error="malformed delivery")
        handler = self._handlers.get(delivery.protocol)
        if handler is None:
            return relay_messages.answer(error=f"no handler for {delivery.protocol[:64]}")
        self.counters.delivered += 1
        try:
            # The relay authenticated `origin`; this node chose the relay, so it takes its word.
            return relay_messages.answer(payload=await handler(delivery.payload, delivery.origin))
        except Exception as e:  # noqa: BLE001 - the handler's failure is the requester's answer
            return relay_messages.answer(error=type(e).__name__)

    def relay_load(self, now: float) -> dict[str, int]:
        """What relaying for others costs now, against its bounds."""
        return {"reservations": len(self.reservations.peers(now)), "capacity": self.reservations.capacity,
                "refused_full": self.reservations.refused, "forwards_in_flight": self._forwards,
                "max_forwards": self._max_forwards, "forwards_last_minute": self._recent_forwards.total(now)}

    def snapshot(self) -> dict:
        now = time.monotonic()
        return {
            "relaying": self._relaying,
            "relayed_for": [short_id(p) for p in self.reservations.peers(now)],
            "reservations_refused": self.reservations.refused,
            "relay_load": self.relay_load(now),
            "my_relays": sorted(self._my_relays),
            "direct_peers": sorted(p for p, tried in self._direct.items() if tried.works),
            "counters": {**self.counters.counted(), **self.inner.counters()},
            "failed_requests": self.failures.snapshot(),
        }
