"""The trio side of the py-libp2p transport: one host (TCP, Noise, yamux), a Kademlia DHT, GossipSub.

Every method here runs on the transport's trio thread (swarmnode.swarm.transports.libp2p.transport calls
them through TrioThread). Values are DhtEntry bytes (swarmnode.protocol.libp2p_messages): in
the DHT under "/<key>/<subkey>", with provider records of "/<key>" naming who holds one, and
pushed as they are stored on the key's GossipSub topic (its shard's, or the swarm-wide one for
a key of one per window: shard_topics.py) to the nodes storing under it, so a receiver has them
before its next DHT read. Every entry, from the DHT or a topic, passes this node's
RecordPolicy first; an entry it refuses on a topic is not forwarded. A peer's GossipSub score
is what this node holds against it (its rejected messages and strikes: GRAYLIST_THRESHOLD).
"""
from __future__ import annotations

import contextlib
import errno
import logging
import socket
import time
from typing import Any, Callable

import multiaddr
import trio
from libp2p.connection_types import ConnectionType
from libp2p.crypto.ed25519 import Ed25519PrivateKey
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.custom_types import TProtocol
from libp2p.kad_dht.kad_dht import DHTMode, KadDHT
from libp2p.host.exceptions import StreamFailure
from libp2p.io.exceptions import MessageTooLarge
from libp2p.peer.id import ID
from libp2p.protocol_muxer.exceptions import MultiselectClientError
from libp2p.peer.peerinfo import PeerInfo
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11
from libp2p.pubsub.score import ScoreParams
from libp2p.records.validator import NamespacedValidator
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_PROTOCOL_ID
from libp2p.tools.anyio_service import background_trio_service
from libp2p.utils.varint import encode_varint_prefixed, read_varint_prefixed_bytes_limited

from swarmnode.protocol import libp2p_messages
from swarmnode.swarm.transports.libp2p.bounded_gossipsub import BoundedGossipSub
from swarmnode.swarm.transports.libp2p.buffered_noise import BufferedNoiseTransport
from swarmnode.swarm.transports.libp2p.guarded_pubsub import GuardedPubsub
from swarmnode.swarm.transports.libp2p.entry_validator import EntryValidator, expired
from swarmnode.swarm.transports.libp2p.entry_book import HeardEntries, due_pushes, due_writes, forget_older
from swarmnode.swarm.transports.libp2p.hole_punch import HolePunching
from swarmnode.swarm.transports.libp2p.lean_host import new_lean_host
from swarmnode.swarm.transports.libp2p.topic_subscriptions import TopicSubscriptions
from swarmnode.swarm.transports.libp2p.trio_thread import TrioThread
from swarmnode.utils.ratelimit import ConcurrencySlots
from swarmnode.swarm.transports.base import PeerPenalty, RecordPolicy, RequestFailed, RequestHandler, StoredValue

log = logging.getLogger(__name__)

