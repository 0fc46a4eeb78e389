"""The `moscopt` command line: one thin module per command."""

from __future__ import annotations

from moscopt.cli import benchmarks, init, status, stubs  # noqa: F401  (registers commands)
from moscopt.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
