"""Provider batch mode (`llm.batch`, `--batch`) against the fake server's Batch API."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.config import Config
from moscopt.lm import LiteLLMClient, build_lm
from moscopt.lm.batch import BatchTransport, can_wait
from moscopt.lm.batch_store import BatchStore
from moscopt.lm.errors import BudgetExceeded
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, train_argv, write_project

runner = CliRunner()
MODEL = "openai/gpt-4o-mini"  # priced in litellm's map, with a batch price
BATCH_IN, BATCH_OUT = 7.5e-08, 3e-07  # its *_cost_per_token_batches


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(batch_polls=2) as s:
        yield s


def make_lm(server: FakeServer, tmp_path: Path, **llm: Any) -> LiteLLMClient:
    settings = {"batch": True, "batch_poll": 0.01, "backoff_base": 0.0, "backoff_max": 0.0}
    config = Config.model_validate(
        {"model": MODEL, "api_base": server.url, "seed": 1, "llm": {**settings, **llm}}
    )
    lm = build_lm(config, cache_dir=tmp_path / "cache", record=tmp_path / "run" / "used.txt")
    assert isinstance(lm.transport, BatchTransport)
    lm.transport._quiet = 0.05  # the wave closes sooner than in a real run
    return lm


def ask(lm: LiteLLMClient, n: int, *, wait: bool = True, start: int = 0) -> list[Any]:
    async def wave() -> list[Any]:
        with can_wait(wait):
            calls = [
                lm.acomplete([{"role": "user", "content": f"question {i}"}])
                for i in range(start, start + n)
            ]
            return await asyncio.gather(*calls, return_exceptions=True)

    return asyncio.run(wave())


def test_a_wave_of_n_requests_is_one_batch_at_the_batch_price(
    server: FakeServer, tmp_path: Path
) -> None:
    lm = make_lm(server, tmp_path)
    keys = {lm.request([{"role": "user", "content": f"question {i}"}]).key() for i in range(12)}
    try:
        answers = ask(lm, 12)
    finally:
        lm.close()
    assert [a.text for a in answers] == [f"echo: question {i}" for i in range(12)]
    assert server.count() == 0  # no chat completion: every answer came from the batch
    (batch,) = server.batches.created
    assert len(batch.lines) == 12 and batch.retrievals == 3  # 2 polls in progress, then done
    assert {line["custom_id"] for line in batch.lines} == keys  # the requests' cache keys
    a = answers[0]
    assert a.deployment == f"batch:{batch.id}"
    expected = a.usage.prompt_tokens * BATCH_IN + a.usage.completion_tokens * BATCH_OUT
    assert a.cost == pytest.approx(expected) and a.cost > 0
    assert lm.stats.calls == 12 and lm.transport.stats.batched == 12  # type: ignore[attr-defined]
    (record,) = BatchStore(tmp_path / "run" / "batches").records()
    assert record.batch_id == batch.id and record.status == "completed"
    assert len(record.custom_ids) == 12


def test_the_answers_are_cached_as_any_answer(server: FakeServer, tmp_path: Path) -> None:
    lm = make_lm(server, tmp_path)
    try:
        first = ask(lm, 5)
        again = ask(lm, 5)  # cache hits: no new batch, no call
    finally:
        lm.close()
    assert [a.text for a in again] == [a.text for a in first]
    assert all(a.cache_hit for a in again)
    assert len(server.batches.created) == 1 and server.count() == 0


def test_calls_outside_a_wave_that_can_wait_take_the_normal_path(
    server: FakeServer, tmp_path: Path
) -> None:
    lm = make_lm(server, tmp_path)
    try:
        answers = ask(lm, 4, wait=False)
    finally:
        lm.close()
    assert [a.text for a in answers] == [f"echo: question {i}" for i in range(4)]
    assert server.count() == 4 and server.batches.created == []


def test_batch_size_caps_a_batch(server: FakeServer, tmp_path: Path) -> None:
    lm = make_lm(server, tmp_path, batch_size=4)
    try:
        answers = ask(lm, 10)
    finally:
        lm.close()
    assert len(answers) == 10 and all(not isinstance(a, Exception) for a in answers)
    assert sorted(len(b.lines) for b in server.batches.created) == [2, 4, 4]


@pytest.mark.parametrize(("outcome", "from_batch"), [("failed", 0), ("expired", 3)])
def test_what_a_batch_does_not_answer_is_sent_on_the_normal_path(
    server: FakeServer, tmp_path: Path, outcome: str, from_batch: int
) -> None:
    server.batches.script_batch(outcome)
    lm = make_lm(server, tmp_path)
    try:
        answers = ask(lm, 6)
    finally:
        lm.close()
    assert [a.text for a in answers] == [f"echo: question {i}" for i in range(6)]
    assert sum(a.deployment is not None for a in answers) == from_batch
    assert server.count() == 6 - from_batch  # the rest, once each
    assert lm.transport.stats.fallbacks == 6 - from_batch  # type: ignore[attr-defined]
    (record,) = BatchStore(tmp_path / "run" / "batches").records()
    assert record.status == outcome


def test_a_line_with_an_error_falls_back_alone(server: FakeServer, tmp_path: Path) -> None:
    lm = make_lm(server, tmp_path)
    key = lm.request([{"role": "user", "content": "question 2"}]).key()
    server.batches.line_errors.add(key)
    try:
        answers = ask(lm, 4)
    finally:
        lm.close()
    assert [a.deployment is None for a in answers] == [False, False, True, False]
    assert server.count() == 1 and server.log[0].body["messages"][0]["content"] == "question 2"


def test_a_batched_call_is_one_call_of_the_budget_reserved_before_submission(
    server: FakeServer, tmp_path: Path
) -> None:
    lm = make_lm(server, tmp_path, max_calls=5)
    try:
        answers = ask(lm, 8)
    finally:
        lm.close()
    refused = [a for a in answers if isinstance(a, BudgetExceeded)]
    assert len(refused) == 3
    (batch,) = server.batches.created
    assert len(batch.lines) == 5  # the refused calls were never submitted
    assert lm.budget.calls == 5 and server.count() == 0


# -- end to end, through the CLI -------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def evaluate(url: str, *extra: str) -> list[str]:
    return [
        "eval", "--benchmark", "addition.yaml", "--model", MODEL, "--api-base", url,
        "--data", "addition.jsonl", "--mode", "none", "--split", "all", "--json",
        "--set", "llm.batch_poll=0.01", *extra,
    ]  # fmt: skip


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_batched_eval_scores_as_the_unbatched_one(project: Path) -> None:
    with FakeServer(responder=server_responder, batch_polls=1) as server:
        plain = runner.invoke(app, evaluate(server.url, "--no-cache", "--out", "plain.jsonl"))
        assert plain.exit_code == 0, plain.output
        direct = server.count()
        assert direct == 14 and server.batches.created == []
        batched = runner.invoke(app, evaluate(server.url, "--batch", "--out", "batched.jsonl"))
        assert batched.exit_code == 0, batched.output
        assert server.count() == direct  # not one chat completion more
        (batch,) = server.batches.created
        assert len(batch.lines) == 14
    assert json.loads(batched.output)["score"] == json.loads(plain.output)["score"]
    texts = [(r["task_id"], r["reward"]) for r in rows(project / "batched.jsonl")]
    assert texts == [(r["task_id"], r["reward"]) for r in rows(project / "plain.jsonl")]


def test_a_killed_eval_collects_its_batch_when_run_again(project: Path) -> None:
    batches = project / ".moscopt" / "cache" / "batches"
    with FakeServer(responder=server_responder, batch_polls=10**6) as server:
        expected = runner.invoke(app, evaluate(server.url, "--no-cache", "--out", "plain.jsonl"))
        assert expected.exit_code == 0, expected.output
        server.reset()
        args = [sys.executable, "-m", "moscopt", *evaluate(server.url, "--batch")]
        child = subprocess.Popen(
            args, cwd=project, env=dict(os.environ), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not list(batches.glob("*.json")):  # the kill point: the batch id is on disk
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
                assert time.monotonic() < deadline, "no batch was recorded"
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(timeout=10)
        (batch,) = server.batches.created
        polled = batch.retrievals
        assert polled < 10**6 and not (project / "eval-addition-all-none.jsonl").exists()
        batch.polls_left = 1  # the provider finishes it while nobody is waiting
        again = runner.invoke(app, evaluate(server.url, "--batch"))
        assert again.exit_code == 0, again.output
        assert len(server.batches.created) == 1  # collected, never submitted again
        assert batch.retrievals > polled and server.count() == 0
    assert json.loads(again.output)["score"] == json.loads(expected.output)["score"]
    (record,) = BatchStore(batches).records()
    assert record.status == "completed" and record.batch_id == batch.id


@pytest.mark.parametrize(
    ("model", "extra"),
    [("hosted_vllm/qwen", ["--api-base", "http://127.0.0.1:9/v1"]), ("anthropic/claude-x", [])],
)
def test_a_model_that_cannot_batch_is_refused_naming_the_flag(
    project: Path, monkeypatch: pytest.MonkeyPatch, model: str, extra: list[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # the key check passes; batching cannot
    args = ["eval", "--batch", "--model", model, "--benchmark", "addition.yaml"]
    result = runner.invoke(app, [*args, "--data", "addition.jsonl", "--mode", "none", *extra])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line == (
        f"moscopt: error: --batch needs an openai/ model (litellm's batch API), not '{model}': "
        "drop --batch for this model"
    )


def train(url: str, run: str, *extra: str) -> list[str]:
    return train_argv(url, run, "--no-cache", "--set", "llm.batch_poll=0.01", *extra, model=MODEL)


def calls(run: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e["type"] == "llm_call" and not e.get("cache_hit")]


def test_training_batches_its_validation_and_nothing_else(project: Path) -> None:
    with FakeServer(responder=server_responder, batch_polls=1) as server:
        plain = runner.invoke(app, train(server.url, "runs/plain"))
        assert plain.exit_code == 0, plain.output
        assert server.batches.created == []
        batched = runner.invoke(app, train(server.url, "runs/batched", "--batch"))
        assert batched.exit_code == 0, batched.output
        lines = sum(len(b.lines) for b in server.batches.created)
    made = calls(project / "runs/batched")
    by_batch = [c for c in made if (c.get("deployment") or "").startswith("batch:")]
    assert len(by_batch) == lines > 0  # every line answered one call
    assert len(made) - len(by_batch) > 0  # the minibatch and the optimizer: the normal path
    assert len(made) == len(calls(project / "runs/plain"))  # the same calls, the same run
    status = [
        json.loads(runner.invoke(app, ["status", "--run", f"runs/{r}", "--json"]).output)
        for r in ("plain", "batched")
    ]
    for field in ("best_val_score", "edits", "acceptance"):  # the same decisions
        assert status[0][field] == status[1][field]