MAX_HEARD_KEYS = 64  # keys whose entries are kept (a few windows of three kinds)
MAX_HEARD_PER_KEY = 1024  # subkeys (peers) per key
# A read looks the key's providers up at most this often while entries arrive by push: pushes
# bring what is new, the lookup what a lost push missed.
PROVIDER_LOOKUP_EVERY_S = 10.0
FIRST_LOOKUP_WAIT_S = 3.0  # a read of a key nothing is heard of waits this long for its lookup
# A shard whose last lookup found no provider is looked up again only this long after (reads of
# it answer at once meanwhile). A node reads a dozen such shards every window (the levels it
# probes for writers of a larger swarm: swarm/key_layout.py), and each lookup is a Kademlia walk
# that asks every peer it meets; so a swarm that outgrew this node, or a first writer in another
# shard, is noticed within this, not within a window.
EMPTY_SHARD_RECHECK_S = 60.0
MAX_CONCURRENT_READS = 8  # DHT value lookups one get() runs at once
PROVIDE_EVERY_S = 60.0  # provider records are renewed this often while a key is written
STAMPS_KEPT_S = 10 * PROVIDE_EVERY_S  # when a key was last pushed, written, provided: forgotten after this
DHT_WRITE_EVERY_S = 10.0  # one (key, subkey) is written to the DHT at most this often
# ... and pushed at least this often, sooner for short-lived entries (entry_book.due_pushes):
# every node re-announces every few seconds, and each push costs every node of the mesh a
# receive, a check and up to D forwards, in Python.
PUSH_EVERY_S = 5.0
BRIDGE_EVERY_S = 2.0  # how often a relay matches the topics it bridges to its reserved nodes
# GossipSub drops (and penalises) what one peer forwards beyond this rate on a topic. A mesh peer
# forwards the topic's pushes: 3 kinds per node every PUSH_EVERY_S is 0.6/s per node, so
# py-libp2p's default (10/s) dropped honest pushes on the one swarm-wide topic of an earlier
# version in swarms of 17 nodes and more; 100/s holds ~160 nodes on a topic (a shard's topic
# carries one kind of ~8-16 nodes: swarm/shards.py).
MAX_MESSAGES_PER_S_FROM_A_PEER = 100.0
SERVE_READ_TIMEOUT_S = 30.0  # for a request's bytes to arrive (the handler may then hold it longer)
MAX_INBOUND_STREAMS = 256  # requests this node answers at once (long-polls included)
# Per peer: a relay carries many requesters' requests over its one connection (up to
# network.relay_max_forwards, 128 by default).
MAX_INBOUND_PER_PEER = 128
CLOSE_TIMEOUT_S = 5.0  # closing connections and listeners when the node stops
DROP_EXPIRED_EVERY_S = 10.0  # how often values whose DhtEntry has expired leave the Kademlia store
# GossipSub scoring: the application score is what this node holds against a peer, its
# rejections of messages the peer signed and its strikes (PeerStandings.gossip_penalty); under
# the graylist threshold the peer's gossip is ignored. Not GossipSub's own invalid-message
# score (P4): it charges the peer that *forwarded* a refused entry, and a refusal can depend on
# this node's own state (a key already holding max_values_per_key peers), which GossipSub v1.1
# would "ignore" but py-libp2p 0.8.1 can only "reject": in an identity flood that graylisted the
# honest peers that forwarded flood entries they still had room for, and their pushes stopped
# (measured: tests/integration/test_hostile_peer_cannot_stop_training.py on libp2p).
GRAYLIST_THRESHOLD = -50.0


async def _close(stream: Any) -> None:
    with trio.move_on_after(1):
        try:
            await stream.close()
        except Exception:  # noqa: BLE001 - a stream the peer broke is closed enough
            pass


def key_pair_from_seed(seed: bytes) -> KeyPair:
    """The libp2p key pair of an Ed25519 seed (the node's libp2p identity: same peer id as p2pd's)."""
    private = Ed25519PrivateKey.new(seed)
    return KeyPair(private, private.get_public_key())


