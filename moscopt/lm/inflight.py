"""`InFlight`: one cap on requests in flight, shared by LMs on many threads and event loops.

A study runs its runs at once, each in its own thread with its own event loop and its own LMs;
`--concurrency` caps the requests in flight for the whole study. Inside `sharing(lane)`, an
`LiteLLMClient` created there takes its slot from `lane` (a view of one shared `InFlight` that
counts the requests of one run) instead of its own per-loop semaphore. Waiters are served in
the order they asked. `close()` turns every waiting and later request into `Stopped` (the
study stops: its runs save their state and end at their next call).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

from moscopt.lm.errors import LMFatalError


class Stopped(LMFatalError):
    """The shared cap was closed: the study is stopping, so this run stops too."""


_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class InFlight:
    """At most `limit` requests in flight across threads; `peak` is the most seen at once."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.busy = 0
        self.peak = 0
        self.sent = 0  # requests that got a slot
        self._lock = threading.Lock()
        self._waiters: deque[_Waiter] = deque()
        self._closed: str | None = None

    def lane(self) -> Lane:
        """A view of this cap that also counts the requests of one user (one run)."""
        return Lane(self)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    def close(self, reason: str) -> None:
        """Refuse every waiting and later request with `Stopped(reason)`."""
        with self._lock:
            self._closed = reason
            while self._waiters:
                _wake(self._waiters.popleft())

    async def _acquire(self) -> None:
        loop = asyncio.get_running_loop()
        first = True
        while True:
            with self._lock:
                if self._closed is not None:
                    raise Stopped(self._closed)
                # a waiter that was woken goes before anyone still queued
                if self.busy < self.limit and (not first or not self._waiters):
                    self.busy += 1
                    self.sent += 1
                    self.peak = max(self.peak, self.busy)
                    return
                waiter: _Waiter = (loop, loop.create_future())
                if first:
                    self._waiters.append(waiter)
                else:
                    self._waiters.appendleft(waiter)
            first = False
            try:
                await waiter[1]
            except asyncio.CancelledError:
                with self._lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
                    else:  # woken for a free slot it will not take: pass the wake on
                        self._wake_next()
                raise

    def _release(self) -> None:
        with self._lock:
            self.busy -= 1
            self._wake_next()

    def _wake_next(self) -> None:
        """Wake the first waiter whose loop still runs, for a free slot (under the lock)."""
        while self._waiters:
            if _wake(self._waiters.popleft()):
                return


class Lane:
    """One run's view of a shared `InFlight`: the same slots, its own count of requests."""

    def __init__(self, shared: InFlight) -> None:
        self.shared = shared
        self.sent = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Hold]:
        await self.shared._acquire()
        self.sent += 1
        hold = Hold(self.shared)
        try:
            yield hold
        finally:
            hold.leave()


class Hold:
    """A slot taken: freed when its holder leaves and every request it `keep`s has ended, so a
    request whose caller gave up (or whose loop ended) still counts until its answer comes."""

    def __init__(self, shared: InFlight) -> None:
        self._shared = shared
        self._lock = threading.Lock()
        self._pending = 0
        self._left = False

    def keep(self, request: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending += 1
        request.add_done_callback(self._ended)

    def leave(self) -> None:
        with self._lock:
            self._left = True
            free = self._pending == 0
        if free:
            self._shared._release()

    def _ended(self, _: object) -> None:
        with self._lock:
            self._pending -= 1
            free = self._left and self._pending == 0
        if free:
            self._shared._release()


def _wake(waiter: _Waiter) -> bool:
    """Resolve the waiter's future on its own loop; False if that loop is closed."""
    loop, future = waiter

    def grant() -> None:
        if not future.done():
            future.set_result(None)

    try:
        loop.call_soon_threadsafe(grant)
    except RuntimeError:  # its loop is closed: nobody waits there any more
        return False
    return True


_LANE: contextvars.ContextVar[Lane | None] = contextvars.ContextVar("moscopt_lane", default=None)


@contextlib.contextmanager
def sharing(lane: Lane) -> Iterator[None]:
    """LMs created inside take their request slots from `lane`."""
    token = _LANE.set(lane)
    try:
        yield
    finally:
        _LANE.reset(token)


def current_lane() -> Lane | None:
    """The lane an LM created now shares, if any (see `sharing`)."""
    return _LANE.get()
