"""Issue 37, item 5: the certificate's interval covers the mean difference of the tasks the
held-out ones stand for at its stated level (the mean plus or minus the critical distance under
"no difference" covered 78% on 10 tasks), is never of zero width, states what the split can
detect, never advises the seed pool when the split cannot tell, and routes the seed pool as it
was routed at the start."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from moscopt.optimizer.engine.certificate import _verdict, line
from moscopt.optimizer.engine.extension import Extension
from moscopt.testing import FakeLM


def population(seed: int, size: int = 2000) -> tuple[list[tuple[float, float]], float]:
    """Tasks as (seed pool's success rate, final pool's): most unchanged, some helped a lot,
    some hurt; and the true mean difference over them."""
    rng = random.Random(seed)
    tasks = []
    for _ in range(size):
        p = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])  # tie-heavy: most tasks always or never solved
        q = min(1.0, max(0.0, p + rng.choice([0.0, 0.0, 0.0, 0.6, -0.3])))
        tasks.append((p, q))
    return tasks, sum(q - p for p, q in tasks) / size


@pytest.mark.parametrize("n", [10, 20, 50])
def test_the_interval_covers_at_its_stated_level(n: int) -> None:
    tasks, truth = population(n)
    rng, covered, trials = random.Random(37 + n), 0, 200
    for _ in range(trials):
        drawn = [rng.choice(tasks) for _ in range(n)]
        diffs = [float(rng.random() < q) - float(rng.random() < p) for p, q in drawn]
        event = _verdict(diffs, 1)
        assert event.low is not None and event.high is not None
        covered += event.low <= truth <= event.high
    assert covered / trials >= 0.93


def test_ties_everywhere_leave_an_interval_of_some_width() -> None:
    event = _verdict([0.0] * 20, 1).model_copy(
        update={"split": "test", "seed_score": 0.5, "final_score": 0.5}
    )
    assert event.low is not None and event.high is not None
    assert event.low < 0 < event.high and event.verdict == "no detectable difference"
    assert "[95% +0.000, +0.000]" not in line(event)


def test_a_split_too_small_to_tell_never_advises_the_seed_pool() -> None:
    event = _verdict([1.0] * 5, 1).model_copy(update={"split": "test", "seed_score": 0.0})
    event = event.model_copy(update={"final_score": 1.0})
    assert event.verdict == "no detectable difference" and event.detectable is None
    text = line(event)
    assert "too few to tell the pools apart" in text and "deploy" not in text
    ok = _verdict([1.0] * 3 + [0.0] * 37, 1).model_copy(update={"seed_score": 0.5})
    ok = ok.model_copy(update={"final_score": 0.575, "split": "test"})
    assert ok.detectable is not None and 0 < ok.detectable < 1
    assert f"can show a gain of {ok.detectable:.3f} or more at best" in line(ok)
    assert "deploy" not in line(ok)
    worse = _verdict([-1.0] * 20, 1).model_copy(
        update={"split": "test", "seed_score": 1.0, "final_score": 0.0}
    )
    assert worse.verdict == "worse" and "deploy the pool it started from" in line(worse)


class Learned(Extension):
    """Routes with what it learned; at the start it had learned nothing."""

    name = "learned"

    def __init__(self) -> None:
        self.trained, self.fresh = object(), object()

    def router(self, ctx: Any, pool: Any, stats: Any) -> Any:
        return self.trained

    def start_router(self, ctx: Any, pool: Any, stats: Any) -> Any:
        return self.fresh


def test_the_seed_pool_is_routed_as_at_the_start(tmp_path: Path, seed_dir: Path) -> None:
    from moscopt.app.workspace import make_trainer
    from moscopt.testing.scripted import make_run, splits

    run, config, bench, _, seeds = make_run(tmp_path, seed_dir)
    lm = FakeLM()
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=splits(),
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    ctx, learned = trainer.ctx, Learned()
    ctx.attach(learned)
    assert ctx.router(ctx.pool, ctx.live_stats()) is learned.trained
    assert ctx.start_router(ctx.pool) is learned.fresh
