"""The LLM layer: the only code in moscopt that talks to models (through litellm).

Everything else receives an `LM` (see `moscopt.lm.base.LM` for the contract) and never imports
litellm. Importing this package is cheap: litellm and xllamacpp are imported on first use (in
background threads, never on a running event loop), and the names below load their modules
when first asked for (PEP 562), so that a command importing one module of the package (the
report's `moscopt.lm.local`) does not load the client, the cache and the factory (56 ms).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.lm.base import (
        LM,
        Completion,
        LMRequest,
        Message,
        Usage,
    )
    from moscopt.lm.budget import Budget, LMStats
    from moscopt.lm.cache import ResponseCache, default_cache_dir, shared_cache_dir
    from moscopt.lm.client import EventSink, LiteLLMClient
    from moscopt.lm.errors import (
        BudgetExceeded,
        LMAuthError,
        LMError,
        LMFatalError,
        LMNotFoundError,
        LMOutputError,
        LMRequestError,
        LMSetupError,
        LMUnavailableError,
    )
    from moscopt.lm.factory import build_lm, check_model
    from moscopt.lm.local import LOCAL_MODEL
    from moscopt.lm.sampling import acomplete_samples

_HOME = {
    "LM": "moscopt.lm.base",
    "Completion": "moscopt.lm.base",
    "LMRequest": "moscopt.lm.base",
    "Message": "moscopt.lm.base",
    "Usage": "moscopt.lm.base",
    "Budget": "moscopt.lm.budget",
    "LMStats": "moscopt.lm.budget",
    "ResponseCache": "moscopt.lm.cache",
    "default_cache_dir": "moscopt.lm.cache",
    "shared_cache_dir": "moscopt.lm.cache",
    "EventSink": "moscopt.lm.client",
    "LiteLLMClient": "moscopt.lm.client",
    "BudgetExceeded": "moscopt.lm.errors",
    "LMAuthError": "moscopt.lm.errors",
    "LMError": "moscopt.lm.errors",
    "LMFatalError": "moscopt.lm.errors",
    "LMNotFoundError": "moscopt.lm.errors",
    "LMOutputError": "moscopt.lm.errors",
    "LMRequestError": "moscopt.lm.errors",
    "LMSetupError": "moscopt.lm.errors",
    "LMUnavailableError": "moscopt.lm.errors",
    "build_lm": "moscopt.lm.factory",
    "check_model": "moscopt.lm.factory",
    "LOCAL_MODEL": "moscopt.lm.local",
    "acomplete_samples": "moscopt.lm.sampling",
}
__all__ = [
    "LM",
    "LOCAL_MODEL",
    "Budget",
    "BudgetExceeded",
    "Completion",
    "EventSink",
    "LMAuthError",
    "LMError",
    "LMFatalError",
    "LMNotFoundError",
    "LMOutputError",
    "LMRequest",
    "LMRequestError",
    "LMSetupError",
    "LMStats",
    "LMUnavailableError",
    "LiteLLMClient",
    "Message",
    "ResponseCache",
    "Usage",
    "acomplete_samples",
    "build_lm",
    "check_model",
    "default_cache_dir",
    "shared_cache_dir",
]


def __getattr__(name: str) -> Any:
    """A name of `__all__`, from its module (imported now, once)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'moscopt.lm' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
