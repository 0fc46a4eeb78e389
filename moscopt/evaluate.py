"""Evaluate an agent on a list of tasks, concurrently, with optional adaptive repeats."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moscopt.gating import GATE_ERROR, PARSE_FAILURES
from moscopt.harness import Rollout
from moscopt.stats import mean_ci, repeats_half_width

if TYPE_CHECKING:
    from moscopt.agent import SkillAgent
    from moscopt.benchmarks import Task

MIN_REPEATS, MAX_REPEATS = 3, 50


@dataclass
class EvalResult:
    rollouts: list[Rollout]
    repeat_scores: list[float] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.interval[0]

    @property
    def interval(self) -> tuple[float, float, float]:
        """(mean, low, high). With repeats: over the repeats' scores; else over the tasks."""
        if len(self.repeat_scores) > 1:
            mean = sum(self.repeat_scores) / len(self.repeat_scores)
            half = repeats_half_width(self.repeat_scores)
            return (mean, max(0.0, mean - half), min(1.0, mean + half))
        return mean_ci([r.reward for r in self.rollouts])

    def summary(self) -> dict[str, Any]:
        mean, low, high = self.interval
        return {
            "score": mean,
            "ci95": [low, high],
            "tasks": len({r.task_id for r in self.rollouts}),
            "rollouts": len(self.rollouts),
            "repeats": max(1, len(self.repeat_scores)),
            "errors": sum(r.error is not None for r in self.rollouts),
            # per selection (one per step with step-level gating); LLM errors at the gate apart
            "gate_fallbacks": sum(s in PARSE_FAILURES for r in self.rollouts for s in r.sources),
            "gate_errors": sum(s == GATE_ERROR for r in self.rollouts for s in r.sources),
            "calls": sum(r.calls for r in self.rollouts),
            "prompt_tokens": sum(r.prompt_tokens for r in self.rollouts),
            "completion_tokens": sum(r.completion_tokens for r in self.rollouts),
            "cost": sum(r.cost for r in self.rollouts),
        }


async def run_tasks(
    agent: SkillAgent,
    tasks: Sequence[Task],
    *,
    concurrency: int,
    sample: int = 0,
    on_rollout: Callable[[Rollout], None] | None = None,
) -> list[Rollout]:
    """Roll out every task once (in task order in the result), at most `concurrency` at a time."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(task: Task) -> Rollout:
        async with gate:
            rollout = await agent.run(task, sample=sample)
        if on_rollout is not None:
            on_rollout(rollout)
        return rollout

    return list(await asyncio.gather(*(one(t) for t in tasks)))


async def evaluate(
    agent: SkillAgent,
    tasks: Sequence[Task],
    *,
    concurrency: int,
    repeats: int | str = 1,
    tolerance: float = 0.01,
    on_rollout: Callable[[Rollout], None] | None = None,
) -> EvalResult:
    """Evaluate; `repeats="auto"` repeats 3..50 times until the 95% half-width ≤ `tolerance`."""
    result = EvalResult(rollouts=[])
    auto = repeats == "auto"
    limit = MAX_REPEATS if auto else int(repeats)
    for sample in range(limit):
        batch = await run_tasks(
            agent, tasks, concurrency=concurrency, sample=sample, on_rollout=on_rollout
        )
        result.rollouts.extend(batch)
        if limit > 1:
            result.repeat_scores.append(sum(r.reward for r in batch) / max(1, len(batch)))
        if (
            auto
            and sample + 1 >= MIN_REPEATS
            and (repeats_half_width(result.repeat_scores) <= tolerance)
        ):
            break
    return result
