"""The tracing hub, with no tracing library needed: observers are fed from the ledger and the
progress seam, a failing observer is logged once and dropped while the run goes on, a missing
extra is one clear error before the run starts, and nothing heavy is imported."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.config import Config
from moscopt.run.ledger import LLMCall, RolloutEvent
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder
from moscopt.tracing import Tracing, hub
from moscopt.tracing.base import StepRows
from moscopt.tracing.runs import run_info

from .helpers import Recording, eval_args, logged, train_args

runner = CliRunner()


def test_observers_hear_every_ledger_event_and_each_step(
    project: Path, plugged: dict[str, Recording]
) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, "--trace", "otel"))
    assert result.exit_code == 0, result.output
    seen = plugged["otel"]
    run = project / "runs/r1"
    (info,) = seen.started
    assert info.kind == "train" and info.name == "r1" and info.path == run.resolve()
    assert info.params["pool.k"] == 2 and info.params["tracing.observers"] == ["otel"]
    assert info.attributes["benchmark"] == "addition"
    # every line of the ledger, in order, LM calls included (stamped with where they happened)
    lines = [e["type"] for e in map(json.loads, (run / "events.jsonl").open())]
    assert [getattr(e, "type", "") for e in seen.events] == lines
    calls = [e for e in seen.events if isinstance(e, LLMCall)]
    assert len(calls) == len(logged(run, "llm_call")) > 0
    assert all(c.step is not None and c.phase for c in calls)
    # the progress seam: steps and the end, never each call
    kinds = [u["event"] for u in seen.updates]
    assert kinds.count("step") == 3 and kinds[-1] == "done" and "call" not in kinds
    (end,) = seen.ended
    assert end.status == "done"
    assert end.metrics["val_after"] == 1.0 and end.metrics["calls"] > 0
    assert end.artifacts["skills"] == (run / "skills").resolve()


def test_a_failing_observer_is_logged_once_and_dropped_the_run_goes_on(
    project: Path,
    plugged: dict[str, Recording],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = Recording("mlflow", fail_on="event")
    plugged["mlflow"] = broken
    caplog.set_level(logging.WARNING, logger="moscopt.tracing")
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, "--trace", "mlflow", "--trace", "otel"))
    assert result.exit_code == 0, result.output
    warnings = [r for r in caplog.records if r.name == "moscopt.tracing.hub"]
    assert len(warnings) == 1
    assert "mlflow observer failed (event)" in warnings[0].getMessage()
    assert "mlflow broke in event" in warnings[0].getMessage()
    assert broken.calls == 2 and not broken.ended  # start, the first event: then never again
    healthy = plugged["otel"]
    assert healthy.ended and healthy.ended[0].status == "done"  # the other one heard it all
    assert len(healthy.events) == len((project / "runs/r1/events.jsonl").read_text().splitlines())


def test_an_observer_that_fails_to_start_is_dropped(project: Path) -> None:
    config = Config.model_validate({})
    tracing = Tracing([Recording("a", fail_on="start"), ok := Recording("b")], _info(config))
    tracing.event(RolloutEvent(batch=0, task_id="t", skills=[], reward=1.0))
    tracing.finish(hub.RunEnd())
    assert set(tracing.failed) == {"a"} and len(ok.events) == 1 and ok.ended


def test_a_stopped_run_finishes_its_observers_as_stopped(
    project: Path, plugged: dict[str, Recording]
) -> None:
    with FakeServer(responder=server_responder) as server:
        server.script("ok", "401")  # a bad key after the first call: the run stops
        result = runner.invoke(app, train_args(server.url, "--trace", "wandb"))
    assert result.exit_code == 1, result.output
    (end,) = plugged["wandb"].ended
    assert end.status == "stopped" and end.error == "LMAuthError"


def test_a_missing_extra_is_one_clear_error_before_the_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(hub.EXTRAS, "wandb", ("no_such_tracing_library", "wandb"))
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, "--trace", "wandb"))
        evaluated = runner.invoke(app, eval_args(server.url, "--trace", "wandb"))
        assert server.count() == 0
    for outcome in (result, evaluated):
        assert outcome.exit_code == 2, outcome.output
        assert "pip install 'moscopt[wandb]'" in outcome.output
        assert "Traceback" not in outcome.output
    assert not (project / "runs").exists()  # no run was made


def test_trace_is_checked_as_a_choice(project: Path) -> None:
    result = runner.invoke(app, train_args("http://127.0.0.1:9/v1", "--trace", "jaeger"))
    assert result.exit_code == 2 and "jaeger" in result.output


def test_a_resumed_run_may_be_traced(project: Path, plugged: dict[str, Recording]) -> None:
    with FakeServer(responder=server_responder) as server:
        first = runner.invoke(app, [*train_args(server.url), "--max-calls", "20"])
        assert first.exit_code == 1, first.output  # stopped by its budget
        resumed = runner.invoke(
            app, ["train", "--resume", "--run", "runs/r1", "--max-calls", "999", "--trace", "otel"]
        )
    assert resumed.exit_code == 0, resumed.output
    (info,) = plugged["otel"].started
    assert info.resumed and plugged["otel"].ended[0].status == "done"


def test_step_rows_count_each_step_and_keep_the_progress_totals() -> None:
    rows = StepRows()
    for reward in (1.0, 0.0):
        rows.event(RolloutEvent(batch=0, task_id="t", skills=[], reward=reward))
    rows.event(LLMCall(model="m", purpose="agent", cache_hit=True))
    rows.event(LLMCall(model="m", purpose="agent", ok=False))
    assert rows.row({"event": "phase", "step": 0}) is None
    update = {"event": "step", "step": 1, "epoch": 0, "best_val": 0.5, "accepted": 1,
              "rejected": 2, "calls": 7, "tokens": 70, "cost": 0.01}  # fmt: skip
    step, row = rows.row(update) or (None, {})
    assert step == 1
    assert row == {
        "epoch": 0.0, "val_score": 0.5, "edits_accepted": 1.0, "edits_rejected": 2.0,
        "calls": 7.0, "tokens": 70.0, "cost_usd": 0.01, "train_reward": 0.5,
        "step_calls": 2, "step_errors": 1, "step_cache_hits": 1,
    }  # fmt: skip
    _, after = rows.row({**update, "step": 2, "best_val": None}) or (None, {})
    assert "val_score" not in after and "train_reward" not in after and after["step_calls"] == 0


def test_tracing_imports_no_tracing_library() -> None:
    code = (
        "import sys, moscopt.app.runner, moscopt.tracing.runs\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('mlflow', 'wandb')\n"
        "         or m.startswith('opentelemetry.sdk')]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _info(config: Config) -> hub.RunInfo:
    return run_info(config, "train", "r")


def test_the_library_api_traces_by_its_config(
    tmp_path: Path, seed_dir: Path, plugged: dict[str, Recording]
) -> None:
    import moscopt
    from moscopt.core.skills import Pool
    from moscopt.testing.scripted import scripted_lm

    rows = [{"question": f"Compute {i} + {i}.", "answer": str(2 * i)} for i in range(30)]
    seeds = Pool.load(seed_dir, require_gate=True)
    names = ("careful-computation", "cautious-planner", "detail-verifier")
    skills = Pool(skills=tuple(seeds.get(n) for n in names), gate=seeds.gate)
    config = {"pool.n": 3, "pool.k": 2, "training.epochs": 1, "training.max_steps_per_epoch": 2,
              "evolution.enabled": False, "tracing.observers": ["mlflow"]}  # fmt: skip
    result = moscopt.train(
        rows,
        grader="numeric",
        skills=skills,
        config=config,
        lm=scripted_lm(),
        run_dir=tmp_path / "r",
    )
    seen = plugged["mlflow"]
    assert seen.started[0].name == "r" and seen.started[0].kind == "train"
    assert {"train_start", "rollout", "edit"} <= {getattr(e, "type", "") for e in seen.events}
    assert [u["event"] for u in seen.updates].count("step") >= 1
    (end,) = seen.ended
    assert end.status == "done" and end.metrics["val_after"] == result.after


def test_trace_comes_from_the_environment_once_per_observer(
    project: Path, plugged: dict[str, Recording], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOSCOPT_TRACE", "wandb otel wandb")
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, steps=1))
    assert result.exit_code == 0, result.output
    assert set(plugged) == {"wandb", "otel"}
    assert all(len(r.started) == 1 and len(r.ended) == 1 for r in plugged.values())
