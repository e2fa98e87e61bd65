"""The trio side of the py-libp2p transport: one host (TCP, Noise, yamux), a Kademlia DHT, GossipSub.

Every method here runs on the transport's trio thread (swarmnode.swarm.libp2p_transport calls
them through TrioThread). Values are DhtEntry bytes (swarmnode.protocol.libp2p_messages): in
the DHT under "/<key>/<subkey>", with provider records of "/<key>" naming who holds one, and
pushed to every node on the swarm's GossipSub topic as they are stored, so a receiver has them
before its next DHT read. Every entry, from the DHT or the topic, passes this node's
RecordPolicy first; an entry it refuses on the topic is a GossipSub "invalid message", which
lowers its sender's peer score, and the node's own strikes against a peer lower it further.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from typing import Any, Awaitable, Callable

import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import Ed25519PrivateKey
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.custom_types import TProtocol
from libp2p.kad_dht.kad_dht import DHTMode, KadDHT
from libp2p.host.exceptions import StreamFailure
from libp2p.peer.id import ID
from libp2p.protocol_muxer.exceptions import MultiselectClientError
from libp2p.peer.peerinfo import PeerInfo
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
from libp2p.pubsub.pubsub import Pubsub
from libp2p.pubsub.score import ScoreParams, TopicScoreParams
from libp2p.records.validator import NamespacedValidator, Validator
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_PROTOCOL_ID
from libp2p.security.noise.transport import Transport as NoiseTransport
from libp2p.tools.anyio_service import background_trio_service
from libp2p.utils.varint import encode_varint_prefixed, read_varint_prefixed_bytes_limited

from swarmnode.protocol import libp2p_messages as wire
from swarmnode.swarm.py_libp2p.trio_thread import TrioThread
from swarmnode.swarm.transport import RecordPolicy, RequestFailed, RequestHandler, StoredValue

log = logging.getLogger(__name__)

MAX_PUSHED_KEYS = 64  # keys whose pushed entries are kept (a few windows of three kinds)
MAX_PUSHED_PER_KEY = 1024  # subkeys (peers) per key
MAX_CONCURRENT_READS = 8  # DHT value lookups one get() runs at once
PROVIDE_EVERY_S = 60.0  # provider records are renewed this often while a key is written
SERVE_READ_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0  # closing connections and listeners when the node stops
DROP_EXPIRED_EVERY_S = 10.0  # how often values whose DhtEntry has expired leave the Kademlia store
# GossipSub scoring: each refused entry (P4, decaying) costs 10 points, up to 100 of them; the
# node's own penalty of a peer (its strikes) is the application score. Under the graylist
# threshold a peer's gossip is ignored.
INVALID_MESSAGE_PENALTY = 10.0
INVALID_MESSAGE_CAP = 100.0
GRAYLIST_THRESHOLD = -50.0


def key_pair_from_seed(seed: bytes) -> KeyPair:
    """The libp2p key pair of an Ed25519 seed (the node's libp2p identity: same peer id as p2pd's)."""
    private = Ed25519PrivateKey.new(seed)
    return KeyPair(private, private.get_public_key())


class EntryValidator(Validator):
    """Kademlia's check of a value under "/swarmnode/...": a well-formed entry for exactly this
    key and subkey that the node's RecordPolicy admits. Of two, the one expiring later wins."""

    def __init__(self, policy: RecordPolicy | None):
        self._policy = policy

    def validate(self, key: str, value: bytes) -> None:
        if self.check(key, value) is None:
            raise ValueError("refused by this node's record policy")

    def check(self, dht_key: str, value: bytes) -> wire.DhtEntry | None:
        where = wire.split_dht_key(dht_key)
        entry = wire.decode_entry(value)
        now = time.time()
        if where is None or entry is None or (entry.key, entry.subkey) != where or entry.expiration <= now:
            return None
        if self._policy is None:
            return entry
        if entry.key not in set(self._policy.known_keys(now)):
            self._policy.refuse_unknown_key(entry.key.encode(), entry.value)
            return None
        return entry if self._policy.admit(entry.key, entry.subkey, entry.value, entry.expiration, now) else None

    def select(self, key: str, values: list[bytes]) -> int:
        def expiration(value: bytes) -> float:
            entry = wire.decode_entry(value)
            return entry.expiration if entry is not None else float("-inf")

        return max(range(len(values)), key=lambda i: expiration(values[i]))


