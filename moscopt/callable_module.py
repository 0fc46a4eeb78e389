"""Modules that are also the library call of the same name: `moscopt.export(...)` and
`moscopt.evaluate(...)` are `moscopt.api.export` / `moscopt.api.evaluate`, while
`moscopt.export` and `moscopt.evaluate` stay the packages and modules they are (an attribute of
a package is its submodule once imported, so a function of that name could not be reached).
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    __moscopt_api__: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from moscopt import api

        return getattr(api, self.__moscopt_api__)(*args, **kwargs)


def make_callable(module_name: str, api_name: str) -> None:
    """Make the module `module_name` callable as `moscopt.api.<api_name>`."""
    module = sys.modules[module_name]
    module.__class__ = _CallableModule
    module.__moscopt_api__ = api_name  # type: ignore[attr-defined]
