"""Failures that must be loud: a run whose LLM calls mostly fail stops (exit 1, one line quoting
the provider, redacted; resumable to the result an undisturbed run gives), and a disk that is
full or read-only ends in one line naming the path, exit 1, with the saved state intact.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.app.workspace import make_trainer
from moscopt.cli import app
from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMRequestError
from moscopt.optimizer.policies.error_rate import ErrorRate, ErrorRateExceeded
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.fake_http import LoopbackHTTPServer, completion_body, error_body, send_json
from moscopt.testing.scripted import make_run, respond, server_responder

from .helpers import snapshot, train_args

runner = CliRunner()
KEY = "sk-LOUD-MARKER-7d31c9a0e5"
RESUME = ["train", "--resume", "--run", "runs/r1", "--max-calls", "100000"]


class Provider:
    """A loopback OpenAI-style endpoint that refuses every request with HTTP 400 (quoting the
    caller's key, as some providers echo a header) while `broken`, else answers like the
    scripted server."""

    def __init__(self) -> None:
        self.broken = True
        self.requests = 0
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.requests += 1
                if provider.broken:
                    message = f"Invalid 'temperature': above maximum (request by {KEY})"
                    send_json(self, 400, error_body(message, "invalid_request_error"))
                else:
                    send_json(self, 200, completion_body(body, server_responder(body), 0))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Provider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def summary(run: RunDir) -> tuple[Any, ...]:
    state = run.load_state()
    val = [(p.epoch, p.step, p.phase, p.score) for p in state.val_history]
    return (state.status, run.load_pool().digest(), state.q, state.activations, val)


# -- the error rate ------------------------------------------------------------------------------


def test_error_rate_judges_each_step_against_the_threshold() -> None:
    rate = ErrorRate(0.5)
    step0, step1, step2 = (0, "skills", 0), (0, "skills", 1), (0, "gate", 1)
    for ok in (False, False, True, True):  # 2 of 4: not more than half
        rate.start(step0)
        rate.finish(step0, ok=ok, error="HTTP 400: nope")
    rate.start(step1)  # step 0 ended and is judged: fine
    rate.finish(step1, ok=False, error="HTTP 400: the only call")
    rate.start(step2)  # step 1 made one call: too few to judge
    for _ in range(2):
        rate.finish(step2, ok=False, error=f"HTTP 400: bad request {KEY}")
    rate.start(step2)
    rate.finish(step2, ok=True)
    with pytest.raises(ErrorRateExceeded) as e:
        rate.check(step2, include_current=True)  # 2 of 3 failed
    assert str(e.value).startswith("2 of the 3 LLM calls of step 1 (gate phase, epoch 1) failed")
    assert "bad request" in str(e.value) and KEY not in str(e.value)
    with pytest.raises(ErrorRateExceeded):  # the verdict stands
        rate.start((1, "skills", 5))
    never = ErrorRate(1.0)
    for _ in range(20):
        never.start(step0)
        never.finish(step0, ok=False)
    never.check(step1)


def test_a_run_whose_calls_all_fail_stops_before_saving_and_resumes_to_the_clean_result(
    tmp_path: Path, seed_dir: Path
) -> None:
    def refused(request: LMRequest) -> str:
        raise LMRequestError("model 'fake/model': request refused (HTTP 400: bad temperature)")

    def train(run: RunDir, responder: Any, parts: tuple[Any, ...]) -> None:
        config, bench, sp, seeds = parts
        trainer = make_trainer(
            run=RunDir.open(run.path),
            config=config,
            benchmark=bench,
            splits=sp,
            agent_lm=FakeLM(responder=responder),
            optimizer_lm=FakeLM(responder=responder),
            seeds=seeds,
        )
        asyncio.run(trainer.train())

    reference, *parts = make_run(tmp_path / "ref", seed_dir)
    train(reference, respond, tuple(parts))
    run, *parts = make_run(tmp_path / "broken", seed_dir)
    before = snapshot(run.path)
    with pytest.raises(ErrorRateExceeded, match=r"HTTP 400: bad temperature"):
        train(run, refused, tuple(parts))
    state = RunDir.open(run.path).load_state()
    assert state.val_history == [] and state.cursor.best_val is None  # no score of 0 saved
    assert {k: v for k, v in snapshot(run.path).items() if k != "events.jsonl"} == {
        k: v for k, v in before.items() if k != "events.jsonl"
    }
    train(run, respond, tuple(parts))
    assert summary(RunDir.open(run.path)) == summary(reference)


def test_train_against_a_provider_refusing_every_call_exits_1_and_resumes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Provider() as provider:
        result = runner.invoke(app, train_args(provider.url))
        assert result.exit_code == 1, result.output
        # the phase's "start" line, then the reason
        first = next(x for x in result.output.splitlines() if x.startswith("moscopt: stopped: "))
        assert "of the" in first, first
        assert "failed, more than llm.max_error_rate = 0.5" in first
        assert "HTTP 400: Invalid 'temperature': above maximum" in first
        assert KEY not in result.output
        assert provider.requests < 20  # it stopped during the first rollout and validation
        run = RunDir.open(project / "runs/r1")
        assert run.load_state().status == "stopped"
        provider.broken = False
        resumed = runner.invoke(app, ["train", "--resume", "--run", "runs/r1"])
        assert resumed.exit_code == 0, resumed.output
        reference = runner.invoke(app, train_args(provider.url, "runs/ref"))
        assert reference.exit_code == 0, reference.output
    assert summary(RunDir.open(project / "runs/r1")) == summary(RunDir.open(project / "runs/ref"))


# -- the disk refuses a write ---------------------------------------------------------------------


@pytest.fixture
def stopped_run(project: Path) -> Iterator[tuple[Path, str]]:
    """A run stopped by its call budget (resumable), and the server it talks to."""
    from moscopt.testing import FakeServer

    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, [*train_args(server.url), "--max-calls", "12"])
        assert result.exit_code == 1 and "stopped" in result.output, result.output
        yield project / "runs/r1", server.url


def refuse_writes_under(
    monkeypatch: pytest.MonkeyPatch, root: Path, error: int, *, after: int = 0
) -> None:
    """Writes under `root` fail with `error` (after `after` successful ones), as a full or a
    read-only filesystem makes them fail (the tests run as root, where chmod cannot)."""
    real_open, real_replace, real_write = os.open, os.replace, os.write
    seen = [0]
    mine: set[int] = set()

    def under(path: Any) -> bool:
        return os.path.abspath(path).startswith(str(root))

    def refuse(path: Any) -> None:
        if under(path):
            seen[0] += 1
            if seen[0] > after:
                raise OSError(error, os.strerror(error), str(path))

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        fd = real_open(path, flags, *args, **kwargs)
        if under(path):
            mine.add(fd)
        return fd

    def fake_replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        refuse(dst)
        real_replace(src, dst, *args, **kwargs)

    def fake_write(fd: int, data: Any) -> int:
        if fd in mine:
            refuse(root)
        return real_write(fd, data)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "replace", fake_replace)
    monkeypatch.setattr(os, "write", fake_write)


@pytest.mark.parametrize(
    "error", [errno.ENOSPC, errno.EROFS, errno.EACCES], ids=["ENOSPC", "EROFS", "EACCES"]
)
def test_resume_on_a_disk_that_refuses_writes_is_one_line_exit_1(
    stopped_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    run, _ = stopped_run
    before = snapshot(run)
    saved = RunDir.open(run).load_state()
    with monkeypatch.context() as mp:
        refuse_writes_under(mp, run, error, after=0 if error != errno.ENOSPC else 3)
        result = runner.invoke(app, RESUME)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith("moscopt: cannot write runs/r1/"), lines
    assert f"{os.strerror(error)} ({errno.errorcode[error]})" in lines[0]
    if error != errno.ENOSPC:  # refused before anything was written
        assert snapshot(run) == before
    state = RunDir.open(run).load_state()  # intact: loads, and resumes once the disk is back
    assert state.step >= saved.step and state.status in ("stopped", "running")
    resumed = runner.invoke(app, RESUME)
    assert resumed.exit_code == 0, resumed.output


def test_eval_and_report_into_a_read_only_run_are_one_line_exit_1(
    stopped_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _ = stopped_run
    before = snapshot(run)
    commands = {
        "eval": ["eval", "--run", "runs/r1", "--split", "test"],
        "report": ["report", "--run", "runs/r1"],
    }
    for name, args in commands.items():
        with monkeypatch.context() as mp:
            refuse_writes_under(mp, run, errno.EROFS)
            result = runner.invoke(app, args)
        assert result.exit_code == 1, (name, result.output)
        lines = [line for line in result.output.strip().splitlines() if "note:" not in line]
        assert len(lines) == 1 and lines[0].startswith("moscopt: cannot write runs/r1/"), lines
        assert "Read-only file system (EROFS)" in lines[0]
    assert snapshot(run) == before
