"""Where a node writes and reads each kind of DHT value (peer records, rollout announcements,
summary announcements) in a window: one key per window, everyone's value in it (protocol
version 1), or the window's key spread over shards (version 2 on; swarm/shards.py).

A `KeySpread` is one kind's keys: `write_keys(window)` for this node's own value and
`read_keys(window, reading_window)` for the keys it reads, each with the shard its values must
hash into. `observe` feeds what a read found back, from which a sharded spread estimates the
swarm's size and picks its shard bits (with hysteresis). Reads of a sharded key ask only its
nearest holders (a bounded search); reads of the one key per window walk the whole beam, as
they always have.
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from swarmnode.protocol.versions import ProtocolVersions
from swarmnode.swarm.shards import (
    MAX_SHARD_BITS,
    SHARDS_READ_PER_WINDOW,
    SHRINK_FACTOR,
    TARGET_PER_SHARD,
    TRANSITION_GRACE_WINDOWS,
    belongs,
    estimate_swarm_size,
    levels_to_write,
    next_bits,
    shard_of,
    shards_to_read,
    smoothed_estimate,
)

# Levels above its own a node probes, one every PROBE_EVERY reads in turn: a node left at a
# level nobody writes (a swarm that grew while it was away) finds the swarm's within 16 reads; a
# node that sees nobody (a newcomer) probes on every read (probe_levels). A probe is a whole DHT
# get: one on every read was a third of a small swarm's gets.
PROBE_STEPS = (1, 2, 4, 8)
PROBE_EVERY = 4
# A probed shard is believed only with at least this many peers (the low end of the band a
# shard keeps, SHRINK_FACTOR x TARGET_PER_SHARD): a few stray entries do not move a node.
ADOPT_PEERS = math.ceil(SHRINK_FACTOR * TARGET_PER_SHARD)
# Peers of one shard counted in the estimate at most (4 x the target: 2 x the grow point):
# enough to grow a level a read, while a flood of identities into one shard (up to
# limits.max_values_per_key on each of 5 holders) moves a node one level, not to a level where
# it no longer sees its peers.
COUNTED_PER_SHARD = 4 * TARGET_PER_SHARD
# An estimate this low means the node sees only itself: it scans every level above.
LONELY_ESTIMATE = 1.5

# The first protocol version whose nodes write and read shards; a node of an older version keeps
# one key per window, and the two meet as nodes of versions that do not overlap.
SHARDED_SINCE_VERSION = 2


def uses_shards(versions: ProtocolVersions) -> bool:
    """Whether a node writing in `versions.written` spreads its keys over shards."""
    return versions.written >= SHARDED_SINCE_VERSION


@dataclass(frozen=True)
class ReadKey:
    """A key to read and the shard every value under it must hash into (bits None: any peer)."""

    name: str
    bits: int | None = None
    shard: int = 0

    def holds(self, peer_id: object) -> bool:
        """Whether a value of `peer_id` belongs under this key (a shard's: its id hashes into it)."""
        return self.bits is None or (isinstance(peer_id, str) and belongs(peer_id, self.bits, self.shard))


class KeySpread(abc.ABC):
    """One kind of value's keys: where this node writes its own and which it reads."""

    #: whether a read may ask only a key's nearest holders instead of walking the whole beam
    nearest_holders: bool = False

    @abc.abstractmethod
    def write_keys(self, window: int) -> list[str]:
        """The keys this node stores its own value of `window` under."""

    @abc.abstractmethod
    def read_keys(self, window: int, reading_window: int) -> list[ReadKey]:
        """The keys of `window` this node reads while the swarm's clock is in `reading_window`."""

    def observe(self, peers_per_shard: Mapping[tuple[int | None, int], int], reading_window: int) -> None:
        """What one read found: distinct peers per (bits, shard) read (over the windows read)."""


class OneKeyPerWindow(KeySpread):
    """Protocol version 1: everyone's value under one key per window (`key_of(window)`)."""

    def __init__(self, key_of: Callable[[int], str]):
        self.key_of = key_of

    def write_keys(self, window: int) -> list[str]:
        return [self.key_of(window)]

    def read_keys(self, window: int, reading_window: int) -> list[ReadKey]:
        return [ReadKey(self.key_of(window))]


class ShardedKeys(KeySpread):
    """A window's key spread over 2^bits shards (`key_of(window, bits, shard)`). This node writes
    under its own shard (and the neighbouring level while it or its readers may be crossing);
    it reads its own shard and a few others, one a read, a different set each window."""

    nearest_holders = True

    def __init__(self, key_of: Callable[[int, int, int], str], peer_id: str, *, shards_read: int,
                 counted_per_shard: int = COUNTED_PER_SHARD):
        self.key_of = key_of
        self.peer_id = peer_id
        self.shards_read = shards_read
        self.counted_per_shard = counted_per_shard
        self.bits = 0
        self.estimate: float | None = None  # smoothed swarm (or base) size; None before any read
        self._left: tuple[int, int] | None = None  # (bits left, reading window it was left in)
        self._window = 0  # the newest reading window observed
        self._reads = 0  # reads observed: which level the next probe looks at
        self._reads_in_window = 0  # reads observed in self._window: the previous window's turn

    def write_keys(self, window: int) -> list[str]:
        previous = None
        if self._left is not None and window - self._left[1] <= TRANSITION_GRACE_WINDOWS:
            previous = self._left[0]
        levels = levels_to_write(self.bits, self.estimate or 0.0, previous)
        return [self.key_of(window, bits, shard_of(self.peer_id, bits)) for bits in levels]

    def read_keys(self, window: int, reading_window: int) -> list[ReadKey]:
        """One shard of this node's level a read, in turn through the shards chosen for the
        reading window (shards_to_read: its own first), and in the reading window its own shard at
        each probed level above (probe_levels): where a swarm that outgrew this node writes.
        One shard a read keeps a read's cost what it is on one shard, however many there are;
        the peers seen per window are still those of all the chosen shards.

        The previous window's key of each chosen shard is read once, in the reading window's
        first round of reads: nothing is written there after the boundary, what was written
        before it was read while it was current, and a read's values are kept until they expire."""
        shards = shards_to_read(self.peer_id, reading_window, self.bits, self.shards_read)
        if window < reading_window and self._reads_in(reading_window) >= len(shards):
            return []
        shard = shards[self._reads % len(shards)]
        keys = [ReadKey(self.key_of(window, self.bits, shard), self.bits, shard)]
        if window == reading_window:
            for bits in self.probe_levels():
                own = shard_of(self.peer_id, bits)
                keys.append(ReadKey(self.key_of(window, bits, own), bits, own))
        return keys

    def _reads_in(self, reading_window: int) -> int:
        """Reads observed in `reading_window` so far."""
        return self._reads_in_window if reading_window == self._window else 0

    def probe_levels(self) -> list[int]:
        """Levels above its own a read looks at. While the node sees next to nobody: one a read,
        PROBE_STEPS above in turn, and every level above on every 4th read (a newcomer to a swarm
        already split into shards finds it at once). Otherwise one every PROBE_EVERY reads."""
        lonely = self.estimate is None or self.estimate <= LONELY_ESTIMATE
        if lonely and self._reads % 4 == 0:
            return list(range(self.bits + 1, MAX_SHARD_BITS + 1))
        if lonely:
            turn = self._reads
        elif self._reads % PROBE_EVERY == 0:
            turn = self._reads // PROBE_EVERY
        else:
            return []
        level = min(self.bits + PROBE_STEPS[turn % len(PROBE_STEPS)], MAX_SHARD_BITS)
        return [level] if level > self.bits else []

    def observe(self, peers_per_shard: Mapping[tuple[int | None, int], int], reading_window: int) -> None:
        """N ~ mean peers per shard of its level x 2^bits, smoothed (EWMA); bits move one level
        a read with hysteresis, or jump to a probed level whose shard holds at least
        ADOPT_PEERS peers and says the swarm is larger than the estimate."""
        self._reads += 1
        if reading_window >= self._window:  # a read of an older window, answered late, counts for none
            self._reads_in_window = self._reads_in(reading_window) + 1
            self._window = reading_window
        level = [min(n, self.counted_per_shard) for (bits, _), n in peers_per_shard.items() if bits == self.bits]
        if level:
            self.estimate = smoothed_estimate(self.estimate, estimate_swarm_size(level, self.bits))
        found = [(n * 2**bits, bits) for (bits, _), n in peers_per_shard.items()
                 if bits is not None and bits > self.bits and n >= ADOPT_PEERS]
        if found and max(found)[0] > (self.estimate or 0.0):
            self.estimate, bits = max(found)
        elif level:
            # One level per read: a writer keeps writing the level it left, a neighbour.
            bits = min(max(next_bits(self.bits, self.estimate), self.bits - 1), self.bits + 1)
        else:
            return
        if bits != self.bits:
            self._left = (self.bits, self._window)
            self.bits = bits


@dataclass(frozen=True)
class KeyLayout:
    """The spreads of one node's keys, by the protocol version it writes."""

    sharded: bool
    peer_id: str
    shards_read: int

    @classmethod
    def of(cls, peer_id: str, versions: ProtocolVersions) -> "KeyLayout":
        """The layout a node of `versions` uses: shards from SHARDED_SINCE_VERSION on."""
        return cls(uses_shards(versions), peer_id, SHARDS_READ_PER_WINDOW)

    def spread(self, one_key: Callable[[int], str], shard_key: Callable[[int, int, int], str]) -> KeySpread:
        """`shard_key`'s shards for a sharded node, else `one_key`'s one key per window."""
        if self.sharded:
            return ShardedKeys(shard_key, self.peer_id, shards_read=self.shards_read)
        return OneKeyPerWindow(one_key)


@dataclass(frozen=True)
class SortedReads:
    """Values found by one read of a spread's keys: those under the right shard, how many were
    not (refused), and distinct peers per (bits, shard) read (for `KeySpread.observe`)."""

    values: list
    misplaced: int
    peers_per_shard: dict[tuple[int | None, int], int]


def sort_reads(reads: Sequence[tuple[ReadKey, Sequence]]) -> SortedReads:
    """Keep each found value (with a `subkey`) whose peer hashes into its key's shard; peers per
    shard are counted over every window read (a live peer's newest value is in one of them)."""
    values, misplaced, peers = [], 0, {}
    for key, found in reads:
        seen = peers.setdefault((key.bits, key.shard), set())
        for value in found:
            if key.holds(value.subkey):
                values.append(value)
                seen.add(value.subkey)
            else:
                misplaced += 1
    return SortedReads(values, misplaced, {key: len(s) for key, s in peers.items()})
