"""The `moscopt` command line: one thin module per command."""

from __future__ import annotations

from moscopt.cli import (  # noqa: F401  (importing a module registers its command)
    ablate,
    benchmarks,
    compare,
    diff,
    eval,
    export,
    init,
    log,
    plan,
    report,
    route,
    status,
    stream,
    train,
)
from moscopt.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
