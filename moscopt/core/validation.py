"""Turn pydantic validation errors into one clear `UserError` naming the file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moscopt.errors import UserError


def describe(exc: ValidationError, *, prefix: str = "") -> tuple[str, str]:
    """The dotted field and a short message for the first error of `exc`."""
    err: Any = exc.errors(include_url=False)[0]
    loc = [str(p) for p in err.get("loc", ())]
    field = ".".join([prefix, *loc] if prefix else loc) or (prefix or "(root)")
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        msg = "unknown key"
    elif kind == "missing":
        msg = "required but missing"
    elif kind == "value_error":
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    else:
        msg = err.get("msg", "invalid value")
        if "input" in err and kind not in ("model_type", "dict_type"):
            shown = repr(err["input"])
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{msg} (got {shown})"
    count = exc.error_count()
    if count > 1:
        msg += f" (and {count - 1} more problem{'s' if count > 2 else ''})"
    return field, msg


def user_error(exc: ValidationError, path: str | Path | None, *, prefix: str = "") -> UserError:
    field, msg = describe(exc, prefix=prefix)
    return UserError(msg, path=path, field=field)
