"""moscopt: Mixture-of-Skills Collective Optimization for LLM agents.

The library API is four plain functions, `train`, `evaluate`, `export` and `route` (defined in
`moscopt.api`), with their typed results. Importing this package is cheap: they are loaded on
first use, and heavy libraries (litellm, torch, sentence-transformers, xllamacpp, datasets) are
imported only inside the functions that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt._version import __version__

if TYPE_CHECKING:
    from moscopt.api import (
        EvalReport,
        FunctionLM,
        FunctionLMWarning,
        Routing,
        TrainResult,
        evaluate,
        export,
        route,
        train,
    )
    from moscopt.config import Config
    from moscopt.errors import MoscoptError, RunFailed, UserError


_API = (
    "train",
    "evaluate",
    "export",
    "route",
    "FunctionLM",
    "FunctionLMWarning",
    "TrainResult",
    "EvalReport",
    "Routing",
)
# What a script catches: `MoscoptError` (every error of moscopt's own, printed in one line as
# `str(e)`), `UserError` (bad input, raised before any work), `RunFailed` (a run stopped: the
# provider unreachable, a budget, a failing LM function; its state is saved).
_ERRORS = ("MoscoptError", "UserError", "RunFailed")
__all__ = [
    "Config",
    "EvalReport",
    "FunctionLM",
    "FunctionLMWarning",
    "MoscoptError",
    "Routing",
    "RunFailed",
    "TrainResult",
    "UserError",
    "__version__",
    "evaluate",
    "export",
    "route",
    "train",
]


def __getattr__(name: str) -> object:
    if name in _API:
        from moscopt import api

        value = getattr(api, name)
    elif name in _ERRORS:
        from moscopt import errors

        value = getattr(errors, name)
    elif name == "Config":
        from moscopt.config import Config

        value = Config
    else:
        raise AttributeError(f"module 'moscopt' has no attribute {name!r}")
    globals()[name] = value  # found once, then an ordinary attribute
    return value
