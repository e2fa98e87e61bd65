"""LeanHost: py-libp2p's BasicHost with two of its per-message costs cut.

- **Advertised addresses, once a second.** py-libp2p puts this node's signed peer record in every
  pubsub and Kademlia message it sends, and to check that its cached record is still current it
  asks the host for its addresses each time: the listeners' addresses rebuilt as multiaddrs,
  observed ones merged, the /p2p part cut and put back. At 8 nodes that was ~5% of an idle
  host's time (py-spy). Addresses change when a listener starts or an observed address is
  confirmed; a record at most ADDRS_FRESH_FOR_S behind them is still one the peers can dial. An
  empty answer (nothing listening yet) is never kept.
- **Streams read in chunks** (BufferedReads). py-libp2p's protocols read small pieces:
  multistream-select's lines and Kademlia's messages a varint byte at a time, then the body.
  Each read of a yamux stream takes its locks, formats its debug lines, and (py-libp2p 0.8.1)
  sends the peer a WINDOW_UPDATE frame where go-yamux waits until half the window is used:
  sending window updates was ~5% of an idle host's time at 8 nodes. A stream a peer opens is
  read through BufferedReads from its first byte, so multistream's negotiation and then the
  protocol's handler read from one buffer, one stream read per arrival. A stream this host
  opens is read so once BasicHost.new_stream has negotiated it (that negotiation's reads stay
  as they are: py-libp2p does it inside new_stream, and it builds yamux itself whatever muxer
  is configured).
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import multiaddr
from libp2p import new_swarm
from libp2p.abc import INetStream
from libp2p.crypto.keys import KeyPair
from libp2p.custom_types import TProtocol, TSecurityOptions
from libp2p.host.basic_host import BasicHost
from libp2p.peer.id import ID
from libp2p.rcmgr import new_resource_manager

from swarmnode.swarm.transports.libp2p.buffered_reads import BufferedReads

ADDRS_FRESH_FOR_S = 1.0  # how long one computation of the advertised addresses is used


class LeanHost(BasicHost):
    """BasicHost whose get_addrs() is computed at most once per ADDRS_FRESH_FOR_S of `clock`, and
    whose streams are read through BufferedReads."""

    clock = staticmethod(time.monotonic)

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - BasicHost's own
        self._addrs: list[multiaddr.Multiaddr] = []  # set first: BasicHost's constructor asks for them
        self._addrs_until = 0.0
        super().__init__(*args, **kwargs)

    def get_addrs(self) -> list[multiaddr.Multiaddr]:
        now = self.clock()
        if now >= self._addrs_until or not self._addrs:
            self._addrs = super().get_addrs()
            self._addrs_until = now + ADDRS_FRESH_FOR_S
        return list(self._addrs)

    async def new_stream(self, peer_id: ID, protocol_ids: Sequence[TProtocol]) -> INetStream:
        # Negotiated inside BasicHost.new_stream; what the caller reads after (answers) is buffered.
        return BufferedReads(await super().new_stream(peer_id, protocol_ids))

    async def _swarm_stream_handler(self, net_stream: INetStream) -> None:
        # BasicHost registers this method with its network for every stream a peer opens; it
        # negotiates the protocol on the stream and hands the same stream to the handler.
        await super()._swarm_stream_handler(BufferedReads(net_stream))


def new_lean_host(key_pair: KeyPair, sec_opt: TSecurityOptions, listen_addrs: Sequence[multiaddr.Multiaddr],
                  announce_addrs: Sequence[multiaddr.Multiaddr] | None) -> LeanHost:
    """What libp2p.new_host builds for these arguments (TCP, yamux, its resource manager), as a
    LeanHost."""
    resource_manager = new_resource_manager()
    swarm = new_swarm(key_pair=key_pair, sec_opt=sec_opt, muxer_preference="YAMUX", listen_addrs=listen_addrs,
                      resource_manager=resource_manager)
    return LeanHost(network=swarm, resource_manager=resource_manager, announce_addrs=announce_addrs)
