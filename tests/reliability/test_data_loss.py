"""Data that must never be lost: a new run goes only into a missing or empty directory (anything
else is exit 2 naming it, nothing touched), and `eval --out` / `report -o` refuse to overwrite a
file without `--force`, like `export`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import common, snapshot, train_args

runner = CliRunner()


@pytest.mark.parametrize("target", [".", "notes", "notes/todo.txt", "skills"])
def test_train_into_what_is_not_a_run_refuses_and_touches_nothing(
    project: Path, target: str
) -> None:
    (project / "notes").mkdir()
    (project / "notes" / "todo.txt").write_text("my own file\n")
    before = snapshot(project)
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, target))
        assert not server.log, "no call may be made"
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"moscopt: error: {target}: "), lines
    assert snapshot(project) == before
    assert not (project / target / ".lock").exists()


def eval_args(url: str, out: str, *force: str) -> list[str]:
    return [
        "eval", "--benchmark", "addition.yaml", *common(url), "--skills", "skills",
        "--split", "test", "--out", out, *force,
    ]  # fmt: skip


def test_eval_out_refuses_an_existing_file_without_force(project: Path) -> None:
    mine = project / "results.jsonl"
    mine.write_text("the user's own results\n")
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, eval_args(server.url, "results.jsonl"))
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "results.jsonl" in lines[0] and "--force" in lines[0], lines
        assert mine.read_text() == "the user's own results\n"
        assert not server.log, "refused before any call"
        result = runner.invoke(app, eval_args(server.url, "results.jsonl", "--force"))
        assert result.exit_code == 0, result.output
    assert mine.read_text().startswith('{"activation"')


def test_report_out_refuses_an_existing_file_without_force(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        assert runner.invoke(app, train_args(server.url)).exit_code == 0
    mine = project / "report.md"
    mine.write_text("# my own notes\n")
    before = snapshot(project)
    result = runner.invoke(app, ["report", "--run", "runs/r1", "-o", "report.md"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "report.md" in lines[0] and "--force" in lines[0], lines
    assert snapshot(project) == before
    result = runner.invoke(app, ["report", "--run", "runs/r1", "-o", "report.md", "--force"])
    assert result.exit_code == 0, result.output
    assert mine.read_text().startswith("# ")
    assert mine.read_text() != "# my own notes\n"
    again = runner.invoke(app, ["report", "--run", "runs/r1"])  # the run's own report: rewritten
    assert (
        again.exit_code == 0 and runner.invoke(app, ["report", "--run", "runs/r1"]).exit_code == 0
    )
