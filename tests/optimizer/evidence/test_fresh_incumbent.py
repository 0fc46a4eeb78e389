"""Issue 37, items 2 and 3: an adopted pool's winning samples never become its own evidence
(it is re-measured as incumbent on fresh sample indices, and its recorded score comes from
them), and validation answers with one frozen answering state (memory, routers) per phase."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from moscopt.app.workspace import make_trainer
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine.extension import Extension
from moscopt.optimizer.policies.acceptance import Verdict
from moscopt.run.ledger import Validation
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM
from moscopt.testing.scripted import gold_of, make_run, splits


def agent(request: LMRequest) -> str:
    return f"FINAL ANSWER: {gold_of(request.messages[-1]['content'])}"


ROUTES = {"agent": agent, "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier"}


def _validator(tmp_path: Path, seed_dir: Path, lm: FakeLM, **cfg: Any) -> Any:
    run, config, bench, _, seeds = make_run(tmp_path, seed_dir, **cfg)
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=splits(n_val=4),
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    return trainer.ctx, trainer.validator


def _samples(ctx: Any, pool: Any) -> list[int]:
    """The sample indices at which `pool` was validated, in order."""
    digest = pool.digest()[:12]
    return [
        e.sample
        for e in read_events(ctx.run.events.path, kinds={"validation"})
        if isinstance(e, Validation) and e.pool == digest
    ]


def _won(samples: int) -> Verdict:
    return Verdict(True, samples, 4 * samples, 0.5, 0.1, 0.9, 1.0, 0.5, "improved")


def test_an_adopted_pool_is_measured_as_incumbent_on_samples_it_did_not_win_on(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: the cache key was the same for a pool as candidate and as incumbent, so the
    next decision read back the samples that made it win (selection bias)."""
    lm = FakeLM(routes=ROUTES)
    ctx, validator = _validator(tmp_path, seed_dir, lm)
    old = ctx.pool
    skill = old.skills[0]
    candidate = old.replace(skill.model_copy(update={"body": skill.body + "\nCheck twice.\n"}))
    asyncio.run(validator.decide(old, candidate))  # both at sample 0 (a tie here)
    assert _samples(ctx, candidate) == [0]
    asyncio.run(validator.adopt(candidate, _won(samples=2)))  # as if it won on samples 0 and 1
    assert ctx.pool is candidate and ctx.cursor.val_base == 2
    assert _samples(ctx, candidate) == [0, 2]  # its score: a fresh sample, not one it won on
    assert ctx.cursor.best_val == ctx.state.val_history[-1].score == 1.0
    other = candidate.replace(skill.model_copy(update={"body": skill.body + "\nSlow down.\n"}))
    asyncio.run(validator.decide(candidate, other))
    assert _samples(ctx, candidate) == [0, 2]  # the incumbent's look 2 is reused, 0 never
    assert _samples(ctx, other) == [2]


class Learner(Extension):
    """An add-on whose learned state changes as it learns (as execution memory does)."""

    name = "learner"

    def __init__(self) -> None:
        self.lessons = 0

    def saved_state(self) -> dict[str, Any] | None:
        return {"lessons": self.lessons}


def test_validation_answers_with_the_answering_state_frozen_per_phase(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: the key ignored the trained memory, so an incumbent measured with the
    phase's starting memory met a candidate measured with later memory."""
    lm = FakeLM(routes=ROUTES)
    ctx, validator = _validator(tmp_path, seed_dir, lm)
    learner = Learner()
    ctx.attach(learner)
    ctx.freeze_validation()
    asyncio.run(validator.rewards(ctx.pool, 0))
    asked = len(lm.history)
    learner.lessons = 1  # it learns mid-phase: validation keeps the phase's state
    asyncio.run(validator.rewards(ctx.pool, 0))
    assert len(lm.history) == asked
    ctx.freeze_validation()  # a new phase: a new state, so the pool is measured again
    asyncio.run(validator.rewards(ctx.pool, 0))
    assert len(lm.history) > asked
