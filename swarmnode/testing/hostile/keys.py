"""The DHT keys of a hostile test's swarm. It is small (at most 2 x shards.TARGET_PER_SHARD
nodes), so every node of this release reads and writes the one shard of 0 bits: the window's
whole key under the sharded layout (swarm/key_layout.py), whatever a persona's peer id."""
from __future__ import annotations

from swarmnode.swarm.windows import peer_records_shard_key, rollouts_shard_key, summaries_shard_key


def peer_records_key(swarm: str, window: int) -> str:
    return peer_records_shard_key(swarm, window, 0, 0)


def rollouts_key(swarm: str, window: int) -> str:
    return rollouts_shard_key(swarm, window, 0, 0)


def summaries_key(swarm: str, window: int, base_fingerprint: str) -> str:
    return summaries_shard_key(swarm, window, base_fingerprint, 0, 0)
