"""The `moscopt` command line: one thin module per command, imported when it runs."""

from __future__ import annotations

from typing import NoReturn

from moscopt.cli.app import app


def main() -> None:
    """Run the command line, then end the process without the interpreter's teardown."""
    try:
        app()
    except SystemExit as e:
        hard_exit(e.code)
    hard_exit(0)


def hard_exit(code: object) -> NoReturn:
    """Exit with `code` as `sys.exit` would, less the interpreter's teardown: freeing every
    object of a run took about 0.18 s of an evaluation's 0.20 s end (`scripts/bench_peers.py`),
    and writes nothing.
    Everything moscopt writes is closed before its command returns; non-daemon threads are
    joined and `atexit` handlers (libraries' flushes, `weakref.finalize`) run as at a normal
    exit. mypy ends its runs the same way (`mypy.util.hard_exit`)."""
    import atexit
    import contextlib
    import os
    import sys
    import threading

    if code is None or isinstance(code, int):
        status = code or 0
    else:
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what exit does first: join threads
    atexit._run_exitfuncs()
    for out in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (`moscopt ... | head`)
            out.flush()
    os._exit(status)


__all__ = ["app", "hard_exit", "main"]
