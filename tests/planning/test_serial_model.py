"""A model that answers one request at a time (the embedded one): the plan takes its real
concurrency, 1, and times calls by the seconds it spends answering, queueing left out; the
report splits a call's latency into answering and queueing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.planning.serial import pilot_answering
from moscopt.run.call_timing import mean_timing, one_at_a_time, queueing_words
from moscopt.run.ledger import LLMCall

runner = CliRunner()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def call(end: float, latency: float, purpose: str = "agent", model: str = "local/smollm2",
         hit: bool = False) -> LLMCall:  # fmt: skip
    t = (T0 + timedelta(seconds=end)).isoformat(timespec="milliseconds")
    return LLMCall(t=t, model=model, purpose=purpose, latency=latency, cache_hit=hit)


def test_queueing_is_told_from_answering_on_a_serial_model() -> None:
    # three calls asked together at 0, answered in 1 s each: they end at 1, 2 and 3
    calls = [call(3, 3.0), call(1, 1.0), call(2, 2.0), call(2.5, 0.0, hit=True)]
    timed = one_at_a_time(calls)
    assert [(t.answering, t.queued) for _, t in timed] == [(1.0, 0.0), (1.0, 1.0), (1.0, 2.0)]
    # a call asked after the model went idle waited for nothing
    assert [t.queued for _, t in one_at_a_time([call(1, 1.0), call(5, 0.5)])] == [0.0, 0.0]
    mean = mean_timing(timed)
    assert mean is not None and (mean.answering, mean.queued) == (1.0, 1.0)
    assert queueing_words(calls) == (
        "local/smollm2 answers one request at a time: per call 1.00 s answering + 1.00 s "
        "queued behind other calls (3 calls)"
    )
    assert queueing_words([call(1, 1.0, model="openai/x")]) is None  # not a serial model
    roles = pilot_answering([*calls, call(4, 2.0, "propose-skill")], ("agent", "gate"))
    assert roles == {
        "agent": {"answering": 1.0, "queued": 1.0},
        "optimizer": {"answering": 1.0, "queued": 1.0},
    }


def test_plan_of_the_embedded_model_is_one_call_after_another(project: Path) -> None:
    args = ["plan", "--benchmark", "addition.yaml", "--data", "addition.jsonl"]
    args += ["--n", "3", "--k", "2", "--epochs", "1", "--steps-per-epoch", "2"]
    args += ["--no-pilot", "--latency", "2", "--set", "llm.concurrency=8"]
    local = runner.invoke(app, [*args, "--model", "local/smollm2", "--json"])
    assert local.exit_code == 0, local.output
    data = json.loads(local.stdout)
    assert data["serial"] is True and data["shape"]["concurrency"] == 1
    for row in data["phases"]:  # every call waits for the one before: calls x 2 s
        assert abs(row["seconds"] - 2 * row["calls"]) < 0.2, row
    remote = runner.invoke(
        app, [*args, "--model", "openai/x", "--api-base", "http://127.0.0.1:9", "--json"]
    )
    assert remote.exit_code == 0, remote.output
    other = json.loads(remote.stdout)
    assert other["serial"] is False and other["shape"]["concurrency"] == 8
    assert other["total"]["seconds"] < data["total"]["seconds"] / 2  # 8 at once
    table = runner.invoke(app, [*args, "--model", "local/smollm2"])
    assert "local/smollm2 answers one request at a time: concurrency 1 whatever" in " ".join(
        table.stdout.split()
    )
