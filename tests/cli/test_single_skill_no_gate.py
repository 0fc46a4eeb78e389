"""Single-skill mode (`--n 1 --k 1`, no gate call) has no gate phase: `train` prints no
`gate: start` and measures no pool for one, and `plan` lists no gate calls."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.ledger import Validation
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

runner = CliRunner()


def args(url: str) -> list[str]:
    return [
        "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--n", "1", "--k", "1", "--epochs", "1",
        "--steps-per-epoch", "1",
    ]  # fmt: skip


def test_single_skill_mode_has_no_gate_phase(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        plan = runner.invoke(app, ["plan", *args(server.url), "--no-pilot", "--json"])
        assert plan.exit_code == 0, plan.output
        parts = json.loads(plan.stdout)["phases"]
        gate = [p for p in parts if p["phase"] == "gate"]
        assert all(p["calls"] == 0 and p["bound"] == 0 for p in gate), gate
        result = runner.invoke(app, ["train", *args(server.url), "--run", "runs/one"])
        assert result.exit_code == 0, result.output
    assert " skills: start" in result.output and " gate: " not in result.output
    status = json.loads(runner.invoke(app, ["status", "--run", "runs/one", "--json"]).stdout)
    assert status["status"] == "done"
    run = RunDir.open(project / "runs/one")
    phases = {e.phase for e in run.read_events(kinds={"validation"}) if isinstance(e, Validation)}
    assert "gate" not in phases
