"""Announcements in the DHT, whatever the payload: this node's own (Announcer) and every other
peer's newest (node/dht_reads.py). An announcement is small and signed, stored under
the current window's keys (swarm/key_layout.py) with the announcer's peer id as subkey; the
payload itself travels over direct requests."""
from __future__ import annotations

import logging
from typing import Callable

from swarmnode.identity import NodeIdentity
from swarmnode.swarm.key_layout import KeySpread
from swarmnode.swarm.transports.base import Transport
from swarmnode.swarm.windows import window_index


class Announcer:
    """Stores this node's announcement of one payload kind under its spread's write keys."""

    def __init__(self, transport: Transport, identity: NodeIdentity, spread: KeySpread, window_s: float,
                 *, what: str, logger: logging.Logger):
        self.transport = transport
        self.identity = identity
        self.spread = spread
        self.window_s = window_s
        self._what = what
        self._log = logger

    async def announce(self, build: Callable[[int, float], bytes], ttl_s: float) -> bool:
        """Store `build(window, now)` for `ttl_s`; False (and a warning) when the store failed:
        the caller tries again at its next interval."""
        now = self.transport.dht_time()
        window = window_index(now, self.window_s)
        value = build(window, now)
        try:
            for key in self.spread.write_keys(window):
                await self.transport.store(key, self.identity.peer_id, value, now + ttl_s)
            return True
        except Exception as e:  # noqa: BLE001 - retried next interval
            self._log.warning("announcing %s failed (%s)", self._what, e)
            return False
