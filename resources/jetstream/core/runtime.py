"""A private asyncio event loop on a background thread.

nats-py is async-only, while Dagster assets, checks and sensors are synchronous. The
JetStream client owns one `EventLoopThread`: every nats-py coroutine runs on it, and the
synchronous API waits for the result. Because the loop keeps running between calls, the
connection answers server PINGs and push subscriptions keep receiving while Spark works.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class EventLoopThread:
    """Runs coroutines on a dedicated event loop thread and waits for their results."""

    def __init__(self, name: str = "jetstream-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs `coro` on the loop and returns its result.

        Args:
            coro: the coroutine to run.
            timeout: seconds to wait; on expiry the coroutine is cancelled and
                `TimeoutError` is raised.
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("EventLoopThread.run called from its own loop thread")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"operation did not finish within {timeout}s") from None

    def close(self) -> None:
        """Cancels what is still running, stops the loop and joins the thread."""
        if self._loop.is_closed():
            return

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
                asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self._loop.close()
