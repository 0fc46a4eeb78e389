"""`moscopt --help` lists every command by group, each summary whole; `init .` names no `cd .`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.cli.lazy import COMMANDS, GROUPS

runner = CliRunner()


def test_help_groups_every_command_and_cuts_no_summary() -> None:
    listed = [name for names in GROUPS.values() for name in names]
    assert sorted(listed) == sorted(COMMANDS) and len(listed) == len(set(listed))
    out = runner.invoke(app, ["--help"], terminal_width=80).stdout
    assert "..." not in out[out.index("\nProject:\n") :]  # no summary cut short
    heads = [out.index(f"\n{title}:\n") for title in GROUPS]
    assert heads == sorted(heads)  # project, train and evaluate, inspect, deploy, studies
    flat = " ".join(out.split())
    for title, names in GROUPS.items():
        text = out[out.index(f"\n{title}:\n") :].split("\n\n")[0]
        section = " ".join(re.sub(r"-\n\s+", "-", text).split())  # wrapped at a hyphen
        for name in names:
            assert f"{name} {' '.join(COMMANDS[name][1].split())}" in section, name
    assert flat.index(" init ") < flat.index(" train ") < flat.index(" export ")


@pytest.mark.parametrize(
    ("folder", "hint"),
    [(".", "Next: moscopt status"), ("my proj", "Next: cd 'my proj' && moscopt status")],
)
def test_init_names_the_folder_to_go_to_only_when_there_is_one(
    folder: str, hint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", folder])
    assert result.exit_code == 0, result.output
    assert hint in result.stdout and "cd ." not in result.stdout
