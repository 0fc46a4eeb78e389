"""End to end through the command line, against the loopback OpenAI-compatible fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, server_responder, write_project

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-MARKER-1234567890")
    return tmp_path


def common(url: str) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", url, "--data", "addition.jsonl"]


def train_args(url: str) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", *common(url), "--n", "3", "--k", "2",
        "--epochs", "1", "--steps-per-epoch", "2", "--run", "runs/r1", "--no-evolution",
    ]  # fmt: skip


def test_train_status_eval_end_to_end(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url))
        assert result.exit_code == 0, result.output
        assert "validation score: 0.000 -> 1.000" in result.output
        # the run ends with its certificate: 2 test tasks cannot show a gain, and it says so
        assert "certificate: NO DETECTABLE DIFFERENCE from the seed pool (seed 0.000 -> final " \
            "1.000" in result.output  # fmt: skip
        assert "2 held-out tasks are too few to tell the pools apart" in result.output
        assert "moscopt eval --skills" in result.output
        skill = (project / "runs/r1/skills/careful-computation/SKILL.md").read_text()
        assert MAGIC in skill

        status = runner.invoke(app, ["status", "--run", "runs/r1", "--json"])
        data = json.loads(status.output)
        assert data["edits"]["accepted"] == 1 and data["status"] == "done"
        assert data["totals"]["calls"] == server.count("ok") > 0
        assert data["certificate"]["verdict"] == "no detectable difference"
        assert data["certificate"]["tasks"] == 2 and data["certificate"]["split"] == "test"

        before = server.count()
        mixture = runner.invoke(app, ["eval", "--run", "runs/r1", "--split", "test", "--json"])
        assert mixture.exit_code == 0, mixture.output
        summary = json.loads(mixture.output)
        assert summary["score"] == 1.0 and summary["mode"] == "mixture" and summary["tasks"] == 2
        lines = (project / summary["results"]).read_text().splitlines()
        assert len(lines) == 2 and json.loads(lines[0])["reward"] == 1.0
        assert server.count() == before  # the certificate rolled the final pool out on test

        baseline = runner.invoke(
            app,
            [
                "eval",
                "--benchmark",
                "addition.yaml",
                *common(server.url),
                "--mode",
                "none",
                "--json",
            ],
        )
        assert baseline.exit_code == 0, baseline.output
        assert json.loads(baseline.output)["score"] == 0.0

        # the same evaluation again is answered entirely from the run's cache
        count = server.count()
        again = runner.invoke(app, ["eval", "--run", "runs/r1", "--split", "test", "--json"])
        assert json.loads(again.output)["score"] == 1.0 and server.count() == count

        finished = runner.invoke(app, ["train", "--resume", "--run", "runs/r1"])
        assert finished.exit_code == 2 and "already finished" in finished.output

    # the API key never reaches the run directory
    for path in (project / "runs").rglob("*"):
        if path.is_file():
            assert b"SECRET-MARKER" not in path.read_bytes(), path


def test_auth_failure_stops_cleanly_and_resumes(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        server.script("ok", "ok", "ok", "401")
        result = runner.invoke(app, train_args(server.url))
        assert result.exit_code == 1, result.output
        # (the fake server may log a broken pipe for the requests moscopt abandoned)
        last = result.output.splitlines()[-2:]
        assert last[0].startswith("moscopt: stopped: ") and "HTTP 401" in last[0]
        assert last[1] == "state saved; continue with: moscopt train --resume --run runs/r1"
        run = RunDir.open(project / "runs/r1")
        assert run.load_state().status == "stopped"
        resumed = runner.invoke(app, ["train", "--resume", "--run", "runs/r1"])
        assert resumed.exit_code == 0, resumed.output
        assert MAGIC in (run.skills_dir / "careful-computation" / "SKILL.md").read_text()


def test_budget_stop_then_resume_with_more_budget(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, [*train_args(server.url), "--max-calls", "10"])
        assert result.exit_code == 1 and "budget" in result.output
        assert 0 < server.count() <= 10  # never more calls than the budget
        more = runner.invoke(app, ["train", "--resume", "--run", "runs/r1", "--max-calls", "1000"])
        assert more.exit_code == 0, more.output
        changed = runner.invoke(app, ["train", "--resume", "--run", "runs/r1", "--k", "3"])
        assert changed.exit_code == 2


def test_bad_train_input(project: Path) -> None:
    result = runner.invoke(
        app,
        ["train", "--benchmark", "nope", "--model", "openai/x", "--api-base", "http://127.0.0.1:9"],
    )
    assert result.exit_code == 2 and "unknown benchmark 'nope'" in result.output
    result = runner.invoke(
        app, ["train", "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--k", "5"]
    )
    assert result.exit_code == 2 and "K = 5 but only 3 skills" in result.output
    assert not (project / "runs").exists()
    result = runner.invoke(app, ["train", "--resume"])
    assert result.exit_code == 2 and "--resume needs --run" in result.output


def test_a_run_resumes_and_evaluates_from_another_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, [*train_args(server.url), "--max-calls", "10"])
        assert result.exit_code == 1
        frozen = (project / "runs/r1/moscopt.yaml").read_text()
        assert f"path: {project / 'addition.jsonl'}" in frozen  # --data is frozen absolute
        elsewhere = project / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        run = str(project / "runs/r1")
        resumed = runner.invoke(app, ["train", "--resume", "--run", run, "--max-calls", "1000"])
        assert resumed.exit_code == 0, resumed.output
        evaluated = runner.invoke(app, ["eval", "--run", run, "--json"])
        assert evaluated.exit_code == 0 and json.loads(evaluated.output)["score"] == 1.0


def test_an_unchanged_pool_reports_its_one_score(project: Path) -> None:
    """Regression (issue 17 §6): an unchanged pool printed two scores, measured under different
    statistics (0.167 -> 0.000 for the same digest)."""
    with FakeServer(responder=server_responder) as server:
        args = train_args(server.url)
        args[args.index("--steps-per-epoch") + 1] = "1"  # one step: the regressing edit only
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert out["pool_changed"] is False
        args[args.index("--run") + 1] = "runs/r2"
        text = runner.invoke(app, args)
        assert "(pool unchanged: no edit was accepted)" in text.output and "->" not in text.output
        assert "certificate: skipped (the run kept the pool it started from" in text.output
        assert out["certificate"]["verdict"] == "skipped"
