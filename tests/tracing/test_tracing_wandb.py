"""The `wandb` observer in offline mode (WANDB_MODE=offline, a temp folder): a short training
run, and what its offline run recorded (config, one history row per step, summary, the skills
artifact, exit code), read back from wandb's own transaction log."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("wandb")

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import train_args
from .wandb_log import recorded

runner = CliRunner()


def test_a_training_run_is_an_offline_wandb_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "wandb-dir"
    folder.mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(folder))
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_PROJECT", "WANDB_ENTITY", "WANDB_API_KEY", "WANDB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, "--trace", "wandb"))
    assert result.exit_code == 0, result.output
    (log,) = folder.glob("wandb/offline-run-*/run-*.wandb")
    got = recorded(log)
    run_id, project_name, name = got["run"]
    assert run_id.startswith("moscopt-") and project_name == "moscopt" and name == "r1"
    assert got["config"]["pool"]["k"] == 2 and got["config"]["model"] == "openai/scripted"
    assert got["config"]["moscopt_run"]["moscopt.kind"] == "train"
    # one history row per step of the trainer (2 skill steps, 1 gate step), the last merged
    # with the end's update
    rows = got["history"]
    assert [r["_step"] for r in rows] == [1, 2, 3]
    for row in rows:
        assert {"val_score", "edits_accepted", "calls", "tokens", "cost_usd", "step_calls"} <= set(
            row
        )
    assert rows[-1]["val_score"] == 1.0 and rows[-1]["edits_accepted"] >= 1
    assert got["summary"]["val_after"] == 1.0 and "certificate_final_score" in got["summary"]
    ((artifact, kind, files),) = got["artifacts"]
    assert artifact == "r1-skills" and kind == "skills"
    assert "moscopt.yaml" in files and "skills/gate/SKILL.md" in files
    assert got["exit"] == 0
