"""Importing and configuring litellm: the only place that does.

`litellm()` imports it on first use (never at `import moscopt`), with the local cost map (its
import would otherwise reach for the network), quiet logging, no telemetry and the embedded
model registered as the `local/` provider. Later calls return the same module at once.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from types import ModuleType

_lock = threading.Lock()
_state: dict[str, ModuleType] = {}


def litellm() -> ModuleType:
    """The configured litellm module."""
    module = _state.get("litellm")
    if module is not None:
        return module
    with _lock:
        module = _state.get("litellm")
        if module is None:
            module = _import_and_configure()
            _state["litellm"] = module
    return module


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
    return module
