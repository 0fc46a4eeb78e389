"""Fitting the gates and the halting controller from rollouts: the cost-aware labels,
determinism, the run state, and the trainer's observer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moscopt.agent.harness import Rollout
from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Benchmark, get_benchmark
from moscopt.config import load_config
from moscopt.extensions.memory.halting import HALTING_FEATURES, HaltingController
from moscopt.extensions.memory.params import MIGRATIONS, NAME, stored_memory
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.extensions.memory.training import describe, halting_examples, learn, usefulness
from moscopt.run.rundir import RunDir
from moscopt.run.state import RunState
from moscopt.testing import FakeLM
from moscopt.testing.multistep_world import MultiStepWorld
from moscopt.testing.scripted import make_run, scripted_lm, train_run

WORLD = MultiStepWorld(n_tasks=30, seed=5)
CONFIG = load_config(None, {"memory.enabled": True, "memory.halting.enabled": True})


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


@pytest.fixture(scope="module")
def rollouts(bench: Benchmark) -> list[Rollout]:
    """The world's tasks run to T with memory (no halting): uncensored examples; every other
    task is routed on the query alone, so some rollouts fail."""
    lm = FakeLM(routes=WORLD.routes())
    agents = [
        WORLD.skill_agent(lm, bench, MemorySettings(context=True, route_on=route))
        for route in ("memory", "query")
    ]

    async def all_tasks() -> list[Rollout]:
        return [await agents[i % 2].run(t) for i, t in enumerate(WORLD.tasks())]

    return asyncio.run(all_tasks())


def grade_with(bench: Benchmark):  # type: ignore[no-untyped-def]
    tasks = {t.id: t for t in WORLD.tasks()}
    return lambda task_id, response: bench.grade(tasks[task_id], response).reward


def test_halting_labels_stop_where_no_continuation_pays_for_its_calls() -> None:
    steps = [
        {"answer": "1", "calls": 2, "halt_features": [0.0] * 6},
        {"answer": "2", "calls": 4, "halt_features": [1.0] * 6},
        {"answer": "2", "calls": 6, "halt_features": [1.0] * 6},
    ]
    labels = [row[-1] for row in halting_examples(steps, [0.0, 1.0, 1.0], price=0.02)]
    assert labels == [0.0, 1.0]  # go on from the wrong answer; stop at the right one
    # a free call: continuing to an equally good answer is no worse, stopping is still fine
    assert [r[-1] for r in halting_examples(steps, [0.0, 1.0, 1.0], price=0.0)] == [0.0, 1.0]


def test_usefulness_is_success_or_a_right_answer() -> None:
    steps = [{"answer": None}, {"answer": "4"}, {"answer": "5"}]
    assert usefulness(steps, [0.0, 0.0, 1.0], final=1.0) == [1.0, 1.0, 1.0]
    assert usefulness(steps, [0.0, 0.0, 1.0], final=0.0) == [0.0, 0.0, 1.0]


def test_learning_fits_all_three_models_deterministically(
    rollouts: list[Rollout], bench: Benchmark
) -> None:
    grade = grade_with(bench)
    first = learn(None, rollouts, grade, CONFIG)
    again = learn(None, rollouts, grade, CONFIG)
    assert first.model_dump_json() == again.model_dump_json()
    assert first.rollouts == len(rollouts)
    assert first.write is not None and first.halting is not None
    assert first.retrieval is not None
    assert all("examples" in line for line in describe(first))
    # the fitted controller stops at a confident answer and not at a tentative one
    halting = first.halting.model(HALTING_FEATURES)
    c = HaltingController(model=halting)
    confident = c.decide(["7"], confidence=0.9, max_steps=4, novelty=1.0)
    tentative = c.decide(["8"], confidence=0.3, max_steps=4, novelty=1.0)
    assert confident.halt and not tentative.halt


def test_learned_state_is_json_in_the_run_state(rollouts: list[Rollout], bench: Benchmark) -> None:
    memory = learn(None, rollouts[:10], grade_with(bench), CONFIG)
    state = RunState()
    state.keep(NAME, memory.model_dump(mode="json"), MIGRATIONS)
    back = RunState.model_validate_json(state.model_dump_json())
    assert stored_memory(back) == memory
    json.loads(state.model_dump_json())  # plain JSON, no pickle


def test_buffers_are_bounded(rollouts: list[Rollout], bench: Benchmark) -> None:
    small = load_config(None, {"memory.enabled": True, "memory.examples": 50})
    state = learn(None, rollouts, grade_with(bench), small)
    assert len(state.write_examples) == 50 and len(state.retrieval_examples) <= 50


def test_tasks_graded_by_a_judge_model_teach_the_memory_nothing(
    rollouts: list[Rollout], bench: Benchmark, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rubric task's steps would each need a judge call: its rollouts are left out, not
    learned from as if every step had scored 0."""
    from types import SimpleNamespace

    from moscopt.extensions.memory.training import MemoryExtension

    tasks = {t.id: t for t in WORLD.tasks()}
    judged = {r.task_id for r in rollouts[::2]}
    monkeypatch.setattr(
        type(bench), "needs_judge_model", lambda self, ts=None: any(t.id in judged for t in ts)
    )
    config = CONFIG
    ctx = SimpleNamespace(tasks=tasks, benchmark=bench, config=config)
    ext = MemoryExtension()
    asyncio.run(ext.after_rollouts(ctx, rollouts))  # type: ignore[arg-type]
    expected = learn(None, [r for r in rollouts if r.task_id not in judged], grade_with(bench),
                     config)  # fmt: skip
    assert ext.memory is not None and 0 < ext.memory.rollouts < len(rollouts)
    assert ext.memory == expected


def test_the_trainer_learns_memory_online_and_saves_it(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{
            "training.epochs": 1,
            "gating.granularity": "step",
            "agent.tools": [],
            "memory.enabled": True,
            "memory.halting.enabled": True,
            "memory.embedding_model": "hashing",
        },
    )
    lm = scripted_lm()
    train_run(run, config, bench, sp, seeds, lm)
    saved = stored_memory(RunDir.open(run.path).load_state())
    assert saved is not None and saved.rollouts > 0 and saved.write_examples


def test_off_by_default_no_observer_no_trace(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"training.epochs": 1})
    lm = FakeLM(routes=scripted_lm().routes)
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=bench,
        splits=sp,
        agent_lm=lm,
        optimizer_lm=lm,
        seeds=seeds,
    )
    from moscopt.extensions.memory.training import MemoryExtension

    assert not any(isinstance(o, MemoryExtension) for o in trainer.ctx.extensions)
    asyncio.run(trainer.train())
    assert stored_memory(RunDir.open(run.path).load_state()) is None
