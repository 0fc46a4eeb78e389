"""Importing and configuring litellm: the only place that does.

`litellm()` imports it on first use (never at `import moscopt`), with the local cost map (its
import would otherwise reach for the network), quiet logging and no telemetry. Later calls
return the same module at once.

The import takes seconds of CPU, so it never runs on an event loop: `preload()` starts it in a
daemon thread (a transport that will need litellm calls it when it is built; see
`moscopt.lm.imports`) and `alitellm()` awaits that thread. After the import the interpreter's
objects are frozen out of the cyclic garbage collector (`gc.freeze`): litellm's hundreds of
thousands of module objects would otherwise be scanned by every full collection and make the
interpreter's exit take seconds.
"""

from __future__ import annotations

import gc
import logging
import os
import warnings
from concurrent.futures import Future
from types import ModuleType

from moscopt.lm import imports

NAME = "litellm"


def preload() -> Future[ModuleType]:
    """Start importing litellm in a daemon thread (once per process); returns its future."""
    return imports.preload(NAME, _import_and_configure)


def litellm() -> ModuleType:
    """The configured litellm module (blocks until it is imported)."""
    return imports.wait(NAME, _import_and_configure)


async def alitellm() -> ModuleType:
    """The configured litellm module, awaited without blocking the running loop."""
    return await imports.ready(NAME, _import_and_configure)


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

    gc.freeze()  # see the module docstring: keeps full collections and the exit fast
    return module
