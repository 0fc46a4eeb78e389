"""Training on tasks that carry their own judges, in a world where the agent does what its
skills say (moscopt.testing.judged_world): reflection is shown which checks a reply missed,
training adds the missing requirement, the held-out score rises and the certificate's interval
excludes zero; held-out judges never reach a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks.taskfile import TaskFileBenchmark, task_file_spec
from moscopt.config import load_config
from moscopt.core.skills import Pool
from moscopt.optimizer.engine import initial_state
from moscopt.run.rundir import RunDir
from moscopt.testing.fake_lm import FakeLM
from moscopt.testing.judged_world import (
    HELD_OUT_MARK,
    SIGN_OFF,
    routes,
    write_skills,
    write_task_files,
)


def _train(tmp_path: Path, kind: str, *, position_bias: bool = False) -> tuple[RunDir, FakeLM]:
    import asyncio

    write_skills(tmp_path / "skills")
    train, held = write_task_files(tmp_path / "data", kind=kind)
    bench = TaskFileBenchmark(task_file_spec(train, held))
    splits = bench.load()
    pool = Pool.load(tmp_path / "skills", require_gate=True)
    config = load_config(
        None,
        {
            "pool.n": 2,
            "pool.k": 1,
            "training.epochs": 1,
            "optimizer.minibatch": 4,
            "training.max_steps_per_epoch": 2,
            "evolution.enabled": False,
            "evolution.embedding_model": "difflib",
            "llm.concurrency": 2,
        },
    )
    run = RunDir.create(tmp_path / "run", config, pool, initial_state(config, pool, "t", splits))
    lm = FakeLM(routes=routes(position_bias=position_bias))
    bench.use_judge(lm)
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=splits,
        agent_lm=lm, optimizer_lm=lm, seeds=pool,
    )  # fmt: skip
    asyncio.run(trainer.train())
    return RunDir.open(run.path), lm


@pytest.mark.parametrize("kind", ["rule", "rubric"])
def test_training_finds_the_missing_requirement(tmp_path: Path, kind: str) -> None:
    run, lm = _train(tmp_path, kind)
    skill = Pool.load(run.skills_dir).get("support-replies")
    assert f"Always include: {SIGN_OFF}" in skill.body
    edits = run.read_events(kinds={"edit"})
    assert any(e.status == "accepted" for e in edits)  # type: ignore[attr-defined]
    assert any(e.status == "rejected" for e in edits)  # type: ignore[attr-defined]
    (cert,) = run.read_events(kinds={"certificate"})
    assert cert.verdict == "better"  # type: ignore[attr-defined]
    assert cert.split == "test" and cert.tasks == 16  # type: ignore[attr-defined]
    assert cert.low is not None and cert.low > 0  # type: ignore[attr-defined]
    # reflection saw which check or criterion a reply missed, as what it requires
    reflections = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "reflect-skill"]
    shown = reflections[0].messages[-1]["content"]
    assert "Expected answer" not in shown
    if kind == "rule":
        assert f'not met: must contain "{SIGN_OFF}"' in shown
    else:
        assert f'not met: Signs off with "{SIGN_OFF}"' in shown


@pytest.mark.parametrize("kind", ["rule", "rubric"])
def test_held_out_tasks_reach_no_optimizer_prompt(tmp_path: Path, kind: str) -> None:
    _, lm = _train(tmp_path, kind)
    for request, purpose in zip(lm.history, lm.purposes, strict=True):
        text = "\n".join(m["content"] for m in request.messages)
        if purpose == "judge":
            continue  # the rubric judge scores held-out answers against their own criteria
        assert HELD_OUT_MARK not in text, purpose
        if purpose != "agent":
            assert "h-" not in text and "order 7 arrived" not in text, purpose
    judged = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "judge"]
    assert all("support-replies" not in m["content"] for r in judged for m in r.messages)
