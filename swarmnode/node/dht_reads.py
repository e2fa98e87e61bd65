"""Reads of one kind of value's DHT keys (a KeySpread: one key per window, or shards of it), for
peer records and every kind of announcement."""
from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from swarmnode.swarm.key_layout import KeySpread, SortedReads, sort_reads
from swarmnode.swarm.transports.base import Transport
from swarmnode.swarm.windows import window_index, windows_to_read

Announced = TypeVar("Announced")


async def read_spread(transport: Transport, spread: KeySpread, window_s: float) -> tuple[int, SortedReads]:
    """Read `spread`'s keys of the current and previous windows (the shards chosen for the current
    one); the reading window and what was found, sorted by shard."""
    current = window_index(transport.dht_time(), window_s)
    reads = []
    for window in windows_to_read(current):
        for key in spread.read_keys(window, current):
            reads.append((key, await transport.get(key.name, nearest_holders=spread.nearest_holders)))
    return current, sort_reads(reads)


def newest_per_peer(checked: Iterable[Announced], rank: Callable[[Announced], int]) -> list[Announced]:
    """The announcement of highest `rank` of every peer among `checked`."""
    newest: dict[str, Announced] = {}
    for a in checked:
        held = newest.get(a.peer_id)
        if held is None or rank(a) > rank(held):
            newest[a.peer_id] = a
    return list(newest.values())
