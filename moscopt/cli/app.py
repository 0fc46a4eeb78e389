"""The typer application and the translation of moscopt errors into exit codes.

A command's module is imported only when the command runs (`moscopt.cli.lazy`); command modules
import only typer and the standard library at import time, and the library inside the command,
so that `moscopt --help` and a command's start stay fast.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from moscopt.cli.lazy import COMMANDS, GROUPS, LazyCommands
from moscopt.errors import MoscoptError, UserError


class MoscoptGroup(TyperGroup):
    """Loads a command when it is looked up; turns a `UserError` into one line on stderr and
    exit code 2, other moscopt errors into 1."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = LazyCommands(self.commands, load_command)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands in `--help` by group (`GROUPS`), each with its whole summary, wrapped:
        no command is imported."""
        width = max(len(name) for name in COMMANDS)  # one column for every group
        grouped = {name for names in GROUPS.values() for name in names}
        other = tuple(name for name in COMMANDS if name not in grouped)  # never left out
        for title, names in [*GROUPS.items(), *([("Other", other)] if other else [])]:
            with formatter.section(title):
                formatter.write_dl([(name.ljust(width), COMMANDS[name][1]) for name in names])

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
    context_settings={"help_option_names": ["-h", "--help"]},  # every command inherits it
    epilog="Environment: MOSCOPT_MODEL, MOSCOPT_API_BASE and MOSCOPT_CONFIG stand for --model, "
    "--api-base and --config. A setting comes from, first to last: its flag, its environment "
    "variable, the project's moscopt.yaml, the user's config file ($MOSCOPT_USER_CONFIG, else "
    "config.yaml in the platform's user config folder, e.g. ~/.config/moscopt/), moscopt's "
    "default.",
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
    verbose: int = typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        show_default=False,
        help="Show moscopt's log lines: -v informational, -vv debugging too.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Log errors only."),
) -> None:
    """Optimize an LLM agent's pool of Markdown skills and its gating skill (MOSCOPT)."""
    from moscopt.cli import logs

    logs.configure(verbose, quiet)


def load_command(name: str) -> Any:
    """The click command `name`, built from its typer registration (its module is imported)."""
    importlib.import_module(f"moscopt.cli.{COMMANDS[name][0]}")  # registers it on `app`
    info = next(c for c in app.registered_commands if c.name == name)
    return typer.main.get_command_from_info(
        info,
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )
