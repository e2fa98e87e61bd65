"""Answering peers' fetch requests, whatever the payload: at most limits.serve_requests_per_s
(burst serve_burst) per verified peer id, an empty answer over it (PeerServer); and the
futures of requests held open until there is something new (Waiters)."""
from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from swarmnode.config.model import LimitsConfig
from swarmnode.utils.ratelimit import PeerRateLimiter
from swarmnode.swarm.transports.base import Transport

EMPTY_ANSWER = b""  # an empty fetch response of every payload kind


class PeerServer:
    """Serves one protocol: `answer(request, remote)` is the payload kind's answer, given to a
    peer within its rate."""

    def __init__(self, protocol: str, limits: LimitsConfig, answer: Callable[[bytes, str], Awaitable[bytes]]):
        self.protocol = protocol
        self.limiter = PeerRateLimiter(limits.serve_requests_per_s, limits.serve_burst, limits.max_tracked_senders)
        self._answer = answer

    async def start(self, transport: Transport) -> None:
        await transport.serve(self.protocol, self.answer)

    async def answer(self, request: bytes, remote: str) -> bytes:
        # `remote` is the libp2p-authenticated peer id: a peer over its rate gets an empty answer.
        if not self.limiter.allow(remote, time.monotonic()):
            return EMPTY_ANSWER
        return await self._answer(request, remote)


class Waiters:
    """Futures of held long-polls, all woken when a batch is added or the node stops. Futures
    are made on the running loop at each wait, so nothing here is bound to one event loop."""

    def __init__(self) -> None:
        self._futures: set[asyncio.Future] = set()

    async def wait(self, timeout: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self._futures.add(future)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            self._futures.discard(future)

    def wake(self) -> None:
        for future in self._futures:
            if not future.done():
                future.set_result(None)
