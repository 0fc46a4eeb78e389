"""The typer application and the translation of moscopt errors into exit codes.

Command modules import only typer and the standard library at import time, so that
`moscopt --help` stays fast; the library is imported inside each command.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from moscopt.errors import MoscoptError, UserError


class MoscoptGroup(TyperGroup):
    """Turns a `UserError` into one line on stderr and exit code 2, other moscopt errors into 1."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as e:
            print(f"moscopt: error: {e}", file=sys.stderr)
            raise typer.Exit(2) from None
        except MoscoptError as e:
            print(f"moscopt: {e}", file=sys.stderr)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=MoscoptGroup,
    name="moscopt",
    help="Optimize an LLM agent's pool of Markdown skills and its gating skill (MOSCOPT).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, ...)
    pretty_exceptions_enable=False,  # never print locals: they may hold API keys
    rich_markup_mode=None,
)


def version_callback(value: bool) -> None:
    if value:
        from moscopt._version import __version__

        typer.echo(f"moscopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """Optimize an LLM agent's pool of Markdown skills and its gating skill (MOSCOPT)."""
