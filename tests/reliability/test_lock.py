"""The run lock, in-process: while a run is held (as a training process holds it), nothing a
second command does may change the run's files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import snapshot, train_args

runner = CliRunner()


@pytest.fixture
def stopped(project: Path) -> Path:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, [*train_args(server.url), "--max-calls", "12"])
    assert result.exit_code == 1 and "budget" in result.output, result.output
    return project / "runs/r1"


def test_resume_of_a_locked_run_refuses_and_writes_nothing(stopped: Path) -> None:
    before = snapshot(stopped)
    with RunDir.open(stopped).locked():
        result = runner.invoke(app, ["train", "--resume", "--run", "runs/r1"])
    assert result.exit_code == 2
    assert "another moscopt process is using this run directory" in result.output
    assert snapshot(stopped) == before


def test_resume_with_new_budget_of_a_locked_run_leaves_its_config(stopped: Path) -> None:
    config = (stopped / "moscopt.yaml").read_bytes()
    with RunDir.open(stopped).locked():
        args = ["train", "--resume", "--run", "runs/r1", "--max-calls", "500"]
        result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "another moscopt process is using this run directory" in result.output
    assert (stopped / "moscopt.yaml").read_bytes() == config
