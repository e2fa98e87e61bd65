"""Shards of the swarm's DHT keys: which shard a peer's records live in, how many shards there
are, which shards a node reads, and which peers a fetch round asks (pure functions, no I/O).

A window's records and announcements are spread over S = 2^bits shard keys (swarm/windows.py's
`*_shard_key`); a peer writes only under the shard its id hashes into, so no key is read by
everyone and no dictionary grows with the swarm. `bits` comes from an estimate of the swarm's
size N, with hysteresis, and is 0 (one shard) while the swarm is small. swarm/key_layout.py
turns them into the keys a node writes and reads; scripts/bench/scale_sim.py sizes them
(docs/experiments/scale.md).
"""
from __future__ import annotations

import hashlib
import math
import random
from typing import Hashable, Mapping, Sequence, TypeVar

Peer = TypeVar("Peer", bound=Hashable)

# Entries a shard's dictionary should hold. A get returns a key's whole dictionary, from up to 5
# holders, and a node's DHT bytes and entries parsed are about proportional to it; peer records
# are <= 8 KiB (codec.MAX_BODY_BYTES) and ~1 KiB typically, and hivemind hangs near 60 KiB
# values: at the grow point (GROW_FACTOR x 8 = 16 entries) a typical dictionary is ~17 KiB, and
# a reader still sees 4-16 peers per shard, 16-64 per window (a step needs ~4 announcing peers).
# 8 rather than 12: a third less per read once the swarm splits, for the same read rate
# (docs/experiments/scale.md: the simulator with --target 6, 8 and 12).
TARGET_PER_SHARD = 8
# Hysteresis: grow when the mean shard holds over 2x the target, shrink under 0.5x. The band
# spans a factor of 4 (2 bits), so one step either way lands inside it: no flapping.
GROW_FACTOR = 2.0
SHRINK_FACTOR = 0.5
# 2^16 shards hold ~500k peers at the target; more bits would only make keys longer.
MAX_SHARD_BITS = 16
# A writer also publishes under the next level when its estimate is within this factor of a
# threshold: readers whose estimate is that much further already moved (the smoothed estimate
# from reads of one shard of ~8 entries has a spread of ~12%: 1.25 covers two of those).
TRANSITION_MARGIN = 1.25
# Windows during which a writer keeps publishing under the level it just left, for readers that
# have not moved yet (the EWMA below forgets an old estimate in ~1/alpha = 5 windows).
TRANSITION_GRACE_WINDOWS = 5
# Weight of a read's size estimate in the running one: a read sees one shard (~1/sqrt(8) = 35%
# sampling noise at the target); ~5 reads of memory (alpha / (2 - alpha) of the variance) bring
# that to ~12%, and the shards read change each window.
ESTIMATE_ALPHA = 0.2
# Shards a node reads per window and key kind, one a read in turn: ~4 x TARGET_PER_SHARD = 32
# peers seen per window, for the cost of reading one shard at a time.
SHARDS_READ_PER_WINDOW = 4
# A peer that has delivered nothing yet is weighted as if it had delivered this many usable
# groups: newcomers get asked, and a peer that delivers 10x as much is asked ~5x as often.
DELIVERY_PRIOR = 2.0
# A fetch round asks this many peers at first and at most this many (limits.max_concurrent_fetches).
MIN_FETCH_PEERS = 2
MAX_FETCH_PEERS = 8


def _hash_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")


def shard_of(peer_id: str, bits: int) -> int:
    """shard = sha256(peer_id as UTF-8) >> (256 - bits): the top `bits` bits; bits 0 -> 0."""
    if not 0 <= bits <= MAX_SHARD_BITS:
        raise ValueError(f"bits must be in 0..{MAX_SHARD_BITS}, got {bits}")
    return _hash_int(peer_id) >> (256 - bits) if bits else 0


def belongs(peer_id: str, bits: int, shard: int) -> bool:
    """A record under a shard's key must hash into it: shard_of(peer_id, bits) == shard."""
    return 0 <= bits <= MAX_SHARD_BITS and shard_of(peer_id, bits) == shard


