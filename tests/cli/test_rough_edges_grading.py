"""Issue 17, section 7: a bare install refuses math grading up front; errored tasks fail `eval`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.cli.eval import TASKS_ERRORED
from moscopt.testing import FakeServer
from moscopt.testing.scripted import ADDITION_SPEC, server_responder

runner = CliRunner()


def test_math_grading_without_math_verify_is_refused_before_any_data_is_read(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "math_verify", None)  # `import math_verify` now fails
    spec = ADDITION_SPEC.replace("grader: exact", "grader: math")
    (project / "math.yaml").write_text(spec.replace("addition.jsonl", "missing.jsonl"))
    result = runner.invoke(app, ["eval", "--benchmark", "math.yaml", "--model", "openai/x"])
    assert result.exit_code == 2
    # one line, the install hint, and not a word about the data file it never opened
    assert result.output.strip().splitlines() == [
        "moscopt: error: grading math needs math-verify, which is not installed: "
        "pip install 'moscopt[math]'"
    ]


def test_math_grading_with_math_verify_installed_is_not_refused(project: Path) -> None:
    pytest.importorskip("math_verify")
    (project / "math.yaml").write_text(ADDITION_SPEC.replace("grader: exact", "grader: math"))
    with FakeServer(responder=server_responder) as server:
        args = ["--benchmark", "math.yaml", "--data", "addition.jsonl", "--model", "openai/x"]
        args += ["--api-base", server.url]
        result = runner.invoke(app, ["eval", *args])
    assert result.exit_code == 0, result.output
    assert "errors 0" in result.output


def test_eval_exits_nonzero_when_tasks_errored(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a grader that fails on the tasks whose answer is a multiple of 4 (6 of the 12 tested)
    (project / "flaky_grader.py").write_text(
        "def grade(task, response):\n"
        "    if int(task.gold) % 4 == 0:\n"
        "        raise RuntimeError('grader broke')\n"
        "    return 1.0\n"
    )
    monkeypatch.syspath_prepend(str(project))
    custom = "grader: custom\ngrader_entry: flaky_grader:grade"
    spec = ADDITION_SPEC.replace("grader: exact", custom)
    spec = spec.replace("test: 2", "test: 12").replace("train: 6, val: 6", "train: 1, val: 1")
    (project / "flaky.yaml").write_text(spec)
    with FakeServer(responder=server_responder) as server:
        args = ["--benchmark", "flaky.yaml", "--data", "addition.jsonl", "--model", "openai/x"]
        args += ["--api-base", server.url]
        result = runner.invoke(app, ["eval", *args])
        as_json = runner.invoke(app, ["eval", *args, "--json"])
    assert result.exit_code == TASKS_ERRORED == 3
    errors = int(result.output.split("errors ")[1].split()[0])
    assert 0 < errors < 12 and f"{errors} of 12 rollouts errored" in result.output
    assert as_json.exit_code == TASKS_ERRORED
