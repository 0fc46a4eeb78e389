"""Ctrl-C during `moscopt eval` exits 130 with one line (as `train` does), not click's exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.app import runner
from moscopt.cli import app
from moscopt.testing.scripted import write_project


def test_an_interrupted_eval_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)

    def interrupted(**_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "evaluate", interrupted)
    result = CliRunner().invoke(app, ["eval", "--benchmark", "addition.yaml"])
    assert result.exit_code == 130
    assert "moscopt: interrupted" in result.output and "Traceback" not in result.output
