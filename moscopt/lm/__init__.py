"""The LLM layer: the only code in moscopt that talks to models (through litellm).

Everything else receives an `LM` (see `moscopt.lm.base.LM` for the contract) and never imports
litellm. Importing this package is cheap: litellm and xllamacpp are imported on first use (in
background threads, never on a running event loop).
"""

from __future__ import annotations

from moscopt.lm.base import LM, Completion, LMRequest, Message, Usage
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
