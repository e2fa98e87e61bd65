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
