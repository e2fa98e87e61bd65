"""What summary gossip (node/gossip/summaries.py) may use of the outer loop, and nothing else.

`OuterLoopAccess` wraps the trainer thread's `OuterLoop` (None until it is built): received
summaries go into its inbox (thread-safe), and gossip reads the norm bound's inputs, the
shapes, the outer-step clock, the compression settings and the trust book. Reads are as
thread-safe as the outer loop's own parts (the inbox locks; the rest are single reads).
"""
from __future__ import annotations

from typing import Any, Callable

from swarmnode.summaries import CompressionConfig, OuterLoop, Received, norm_bound


class OuterLoopAccess:
    """The outer loop as summary gossip sees it; `outer()` is None until the trainer thread built it."""

    def __init__(self, outer: Callable[[], OuterLoop | None]):
        self._outer = outer

    @property
    def built(self) -> bool:
        return self._outer() is not None

    def _built(self) -> OuterLoop:
        outer = self._outer()
        assert outer is not None, "the outer loop is not built yet"
        return outer

    def max_norm(self, ratio: float) -> float | None:
        """The norm bound of a peer's summary (None: not built, or too few own summaries to judge by)."""
        outer = self._outer()
        return None if outer is None else norm_bound(list(outer.own_norms), ratio)

    def put(self, received: Received) -> None:
        self._built().inbox.put(received)

    def waiting(self) -> int:
        """Summaries in the inbox, waiting for the next outer step."""
        return len(self._built().inbox)

    def stale_dropped(self) -> int:
        outer = self._outer()
        return outer.inbox.stale_dropped if outer is not None else 0

    def clock(self) -> int:
        """The outer step this node is at (received summaries are stamped with it)."""
        return self._built().clock()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor's shape (empty until built)."""
        outer = self._outer()
        return outer.shapes if outer is not None else {}

    def compression(self) -> CompressionConfig:
        """The settings this node's summaries are made with."""
        return self._built().config.compression

    def robust(self) -> bool:
        """Whether trust is acted on (False: the plain mean, or not built)."""
        outer = self._outer()
        return outer is not None and outer.config.robust

    def merges(self, peer: str) -> bool:
        """Whether `peer`'s summary would be merged now."""
        return self._built().trust.merges(peer)

    def saved_trust(self, peers: list[str]) -> list[tuple[str, float, int]]:
        """(peer, score, times judged) of `peers`, for their standings."""
        return self._built().trust.saved(peers)

    def agreement_scale(self) -> float | None:
        outer = self._outer()
        return outer.trust.scale if outer is not None else None

    def trust_snapshot(self) -> dict[str, Any]:
        outer = self._outer()
        return outer.trust.snapshot() if outer is not None else {}
