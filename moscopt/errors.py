"""Error types shared by the library and the command line.

`UserError` is a problem with what the user gave us (a flag, a file, a value). The command line
prints its message on one line and exits with code 2; it never shows a traceback. Everything else
is a bug or an outside failure and exits with code 1.
"""

from __future__ import annotations

import errno
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


class StorageError(RunFailed, OSError):
    """The disk refused a write (full, read-only, no permission): one line naming the path and
    the OS error. Exit code 1; what was saved before the failing write is intact. Still an
    `OSError` (same `errno`), so code that handles those handles this."""

    def __init__(self, path: str | Path, error: OSError) -> None:
        reason = error.strerror or str(error)
        code = errno.errorcode.get(error.errno or 0)
        self.message = f"cannot write {path}: {reason}" + (f" ({code})" if code else "")
        OSError.__init__(self, error.errno, reason, str(path))
        self.path = Path(path)

    def __str__(self) -> str:
        return self.message
