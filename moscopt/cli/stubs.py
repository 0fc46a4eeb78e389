"""Commands whose implementation has not landed yet. They say so and exit 1; they never pretend."""

from __future__ import annotations

import sys

import typer

from moscopt.cli.app import app

_PENDING: dict[str, str] = {}


def _make(name: str, summary: str) -> None:
    @app.command(
        name=name,
        help=f"{summary} [not available yet]",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def _pending(ctx: typer.Context) -> None:
        print(f"moscopt: '{name}' is not available yet in this version.", file=sys.stderr)
        raise typer.Exit(1)


for _name, _summary in _PENDING.items():
    _make(_name, _summary)
