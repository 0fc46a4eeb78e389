"""moscopt: Mixture-of-Skills Collective Optimization for LLM agents.

Importing this package is cheap: heavy libraries (litellm, torch, sentence-transformers,
xllamacpp, datasets) are imported only inside the functions that need them.
"""

from __future__ import annotations

__version__ = "0.1.0"

# The library API (moscopt.api), imported on first use so that `import moscopt` stays cheap.
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
__all__ = ["Config", "__version__", *_API]


def __getattr__(name: str) -> object:
    if name in ("export", "evaluate"):  # a module, callable as moscopt.api.<name>
        import importlib

        return importlib.import_module(f"moscopt.{name}")
    if name in _API:
        from moscopt import api

        return getattr(api, name)
    if name == "Config":
        from moscopt.config import Config

        return Config
    raise AttributeError(f"module 'moscopt' has no attribute {name!r}")