def next_bits(current_bits: int, estimated_n: float, *, target: int = TARGET_PER_SHARD,
              max_bits: int = MAX_SHARD_BITS) -> int:
    """Shard bits for an estimated swarm size, with hysteresis. With mean m = N / 2^bits:
    while m > GROW_FACTOR x target, bits + 1; while m < SHRINK_FACTOR x target, bits - 1;
    clamped to 0..max_bits. A swarm of at most 2 x target nodes stays on one shard (bits 0)."""
    bits = min(max(current_bits, 0), max_bits)
    while bits < max_bits and estimated_n / 2**bits > GROW_FACTOR * target:
        bits += 1
    while bits > 0 and estimated_n / 2**bits < SHRINK_FACTOR * target:
        bits -= 1
    return bits


def levels_to_write(bits: int, estimated_n: float, previous_bits: int | None = None, *,
                    target: int = TARGET_PER_SHARD, max_bits: int = MAX_SHARD_BITS) -> tuple[int, ...]:
    """The bits levels a writer publishes under, ascending: its own; `previous_bits`, which the
    caller passes for TRANSITION_GRACE_WINDOWS after a change (readers that have not moved yet);
    bits + 1 when m = N / 2^bits > GROW_FACTOR x target / TRANSITION_MARGIN and bits - 1 when
    m < SHRINK_FACTOR x target x TRANSITION_MARGIN (readers whose estimate already crossed)."""
    levels = {bits}
    if previous_bits is not None and abs(previous_bits - bits) == 1:
        levels.add(previous_bits)
    mean = estimated_n / 2**bits
    if bits < max_bits and mean > GROW_FACTOR * target / TRANSITION_MARGIN:
        levels.add(bits + 1)
    if bits > 0 and mean < SHRINK_FACTOR * target * TRANSITION_MARGIN:
        levels.add(bits - 1)
    return tuple(sorted(levels))


def estimate_swarm_size(entries_seen_per_shard: Sequence[int], bits: int) -> float:
    """N ~ mean(entries seen per shard read) x 2^bits; 0.0 when no shard was read."""
    if not entries_seen_per_shard:
        return 0.0
    return sum(entries_seen_per_shard) / len(entries_seen_per_shard) * 2**bits


def smoothed_estimate(previous: float | None, observed: float, alpha: float = ESTIMATE_ALPHA) -> float:
    """EWMA: previous + alpha x (observed - previous); the first observation is taken as is."""
    return observed if previous is None else previous + alpha * (observed - previous)


def shards_to_read(peer_id: str, window: int, bits: int, count: int = SHARDS_READ_PER_WINDOW) -> tuple[int, ...]:
    """This node's own shard first, then count - 1 other distinct shards drawn from
    sha256(f"{peer_id}/{window}/{i}") >> (256 - bits) for i = 0, 1, ... (duplicates skipped):
    a different set each window, the same for the same (peer, window). All 2^bits shards, own
    first then ascending, when count >= 2^bits."""
    own, total = shard_of(peer_id, bits), 2**bits
    if count >= total:
        return (own,) + tuple(s for s in range(total) if s != own)
    chosen, i = [own], 0
    while len(chosen) < max(count, 1):
        shard = _hash_int(f"{peer_id}/{window}/{i}") >> (256 - bits)
        if shard not in chosen:
            chosen.append(shard)
        i += 1
    return tuple(chosen)


def pick_fetch_peers(candidates: Sequence[Peer], delivered: Mapping[Peer, float], count: int,
                     rng: random.Random) -> list[Peer]:
    """Up to `count` distinct candidates, drawn without replacement with weight
    w = max(delivered, 0) + DELIVERY_PRIOR (Efraimidis-Spirakis: the `count` largest u^(1/w),
    u uniform in (0, 1]), best key first."""
    keyed = []
    for peer in candidates:
        weight = max(delivered.get(peer, 0.0), 0.0) + DELIVERY_PRIOR
        u = 1.0 - rng.random()  # in (0, 1]: log is finite
        keyed.append((math.log(u) / weight, peer))
    keyed.sort(key=lambda item: item[0], reverse=True)
    return [peer for _, peer in keyed[:max(count, 0)]]


def fetch_round_size(current: int, pool_short: bool, *, minimum: int = MIN_FETCH_PEERS,
                     maximum: int = MAX_FETCH_PEERS) -> int:
    """Peers the next fetch round asks: 2 x current while the pool stays short (capped at
    `maximum`), else current // 2 (floored at `minimum`): it grows only while still short."""
    size = min(current * 2, maximum) if pool_short else current // 2
    return min(max(size, minimum), maximum)
