"""Announcements in the DHT, whatever the payload: this node's own (Announcer) and every other
peer's newest (read_newest_per_peer). An announcement is small and signed, stored under the
current window's key with the announcer's peer id as subkey; the payload itself travels over
direct requests."""
from __future__ import annotations

import logging
from typing import Callable, Iterable, TypeVar

from swarmnode.identity import NodeIdentity
from swarmnode.swarm.transports.base import Transport
from swarmnode.swarm.windows import window_index, windows_to_read

Announced = TypeVar("Announced")


class Announcer:
    """Stores this node's announcement of one payload kind under `key_of(window)`."""

    def __init__(self, transport: Transport, identity: NodeIdentity, key_of: Callable[[int], str], window_s: float,
                 *, what: str, logger: logging.Logger):
        self.transport = transport
        self.identity = identity
        self.key_of = key_of
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
            await self.transport.store(self.key_of(window), self.identity.peer_id, value, now + ttl_s)
            return True
        except Exception as e:  # noqa: BLE001 - retried next interval
            self._log.warning("announcing %s failed (%s)", self._what, e)
            return False


async def read_newest_per_peer(transport: Transport, key_of: Callable[[int], str], window_s: float,
                               check: Callable[[list, float], Iterable[Announced]],
                               rank: Callable[[Announced], int]) -> list[Announced]:
    """The valid announcement of highest `rank` of every other peer under the current and
    previous windows' keys (`key_of(window)`), as `check` (RecordIntake) passes them."""
    newest: dict[str, Announced] = {}
    for window in windows_to_read(window_index(transport.dht_time(), window_s)):
        values = await transport.get(key_of(window))
        for a in check(values, transport.dht_time()):
            held = newest.get(a.peer_id)
            if held is None or rank(a) > rank(held):
                newest[a.peer_id] = a
    return list(newest.values())
