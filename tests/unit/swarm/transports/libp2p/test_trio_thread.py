"""swarm/transports/libp2p/trio_thread.py: calls from asyncio into a trio thread and back, cancellation
both ways, and a stop that leaves no thread behind (no libp2p here: trio alone)."""
import asyncio
import threading

import pytest
import trio

from swarmnode.swarm.transports.libp2p.trio_thread import TrioThread, TrioThreadStopped


async def _serve(started):
    started()
    await trio.sleep_forever()


def test_calls_cross_both_ways_and_errors_come_back():
    async def main():
        thread = TrioThread("test-trio")
        await thread.start(_serve, timeout_s=10)
        seen = {}

        async def on_trio(x):
            seen["trio_thread"] = threading.current_thread().name
            trio.lowlevel.current_trio_token()  # raises outside trio

            async def on_asyncio(y):
                seen["asyncio_thread"] = threading.current_thread().name
                return y * 10

            return await thread.call_asyncio(on_asyncio(x + 1))

        async def fails():
            raise ValueError("from trio")

        assert await thread.call(on_trio, 1) == 20
        assert seen == {"trio_thread": "test-trio", "asyncio_thread": threading.current_thread().name}
        with pytest.raises(ValueError, match="from trio"):
            await thread.call(fails)
        assert await asyncio.gather(*(thread.call(on_trio, i) for i in range(20))) == [(i + 1) * 10 for i in range(20)]
        assert thread.cpu_s() >= 0.0
        await thread.stop()
        assert not any(t.name == "test-trio" for t in threading.enumerate())
        with pytest.raises(TrioThreadStopped):
            await thread.call(on_trio, 1)

    asyncio.run(main())


def test_cancelling_the_asyncio_caller_cancels_the_trio_task_and_stop_cancels_the_rest():
    async def main():
        thread = TrioThread("test-trio")
        await thread.start(_serve, timeout_s=10)
        cancelled = threading.Event()

        async def sleeps():
            try:
                await trio.sleep(60)
            except trio.Cancelled:
                cancelled.set()
                raise

        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(thread.call(sleeps), 0.2)
        await asyncio.get_running_loop().run_in_executor(None, cancelled.wait, 5)
        assert cancelled.is_set()
        pending = asyncio.ensure_future(thread.call(trio.sleep, 60))
        await asyncio.sleep(0.1)
        await thread.stop()
        with pytest.raises(TrioThreadStopped):
            await pending

    asyncio.run(main())


def test_a_main_that_fails_fails_start_with_its_error():
    async def broken(started):
        raise OSError("address already in use")

    async def main():
        thread = TrioThread("test-trio")
        with pytest.raises(OSError, match="already in use"):
            await thread.start(broken, timeout_s=10)
        assert not thread.running

    asyncio.run(main())


def test_a_main_that_fails_after_start_leaves_the_thread_stopped_with_its_error():
    async def fails_later(started):
        started()
        await trio.sleep(0.1)
        raise RuntimeError("the host went away")

    async def main():
        thread = TrioThread("test-trio")
        await thread.start(fails_later, timeout_s=10)
        for _ in range(100):
            if not thread.running:
                break
            await asyncio.sleep(0.05)
        assert not thread.running and isinstance(thread.error, RuntimeError)
        with pytest.raises(TrioThreadStopped):
            await thread.call(trio.sleep, 0)
        await thread.stop()

    asyncio.run(main())
