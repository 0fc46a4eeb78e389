"""Commands are imported only when they run; `--help` lists them all without importing any."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.cli.app import load_command
from moscopt.cli.lazy import COMMANDS

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_summary_is_the_first_sentence_of_the_help(name: str) -> None:
    command = load_command(name)
    first = " ".join(command.help.split("\n\n")[0].split())
    summary = COMMANDS[name][1]
    assert first.startswith(summary), f"update COMMANDS[{name!r}] in moscopt/cli/lazy.py"
    for limit in (20, 45, 80, 400):  # the list shortens both alike at any width
        assert command.get_short_help_str(limit) == _short(summary, limit)


def _short(summary: str, limit: int) -> str:
    from typer.core import TyperCommand

    return TyperCommand("x", help=summary).get_short_help_str(limit)


def test_every_registered_command_is_listed() -> None:
    for name in COMMANDS:
        load_command(name)
    assert {c.name for c in app.registered_commands} == set(COMMANDS)


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import json, sys\n"
        "from moscopt.cli import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('moscopt'))), "
        "file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_imports_no_command() -> None:
    loaded = _modules_after(["--help"])
    assert not {f"moscopt.cli.{module}" for module, _ in COMMANDS.values()} & loaded


def test_a_command_imports_only_its_own_module() -> None:
    loaded = _modules_after(["eval", "--help"])
    commands = {f"moscopt.cli.{module}" for module, _ in COMMANDS.values()}
    assert commands & loaded == {"moscopt.cli.eval"}


def test_a_mistyped_command_is_still_suggested() -> None:
    result = CliRunner().invoke(app, ["evl"])
    assert result.exit_code == 2
    assert "Did you mean 'eval'?" in result.output