class Libp2pNode:
    """A py-libp2p host, its DHT and its GossipSub topic; all methods run on `thread`."""

    def __init__(self, *, thread: TrioThread, key_pair: KeyPair, listen_maddrs: list[str], announce_maddrs: list[str],
                 client_mode: bool, swarm: str, policy: RecordPolicy | None,
                 peer_penalty: Callable[[str], float] | None = None):
        self.thread = thread
        self.key_pair = key_pair
        self.listen_maddrs = [multiaddr.Multiaddr(m) for m in listen_maddrs]
        self.announce_maddrs = [multiaddr.Multiaddr(m) for m in announce_maddrs]
        self.client_mode = client_mode
        self.topic = f"swarmnode/{swarm}/announcements"
        self.validator = EntryValidator(policy)
        self.peer_penalty = peer_penalty
        self.host: Any = None
        self.dht: KadDHT | None = None
        self.pubsub: Pubsub | None = None
        self._pushed: OrderedDict[str, dict[str, wire.DhtEntry]] = OrderedDict()
        self._provided: dict[str, float] = {}
        self.pushed_entries = 0
        self.refused_pushes = 0

    @property
    def peer_id(self) -> str:
        return self.host.get_id().to_base58()

    async def run(self, started: Callable[[], None]) -> None:
        """The trio thread's main: start everything, call `started()`, serve until cancelled."""
        noise = NoiseTransport(self.key_pair, noise_privkey=new_x25519_key_pair().private_key)
        self.host = new_host(key_pair=self.key_pair, sec_opt={NOISE_PROTOCOL_ID: noise}, muxer_preference="YAMUX",
                             listen_addrs=self.listen_maddrs, announce_addrs=self.announce_maddrs or None)
        validator = NamespacedValidator({wire.DHT_NAMESPACE: self.validator}, strict_validation=True)
        async with self.host.run(self.listen_maddrs):
            self.dht = KadDHT(self.host, DHTMode.CLIENT if self.client_mode else DHTMode.SERVER, validator=validator,
                              validator_changed=True, strict_validation=True, max_peers_per_subnet=0)
            router = GossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12,
                               heartbeat_interval=1, score_params=self._score_params())
            self.pubsub = Pubsub(self.host, router)
            async with background_trio_service(self.dht), background_trio_service(self.pubsub), \
                    background_trio_service(router):
                self.pubsub.set_topic_validator(self.topic, self._push_is_valid, False)
                subscription = await self.pubsub.subscribe(self.topic)
                self.thread.spawn(self._receive_pushes, subscription)
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
        penalty = self.peer_penalty

        def app_score(peer: ID) -> float:
            return -penalty(peer.to_base58()) if penalty is not None else 0.0

        invalid = TopicScoreParams(weight=INVALID_MESSAGE_PENALTY, cap=INVALID_MESSAGE_CAP, decay=0.9)
        return ScoreParams(p4_invalid_messages=invalid, app_specific_score_fn=app_score, p6_appl_slack_weight=1.0,
                           graylist_threshold=GRAYLIST_THRESHOLD,
                           gossip_threshold=GRAYLIST_THRESHOLD / 2, publish_threshold=GRAYLIST_THRESHOLD / 2)

    # --- values ---------------------------------------------------------------------------

    def _push_is_valid(self, sender: ID, message: Any) -> bool:
        entry = wire.decode_entry(message.data)
        valid = entry is not None and self.validator.check(wire.dht_key(entry.key, entry.subkey), message.data) is not None
        if not valid:
            self.refused_pushes += 1
        return valid

    async def _receive_pushes(self, subscription: Any) -> None:
        while True:
            message = await subscription.get()
            entry = wire.decode_entry(message.data)
            if entry is not None:  # checked by _push_is_valid before delivery
                self._keep_pushed(entry)

    def _keep_pushed(self, entry: wire.DhtEntry) -> None:
        held = self._pushed.get(entry.key)
        if held is None:
            held = self._pushed[entry.key] = {}
            while len(self._pushed) > MAX_PUSHED_KEYS:
                self._pushed.popitem(last=False)
        old = held.get(entry.subkey)
        if old is None and len(held) >= MAX_PUSHED_PER_KEY:
            return
        if old is None or entry.expiration >= old.expiration:
            held[entry.subkey] = entry
            self.pushed_entries += 1

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
            for key in [k for k, (record, _) in values.store.items() if _expired(record.value, now)]:
                del values.store[key]
                values.local_keys.discard(key)

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        entry = wire.DhtEntry(key, subkey, value, expiration)
        data = wire.encode_entry(entry)
        if self.validator.check(wire.dht_key(key, subkey), data) is None:
            return False
        self._keep_pushed(entry)
        assert self.dht is not None and self.pubsub is not None
        await self.pubsub.publish(self.topic, data)
        await self.dht.put_value(wire.dht_key(key, subkey), data)
        now = time.monotonic()
        if now - self._provided.get(key, -PROVIDE_EVERY_S) >= PROVIDE_EVERY_S:
            self._provided[key] = now
            await self.dht.provide(wire.provider_key(key))
            for old in [k for k, at in self._provided.items() if now - at > 10 * PROVIDE_EVERY_S]:
                del self._provided[old]
        return True

    async def get(self, key: str) -> list[StoredValue]:
        """Pushed entries first, then every provider's value read from the DHT."""
        assert self.dht is not None
        now = time.time()
        found = {s: e for s, e in self._pushed.get(key, {}).items() if e.expiration > now}
        providers = await self.dht.find_providers(wire.provider_key(key), count=MAX_PUSHED_PER_KEY)
        missing = [p.peer_id.to_base58() for p in providers]
        missing = [s for s in dict.fromkeys(missing) if s not in found]
        limiter = trio.CapacityLimiter(MAX_CONCURRENT_READS)

        async def read(subkey: str) -> None:
            async with limiter:
                data = await self.dht.get_value(wire.dht_key(key, subkey))
            entry = None if data is None else self.validator.check(wire.dht_key(key, subkey), data)
            if entry is not None:
                found[subkey] = entry

        async with trio.open_nursery() as nursery:
            for subkey in missing:
                nursery.start_soon(read, subkey)
        return [StoredValue(subkey=e.subkey, value=e.value, expiration=e.expiration) for e in found.values()]

    # --- peers ----------------------------------------------------------------------------

    async def connect(self, peer_id: str, maddrs: list[str]) -> None:
        suffix = f"/p2p/{peer_id}"
        addrs = [multiaddr.Multiaddr(m[: -len(suffix)] if m.endswith(suffix) else m) for m in maddrs]
        await self.host.connect(PeerInfo(ID.from_base58(peer_id), addrs))

    async def join(self, peer_id: str, maddrs: list[str]) -> int:
        """Connect, then fill the routing table by a lookup of this node's own id; its size."""
        await self.connect(peer_id, maddrs)
        assert self.dht is not None
        await self.dht.routing_table.add_peer(ID.from_base58(peer_id))
        await self.dht.peer_routing.find_closest_peers_network(self.host.get_id().to_bytes())
        return self.dht.get_routing_table_size()

    def routing_table_size(self) -> int:
        return self.dht.get_routing_table_size() if self.dht is not None else 0

    def multiaddrs(self) -> list[str]:
        return [str(m) for m in self.host.get_addrs()]

    def remote_ip(self, peer_id: str) -> str | None:
        for connection in self.host.get_network().get_connections(ID.from_base58(peer_id)):
            address = connection.muxed_conn.get_remote_address()
            if address:
                return address[0]
        return None

    # --- requests -------------------------------------------------------------------------

    def serve(self, protocol: str, handler: RequestHandler) -> None:
        async def answer(stream: Any) -> None:
            requester = stream.muxed_conn.peer_id.to_base58()
            try:
                with trio.move_on_after(SERVE_READ_TIMEOUT_S):
                    request = await read_varint_prefixed_bytes_limited(stream, wire.MAX_STREAM_BYTES)
                    try:
                        reply = wire.encode_reply(await self.thread.call_asyncio(handler(request, requester)))
                    except Exception as e:  # noqa: BLE001 - the requester gets a reason, the node goes on
                        reply = wire.encode_reply(error=f"the handler failed ({type(e).__name__})")
                    await stream.write(encode_varint_prefixed(reply))
            except Exception as e:  # noqa: BLE001 - a peer that breaks its stream costs only that stream
                log.debug("%s from %s: %r", protocol, requester[:16], e)
            finally:
                with trio.move_on_after(1):
                    await stream.close()

        self.host.set_stream_handler(TProtocol(wire.stream_protocol(protocol)), answer)

    async def request(self, peer_id: str, protocol: str, payload: bytes) -> bytes:
        peer = ID.from_base58(peer_id)
        if not self.host.get_network().get_connections(peer) and not self.host.get_peerstore().addrs(peer):
            assert self.dht is not None
            info = await self.dht.find_peer(peer)
            if info is None:
                raise RequestFailed(f"{protocol} to {peer_id[:16]}: no address known", "no address known")
            self.host.get_peerstore().add_addrs(peer, info.addrs, 600)
        try:
            stream = await self.host.new_stream(peer, [TProtocol(wire.stream_protocol(protocol))])
        except StreamFailure as e:
            if isinstance(e.__cause__, MultiselectClientError):
                reason = "the peer does not serve this protocol"
                raise RequestFailed(f"{protocol} to {peer_id[:16]}: {reason}", reason) from None
            raise
        try:
            await stream.write(encode_varint_prefixed(payload))
            answer = wire.decode_reply(await read_varint_prefixed_bytes_limited(stream, wire.MAX_REPLY_BYTES))
        finally:
            with trio.move_on_after(1):
                await stream.close()
        if answer is None:
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: a malformed answer", "a malformed answer")
        payload, error = answer
        if error:
            raise RequestFailed(f"{protocol} to {peer_id[:16]}: {error}", error)
        return payload


def _expired(value: bytes, now: float) -> bool:
    entry = wire.decode_entry(value)
    return entry is None or entry.expiration <= now


async def with_timeout(timeout_s: float, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """`fn(*args)` or trio.TooSlowError after `timeout_s`."""
    with trio.fail_after(timeout_s):
        return await fn(*args)
