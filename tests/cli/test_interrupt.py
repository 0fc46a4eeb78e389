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


@pytest.mark.parametrize("made", [False, True])
def test_an_interrupted_train_names_the_run_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path, made: bool
) -> None:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "runs" / "addition-20260101-000000"

    def interrupted(**kw: Any) -> None:
        if made:
            kw["started"](path)  # the run exists: its real path, not "--run DIR"
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "train", interrupted)
    result = CliRunner().invoke(app, ["train", "--benchmark", "addition.yaml"])
    assert result.exit_code == 130 and "Traceback" not in result.output
    if made:
        assert f"continue with moscopt train --resume --run {path}" in result.output
    else:
        assert "interrupted before the run was made: nothing to resume" in result.output
    assert "--run DIR" not in result.output
