"""Error types shared by the library and the command line.

`UserError` is a problem with what the user gave us (a flag, a file, a value). The command line
prints its message on one line and exits with code 2; it never shows a traceback. Everything else
is a bug or an outside failure and exits with code 1.
"""

from __future__ import annotations

from pathlib import Path


class MoscoptError(Exception):
    """Base class of moscopt's own errors."""


class UserError(MoscoptError):
    """Bad input: names the file (and line or field) at fault. Exit code 2."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
        if self.field:
            where = f"{where}: field '{self.field}'" if where else f"field '{self.field}'"
        return f"{where}: {self.message}" if where else self.message


class RunFailed(MoscoptError):
    """A run stopped for a reason outside the user's input (budget, provider). Exit code 1."""

    exit_code = 1
