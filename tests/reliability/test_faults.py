"""Transient faults end to end: 20% of requests fail (429, 500, timeout, dropped connection).

`moscopt eval` and `moscopt train` against the loopback server must finish with every task scored
exactly once and the same result as a fault-free run: retries are invisible in the outcome. A
permanent 401 stops with a clear message and exit code 1.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import common, train_args

runner = CliRunner()
FAULTS = ("429", "500", "timeout", "drop")


def faulty(seed: int) -> FakeServer:
    # `hang` (how long a "timeout" request is held) exceeds llm.timeout (0.5 s) in FAST_RETRIES
    return FakeServer(
        responder=server_responder,
        fault_rate=0.2,
        faults=FAULTS,
        seed=seed,
        hang=1.0,
        retry_after="0",
    )


def eval_rows(project: Path, url: str, out: str) -> list[dict[str, Any]]:
    args = ["eval", "--benchmark", "addition.yaml", *common(url), "--skills", "skills"]
    result = runner.invoke(app, [*args, "--split", "all", "--out", out, "--json"])
    assert result.exit_code == 0, result.output
    lines = (project / out).read_text().splitlines()
    return [json.loads(line) for line in lines]


def outcome(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["task_id"], r["reward"], r["answer"], tuple(r["skills"])) for r in rows)


def test_eval_under_faults_scores_every_task_once_and_matches(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(responder=server_responder) as clean:
        reference = eval_rows(project, clean.url, "clean.jsonl")
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(project / "cache-faulty"))  # its own answers
    with faulty(seed=7) as server:
        rows = eval_rows(project, server.url, "faulty.jsonl")
        injected = sum(server.count(f) for f in FAULTS)
    assert injected >= 3, "the server injected too few faults to test anything"
    ids = [r["task_id"] for r in rows]
    assert len(ids) == len(set(ids)) == 14  # every task of the `addition` data, once
    assert outcome(rows) == outcome(reference)
    assert not any(r.get("error") for r in rows)


def run_summary(run: RunDir) -> dict[str, Any]:
    state = run.load_state()
    return {
        "pool": run.load_pool().digest(),
        "q": state.q,
        "activations": state.activations,
        "val": [(p.epoch, p.step, p.phase, p.score) for p in state.val_history],
        "edits": [(e.target, e.status) for e in read_events(run.events.path, kinds={"edit"})],
        "status": state.status,
    }


def test_train_under_faults_gives_the_fault_free_result(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(responder=server_responder) as clean:
        result = runner.invoke(app, train_args(clean.url, "runs/clean", epochs=2, evolution=True))
        assert result.exit_code == 0, result.output
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(project / "cache-faulty"))  # its own answers
    with faulty(seed=11) as server:
        result = runner.invoke(app, train_args(server.url, "runs/faulty", epochs=2, evolution=True))
        assert result.exit_code == 0, result.output
        injected = sum(server.count(f) for f in FAULTS)
    assert injected >= 5
    clean_run, faulty_run = (
        RunDir.open(project / "runs/clean"),
        RunDir.open(project / "runs/faulty"),
    )
    assert run_summary(faulty_run) == run_summary(clean_run)
    # every training task of every minibatch rolled out exactly once
    keys = Counter(
        (e.epoch, e.batch, e.task_id)
        for e in read_events(faulty_run.events.path, kinds={"rollout"})
    )
    assert keys and set(keys.values()) == {1}
    assert keys == Counter(
        (e.epoch, e.batch, e.task_id) for e in read_events(clean_run.events.path, kinds={"rollout"})
    )
    # the same logical calls, with the retries recorded on them
    assert len(read_events(faulty_run.events.path, kinds={"llm_call"})) == len(
        read_events(clean_run.events.path, kinds={"llm_call"})
    )


def test_eval_permanent_401_stops_with_a_clear_message(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        server.script("ok", "ok", *(["401"] * 50))
        args = ["eval", "--benchmark", "addition.yaml", *common(server.url), "--skills", "skills"]
        result = runner.invoke(app, [*args, "--split", "all", "--out", "out.jsonl"])
    assert result.exit_code == 1, result.output
    assert "HTTP 401" in result.output and "Traceback" not in result.output
    assert not (project / "out.jsonl").exists()  # no partial results presented as complete


def test_eval_of_a_run_on_401_leaves_the_run_as_it_was(project: Path) -> None:
    from .helpers import snapshot

    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url))
        assert result.exit_code == 0, result.output
        run = project / "runs/r1"
        kept = {
            k: v
            for k, v in snapshot(run).items()
            if not k.startswith(("cache/", "events.jsonl"))  # eval may add to these
        }
        exports = sorted(p.name for p in (run / "exports").iterdir())  # the certificate's seed
        server.script(*(["401"] * 50))
        result = runner.invoke(app, ["eval", "--run", "runs/r1", "--split", "all", "--no-cache"])
        assert result.exit_code == 1 and "HTTP 401" in result.output, result.output
    after = snapshot(run)
    assert {k: after.get(k) for k in kept} == kept
    assert sorted(p.name for p in (run / "exports").iterdir()) == exports  # no eval file added
    state = RunDir.open(run).load_state()
    assert state.status == "done"
    resumed = runner.invoke(app, ["status", "--run", "runs/r1", "--json"])
    assert resumed.exit_code == 0 and json.loads(resumed.output)["status"] == "done"
