"""A trio event loop in a thread of its own, and calls across it in both directions.

py-libp2p runs on trio; the node runs on asyncio. The trio loop gets a thread, so nothing it
does (Noise handshakes, yamux frames, Kademlia lookups in Python) can block the node's loop for
longer than a GIL switch. Every trio task is started in one root nursery: `stop()` cancels it,
so nothing outlives the transport; the thread is a daemon thread, so a process that exits
without `stop()` (or is SIGKILLed) leaves nothing behind either.

- asyncio -> trio: `await thread.call(fn, *args)` runs `fn(*args)` as a trio task and returns its
  result; cancelling the asyncio caller cancels the trio task.
- trio -> asyncio: `await thread.call_asyncio(coro)` (inside trio) runs `coro` on the node's
  loop; cancelling the trio task cancels the asyncio one.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

import trio

T = TypeVar("T")


def _sole(error: BaseException) -> BaseException:
    """The one error inside nested single-error groups (trio's nurseries wrap what they raise)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class TrioThreadStopped(RuntimeError):
    """The trio thread is not running (never started, stopped, or its main function ended)."""


class TrioThread:
    """Runs `main(started)` on trio in a daemon thread until `stop()`; `started()` says it is up."""

    def __init__(self, name: str):
        self._name = name
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done = threading.Event()
        self.error: BaseException | None = None  # what ended `main`, if it failed

    def cpu_s(self) -> float:
        """CPU seconds the trio thread has used (0 where the platform cannot tell)."""
        thread = self._thread
        if thread is None or thread.ident is None or not hasattr(time, "pthread_getcpuclockid"):
            return 0.0
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except OSError:  # the thread ended
            return 0.0

    @property
    def running(self) -> bool:
        return self._nursery is not None and not self._done.is_set()

    async def start(self, main: Callable[[Callable[[], None]], Awaitable[None]], timeout_s: float) -> None:
        """Start the thread and wait until `main` calls `started()`; raise what `main` raised
        first, or TimeoutError after `timeout_s` (the thread is then stopped)."""
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()

        def settle(error: BaseException | None) -> None:
            if ready.done():
                return
            if error is None:
                ready.set_result(None)
            else:
                ready.set_exception(error)

        def started() -> None:
            self._loop.call_soon_threadsafe(settle, None)

        async def root() -> None:
            self._token = trio.lowlevel.current_trio_token()
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    await main(started)
            except BaseException as e:  # noqa: BLE001 - handed to start() or kept for the owner
                self.error = _sole(e)
                raise
            finally:
                self._nursery = None

        def run() -> None:
            try:
                trio.run(root)
            except BaseException:  # noqa: BLE001 - kept in self.error; the thread ends quietly
                pass
            finally:
                self._done.set()
                with contextlib.suppress(RuntimeError):  # the node's loop may be closed already
                    self._loop.call_soon_threadsafe(settle, self.error or TrioThreadStopped(f"{self._name} ended"))

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout_s)
        except BaseException:
            await self.stop()
            raise

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Cancel every trio task and wait (at most `timeout_s`) for the thread to end."""
        if self._thread is None:
            return
        if self._token is not None and not self._done.is_set():
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._cancel_all)
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join, timeout_s)
        self._thread = None

    def _cancel_all(self) -> None:
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Inside trio: run `fn(*args)` in the root nursery (cancelled at `stop()`)."""
        if self._nursery is None:
            raise TrioThreadStopped(f"{self._name} is not running")
        self._nursery.start_soon(fn, *args)

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """From asyncio: `await fn(*args)` on the trio thread."""
        if not self.running or self._token is None:
            raise TrioThreadStopped(f"{self._name} is not running")
        loop = asyncio.get_running_loop()
        result: asyncio.Future[T] = loop.create_future()
        scope = trio.CancelScope()

        def deliver(outcome: Callable[[], None]) -> None:
            if not result.done():
                outcome()

        async def run() -> None:
            with scope:
                try:
                    value = await fn(*args)
                except BaseException as e:  # noqa: BLE001 - handed to the asyncio caller
                    if isinstance(e, trio.Cancelled):
                        error: BaseException = TrioThreadStopped(f"{self._name} stopped")
                    else:
                        error = e
                    with contextlib.suppress(RuntimeError):
                        loop.call_soon_threadsafe(deliver, lambda: result.set_exception(error))
                    if isinstance(e, trio.Cancelled):
                        raise
                    return
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(deliver, lambda: result.set_result(value))

        def begin() -> None:
            if self._nursery is None:
                loop.call_soon_threadsafe(deliver, lambda: result.set_exception(TrioThreadStopped(f"{self._name} stopped")))
                return
            self._nursery.start_soon(run)

        try:
            self._token.run_sync_soon(begin)
        except trio.RunFinishedError:
            raise TrioThreadStopped(f"{self._name} is not running") from None
        try:
            return await result
        except asyncio.CancelledError:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(scope.cancel)
            raise

    def call_soon_in_asyncio(self, fn: Callable[..., Any], *args: Any) -> None:
        """From trio: run the plain function `fn(*args)` on the node's asyncio loop, soon."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the node's loop is closed: nobody to tell
                self._loop.call_soon_threadsafe(fn, *args)

    async def call_asyncio(self, coro: Coroutine[Any, Any, T]) -> T:
        """Inside trio: run `coro` on the node's asyncio loop and return its result."""
        if self._loop is None:
            coro.close()
            raise TrioThreadStopped(f"{self._name} has no asyncio loop")
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        finished = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def wake(_: concurrent.futures.Future) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(finished.set)

        future.add_done_callback(wake)
        try:
            await finished.wait()
        except trio.Cancelled:
            future.cancel()
            raise
        return future.result()
