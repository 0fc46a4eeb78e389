"""Importing and configuring litellm: the only place that does.

`litellm()` imports it on first use (never at `import moscopt`), with the local cost map (its
import would otherwise reach for the network), quiet logging, no telemetry and the embedded
model registered as the `local/` provider. Later calls return the same module at once.

The import takes seconds of CPU, so it never runs on an event loop: `preload()` starts it in a
daemon thread (a transport that will need litellm calls it when it is built) and `alitellm()`
awaits that thread. After the import the interpreter's objects are frozen out of the cyclic
garbage collector (`gc.freeze`): litellm's hundreds of thousands of module objects would
otherwise be scanned by every full collection and make the interpreter's exit take seconds.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
import warnings
from concurrent.futures import Future
from types import ModuleType

_lock = threading.Lock()
_future: Future[ModuleType] | None = None


def preload() -> Future[ModuleType]:
    """Start importing litellm in a daemon thread (once per process); returns its future."""
    global _future
    with _lock:
        if _future is not None:
            return _future
        future: Future[ModuleType] = Future()
        _future = future

    def run() -> None:
        try:
            future.set_result(_import_and_configure())
        except BaseException as e:  # the callers see the import's own error
            future.set_exception(e)

    threading.Thread(target=run, name="moscopt-litellm-import", daemon=True).start()
    return future


def litellm() -> ModuleType:
    """The configured litellm module (blocks until it is imported)."""
    future = _future
    if future is not None and future.done():
        return future.result()
    return preload().result()


async def alitellm() -> ModuleType:
    """The configured litellm module, awaited without blocking the running loop."""
    future = _future
    if future is not None and future.done():
        return future.result()
    return await asyncio.wrap_future(preload())


def _import_and_configure() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with warnings.catch_warnings():
        # litellm's import makes pydantic warn about its own TypedDicts: not the user's concern
        warnings.simplefilter("ignore")
        import litellm as module

    # Its first calls make pydantic warn about litellm's own TypedDicts: not the user's concern.
    warnings.filterwarnings("ignore", message=r"Items? .* on TypedDict class", category=UserWarning)
    module.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on errors
    module.telemetry = False
    module.turn_off_message_logging = True  # keep prompts out of litellm's own logging
    module.drop_params = True  # providers that lack a parameter (seed, top_p) ignore it
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)

    from moscopt.lm.local import PROVIDER, make_handler

    providers = [p for p in module.custom_provider_map if p.get("provider") != PROVIDER]
    providers.append({"provider": PROVIDER, "custom_handler": make_handler(module)})
    module.custom_provider_map = providers
    gc.freeze()  # see the module docstring: keeps full collections and the exit fast
    return module
