"""Importing and configuring litellm: the only place that does.

`litellm()` imports it on first use (never at `import moscopt`), with the local cost map (its
import would otherwise reach for the network), quiet logging and no telemetry. Later calls
return the same module at once.

The import takes seconds of CPU, so it never runs on an event loop: `preload()` starts it in a
daemon thread (a transport that will need litellm calls it when it is built; see
`moscopt.lm.imports`) and `alitellm()` awaits that thread. The collector is off during the
import (its hundreds of thousands of objects all live on, so collections then were a fifth of
the import's CPU), and after it the interpreter's objects are frozen out of the cyclic garbage
collector (`gc.freeze`): they would otherwise be scanned by every full collection and make the
interpreter's exit take seconds.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
import warnings
import weakref
from collections.abc import AsyncIterator
from concurrent.futures import Future
from types import ModuleType

from moscopt.lm import imports
from moscopt.lm.sync import until_loop_end

NAME = "litellm"
_lock = threading.Lock()
# per loop: the generator that closes the clients litellm dropped on it, when it ends
_keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncIterator[None]]
_keepers = weakref.WeakKeyDictionary()


def preload() -> Future[ModuleType]:
    """Start importing litellm in a daemon thread (once per process); returns its future."""
    return imports.preload(NAME, _import_and_configure)


def litellm() -> ModuleType:
    """The configured litellm module (blocks until it is imported)."""
    return imports.wait(NAME, _import_and_configure)


async def alitellm() -> ModuleType:
    """The configured litellm module, awaited without blocking the running loop."""
    return await imports.ready(NAME, _import_and_configure)


async def close_dropped_clients_at_loop_end() -> None:
    """Have `close_dropped_clients` run when the running loop ends (once per loop)."""
    loop = asyncio.get_running_loop()
    with _lock:
        if loop in _keepers:
            return
        keeper = _keepers[loop] = until_loop_end(close_dropped_clients)
    await keeper.__anext__()


async def close_dropped_clients(timeout: float = 5.0) -> int:
    """Close, on the running loop, the SDK clients litellm built on it and dropped; how many.

    litellm's OpenAI files and batches calls (`--batch`) build an `AsyncOpenAI` client per call
    and never close it. Such a client is a reference cycle, so only the collector frees it, and
    its `__del__` schedules its close on whatever loop is running then: in a process that runs
    several loops (a study, a batched run's evaluations) that is a later loop, over the dead
    loop's connections ("Task exception was never retrieved ... Event loop is closed", one per
    client). A collection here, as the loop ends, frees them while their own loop still runs;
    the closes they schedule are awaited (at most `timeout` seconds)."""
    before = asyncio.all_tasks()
    gc.collect()
    closing = asyncio.all_tasks() - before
    if closing:
        await asyncio.wait(closing, timeout=timeout)
    return len(closing)


def _import_and_configure() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    collecting = gc.isenabled()
    gc.disable()  # its objects all live on: collections during the import are wasted (~20%)
    try:
        with warnings.catch_warnings():
            # litellm's import makes pydantic warn about its own TypedDicts: not the user's
            warnings.simplefilter("ignore")
            import litellm as module
    finally:
        if collecting:
            gc.enable()

    # Its first calls make pydantic warn about litellm's own TypedDicts: not the user's concern.
    warnings.filterwarnings("ignore", message=r"Items? .* on TypedDict class", category=UserWarning)
    module.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on errors
    module.telemetry = False
    # No logging callback of litellm's is installed (moscopt's only one, the Router's failure
    # watch, reads no message), so there is nothing to redact; redacting deep-copied every
    # call's details, about 1 ms of CPU a call on the Router path.
    module.turn_off_message_logging = False
    module.drop_params = True  # providers that lack a parameter (seed, top_p) ignore it
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)

    gc.freeze()  # see the module docstring: keeps full collections and the exit fast
    return module