class Libp2pNode:
    """A py-libp2p host, its DHT and its GossipSub topics; all methods run on `thread`."""

    def __init__(self, *, thread: TrioThread, key_pair: KeyPair, listen_maddrs: list[str], announce_maddrs: list[str],
                 client_mode: bool, swarm: str, policy: RecordPolicy | None,
                 penalties: PeerPenalty | None = None,
                 on_pushed: Callable[[str, str], None] | None = None, relay_slots: int = 0):
        self.thread = thread
        self.key_pair = key_pair
        self.listen_maddrs = [multiaddr.Multiaddr(m) for m in listen_maddrs]
        self.announce_maddrs = [multiaddr.Multiaddr(m) for m in announce_maddrs]
        self.client_mode = client_mode
        self.topics = TopicSubscriptions(swarm, thread, self._push_is_valid, self._receive_pushes)
        self.topic = self.topics.swarm_topic  # always subscribed: keys of one per window
        self.validator = EntryValidator(policy)
        self.penalties = penalties
        self.on_pushed = on_pushed  # (key, subkey) of a peer's entry that came by push, first heard
        self.host: Any = None
        self.dht: KadDHT | None = None
        self.pubsub: GuardedPubsub | None = None
        self.heard = HeardEntries(MAX_HEARD_KEYS, MAX_HEARD_PER_KEY, PROVIDER_LOOKUP_EVERY_S,
                                  family=self._shard_of, empty_recheck_s=EMPTY_SHARD_RECHECK_S)
        self._lookups: dict[str, trio.Event] = {}  # key -> its DHT lookup in flight (one per key)
        self._provided: dict[str, float] = {}  # key -> when this node last named itself a provider
        self._unwritten: dict[tuple[str, str], bytes] = {}  # (key, subkey) -> newest entry not in the DHT yet
        self._written_at: dict[tuple[str, str], float] = {}
        self._unpushed: dict[tuple[str, str], libp2p_messages.DhtEntry] = {}  # (key, subkey) -> newest entry not pushed yet
        self._pushed_at: dict[tuple[str, str], tuple[float, float]] = {}  # -> (when, its expiration)
        self.pushed_entries = 0
        self.refused_pushes = 0
        self._inbound = ConcurrencySlots(MAX_INBOUND_STREAMS, MAX_INBOUND_PER_PEER)
        self.streams_refused = 0
        self.requests_too_large = 0
        self.relay_slots = relay_slots  # circuit reservations this node grants (0: it relays no circuits)
        self.hole_punching: HolePunching | None = None

    def _shard_of(self, key: str) -> str:
        """The shard a key is one window's of (its topic); a key of no shard stands alone."""
        topic = self.topics.topic_of(key)
        return key if topic == self.topics.swarm_topic else topic

    @property
    def peer_id(self) -> str:
        return self.host.get_id().to_base58()

    async def run(self, started: Callable[[], None]) -> None:
        """The trio thread's main: start everything, call `started()`, serve until cancelled."""
        noise = BufferedNoiseTransport(self.key_pair, noise_privkey=new_x25519_key_pair().private_key)
        self.host = new_lean_host(self.key_pair, {NOISE_PROTOCOL_ID: noise}, self.listen_maddrs, self.announce_maddrs or None)
        validator = NamespacedValidator({libp2p_messages.DHT_NAMESPACE: self.validator}, strict_validation=True)
        async with self.host.run(self.listen_maddrs):
            if not self.host.get_addrs():  # py-libp2p logs a failed listen and goes on; a node must not
                raise OSError(errno.EADDRINUSE, f"cannot listen on {', '.join(map(str, self.listen_maddrs))}: "
                                                "address already in use, or not an address of this machine")
            self.dht = KadDHT(self.host, DHTMode.CLIENT if self.client_mode else DHTMode.SERVER, validator=validator,
                              validator_changed=True, strict_validation=True, max_peers_per_subnet=0)
            router = BoundedGossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12,
                                      heartbeat_interval=1, score_params=self._score_params(),
                                      max_messages_per_topic_per_second=MAX_MESSAGES_PER_S_FROM_A_PEER)
            self.pubsub = GuardedPubsub(self.host, router)
            self.hole_punching = HolePunching(self.host, self.relay_slots)
            async with background_trio_service(self.dht), background_trio_service(self.pubsub), \
                    background_trio_service(router), self.hole_punching.running():
                await self.topics.start(self.host, self.pubsub)
                self.thread.spawn(self._write_to_dht)
                self.thread.spawn(self._push_loop)
                self.thread.spawn(self._drop_expired_values)
                started()
                try:
                    await trio.sleep_forever()
                finally:
                    await self._close_connections()

    async def _close_connections(self) -> None:
        """Close every connection and listener as the node stops. Cancelled, libp2p's own
        teardown skips it, and in a process that lives on (the hostile peer's personas, tests)
        the sockets would stay open with nobody reading them: to its peers this node would
        look connected and never answer, and each of their DHT operations that asked it would
        wait out libp2p's 10 s query timeouts."""
        network = self.host.get_network()
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT_S):
            # After cancellation network.close() alone returns at once and leaves the TCP
            # connections established (seen with `ss`): close the muxed connections first.
            for connections in list(network.connections.values()):
                for connection in list(connections):
                    with contextlib.suppress(Exception):
                        await connection.muxed_conn.close()
            await network.close()

    def _score_params(self) -> ScoreParams:
        penalties = self.penalties

        def app_score(peer: ID) -> float:
            return -penalties.penalty(peer.to_base58()) if penalties is not None else 0.0

        return ScoreParams(app_specific_score_fn=app_score, p6_appl_slack_weight=1.0,
                           graylist_threshold=GRAYLIST_THRESHOLD,
                           gossip_threshold=GRAYLIST_THRESHOLD / 2, publish_threshold=GRAYLIST_THRESHOLD / 2)

    # --- values ---------------------------------------------------------------------------

    def _push_is_valid(self, sender: ID, message: Any) -> bool:
        entry = libp2p_messages.decode_entry(message.data)
        valid = entry is not None and self.validator.check_entry(entry) is not None
        if not valid:
            self.refused_pushes += 1
        return valid

    async def _receive_pushes(self, subscription: Any) -> None:
        async for message in subscription:  # ends when the topic is left
            entry = libp2p_messages.decode_entry(message.data)
            if entry is None:  # checked by _push_is_valid before delivery
                continue
            if not self.topics.keeps(self.topics.topic_of(entry.key)):
                continue  # a topic this relay bridges for its reserved nodes: forwarded only
            self.pushed_entries += 1
            if self.heard.hear(entry, time.monotonic()) and self.on_pushed is not None and entry.subkey != self.peer_id:
                self.on_pushed(entry.key, entry.subkey)

    async def _drop_expired_values(self) -> None:
        """Drop values from the Kademlia store once their DhtEntry has expired. py-libp2p keeps
        what a peer PUTs for 24 h whatever the value says, up to 50000 values: the record policy
        admits at most max_values_per_key peers under each key, but each window brings new keys,
        so a flood of fresh identities would fill it (~1.5 KB a value, ~70 MiB) within the hour."""
        assert self.dht is not None
        values = self.dht.value_store
        while True:
            await trio.sleep(DROP_EXPIRED_EVERY_S)
            now = time.time()
            for key in [k for k, (record, _) in values.store.items() if expired(record.value, now)]:
                del values.store[key]
                values.local_keys.discard(key)

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        """Push the entry to every node on its key's topic, joined first (at once if its key is
        new, else when entry_book.due_pushes says: _push_loop sends the newest version then);
        the DHT gets it from _write_to_dht."""
        entry = libp2p_messages.DhtEntry(key, subkey, value, expiration)
        data = libp2p_messages.encode_entry(entry)
        if libp2p_messages.decode_entry(data) != entry or self.validator.check_entry(entry) is None:
            return False  # out of the wire's bounds, or refused by this node's own policy
        self.heard.hear(entry, time.monotonic())
        await self.topics.stored(key, time.time(), expiration - time.time())
        self._unpushed[(key, subkey)] = entry
        self._unwritten[(key, subkey)] = data
        await self._push_due()
        return True

    async def _push_due(self) -> None:
        assert self.pubsub is not None
        for _, entry in due_pushes(self._unpushed, self._pushed_at, time.time(), PUSH_EVERY_S):
            await self.pubsub.publish(self.topics.topic_of(entry.key), libp2p_messages.encode_entry(entry))

    async def _push_loop(self) -> None:
        """Push the versions store() held back once they are due; leave the shard topics not
        stored under lately; on a relay, follow the topics of the nodes it holds circuit
        reservations for (TopicSubscriptions.bridge); forget old push times."""
        bridged_at = -BRIDGE_EVERY_S
        while True:
            await trio.sleep(0.5)
            try:
                await self._push_due()
                await self.topics.sweep(time.time())
                if self.relay_slots > 0 and time.monotonic() - bridged_at >= BRIDGE_EVERY_S:
                    bridged_at = time.monotonic()
                    assert self.hole_punching is not None
                    await self.topics.bridge(self.hole_punching.reserved_peers(), bridged_at)
            except Exception as e:  # noqa: BLE001 - the next version is pushed in turn
                log.debug("pushing failed: %r", e)
            forget_older(self._pushed_at, time.time() - STAMPS_KEPT_S, stamp=lambda pushed: pushed[0])

    async def _write_to_dht(self) -> None:
        """Write each stored entry's newest version to the DHT, each (key, subkey) at most every
        DHT_WRITE_EVERY_S, a new key at once; and name this node a provider of each key. Pushes
        carry every version as it is stored; the DHT keeps one for whoever missed them. Apart
        from store() so that a slow Kademlia round (a lookup and up to 20 stores) never delays
        a push."""
        assert self.dht is not None
        while True:
            now = time.monotonic()
            for (key, subkey), data in due_writes(self._unwritten, self._written_at, now, DHT_WRITE_EVERY_S):
                try:
                    await self.dht.put_value(libp2p_messages.dht_key(key, subkey), data)
                    if now - self._provided.get(key, -PROVIDE_EVERY_S) >= PROVIDE_EVERY_S:
                        self._provided[key] = now
                        await self.dht.provide(libp2p_messages.provider_key(key))
                except Exception as e:  # noqa: BLE001 - tried again with the next version
                    log.debug("writing %s to the DHT failed: %r", key, e)
            for table in (self._provided, self._written_at):
                forget_older(table, now - STAMPS_KEPT_S)
            await trio.sleep(0.5)

    async def get(self, key: str) -> list[StoredValue]:
        """The entries heard under `key`. Now and then (HeardEntries.lookup_due) a DHT lookup of
        its providers' entries starts in the background; a read waits for it (at most
        FIRST_LOOKUP_WAIT_S) only while nothing at all is heard of the key (and its shard was
        not found empty lately: EMPTY_SHARD_RECHECK_S). A read never waits on
        a slow Kademlia round: the node's loops that read (peer records every few seconds) must
        keep their pace, or every peer's record would lapse behind one slow lookup."""
        now = time.time()
        if self.heard.lookup_due(key, now, time.monotonic()) and key not in self._lookups:
            done = self._lookups[key] = trio.Event()
            self.thread.spawn(self._look_up, key, done)
        if not self.heard.unexpired(key, now) and key in self._lookups:
            with trio.move_on_after(FIRST_LOOKUP_WAIT_S):
                await self._lookups[key].wait()
        return [StoredValue(subkey=e.subkey, value=e.value, expiration=e.expiration)
                for e in self.heard.unexpired(key, time.time()).values()]

    async def _look_up(self, key: str, done: trio.Event) -> None:
        """Read the entries of `key`'s providers not heard from lately from the DHT."""
        assert self.dht is not None
        began = time.monotonic()
        try:
            providers = await self.dht.find_providers(libp2p_messages.provider_key(key), count=MAX_HEARD_PER_KEY)
            self.heard.looked_up(key, len(providers), began, time.time())
            self.topics.meet_peers(key, providers)
            missing = self.heard.to_fetch(key, [p.peer_id.to_base58() for p in providers], time.time(), time.monotonic())
            limiter = trio.CapacityLimiter(MAX_CONCURRENT_READS)

            async def read(subkey: str) -> None:
                async with limiter:
                    data = await self.dht.get_value(libp2p_messages.dht_key(key, subkey))
                entry = None if data is None else self.validator.check(libp2p_messages.dht_key(key, subkey), data)
                if entry is not None:
                    self.heard.hear(entry, time.monotonic())

            async with trio.open_nursery() as nursery:
                for subkey in missing:
                    nursery.start_soon(read, subkey)
        except Exception as e:  # noqa: BLE001 - a failed lookup is tried again at the next due read
            log.debug("looking %s up failed: %r", key, e)
        finally:
            del self._lookups[key]
            done.set()

    # --- peers ----------------------------------------------------------------------------

    async def connect(self, peer_id: str, maddrs: list[str]) -> None:
        suffix = f"/p2p/{peer_id}"
        addrs = []
        for m in maddrs:
            addrs += await resolve_dns(m[: -len(suffix)] if m.endswith(suffix) else m)
        await self.host.connect(PeerInfo(ID.from_base58(peer_id), [multiaddr.Multiaddr(a) for a in addrs]))

    async def join(self, peer_id: str, maddrs: list[str]) -> int:
        """Connect, then fill the routing table by a lookup of this node's own id; its size."""
        await self.connect(peer_id, maddrs)
        assert self.dht is not None
        await self.dht.routing_table.add_peer(ID.from_base58(peer_id))
        await self.dht.peer_routing.find_closest_peers_network(self.host.get_id().to_bytes())
        return self.dht.get_routing_table_size()

    def routing_table_size(self) -> int:
        return self.dht.get_routing_table_size() if self.dht is not None else 0

    def connected_peers(self) -> list[str]:
        return [peer.to_base58() for peer, connections in self.host.get_network().connections.items() if connections]

    def multiaddrs(self) -> list[str]:
        return [str(m) for m in self.host.get_addrs()]

    def remote_ip(self, peer_id: str) -> str | None:
        for connection in self.host.get_network().get_connections(ID.from_base58(peer_id)):
            if connection.get_connection_type() == ConnectionType.RELAYED:
                continue  # a circuit's far end is not where the peer's packets come from
            address = connection.muxed_conn.get_remote_address()
            if address:
                return address[0]
        return None

    # --- hole punching (transports/libp2p/hole_punch.py) ------------------------------------------

    async def reserve_circuit(self, relay_id: str) -> bool:
        assert self.hole_punching is not None
        return await self.hole_punching.reserve(relay_id)

    async def punch_hole(self, peer_id: str, relays: list[str]) -> bool:
        assert self.hole_punching is not None
        return await self.hole_punching.punch(peer_id, relays)

    # --- requests -------------------------------------------------------------------------

    def serve(self, protocol: str, handler: RequestHandler) -> None:
        async def answer(stream: Any) -> None:
            requester = stream.muxed_conn.peer_id.to_base58()
            if not self._inbound.acquire(requester):
                self.streams_refused += 1
                with trio.move_on_after(1):  # the requester reads this after writing its request
                    await stream.write(encode_varint_prefixed(libp2p_messages.encode_reply(error="busy: too many requests at once")))
                await _close(stream)
                return
            try:
                try:
                    with trio.fail_after(SERVE_READ_TIMEOUT_S):
                        request = await read_varint_prefixed_bytes_limited(stream, libp2p_messages.MAX_REQUEST_BYTES)
                except MessageTooLarge:
                    self.requests_too_large += 1
                    await stream.reset()  # the requester's write fails at once; nothing of it is read
                    return
                try:
                    reply = libp2p_messages.encode_reply(await self.thread.call_asyncio(handler(request, requester)))
                except Exception as e:  # noqa: BLE001 - the requester gets a reason, the node goes on
                    reply = libp2p_messages.encode_reply(error=f"the handler failed ({type(e).__name__})")
                await stream.write(encode_varint_prefixed(reply))
            except Exception as e:  # noqa: BLE001 - a peer that breaks or stalls its stream costs only that stream
                log.debug("%s from %s: %r", protocol, requester[:16], e)
            finally:
                self._inbound.release(requester)
                await _close(stream)

        self.host.set_stream_handler(TProtocol(libp2p_messages.stream_protocol(protocol)), answer)

    async def request(self, peer_id: str, protocol: str, payload: bytes) -> bytes:
        peer = ID.from_base58(peer_id)
        if not self.host.get_network().get_connections(peer) and not self.host.get_peerstore().addrs(peer):
            assert self.dht is not None
            info = await self.dht.find_peer(peer)
            if info is None:
                raise RequestFailed(f"{protocol} to {peer_id[:16]}: no address known", "no address known")
            self.host.get_peerstore().add_addrs(peer, info.addrs, 600)
        try:
            stream = await self.host.new_stream(peer, [TProtocol(libp2p_messages.stream_protocol(protocol))])
        except StreamFailure as e:
            if isinstance(e.__cause__, MultiselectClientError):
                reason = "the peer does not serve this protocol"
                raise RequestFailed(f"{protocol} to {peer_id[:16]}: {reason}", reason) from None
            raise
        try:
            await stream.write(encode_varint_prefixed(payload))
            answer = libp2p_messages.decode_reply(await read_varint_prefixed_bytes_limited(stream, libp2p_messages.MAX_REPLY_BYTES))
        finally:
            await _close(stream)
        if answer is None:
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: a malformed answer", "a malformed answer")
        payload, error = answer
        if error:
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: {error}", error)
        return payload


_DNS_FAMILIES = {"dns4": (socket.AF_INET, "ip4"), "dns6": (socket.AF_INET6, "ip6"), "dns": (socket.AF_UNSPEC, "")}


async def resolve_dns(maddr: str) -> list[str]:
    """`maddr` with a leading /dns4, /dns6 or /dns name replaced by each of its addresses, looked
    up by the system resolver (so /etc/hosts counts, as it does for p2pd; py-libp2p's own DNS
    lookup asks name servers only). Other addresses come back unchanged."""
    parts = maddr.split("/")
    if len(parts) < 3 or parts[1] not in _DNS_FAMILIES:
        return [maddr]
    family, protocol = _DNS_FAMILIES[parts[1]]
    infos = await trio.socket.getaddrinfo(parts[2], None, family=family, type=socket.SOCK_STREAM)
    rest = "/".join(parts[3:])
    found = []
    for info_family, _, _, _, address in infos:
        name = protocol or ("ip6" if info_family == socket.AF_INET6 else "ip4")
        found.append(f"/{name}/{address[0]}/{rest}")
    return list(dict.fromkeys(found))
