"""Per-peer state with a size bound: what a flood of fresh identities may cost this node."""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Iterator, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRUMap(Generic[K, V]):
    """A dict of at most `capacity` entries; adding one more evicts the least recently used.

    `protect(value)` marks entries (e.g. an ignored peer's standing) that are evicted only when
    every other entry is protected too, so that a flood of new identities cannot push out the
    record of a peer this node is ignoring. Not thread-safe: owners lock around it.
    """

    def __init__(self, capacity: int, protect: Callable[[V], bool] | None = None):
        if capacity < 1:
            raise ValueError("capacity >= 1")
        self.capacity = capacity
        self._protect = protect
        self._items: OrderedDict[K, V] = OrderedDict()
        self.evicted = 0

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """The value, without making it recently used (a read that must not shield it)."""
        return self._items.get(key)

    def setdefault(self, key: K, make: Callable[[], V]) -> V:
        value = self.get(key)
        if value is None:
            value = self[key] = make()
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._evict_one(newest=key)

    def _evict_one(self, newest: K) -> None:
        victim = next(iter(self._items))
        if self._protect is not None:
            victim = next((k for k, v in self._items.items() if k != newest and not self._protect(v)), victim)
        del self._items[victim]
        self.evicted += 1

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._items))

    def items(self) -> list[tuple[K, V]]:
        return list(self._items.items())

    def values(self) -> list[V]:
        return list(self._items.values())
