"""The `mlflow` observer against a local sqlite tracking store in a temp folder: a short
training run, then the same run resumed, and what the store holds (parameters, per-step
metrics, final metrics, artifacts, status)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")  # the local store (part of the extra)

from mlflow import MlflowClient
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import eval_args, train_args

runner = CliRunner()


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One store for the module (making its tables takes seconds); each test its experiment."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def store(store_uri: str, monkeypatch: pytest.MonkeyPatch) -> MlflowClient:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store_uri)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    return MlflowClient(tracking_uri=store_uri)


def runs_of(client: MlflowClient, experiment: str = "moscopt") -> list[Any]:
    found = client.get_experiment_by_name(experiment)
    assert found is not None, experiment
    return list(client.search_runs([found.experiment_id]))


def steps_of(client: MlflowClient, run_id: str, key: str) -> list[int]:
    return [m.step for m in client.get_metric_history(run_id, key)]


def test_a_training_run_and_its_resumption_are_one_mlflow_run(
    project: Path, store: MlflowClient
) -> None:
    with FakeServer(responder=server_responder) as server:
        first = runner.invoke(
            app, [*train_args(server.url, "--trace", "mlflow"), "--max-calls", "40"]
        )
        assert first.exit_code == 1, first.output  # stopped by its budget
        (stopped,) = runs_of(store)
        assert stopped.info.status == "KILLED"
        done = runner.invoke(
            app, ["train", "--resume", "--run", "runs/r1", "--max-calls", "999"]
        )  # the frozen config keeps tracing on
    assert done.exit_code == 0, done.output
    (run,) = runs_of(store)
    assert run.info.run_id == stopped.info.run_id and run.info.status == "FINISHED"
    assert run.info.run_name == "r1"
    tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
    assert tags["moscopt.kind"] == "train" and tags["moscopt.benchmark"] == "addition"
    assert params["pool.k"] == "2" and params["model"] == "openai/scripted"
    assert params["optimizer.acceptance"] == "paired"
    # one row per step of the trainer (2 skill steps, 1 gate step), over both processes
    steps = steps_of(store, run.info.run_id, "val_score")
    assert sorted(set(steps)) == [1, 2, 3]
    for key in ("edits_accepted", "edits_rejected", "calls", "tokens", "cost_usd", "step_calls"):
        assert set(steps_of(store, run.info.run_id, key)) == {1, 2, 3}, key
    assert metrics["val_after"] == 1.0 and metrics["edits_accepted"] >= 1
    assert "certificate_final_score" in metrics and metrics["calls"] > 40
    files = {a.path for a in store.list_artifacts(run.info.run_id)}
    assert files == {"moscopt.yaml", "skills"}
    skills = {a.path for a in store.list_artifacts(run.info.run_id, "skills")}
    assert "skills/gate" in skills and "skills/careful-computation" in skills


def test_an_evaluation_is_a_run_with_its_score_and_results(
    project: Path, store: MlflowClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "moscopt.yaml").write_text("tracing:\n  observers: [mlflow]\n  project: evals\n")
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, eval_args(server.url, "--json"))
    assert result.exit_code == 0, result.output
    (run,) = runs_of(store, "evals")
    assert run.info.status == "FINISHED" and run.data.tags["moscopt.kind"] == "eval"
    assert run.data.tags["moscopt.split"] == "test"
    assert 0.0 <= run.data.metrics["score"] <= 1.0 and run.data.metrics["tasks"] >= 1
    (results,) = store.list_artifacts(run.info.run_id)
    assert results.path.startswith("eval-addition-test-mixture") and results.path.endswith(".jsonl")
