"""AdvertisedAddrsHost: py-libp2p's BasicHost, its advertised addresses recomputed once a second.

py-libp2p puts this node's signed peer record in every pubsub and Kademlia message it sends, and
to check that its cached record is still current it asks the host for its addresses each time:
the listeners' addresses rebuilt as multiaddrs, observed ones merged, the /p2p part cut and put
back. At 8 nodes that was ~5% of an idle host's time (py-spy). Addresses change when a listener
starts or an observed address is confirmed; a record at most ADDRS_FRESH_FOR_S behind them is
still one the peers can dial. An empty answer (nothing listening yet) is never kept.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import multiaddr
from libp2p import new_swarm
from libp2p.crypto.keys import KeyPair
from libp2p.custom_types import TSecurityOptions
from libp2p.host.basic_host import BasicHost
from libp2p.rcmgr import new_resource_manager

ADDRS_FRESH_FOR_S = 1.0  # how long one computation of the advertised addresses is used


class AdvertisedAddrsHost(BasicHost):
    """BasicHost whose get_addrs() is computed at most once per ADDRS_FRESH_FOR_S of `clock`."""

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


def new_advertised_addrs_host(key_pair: KeyPair, sec_opt: TSecurityOptions, listen_addrs: Sequence[multiaddr.Multiaddr],
                              announce_addrs: Sequence[multiaddr.Multiaddr] | None) -> AdvertisedAddrsHost:
    """What libp2p.new_host builds for these arguments (TCP, yamux, its resource manager), as an
    AdvertisedAddrsHost."""
    resource_manager = new_resource_manager()
    swarm = new_swarm(key_pair=key_pair, sec_opt=sec_opt, muxer_preference="YAMUX", listen_addrs=listen_addrs,
                      resource_manager=resource_manager)
    return AdvertisedAddrsHost(network=swarm, resource_manager=resource_manager, announce_addrs=announce_addrs)
