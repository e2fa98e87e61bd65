"""Swarm time windows and DHT key names (pure functions)."""
from __future__ import annotations

import math


def window_index(dht_time: float, window_s: float) -> int:
    """window = floor(dht_time / window_s): the swarm's shared clock, decided by nobody."""
    return math.floor(dht_time / window_s)


def peer_records_key(swarm: str, window: int) -> str:
    """DHT key under which nodes publish their PeerRecord (subkey = peer id) in `window`."""
    return f"swarmnode/{swarm}/peers/{window}"


def rollouts_prefix(swarm: str) -> str:
    """What every window's rollouts_key starts with."""
    return f"swarmnode/{swarm}/rollouts/"


def rollouts_key(swarm: str, window: int) -> str:
    """DHT key under which nodes announce the rollout batches they serve (subkey = peer id)."""
    return f"{rollouts_prefix(swarm)}{window}"


def summaries_prefix(swarm: str) -> str:
    """What every window's summaries_key starts with."""
    return f"swarmnode/{swarm}/summaries/"


def summaries_key(swarm: str, window: int) -> str:
    """DHT key under which nodes announce the gradient summary they serve (subkey = peer id)."""
    return f"{summaries_prefix(swarm)}{window}"


def windows_to_read(current: int) -> tuple[int, int]:
    """A node reads the current and the previous window (records straddle a boundary)."""
    return current, current - 1


def sharded_prefix(swarm: str) -> str:
    """What every sharded key starts with: apart from today's keys, so a node of today's release
    never mistakes a shard's dictionary for a window's whole one."""
    return f"swarmnode/{swarm}/sharded/"


def peer_records_shard_key(swarm: str, window: int, bits: int, shard: int) -> str:
    """DHT key of one shard of a window's peer records (subkey = peer id, which must hash into
    `shard` at `bits`: swarm/shards.py)."""
    return f"{sharded_prefix(swarm)}peers/{window}/{bits}/{shard}"


def rollouts_shard_key(swarm: str, window: int, bits: int, shard: int) -> str:
    """DHT key of one shard of a window's rollout announcements (subkey = peer id)."""
    return f"{sharded_prefix(swarm)}rollouts/{window}/{bits}/{shard}"


def summaries_shard_key(swarm: str, window: int, base_fingerprint: str, bits: int, shard: int) -> str:
    """DHT key of one shard of a window's summary announcements of one base (subkey = peer id):
    a reader looks up only its own base, so every candidate is same-base; `bits` is sized from
    the base's own count, not the swarm's."""
    return f"{sharded_prefix(swarm)}summaries/{base_fingerprint}/{window}/{bits}/{shard}"
