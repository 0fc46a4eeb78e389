"""A flag that does not apply to the chosen benchmark is an error (exit 2, nothing created), and
a run whose process is gone is interrupted: not running, not what `route`/`export` pick."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.rundir import LOCK_FILE, RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

runner = CliRunner()


def test_data_with_a_generated_benchmark_is_an_error(project: Path) -> None:
    for command in (["train"], ["eval"], ["plan", "--no-pilot"]):
        result = runner.invoke(app, [*command, "--benchmark", "offline", "--data", "missing.jsonl"])
        assert result.exit_code == 2, result.output
        assert "data.path" in result.output and "offline" in result.output
        assert "leave out --data" in result.output
    assert not (project / "runs").exists()  # no run was started


def test_a_run_whose_process_is_gone_is_interrupted(tmp_path: Path, scripted_run: RunDir) -> None:
    run = RunDir(shutil.copytree(scripted_run.path, tmp_path / "run"))
    state = json.loads(run.state_path.read_text())
    state["status"] = "running"  # what a SIGKILLed or hard-exited process leaves
    run.state_path.write_text(json.dumps(state))
    assert run.condition() == "interrupted" and not run.in_use()
    with RunDir(run.path).locked():  # a live process holds it
        assert run.in_use() and run.condition() == "running"
    assert (run.path / LOCK_FILE).exists() and run.condition() == "interrupted"
    state["status"] = "new"  # made, killed before it saved anything
    run.state_path.write_text(json.dumps(state))
    assert run.condition() == "interrupted"
    state["status"] = "done"
    run.state_path.write_text(json.dumps(state))
    assert run.condition() == "done"


@pytest.fixture
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    from moscopt.testing.scripted import make_run, scripted_lm, train_run

    root = tmp_path_factory.mktemp("scripted")
    run, config, bench, sp, seeds = make_run(
        root, Path(__file__).resolve().parents[2] / "skills", **{"training.epochs": 1}
    )
    train_run(run, config, bench, sp, seeds, scripted_lm())
    return RunDir.open(run.path)


def test_route_and_export_pass_over_an_unfinished_latest_run(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        trained = runner.invoke(
            app,
            [
                "train", "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--model",
                "openai/scripted", "--api-base", server.url, "--n", "3", "--k", "2", "--epochs",
                "1", "--steps-per-epoch", "1", "--run", "runs/finished", "--no-evolution",
            ],
        )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    finished = project / "runs" / "finished"
    killed = shutil.copytree(finished, project / "runs" / "killed")
    state = json.loads((killed / "state.json").read_text())
    state["status"], state["created_at"] = "running", "2999-01-01T00:00:00+00:00"
    (killed / "state.json").write_text(json.dumps(state))
    shown = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert shown["run"].endswith("killed") and shown["status"] == "interrupted"  # as it is
    exported = runner.invoke(app, ["export", "--mode", "static", "--json"])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout)["out"] == str(finished.resolve() / "exports" / "static")
    routed = runner.invoke(app, ["route", "Compute 2 + 2.", "--mode", "static", "--json"])
    assert routed.exit_code == 0, routed.output
    assert str(finished.resolve()) in json.dumps(json.loads(routed.stdout))
    shutil.rmtree(finished)
    none = runner.invoke(app, ["export", "--mode", "static"])
    assert none.exit_code == 2
    assert "no finished run: the latest is interrupted" in " ".join(none.output.split())


def test_other_flags_that_do_not_apply(project: Path) -> None:
    no_pilot = runner.invoke(app, ["train", "--benchmark", "addition.yaml", "--no-pilot"])
    assert no_pilot.exit_code == 2 and "--no-pilot only applies with --dry-run" in no_pilot.output
    grader = runner.invoke(app, ["stream", "--benchmark", "addition.yaml", "--grader", "exact"])
    assert grader.exit_code == 2 and "--grader grades a --tasks file" in grader.output
    assert not (project / "runs").exists()
