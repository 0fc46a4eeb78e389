"""More tasks, not only more repeats (issue 23, item 3): with `optimizer.val_look` smaller than
the validation split, a decision's later looks draw tasks of the split it has not yet seen, the
same ones for incumbent and candidate, and tasks come back only at a new sample index."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine.validation import look_tasks
from moscopt.run.ledger import EditEvent
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import Crash
from moscopt.testing.scripted import MAGIC, edit, gold_of, make_run, splits, train_run
from moscopt.testing.scripted import ROUTES as SCRIPTED


def test_looks_walk_the_split_before_repeating_a_task() -> None:
    assert look_tasks(6, 2, 0) == [(0, 0), (1, 0)]
    assert look_tasks(6, 2, 2) == [(4, 0), (5, 0)]
    assert look_tasks(6, 2, 3) == [(0, 1), (1, 1)]  # every task seen: the next sample index
    assert look_tasks(5, 2, 2) == [(4, 0), (0, 1)]  # a look may wrap mid-way
    assert look_tasks(4, 4, 3) == [(0, 3), (1, 3), (2, 3), (3, 3)]  # the whole split: repeats
    with pytest.raises(ValueError, match="out of range"):
        look_tasks(4, 5, 0)


def _validator(tmp_path: Path, seed_dir: Path, lm: FakeLM, **cfg: Any) -> Any:
    run, config, bench, _, seeds = make_run(tmp_path, seed_dir, **cfg)
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=splits(n_val=6),
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    return trainer.ctx, trainer.validator


def _asked(lm: FakeLM) -> set[tuple[int, int]]:
    """(validation task number, sample index) of every agent call (val-i's gold is 2 i)."""
    return {
        (int(gold_of(r.messages[-1]["content"])) // 2, r.sample)
        for r, p in zip(lm.history, lm.purposes, strict=True)
        if p == "agent"
    }


def agent(request: LMRequest) -> str:
    return f"FINAL ANSWER: {gold_of(request.messages[-1]['content'])}"


ROUTES = {"agent": agent, "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier"}


def test_later_looks_draw_tasks_not_yet_seen(tmp_path: Path, seed_dir: Path) -> None:
    """Regression: every look re-asked the same tasks at a new sample index; now look 1 asks the
    next tasks of the split at sample 0 (the schedule is the same for every pool)."""
    lm = FakeLM(routes=ROUTES)
    ctx, validator = _validator(tmp_path, seed_dir, lm, **{"optimizer.val_look": 2})
    first = asyncio.run(validator.rewards(ctx.pool, 0))
    second = asyncio.run(validator.rewards(ctx.pool, 1))
    assert len(first) == len(second) == 2
    assert _asked(lm) == {(1, 0), (2, 0), (3, 0), (4, 0)}
    asyncio.run(validator.rewards(ctx.pool, 3))  # the split is exhausted: repeats at sample 1
    assert _asked(lm) - {(1, 0), (2, 0), (3, 0), (4, 0)} == {(1, 1), (2, 1)}
    assert asyncio.run(validator.score(ctx.pool)) == 1.0  # the score: look 0, cached


def test_without_val_look_every_look_is_the_whole_split(tmp_path: Path, seed_dir: Path) -> None:
    lm = FakeLM(routes=ROUTES)
    ctx, validator = _validator(tmp_path, seed_dir, lm)
    asyncio.run(validator.rewards(ctx.pool, 1))
    assert _asked(lm) == {(i, 1) for i in range(1, 7)}


def test_validation_keeps_graded_rewards(tmp_path: Path, seed_dir: Path) -> None:
    """A grader's partial credit reaches the acceptance test as it is, not as 0/1."""
    from moscopt.benchmarks import Benchmark

    lm = FakeLM(routes={**ROUTES, "agent": lambda r: "PARTS: 3/4\nFINAL ANSWER: x"})
    run, config, bench, _, seeds = make_run(tmp_path, seed_dir)
    graded = {"grader": "custom", "grader_entry": "moscopt.testing.worlds:grade_parts"}
    trainer = make_trainer(
        run=run, config=config, benchmark=Benchmark(bench.spec.model_copy(update=graded)),
        splits=splits(n_val=6), agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    assert asyncio.run(trainer.validator.rewards(trainer.ctx.pool, 0)) == [0.75] * 6


def _draw(*parts: object) -> float:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16) / 16**12


def noisy_agent(request: LMRequest) -> str:
    """Right with a chance that depends on the prompt, the task and the sample index."""
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    task = request.messages[-1]["content"]
    p = 0.9 if MAGIC in system else 0.3
    ok = _draw(system, task, request.sample) < p
    return f"FINAL ANSWER: {gold_of(task) if ok else 0}"


def noisy_propose(request: LMRequest) -> str:
    x = _draw("propose", request.messages[-1]["content"], request.sample)
    return edit("", MAGIC if x < 0.4 else f"Hint {int(x * 1e6)}: read the question twice.")


def noisy(crash_at: int = 0) -> FakeLM:
    """Raises `Crash` on call number `crash_at` (0: never)."""
    return FakeLM(
        routes={**SCRIPTED, "agent": noisy_agent, "propose-skill": noisy_propose}, crash_at=crash_at
    )


def _edits(run: RunDir) -> list[tuple[Any, ...]]:
    out = []
    for e in run.read_events(None, {"edit"}):
        assert isinstance(e, EditEvent)
        d = e.decision
        evidence = None if d is None else (d.samples, d.n, d.mean_diff, d.low, d.high)
        out.append((e.step, e.target, e.status, e.before, e.after, evidence))
    return out


def test_a_resumed_run_drawing_fresh_tasks_makes_the_same_decisions(
    tmp_path: Path, seed_dir: Path
) -> None:
    cfg = {"optimizer.val_look": 3, "training.max_steps_per_epoch": 2}
    ref, config, bench, sp, seeds = make_run(tmp_path / "ref", seed_dir, val_tasks=10, **cfg)
    lm = noisy()
    train_run(ref, config, bench, sp, seeds, lm)
    made = _edits(ref)
    assert any(e[5] is not None and e[5][0] >= 2 for e in made)  # decisions took several looks
    calls = len(lm.history)
    for fraction in (0.3, 0.7):
        run, config, bench, sp, seeds = make_run(
            tmp_path / str(fraction), seed_dir, val_tasks=10, **cfg
        )
        with pytest.raises(Crash):
            train_run(run, config, bench, sp, seeds, noisy(max(1, round(fraction * calls))))
        train_run(RunDir.open(run.path), config, bench, sp, seeds, noisy())
        assert _edits(run) == made
