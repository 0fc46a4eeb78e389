"""The one sync wrapper of the LM layer: run the async core on a private loop thread.

`LoopThread.run(coro)` runs a coroutine on an event loop that lives on a daemon thread of its
own and blocks the caller until it ends, so the sync `LM.complete` is `acomplete` underneath,
from any thread (even one whose own loop is running). The loop starts on first use and stops on
`close`, after the owner's async clean-up for that loop has run on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def until_loop_end(cleanup: Callable[[], object]) -> AsyncIterator[None]:
    """Suspended for the life of its loop, then `cleanup()` (awaited if that is awaitable): a
    loop's end closes the async generators still suspended before it closes the loop
    (`asyncio.run` does, and `LoopThread` in `_finish`), and that runs the `finally`, on the
    loop. Start it (`await keeper.__anext__()`) and keep it referenced for the loop's life."""
    try:
        yield
    finally:
        done = cleanup()
        if isinstance(done, Awaitable):
            await done


async def _finish(cleanup: Callable[[], Awaitable[None]] | None) -> None:
    """As `asyncio.run` ends: the owner's clean-up, then cancel what libraries left running on
    the loop (litellm's logging worker), then close the async generators still suspended."""
    if cleanup is not None:
        await cleanup()
    me = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not me]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


def _shutdown(
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
    cleanup: Callable[[], Awaitable[None]] | None = None,
) -> None:
    if threading.current_thread() is thread:  # collected on its own loop: just let it end
        loop.call_soon(loop.stop)
        return
    try:
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(_finish(cleanup), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()


class LoopThread:
    """A private event loop on a daemon thread (see the module docstring)."""

    def __init__(self, name: str = "moscopt-lm-sync") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                # an owner that never calls close: the loop still ends cleanly, when this is
                # collected or at the latest at exit
                self._finalizer = weakref.finalize(self, _shutdown, loop, thread)
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop thread and return its result (or raise its exception)."""
        loop = self._start()
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("the sync LM API was called from its own loop thread")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt in the caller: stop the call too
            raise

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `coro` on the loop thread without waiting for it (from any thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self._start())

    def close(self, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
        """Run `cleanup()` on the loop (if it ever started), then stop the loop and its thread."""
        with self._lock:
            loop, thread, finalizer = self._loop, self._thread, self._finalizer
            self._loop = self._thread = self._finalizer = None
        if loop is None or thread is None or finalizer is None:
            return
        finalizer.detach()
        _shutdown(loop, thread, cleanup)
