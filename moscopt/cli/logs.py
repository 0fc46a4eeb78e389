"""The command line's logging: configured once, when the command line starts.

moscopt's modules log to `logging.getLogger("moscopt...")`. Without a flag nothing is set up:
warnings and errors are shown as Python shows them when nothing is configured (the message
alone, on stderr). `-v` shows moscopt's informational lines, `-vv` its debugging lines too,
each with its level and logger; `-q` shows errors only, from every library.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

HANDLER_NAME = "moscopt-cli"
_root_level: list[int] = []  # the root logger's level before `-q` changed it


class _Stderr(logging.StreamHandler[Any]):
    """Writes to whatever `sys.stderr` is when a record comes (as Python's last-resort handler
    does), so that a replaced or closed stream is never written to."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure(verbose: int = 0, quiet: bool = False) -> None:
    """Set the levels `verbose`/`quiet` ask for, and with `verbose` a handler on stderr. Called
    again (tests invoke the command line many times in one process), it first undoes what it
    did, never touching a handler the embedding program installed."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(handler)
    if _root_level:
        root.setLevel(_root_level.pop())
    ours = logging.getLogger("moscopt")
    ours.setLevel(logging.NOTSET)
    if quiet:
        _root_level.append(root.level)
        root.setLevel(logging.ERROR)
        ours.setLevel(logging.ERROR)
    elif verbose:
        handler = _Stderr()
        handler.set_name(HANDLER_NAME)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        ours.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
