"""Heavy imports in the background: started early, awaited off the event loop.

`preload(name)` starts `loader()` once per process in a daemon thread and returns its future;
`wait(name)` blocks on it; `await ready(name)` waits without blocking the running loop. A module
that takes seconds to import (litellm) then loads while the caller builds the rest of the run,
and never inside a running evaluation's loop.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import ModuleType

_lock = threading.Lock()
_futures: dict[str, Future[ModuleType]] = {}


def preload(name: str, loader: Callable[[], ModuleType] | None = None) -> Future[ModuleType]:
    """Start importing `name` (with `loader`, default `importlib.import_module`) in a thread."""
    with _lock:
        future = _futures.get(name)
        if future is not None:
            return future
        future = _futures[name] = Future()
    load = loader or (lambda: importlib.import_module(name))

    def run() -> None:
        try:
            future.set_result(load())
        except BaseException as e:  # the waiters see the import's own error
            future.set_exception(e)

    threading.Thread(target=run, name=f"moscopt-import-{name}", daemon=True).start()
    return future


def wait(name: str, loader: Callable[[], ModuleType] | None = None) -> ModuleType:
    """The module, imported (blocks until it is)."""
    future = _futures.get(name)
    if future is not None and future.done():
        return future.result()
    return preload(name, loader).result()


async def ready(name: str, loader: Callable[[], ModuleType] | None = None) -> ModuleType:
    """The module, awaited without blocking the running loop."""
    future = _futures.get(name)
    if future is not None and future.done():
        return future.result()
    return await asyncio.wrap_future(preload(name, loader))
