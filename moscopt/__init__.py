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
        Routing,
        TrainResult,
        evaluate,
        export,
        route,
        train,
    )
    from moscopt.config import Config


_API = (
    "train",
    "evaluate",
    "export",
    "route",
    "FunctionLM",
    "TrainResult",
    "EvalReport",
    "Routing",
)
__all__ = [
    "Config",
    "EvalReport",
    "FunctionLM",
    "Routing",
    "TrainResult",
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
    elif name == "Config":
        from moscopt.config import Config

        value = Config
    else:
        raise AttributeError(f"module 'moscopt' has no attribute {name!r}")
    globals()[name] = value  # found once, then an ordinary attribute
    return value
