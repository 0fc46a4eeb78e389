"""`moscopt stream`: each task once, in order; online learning with transfer; baselines on the
same stream; resumable after SIGKILL; a normal run directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from moscopt.app.stream import STREAM_FILE
from moscopt.extensions.niches.records import stored_niches
from moscopt.routing.gate import schema_answer as gating_answer
from moscopt.routing.gate import schema_ids
from moscopt.run.ledger import RolloutEvent, Validation
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing.niche_world import RULES, stream_world

REPO = Path(__file__).resolve().parents[3]


def rollouts(run: RunDir) -> list[RolloutEvent]:
    return [
        e for e in read_events(run.events.path, kinds={"rollout"}) if isinstance(e, RolloutEvent)
    ]


def test_each_task_once_in_order_and_the_rule_spreads(tmp_path: Path, seed_dir: Path) -> None:
    # 36 tasks per niche: decisions replay held-out tasks only (one in four), so the rule needs
    # a longer stream to be shown useful to beta as well as gamma
    outcome = stream_world(tmp_path / "on", seed_dir, transfer=True, n=36)
    run = RunDir.open(tmp_path / "on")
    ids = [e.task_id for e in rollouts(run)]
    state = run.load_state()
    assert ids == state.splits["train"] and len(set(ids)) == len(ids) == 72
    assert state.status == "done" and outcome.tasks == 72
    assert outcome.running[-1] == outcome.accuracy and len(outcome.running) == 72
    pool = run.load_pool()
    assert {s.name for s in pool if RULES["A"] in s.body} == {"alpha", "beta", "gamma"}
    a_rewards = [e.reward for e in rollouts(run) if "-A" in e.task_id]
    assert sum(a_rewards[-8:]) / 8 > sum(a_rewards[:8]) / 8 + 0.3
    assert set(outcome.baselines) == {"none", "frozen"}
    assert outcome.accuracy > outcome.baselines["frozen"] >= outcome.baselines["none"]
    record = json.loads((run.path / STREAM_FILE).read_text())
    assert record["accuracy"] == outcome.accuracy and record["by_niche"].keys() == {"A", "B"}
    off = stream_world(tmp_path / "off", seed_dir, transfer=False, n=36)
    assert off.by_niche["A"] < outcome.by_niche["A"]
    assert off.baselines == outcome.baselines  # the same stream, the same baselines


def child(run: Path, seed_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "moscopt.testing.niche_world", str(run), str(seed_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_sigkill_at_events_written_then_resume_gives_the_same_stream(
    tmp_path: Path, seed_dir: Path
) -> None:
    stream_world(tmp_path / "ref", seed_dir)
    ref_run = RunDir.open(tmp_path / "ref")
    total = lines(ref_run.events_path)
    ref_record = json.loads((ref_run.path / STREAM_FILE).read_text())
    landed = 0
    for fraction in (0.1, 0.35, 0.6, 0.85):
        path = tmp_path / f"killed-{fraction}"
        proc = child(path, seed_dir)
        target = int(total * fraction)
        while proc.poll() is None and lines(path / "events.jsonl") < target:
            time.sleep(0.002)  # polling the progress; the kill point is the line count
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        landed += lines(path / "events.jsonl") < total
        for _ in range(3):  # resume until done
            if RunDir.open(path).load_state().status == "done":
                break
            again = child(path, seed_dir)
            _, err = again.communicate(timeout=300)
            assert again.returncode == 0, err.decode()[-2000:]
        run = RunDir.open(path)
        state = run.load_state()
        assert state.status == "done", fraction
        assert [e.task_id for e in rollouts(run)] == state.splits["train"], fraction
        assert run.load_pool().digest() == ref_run.load_pool().digest(), fraction
        record = json.loads((path / STREAM_FILE).read_text())
        for key in ("accuracy", "running", "baselines", "by_niche"):
            assert record[key] == ref_record[key], (fraction, key)
        ns, ref_ns = stored_niches(state), stored_niches(ref_run.load_state())
        assert ns is not None and ref_ns is not None
        assert (ns.competence, ns.routed, ns.adopted, ns.archive) == (
            ref_ns.competence,
            ref_ns.routed,
            ref_ns.adopted,
            ref_ns.archive,
        ), fraction
    assert landed >= 3  # the kills came mid-stream, not after its end


def test_export_works_on_a_stream_run(tmp_path: Path, seed_dir: Path) -> None:
    from typer.testing import CliRunner

    from moscopt.cli import app

    stream_world(tmp_path / "run", seed_dir, n=4)
    result = CliRunner().invoke(
        app, ["export", "--mode", "mixture", "--run", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "exports" / "mixture").is_dir()


def schema_answer(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    if "activate" in props:
        ids, k = schema_ids(schema)
        return gating_answer(schema, ids[:k])
    if "insights" in props:
        return {"insights": []}
    return {"reasoning": "nothing to change", "edits": []}


def test_the_stream_command_on_a_tasks_file(tmp_path: Path, seed_dir: Path) -> None:
    """`moscopt stream --tasks FILE --grader exact` end to end over a loopback server; the
    server answers by the request's structure (a schema, a system prompt), never its wording."""
    import shutil

    from typer.testing import CliRunner

    from moscopt.cli import app
    from moscopt.testing import FakeServer

    rows = [
        {
            "id": f"q{i}",
            "question": f"What is {i} plus {i}?",
            "answer": str(2 * i),
            "niche": "even" if i % 2 == 0 else "odd",
        }
        for i in range(12)
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("careful-computation", "cautious-planner", "detail-verifier", "gate"):
        shutil.copytree(seed_dir / name, tmp_path / "skills" / name)
    (tmp_path / "moscopt.yaml").write_text("evolution:\n  embedding_model: difflib\n")
    answers = {r["question"]: r["answer"] for r in rows}

    def respond(body: dict[str, Any]) -> str:
        fmt = body.get("response_format")
        if fmt:
            return json.dumps(schema_answer(fmt["json_schema"]["schema"]))
        messages = body["messages"]
        if messages[0]["role"] == "system":  # the agent
            question = next((q for q in answers if q in messages[-1]["content"]), "")
            right = question and int(answers[question]) % 4 == 0
            return f"FINAL ANSWER: {answers[question] if right else 'no idea'}"
        return "- Check the arithmetic."

    with FakeServer(responder=respond) as server:
        args = [
            "stream",
            "--tasks",
            str(tmp_path / "tasks.jsonl"),
            "--grader",
            "exact",
            "--model",
            "openai/fake",
            "--api-base",
            server.url,
            "--n",
            "3",
            "--k",
            "1",
            "--run",
            str(tmp_path / "run"),
            "--json",
            "--set",
            "niches.embedding_model=hashing",
            "--set",
            "gating.output=json",
        ]
        old = os.getcwd()
        os.chdir(tmp_path)
        try:
            env = {"OPENAI_API_KEY": "sk-fake"}
            result = CliRunner().invoke(app, args, env=env)
        finally:
            os.chdir(old)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 12 and set(summary["baselines"]) == {"none", "frozen"}
    assert summary["by_niche"].keys() == {"even", "odd"}
    assert summary["baselines"]["none"] == pytest.approx(0.0)  # no system prompt: no answers
    state = RunDir.open(tmp_path / "run").load_state()
    assert state.status == "done" and state.splits["train"] == [r["id"] for r in rows]


def test_the_stream_command_has_no_batch_mode() -> None:
    """Each task of a stream is answered before the next arrives: no wave can wait for a batch,
    so `--batch` is not offered (it would have done nothing)."""
    from typer.testing import CliRunner

    from moscopt.cli import app

    result = CliRunner().invoke(app, ["stream", "--tasks", "t.jsonl", "--batch"])
    assert result.exit_code == 2 and "--batch" in result.output
    assert "--batch" not in CliRunner().invoke(app, ["stream", "--help"]).output


def test_a_replay_measures_the_incumbent_on_fresh_samples(tmp_path: Path, seed_dir: Path) -> None:
    """Regression (issue 23 §2): the incumbent's first replay sample was sample 0 of tasks the
    live pool had just answered at sample 0, i.e. the cached answers whose failures triggered
    the edit. Replays now start at sample 1; the live rollouts stay at sample 0."""
    stream_world(tmp_path / "run", seed_dir, transfer=False)
    run = RunDir.open(tmp_path / "run")
    validations = [
        e for e in read_events(run.events.path, kinds={"validation"}) if isinstance(e, Validation)
    ]
    assert validations and min(e.sample for e in validations) == 1
