"""Hole punching for the py-libp2p transport: circuit relay v2 and DCUtR, on the trio thread.

Two nodes behind NAT cannot dial each other. When one wants the other (its record names relays),
it opens a libp2p circuit through one of those relays (a public node: HOP), the other end accepts
it (STOP, only from relays it holds a circuit reservation on), and over that circuit DCUtR
exchanges the addresses each side's relay sees and has both dial at once from their listening
ports: where both NATs keep source ports (most home routers), the two SYNs cross and open one
direct TCP connection. The circuit is closed afterwards; requests go over the direct connection
(libp2p prefers a direct one). Where the punch fails (NATs that change ports, CGNAT), the swarm's
own relays (swarm/relaying/routed_transport.py) carry the requests as before.

py-libp2p 0.8.1's classes are used with a few methods overridden, each for a stated reason; all
per-peer state is keyed by peer ids Noise verified and bounded.
"""
from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Sequence

import multiaddr
import trio
from libp2p.connection_types import ConnectionType
from libp2p.network.connection.raw_connection import RawConnection
from libp2p.peer.id import ID
from libp2p.relay.circuit_v2.dcutr import DCUtRProtocol
from libp2p.relay.circuit_v2.pb.circuit_pb2 import HopMessage
from libp2p.relay.circuit_v2.pb.circuit_pb2 import PeerId as CircuitPeer
from libp2p.relay.circuit_v2.protocol import PROTOCOL_ID as HOP_PROTOCOL_ID
from libp2p.relay.circuit_v2.protocol import CircuitV2Protocol
from libp2p.relay.circuit_v2.protocol_buffer import StatusCode
from libp2p.relay.circuit_v2.resources import RelayLimits
from libp2p.relay.circuit_v2.utils import read_delimited_msg, write_delimited_msg
from libp2p.tools.anyio_service import background_trio_service

from swarmnode.utils.lru_map import LRUMap
from swarmnode.swarm.peers import short_id

log = logging.getLogger(__name__)

# A relayed connection here only carries the DCUtR handshake (and the identify and Noise/yamux
# set-up before it): a few KiB in a few seconds, then it is closed. The limits keep a relay's
# cost per circuit small whatever a peer tries to push through it; the swarm's requests to a
# node behind NAT go through the swarm's own relays, which meter every request.
CIRCUIT_DATA_BYTES = 1 << 20  # 1 MiB per circuit
CIRCUIT_DURATION_S = 120
CIRCUITS_PER_RESERVATION = 4  # circuits to one reserved node at once
CIRCUIT_RESERVATION_TTL_S = 600  # a relay forgets a node that stopped renewing after this
RENEW_WHEN_LEFT_S = CIRCUIT_RESERVATION_TTL_S / 2
RESERVE_TIMEOUT_S = 10.0
CIRCUIT_DIAL_TIMEOUT_S = 10.0
PUNCH_TIMEOUT_S = 30.0  # one DCUtR exchange and its three dial rounds take ~20 s at worst
PEER_FIRST_S = 10.0  # of two nodes punching each other, the larger id waits this long for the other
SESSION_GAP_S = 60.0  # one punch per peer at most this often (either side may start it)
MAX_SESSIONS = 8  # punches under way at once
MAX_RELAYS_TRIED = 4
MAX_ADDRESSES_FROM_PEER = 8  # addresses a peer's DCUtR CONNECT may make this node dial
IDLE_CIRCUIT_SWEEP_S = 60.0  # a relayed connection outside a punch is closed within 2 sweeps


def direct_connection(host: Any, peer: ID) -> Any | None:
    """An open connection to `peer` that goes through no relay, if there is one."""
    for conn in host.get_network().get_connections(peer):
        if not conn.is_closed and conn.get_connection_type() == ConnectionType.DIRECT:
            return conn
    return None


def _relayed(conn: Any) -> bool:
    try:
        return conn.get_connection_type() == ConnectionType.RELAYED
    except Exception:  # noqa: BLE001 - a connection that cannot say is not one this code made
        return False


