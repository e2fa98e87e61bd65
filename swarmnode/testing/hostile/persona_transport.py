"""The transport a hostile persona runs on (hivemind or libp2p, like the victim's
network.transport), and its direct DHT store into one peer's node.

hivemind and py-libp2p cannot be imported in one process (both register the protobuf symbol
crypto.pb.KeyType): each branch below imports its own library, lazily, and a hostile peer
process only ever takes one branch (its --transport).

What a direct store answers differs between the two DHTs:

- hivemind's store RPC carries many (key, subkey, value, expiration) items and answers with a
  verdict per item;
- libp2p's Kademlia PUT_VALUE carries one record: the victim echoes it when kept and resets the
  stream when it refuses it. So here each item is its own PUT_VALUE (a few in flight), and an
  item's verdict is whether its echo came back: a refusal and a stream lost on the way read the
  same (False). None (no answer at all) is for a victim this persona is not connected to.

And what the victim then does with a value stored into it differs too. A hivemind node's reads
(DHT get) find the values in its own storage, so a direct store reaches its peer table and its
fetch planning. A libp2p node's reads take what peers push on the swarm's GossipSub topic and
what the key's providers hold: a value PUT into its Kademlia store is judged (its record policy
counts the rejection) but read back only if its subkey's peer provides the key, which a
throw-away identity never does. So on libp2p the floods also push each value on the topic
(`push`), the way values reach a libp2p node's reads; on hivemind `push` does nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmnode.swarm.transports.base import Transport

KINDS = ("hivemind", "libp2p")
# libp2p: PUT_VALUE streams one direct store keeps open at once, and how long one may take.
LIBP2P_STORES_IN_FLIGHT = 8
LIBP2P_STORE_TIMEOUT_S = 10.0
LIBP2P_MESH_WAIT_S = 5.0  # how long a push waits for the victim to join this persona's topic mesh

Item = tuple[str, str, bytes, float]  # (key, subkey, value, expiration)


def open_persona_transport(kind: str, key_path: Path, swarm: str) -> Transport:
    """A transport of `kind` (not started) on 127.0.0.1, any free port, that refuses nothing it is
    asked to store (the persona's own crafted values included): no record policy."""
    host_maddrs = ["/ip4/127.0.0.1/tcp/0"]
    if kind == "hivemind":
        from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

        return HivemindTransport(identity_path=key_path, host_maddrs=host_maddrs, announce_maddrs=[], client_mode=False,
                                 startup_timeout_s=30.0, use_relay=False, auto_nat=False, wait_timeout_s=2.0, policy=None)
    if kind == "libp2p":
        from swarmnode.swarm.transports.libp2p.transport import LibP2PTransport

        return LibP2PTransport(identity_path=key_path, host_maddrs=host_maddrs, announce_maddrs=[], client_mode=False,
                               startup_timeout_s=30.0, policy=None, swarm=swarm)
    raise ValueError(f"unknown transport kind {kind!r}; known: {', '.join(KINDS)}")


async def store_direct(kind: str, transport: Transport, peer_id: str, items: list[Item]) -> list[bool] | None:
    """Store `items` straight into `peer_id`'s DHT node; its verdict per item (None: no answer)."""
    if kind == "hivemind":
        return await _hivemind_store_direct(transport, peer_id, items)
    if kind == "libp2p":
        return await _libp2p_store_direct(transport, peer_id, items)
    raise ValueError(f"unknown transport kind {kind!r}; known: {', '.join(KINDS)}")


async def _hivemind_store_direct(transport: Any, peer_id: str, items: list[Item]) -> list[bool] | None:
    """One store RPC carrying every item."""
    from hivemind.dht.routing import DHTID
    from hivemind.p2p import PeerID

    protocol = transport._node.protocol  # noqa: SLF001 - the attacker speaks the DHT RPC directly
    return await protocol.call_store(
        PeerID.from_base58(peer_id),
        keys=[DHTID.generate(source=k) for k, _, _, _ in items],
        values=[protocol.serializer.dumps(v) for _, _, v, _ in items],
        expiration_time=[e for _, _, _, e in items],
        subkeys=[s for _, s, _, _ in items],
    )


async def _libp2p_store_direct(transport: Any, peer_id: str, items: list[Item]) -> list[bool] | None:
    """One PUT_VALUE per item (a DhtEntry under "/<key>/<subkey>"), run on the transport's trio thread."""
    import trio
    from libp2p.peer.id import ID
    from libp2p.records.record import make_signed_put_record

    from swarmnode.protocol import libp2p_messages

    node = transport._node  # noqa: SLF001 - the attacker speaks Kademlia directly

    async def put_all() -> list[bool] | None:
        peer = ID.from_base58(peer_id)
        if not node.host.get_network().get_connections(peer):
            return None
        verdicts = [False] * len(items)
        limiter = trio.CapacityLimiter(LIBP2P_STORES_IN_FLIGHT)

        async def put(index: int, key: str, subkey: str, value: bytes, expiration: float) -> None:
            data = libp2p_messages.encode_entry(libp2p_messages.DhtEntry(key, subkey, value, expiration))
            key_bytes = libp2p_messages.dht_key(key, subkey).encode("utf-8")
            # The record is passed in: without it, _store_at_peer would send whatever this node
            # holds itself under that key (e.g. the persona's own announcement) instead.
            record = make_signed_put_record(key_bytes, data, node.host.get_private_key())
            async with limiter:
                with trio.move_on_after(LIBP2P_STORE_TIMEOUT_S):
                    verdicts[index] = await node.dht.value_store._store_at_peer(peer, key_bytes, data, record=record)

        async with trio.open_nursery() as nursery:
            for index, item in enumerate(items):
                nursery.start_soon(put, index, *item)
        return verdicts

    return await transport._thread.call(put_all)  # noqa: SLF001


async def push(kind: str, transport: Transport, peer_id: str, items: list[Item], mesh_wait_s: float) -> int | None:
    """libp2p: publish each item's DhtEntry on the swarm's GossipSub topic (once `peer_id` is in
    this persona's mesh, or after `mesh_wait_s`); how many were published (py-libp2p drops what
    its outbound queue to a peer cannot hold, so a fast flood delivers fewer). hivemind: None (a
    direct store already reaches the victim's reads)."""
    if kind == "hivemind":
        return None
    if kind != "libp2p":
        raise ValueError(f"unknown transport kind {kind!r}; known: {', '.join(KINDS)}")
    import trio

    from swarmnode.protocol import libp2p_messages

    node = transport._node  # noqa: SLF001 - the attacker publishes what its own store would refuse

    async def publish_all() -> int:
        router = node.pubsub.router
        with trio.move_on_after(mesh_wait_s):
            while not any(p.to_base58() == peer_id for p in router.mesh.get(node.topic, ())):
                await trio.sleep(0.1)
        for key, subkey, value, expiration in items:
            await node.pubsub.publish(node.topic, libp2p_messages.encode_entry(libp2p_messages.DhtEntry(key, subkey, value, expiration)))
        return len(items)

    return await transport._thread.call(publish_all)  # noqa: SLF001
