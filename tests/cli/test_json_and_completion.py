"""`--json` on init, diff and report; shell completion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, server_responder, write_project

runner = CliRunner()


def test_init_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", str(tmp_path / "p"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["project"] == str(tmp_path / "p")
    assert any(c.endswith("moscopt.yaml") for c in data["created"])


def test_diff_and_report_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(responder=server_responder) as server:
        args = [
            "train", "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base",
            server.url, "--data", "addition.jsonl", "--n", "3", "--k", "2", "--epochs", "1",
            "--steps-per-epoch", "2", "--run", "runs/r", "--no-evolution",
        ]  # fmt: skip
        assert runner.invoke(app, args).exit_code == 0
    diff = runner.invoke(app, ["diff", "careful-computation", "--run", "runs/r", "--json"])
    assert diff.exit_code == 0, diff.output
    data = json.loads(diff.output)
    assert (
        data["changed"] and f"+{MAGIC}" in data["diff"] and data["skill"] == "careful-computation"
    )
    status = json.loads(runner.invoke(app, ["status", "--run", "runs/r", "--json"]).output)
    assert status["gate_fallback_recent"] == 0.0  # the scripted gate always answers K valid ids
    shown = runner.invoke(app, ["status", "--run", "runs/r"]).output
    assert "gate fallback rate (recent steps): 0%" in shown and "gating.output" not in shown
    report = runner.invoke(app, ["report", "--run", "runs/r", "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert Path(data["report"]).is_file() and set(data) == {"report", "plot", "notes"}


def test_shell_completion_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "--install-completion" in runner.invoke(app, ["--help"]).output
    # the shell named, not detected: detection reads the process tree, which differs under pytest
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    shown = runner.invoke(app, ["--show-completion", "bash"])
    assert shown.exit_code == 0, (shown.output, shown.exception)
    assert "_MOSCOPT_COMPLETE=complete_bash" in shown.output