def _dialable(addr: multiaddr.Multiaddr) -> bool:
    """An address DCUtR may dial for a peer: plain TCP on a concrete IP, nothing else."""
    text = str(addr)
    parts = text.split("/")
    return (len(parts) >= 5 and parts[1] in ("ip4", "ip6") and parts[3] == "tcp" and "/p2p-circuit" not in text
            and parts[2] not in ("0.0.0.0", "::"))


class GuardedCircuitRelay(CircuitV2Protocol):
    """Circuit relay v2. A reservation is always for the peer that asks (libp2p's handler would
    take a peer id from the message: anyone could fill the slots in others' names); an incoming
    circuit (STOP) is accepted only from a relay this node holds a reservation on."""

    def __init__(self, host: Any, limits: RelayLimits, allow_hop: bool, accept_from: Callable[[str], bool]):
        super().__init__(host, limits=limits, allow_hop=allow_hop)
        self._accept_from = accept_from

    async def _handle_reserve(self, stream: Any, msg: HopMessage) -> None:
        msg.ClearField("peer")
        await super()._handle_reserve(stream, msg)

    async def _handle_stop_stream(self, stream: Any) -> None:
        relay = stream.muxed_conn.peer_id.to_base58()
        if _relayed(stream.muxed_conn) or not self._accept_from(relay):
            await stream.reset()
            return
        await super()._handle_stop_stream(stream)


class GuardedDCUtR(DCUtRProtocol):
    """DCUtR, started only by this node's own choice (HolePunching.punch) or by a peer over a
    relayed connection, one session per peer at a time."""

    def __init__(self, host: Any, owner: "HolePunching"):
        super().__init__(host, read_timeout=10, write_timeout=10, dial_timeout=5)
        self._owner = owner

    async def _auto_drive_loop(self) -> None:
        """Off: libp2p would punch every relayed peer every 2 s; the node punches the peers it
        wants (HolePunching.punch), and a peer that wants this node starts it from its side."""

    async def _try_unilateral_upgrade(self, peer_id: ID) -> bool:
        """Off: only peers whose records say they cannot be dialled are punched (the swarm's
        direct ping finds those that can); a plain dial first would only delay the punch."""
        return False

    def _decode_observed_addrs(self, addr_bytes: list[bytes]) -> list[multiaddr.Multiaddr]:
        """A peer's addresses, as far as this node may dial them: TCP on a concrete IP, a few."""
        found = [a for a in super()._decode_observed_addrs(addr_bytes[:MAX_ADDRESSES_FROM_PEER]) if _dialable(a)]
        return found[:MAX_ADDRESSES_FROM_PEER]

    async def _handle_dcutr_stream(self, stream: Any) -> None:
        peer = stream.muxed_conn.peer_id
        if not _relayed(stream.muxed_conn) or not self._owner.punch_allowed(peer):
            await stream.reset()
            return
        self._owner.session_started(peer)
        try:
            await super()._handle_dcutr_stream(stream)
        finally:
            await self._owner.session_ended(peer)


