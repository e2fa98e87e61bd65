"""Swarm time windows and DHT key names (pure functions)."""
from __future__ import annotations

import math


def window_index(dht_time: float, window_s: float) -> int:
    """window = floor(dht_time / window_s): the swarm's shared clock, decided by nobody."""
    return math.floor(dht_time / window_s)


def peer_records_key(swarm: str, window: int) -> str:
    """DHT key under which nodes publish their PeerRecord (subkey = peer id) in `window`."""
    return f"swarmnode/{swarm}/peers/{window}"


def rollouts_key(swarm: str, window: int) -> str:
    """DHT key under which nodes announce the rollout batches they serve (subkey = peer id)."""
    return f"swarmnode/{swarm}/rollouts/{window}"


def summaries_key(swarm: str, window: int) -> str:
    """DHT key under which nodes announce the gradient summary they serve (subkey = peer id)."""
    return f"swarmnode/{swarm}/summaries/{window}"


def windows_to_read(current: int) -> tuple[int, int]:
    """A node reads the current and the previous window (records straddle a boundary)."""
    return current, current - 1
