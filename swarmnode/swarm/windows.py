"""Swarm time windows and DHT key names: one key per window, or its shards (pure functions)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from swarmnode.swarm.shards import MAX_SHARD_BITS, shard_of


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


@dataclass(frozen=True)
class ShardKeyName:
    """What a sharded key's name says: its kind ("peers", "rollouts" or "summaries"), window,
    shard bits and shard, and the base fingerprint of a summaries key ("" otherwise)."""

    kind: str
    window: int
    bits: int
    shard: int
    base_fingerprint: str = ""


def _canonical_int(text: str) -> bool:
    """Whether `text` is an integer as this node writes one (ASCII digits, no sign but a leading
    "-", no leading zeros): any other spelling of a number is another key, refused."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit() and (digits == "0" or not digits.startswith("0")) and text != "-0"


def parse_shard_key(swarm: str, key: str) -> ShardKeyName | None:
    """The parts of a sharded key name of `swarm`, or None when `key` is not one. Bits and shard
    are not range-checked here (swarm/shards.py's `belongs` does that)."""
    prefix = sharded_prefix(swarm)
    if not key.startswith(prefix):
        return None
    parts = key[len(prefix):].split("/")
    base = ""
    if len(parts) == 5 and parts[0] == "summaries":
        base = parts.pop(1)
    if len(parts) != 4 or parts[0] not in ("peers", "rollouts", "summaries") or not base and parts[0] == "summaries":
        return None
    if not all(_canonical_int(p) for p in parts[1:]):
        return None
    window, bits, shard = (int(p) for p in parts[1:])
    return ShardKeyName(parts[0], window, bits, shard, base)


def key_window(swarm: str, key: str, *, sharded: bool) -> int | None:
    """The window of a key `swarm` uses (one key per window; with `sharded`, also a shard's key
    with bits and shard in range), or None when it is none of them."""
    parsed = parse_shard_key(swarm, key) if sharded else None
    if parsed is not None:
        return parsed.window if 0 <= parsed.bits <= MAX_SHARD_BITS and 0 <= parsed.shard < 2**parsed.bits else None
    for prefix in (f"swarmnode/{swarm}/peers/", rollouts_prefix(swarm), summaries_prefix(swarm)):
        if key.startswith(prefix) and _canonical_int(key[len(prefix):]):
            return int(key[len(prefix):])
    return None


def shard_keys_of(swarm: str, kind: str, window: int, peer_id: str, base_fingerprint: str = "") -> list[str]:
    """Every key a value of `peer_id` of `kind` ("peers", "rollouts" or "summaries") may sit
    under in `window`: its peer's shard at each bits level 0..MAX_SHARD_BITS. A DHT that sees
    only a key's hash names the key of a stored value by matching these."""
    def name(bits: int) -> str:
        shard = shard_of(peer_id, bits)
        if kind == "summaries":
            return summaries_shard_key(swarm, window, base_fingerprint, bits, shard)
        return (peer_records_shard_key if kind == "peers" else rollouts_shard_key)(swarm, window, bits, shard)

    return [name(bits) for bits in range(MAX_SHARD_BITS + 1)]


def key_kind(swarm: str, key: str) -> str:
    """"rollouts", "summaries" or "peers": what one of the swarm's keys holds, one per window or a
    shard's (anything else reads as "peers": the caller has checked that the key is known)."""
    shard = parse_shard_key(swarm, key)
    if shard is not None:
        return shard.kind
    if key.startswith(rollouts_prefix(swarm)):
        return "rollouts"
    return "summaries" if key.startswith(summaries_prefix(swarm)) else "peers"