class HolePunching:
    """Circuit relay (HOP on nodes that relay, STOP on all), DCUtR, and the bookkeeping around
    them: circuit reservations held, punches under way, counts for status."""

    def __init__(self, host: Any, relay_slots: int, max_tracked_peers: int = 1024):
        self.host = host
        limits = RelayLimits(duration=CIRCUIT_DURATION_S, data=CIRCUIT_DATA_BYTES,
                             max_circuit_conns=CIRCUITS_PER_RESERVATION, max_reservations=max(1, relay_slots),
                             reservation_ttl=CIRCUIT_RESERVATION_TTL_S)
        self.relay = GuardedCircuitRelay(host, limits, allow_hop=relay_slots > 0, accept_from=self._holds_reservation)
        self.dcutr = GuardedDCUtR(host, self)
        self.tried = 0
        self.succeeded = 0
        self._reserved: LRUMap[str, float] = LRUMap(16)  # relay -> when its reservation of this node ends (epoch s)
        self._sessions: set[str] = set()  # peers a punch with is under way (at most MAX_SESSIONS)
        self._last_session: LRUMap[str, float] = LRUMap(max_tracked_peers)  # peer -> when its last punch ended

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with background_trio_service(self.relay), background_trio_service(self.dcutr), \
                trio.open_nursery() as nursery:
            nursery.start_soon(self._close_idle_circuits)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

    # --- reservations --------------------------------------------------------------------------

    def reserved_peers(self) -> list[ID]:
        """The connected peers this relay holds a live circuit reservation for (py-libp2p keeps
        them in its resource manager and lists them nowhere public)."""
        manager = self.relay.resource_manager
        return [peer for peer in list(manager._reservations) if manager.has_reservation(peer)]

    def _holds_reservation(self, relay: str) -> bool:
        ends = self._reserved.peek(relay)
        return ends is not None and ends > time.time()

    async def reserve(self, relay_id: str) -> bool:
        """Hold a circuit slot on `relay_id` (renewed once half its life is gone), so peers can
        reach this node through it for a punch."""
        ends = self._reserved.peek(relay_id)
        now = time.time()
        if ends is not None and ends - now > RENEW_WHEN_LEFT_S:
            return True
        relay = ID.from_base58(relay_id)
        with trio.fail_after(RESERVE_TIMEOUT_S):
            stream = await self.host.new_stream(relay, [HOP_PROTOCOL_ID])
            try:
                await write_delimited_msg(stream, HopMessage(type=HopMessage.RESERVE))
                answer = await read_delimited_msg(stream, HopMessage)
            finally:
                await stream.close()
        if answer.status != StatusCode.OK:
            log.debug("relay %s refused a circuit reservation (%s)", short_id(relay_id), answer.status)
            return False
        granted = float(answer.reservation.expire) if answer.HasField("reservation") else now
        self._reserved[relay_id] = min(granted, now + CIRCUIT_RESERVATION_TTL_S)  # the relay's word, capped
        return True

    # --- punching ------------------------------------------------------------------------------

    def punch_allowed(self, peer: ID) -> bool:
        """Whether a DCUtR session the peer starts is taken: none under way with it, none ended
        in the last SESSION_GAP_S, not too many at once, and no direct connection already."""
        key = peer.to_base58()
        last = self._last_session.peek(key)
        return (key not in self._sessions and len(self._sessions) < MAX_SESSIONS
                and (last is None or trio.current_time() - last >= SESSION_GAP_S)
                and direct_connection(self.host, peer) is None)

    def session_started(self, peer: ID) -> None:
        self._sessions.add(peer.to_base58())
        self.tried += 1

    async def session_ended(self, peer: ID) -> bool:
        """Count and log the outcome; a failed punch leaves no relayed connection behind (nothing,
        a direct ping included, may take the circuit for a direct connection)."""
        key = peer.to_base58()
        try:
            conn = direct_connection(self.host, peer)
            if conn is None:
                await self._close_relayed(peer)
                return False
            self.succeeded += 1
            where = ", ".join(str(a) for a in conn.get_transport_addresses()[:1])
            log.info("direct connection to %s through NAT (hole punched): %s", short_id(key), where)
            return True
        finally:
            self._sessions.discard(key)
            self._last_session[key] = trio.current_time()

    async def punch(self, peer_id: str, relays: Sequence[str]) -> bool:
        """Try for a direct connection to `peer_id` (behind NAT) through one of `relays`; whether
        one exists now. Of two nodes that want each other, the smaller id starts the punch and
        the other waits PEER_FIRST_S for it (two crossing sessions would spoil each other)."""
        peer = ID.from_base58(peer_id)
        if await self._await_peers_punch(peer, PEER_FIRST_S if self.host.get_id().to_base58() > peer_id else 0.0):
            return direct_connection(self.host, peer) is not None
        if not self.punch_allowed(peer):
            return direct_connection(self.host, peer) is not None
        circuit = await self._open_circuit(peer, relays)
        if circuit is None:
            return False
        self.session_started(peer)
        punched = False
        try:
            with trio.move_on_after(PUNCH_TIMEOUT_S):
                await self.dcutr.initiate_hole_punch(peer)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                punched = await self.session_ended(peer)
        return punched

    async def _await_peers_punch(self, peer: ID, wait_s: float) -> bool:
        """Wait up to `wait_s` for a punch with `peer` to begin (it may start one from its side),
        and for any under way to end; whether one ran or a direct connection exists."""
        key, deadline, saw = peer.to_base58(), trio.current_time() + wait_s, False
        while direct_connection(self.host, peer) is None:
            if key in self._sessions:
                saw = True
            elif saw or trio.current_time() >= deadline:
                return saw
            await trio.sleep(0.25)
        return True

    async def _open_circuit(self, peer: ID, relays: Sequence[str]) -> Any | None:
        """A relayed connection to `peer` through the first of `relays` that gives one."""
        me = self.host.get_id()
        for relay_id in list(dict.fromkeys(relays))[:MAX_RELAYS_TRIED]:
            try:
                relay = ID.from_base58(relay_id)
                if relay in (me, peer):
                    continue
                with trio.fail_after(CIRCUIT_DIAL_TIMEOUT_S):
                    return await self._dial_circuit(relay, peer)
            except Exception as e:  # noqa: BLE001 - the next relay, or the swarm's relays carry on
                log.debug("circuit to %s through %s failed: %r", short_id(peer.to_base58()), short_id(relay_id), e)
        return None

    async def _dial_circuit(self, relay: ID, peer: ID) -> Any:
        """HOP CONNECT on `relay`, then Noise and yamux over that stream (Noise proves the far
        end is `peer`). No reservation is made on the relay and no circuit address is kept:
        libp2p's own CircuitV2Transport.dial would do both."""
        stream = await self.host.new_stream(relay, [HOP_PROTOCOL_ID])
        try:
            await write_delimited_msg(stream, HopMessage(type=HopMessage.CONNECT, peer=CircuitPeer(id=peer.to_bytes())))
            answer = await read_delimited_msg(stream, HopMessage)
            if answer.status != StatusCode.OK:
                raise ConnectionError(f"the relay answered {answer.status}")
            circuit = multiaddr.Multiaddr(f"/p2p/{relay.to_base58()}/p2p-circuit/p2p/{peer.to_base58()}")
            raw = RawConnection(stream=stream, initiator=True, connection_type=ConnectionType.RELAYED,
                                addresses=[circuit])
            return await self.host.upgrade_outbound_connection(raw, peer)
        except BaseException:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await stream.reset()
            raise

    async def _close_relayed(self, peer: ID) -> None:
        for conn in list(self.host.get_network().get_connections(peer)):
            if _relayed(conn):
                with trio.move_on_after(2):
                    try:
                        await conn.close()
                    except Exception as e:  # noqa: BLE001 - a connection that breaks on close is closed
                        log.debug("closing a circuit to %s: %r", short_id(peer.to_base58()), e)

    async def _close_idle_circuits(self) -> None:
        """Close relayed connections that outlive their punch (after a success, or opened by a
        peer that never punched): seen in two sweeps in a row outside a punch."""
        seen: set[int] = set()
        while True:
            await trio.sleep(IDLE_CIRCUIT_SWEEP_S)
            still: set[int] = set()
            for peer, conns in list(self.host.get_network().get_connections_map().items()):
                if peer.to_base58() in self._sessions:
                    continue
                for conn in list(conns):
                    if not _relayed(conn):
                        continue
                    if id(conn) in seen:
                        with trio.move_on_after(2):
                            try:
                                await conn.close()
                            except Exception:  # noqa: BLE001 - closed enough
                                pass
                    else:
                        still.add(id(conn))
            seen = still
