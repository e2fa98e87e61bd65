"""What the libp2p transport knows of DHT entries, and when it goes to the DHT: no I/O, no libp2p
(times are passed in).

Pushes (GossipSub) carry every entry as it is stored; the DHT keeps one version of each for
whoever missed them. So reads answer from the entries heard, asking the DHT only now and then,
and writes go to the DHT only now and then too:

- HeardEntries: entries heard (pushed or read), checked on arrival, newest per (key, subkey),
  bounded; which providers' values a read should fetch, and when a read looks providers up
- due_writes: which stored entries are due for a DHT write
- due_pushes: which stored entries are due for a push
- forget_older: drop the times kept per key once they are old
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterable

from swarmnode.protocol.libp2p_messages import DhtEntry


class HeardEntries:
    """The newest entry heard per (key, subkey): at most `max_keys` keys (the oldest key goes
    first) of `max_per_key` subkeys. A read looks the key's providers up when it has heard no
    entry of it, or `lookup_every_s` after its last lookup, and then fetches the providers it
    has not heard from in `lookup_every_s` (an entry not renewed since may be outdated).

    A key is one window's of a `family` (its shard's topic: the same shard window after
    window). Once a lookup of a family's key found no provider while nothing of the family was
    held, a read of a key of that family of which nothing is heard looks up again only
    `empty_recheck_s` after: a shard nobody writes under (the probed levels above a small
    swarm's, its empty shards) costs one lookup then, not one every window. Anything heard of
    the family ends that at once."""

    def __init__(self, max_keys: int, max_per_key: int, lookup_every_s: float, *,
                 family: Callable[[str], str] = lambda key: key, empty_recheck_s: float = 0.0):
        self.max_keys = max_keys
        self.max_per_key = max_per_key
        self.lookup_every_s = lookup_every_s
        self.family = family
        self.empty_recheck_s = empty_recheck_s
        self._entries: OrderedDict[str, dict[str, tuple[DhtEntry, float]]] = OrderedDict()  # -> (entry, heard at)
        self._looked_up: dict[str, float] = {}  # key -> monotonic time of its last provider lookup
        self._found_empty: dict[str, float] = {}  # family -> when a lookup that found no provider began

    def hear(self, entry: DhtEntry, clock: float) -> bool:
        """Keep `entry` (heard at monotonic `clock`) unless a later one of its key and subkey is
        held or the key is full; True if it is new."""
        self._found_empty.pop(self.family(entry.key), None)
        held = self._entries.get(entry.key)
        if held is None:
            held = self._entries[entry.key] = {}
            while len(self._entries) > self.max_keys:
                self._entries.popitem(last=False)
        old = held.get(entry.subkey)
        if old is None and len(held) >= self.max_per_key:
            return False
        if old is None or entry.expiration > old[0].expiration:
            held[entry.subkey] = (entry, clock)
            return True
        return False

    def unexpired(self, key: str, now: float) -> dict[str, DhtEntry]:
        """subkey -> entry under `key` that expire after `now` (seconds since the epoch)."""
        return {s: e for s, (e, _) in self._entries.get(key, {}).items() if e.expiration > now}

    def lookup_due(self, key: str, now: float, clock: float) -> bool:
        """Whether a read of `key` now looks its providers up (and, if so, notes that it did)."""
        if self.unexpired(key, now):
            if clock - self._looked_up.get(key, -self.lookup_every_s) < self.lookup_every_s:
                return False
        elif clock - self._found_empty.get(self.family(key), -self.empty_recheck_s) < self.empty_recheck_s:
            return False
        self._looked_up[key] = clock
        forget_older(self._looked_up, clock - 10 * self.lookup_every_s)
        return True

    def looked_up(self, key: str, providers: int, began: float, now: float) -> None:
        """What the lookup of `key` that began at monotonic `began` found: `providers` of it. The
        family counts as empty only if nothing unexpired of it is held either: a shard written
        under whose next window's key was looked up before its writers stored there is live."""
        family = self.family(key)
        held = any(e.expiration > now for k, entries in self._entries.items() if self.family(k) == family
                   for e, _ in entries.values())
        if providers == 0 and not held:
            self._found_empty[family] = began
        else:
            self._found_empty.pop(family, None)
        forget_older(self._found_empty, began - self.empty_recheck_s)

    def to_fetch(self, key: str, providers: Iterable[str], now: float, clock: float) -> list[str]:
        """The providers of `key` whose entry a lookup should read: not heard, expired, or not
        renewed within `lookup_every_s`."""
        held = self._entries.get(key, {})
        out = []
        for subkey in dict.fromkeys(providers):
            entry = held.get(subkey)
            if entry is None or entry[0].expiration <= now or clock - entry[1] >= self.lookup_every_s:
                out.append(subkey)
        return out


def forget_older(table: dict, cutoff: float, stamp: Callable[[Any], float] = lambda value: value) -> None:
    """Delete the items of `table` whose time (`stamp(value)`) is before `cutoff`."""
    for key in [k for k, value in table.items() if stamp(value) < cutoff]:
        del table[key]


def due_writes(unwritten: dict, written_at: dict, clock: float, every_s: float) -> list:
    """The (key, subkey) -> value items of `unwritten` due for a DHT write at monotonic `clock`:
    never written, or last written at least `every_s` ago. Each taken is removed from
    `unwritten` and stamped in `written_at`; a later version waits for the next turn."""
    due = [k for k in unwritten if clock - written_at.get(k, -every_s) >= every_s]
    for k in due:
        written_at[k] = clock
    return [(k, unwritten.pop(k)) for k in due]


def due_pushes(unpushed: dict, pushed: dict, now: float, every_s: float) -> list:
    """The (key, subkey) -> DhtEntry items of `unpushed` due for a push at `now` (seconds since
    the epoch): never pushed, or last pushed `every_s` ago, or sooner once a third of the last
    pushed version's life has passed (receivers must get the next before it lapses: a record
    living 8 s is pushed every ~2.7 s, one living 60 s every `every_s`). Each taken is removed
    from `unpushed` and noted in `pushed` as (now, its expiration)."""
    due = []
    for k, entry in unpushed.items():
        last = pushed.get(k)
        if last is None or now - last[0] >= min(every_s, (last[1] - last[0]) / 3):
            due.append(k)
    for k in due:
        pushed[k] = (now, unpushed[k].expiration)
    return [(k, unpushed.pop(k)) for k in due]
