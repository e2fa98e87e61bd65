"""Fetching from peers, whatever the payload: a task per peer, at most
limits.max_concurrent_fetches fetches at once, back-off of peers whose fetches fail or that
answer nothing, and a per-peer rate of what is taken from them.

Each peer is fetched by a task of its own, and a peer whose last fetch is still running (a held
long-poll, or a stalled answer) is not asked again: a peer that stalls its answers slows only
itself, never the fetches from the others. The fetcher owns those tasks and cancels them when
its loop stops.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from swarmnode.config.model import LimitsConfig
from swarmnode.utils.lru_map import LRUMap
from swarmnode.utils.ratelimit import PeerRateLimiter
from swarmnode.swarm.gossip.rollout_bookkeeping import skip_fetch


class PeerFetcher:
    """The per-peer fetch machinery of one payload kind; the kind says which peers are due
    (`run`'s round) and what one fetch does (`start`)."""

    def __init__(self, limits: LimitsConfig, *, accept_per_s: float, accept_burst: int, what: str,
                 logger: logging.Logger):
        self._slots = asyncio.Semaphore(limits.max_concurrent_fetches)
        self._inflight: dict[str, asyncio.Task] = {}
        # Items taken from each verified peer per second (token buckets): over it, later.
        self.accept_limiter = PeerRateLimiter(accept_per_s, accept_burst, limits.max_tracked_senders)
        # Consecutive failed fetches per peer: a peer that times out (or stalls on purpose) is
        # asked again only after 2^failures fetch intervals, so stallers cannot hold every slot.
        self._failing: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)
        # Answers of nothing, given at once, in a row per peer: a peer that does not hold our
        # long-polls (an older version, or out of slots) is asked less often.
        self._idle: LRUMap[str, int] = LRUMap(limits.max_tracked_senders)
        self.waits = 0  # fetches that waited for a free slot
        self.busy_s = 0.0  # wall time of fetches, waiting for a slot included
        self._what = what
        self._log = logger

    async def run(self, interval_s: Callable[[], float], fetch_round: Callable[[int], Awaitable[None]]) -> None:
        """Every `interval_s()` seconds, `fetch_round(round number)`, which starts the fetches
        that are due; when this stops, the fetches still running are cancelled."""
        rounds = 0
        try:
            while True:
                rounds += 1
                await asyncio.sleep(interval_s())
                await fetch_round(rounds)
        finally:
            tasks = list(self._inflight.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def running(self) -> int:
        """Fetches started and not finished (waiting for a slot or under way)."""
        return len(self._inflight)

    def busy(self, peer: str) -> bool:
        """Whether a fetch from `peer` is still running."""
        return peer in self._inflight

    def start(self, peer: str, fetch: Callable[[], Awaitable[None]]) -> None:
        """Run `fetch()` as a task of its own once a slot is free."""
        task = asyncio.create_task(self._fetch(peer, fetch))
        self._inflight[peer] = task
        task.add_done_callback(lambda _: self._inflight.pop(peer, None))

    async def _fetch(self, peer: str, fetch: Callable[[], Awaitable[None]]) -> None:
        if self._slots.locked():
            self.waits += 1
        start = time.perf_counter()
        try:
            async with self._slots:
                await fetch()
        except Exception as e:  # noqa: BLE001 - one peer's bad round must not stop the others
            self._log.warning("fetching %s from %s failed (%s: %s)", self._what, peer, type(e).__name__, e)
        self.busy_s += time.perf_counter() - start

    def accepts(self, peer: str) -> bool:
        """Whether one more item may be taken from `peer` now (a refusal is counted)."""
        return self.accept_limiter.allow(peer, time.monotonic())

    # -- back-off ------------------------------------------------------------------------------

    def backing_off(self, peer: str, round_no: int, idle_cap: int) -> bool:
        """Whether to skip `peer` in this round: its fetches keep failing or it has nothing
        (swarm/rollouts.skip_fetch)."""
        return skip_fetch(round_no, self._failing.get(peer) or 0, self._idle.get(peer) or 0, idle_cap)

    def failed(self, peer: str) -> None:
        self._failing[peer] = (self._failing.get(peer) or 0) + 1

    def answered(self, peer: str) -> None:
        self._failing.pop(peer)

    def note_idle(self, peer: str, idle: bool) -> None:
        """One more answer of nothing given at once (`idle`), or the end of such a streak."""
        if idle:
            self._idle[peer] = (self._idle.get(peer) or 0) + 1
        else:
            self._idle.pop(peer)
