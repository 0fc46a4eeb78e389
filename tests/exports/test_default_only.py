"""A static or agents export whose routing table holds only a DEFAULT rule says so when it is
made, in its ROUTING.md and manifest, and in `moscopt status`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project

runner = CliRunner()


def gate_never_follows_its_format(body: dict[str, Any]) -> str:
    if "## Available skills" in body["messages"][-1]["content"]:
        return "I would pick whichever seems best."  # no ACTIVATE line: the gate falls back
    return server_responder(body)


@pytest.fixture
def fell_back(tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(responder=gate_never_follows_its_format) as server:
        result = runner.invoke(
            app,
            [
                "train", "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--model",
                "openai/scripted", "--api-base", server.url, "--n", "3", "--k", "2", "--epochs",
                "1", "--steps-per-epoch", "2", "--run", "runs/r1", "--no-evolution",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / "r1"


@pytest.mark.parametrize("mode", ["static", "agents"])
def test_a_default_only_table_is_announced(fell_back: Path, mode: str) -> None:
    made = runner.invoke(app, ["export", "--mode", mode, "--run", str(fell_back)])
    assert made.exit_code == 0, made.output
    warning = " ".join(made.stderr.split())
    assert "warning: the routing table holds only a DEFAULT rule: every task gets" in warning
    assert "the gate made no usable decision on the training tasks" in warning
    assert "Deploy the mixture" in warning
    out = fell_back / "exports" / mode
    assert (
        "**Note:** the routing table holds only a DEFAULT rule" in (out / "ROUTING.md").read_text()
    )
    manifest = json.loads((out / "moscopt-export.json").read_text())
    table = manifest["static"] if mode == "static" else manifest["agents"]["static"]
    assert table["word_rules"] == 0 and table["default_only"]
    shown = runner.invoke(app, ["status", "--run", str(fell_back)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert f"warning: {mode} export {out}: the routing table holds only a DEFAULT rule" in (
        shown.output
    )
    data = json.loads(runner.invoke(app, ["status", "--run", str(fell_back), "--json"]).stdout)
    assert [w["mode"] for w in data["export_warnings"]] == [mode]
