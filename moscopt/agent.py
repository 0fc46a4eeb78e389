"""`SkillAgent`: route a task to K skills, run the agent, grade the answer -> `Rollout`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.gating import Activation, FixedSkills, Router
from moscopt.harness import Rollout, Usage, run_agent
from moscopt.lm.base import LM, Message
from moscopt.skills import Pool, Skill

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task


def agent_tools(
    configured: Sequence[str] | None, benchmark: Benchmark, max_steps: int | None
) -> tuple[list[str], int]:
    """The tools an agent gets (the config's, else the benchmark's) and its step budget T
    (the config's, else 4 with tools and 1 without)."""
    tools = list(benchmark.tools if configured is None else configured)
    return tools, max_steps or (4 if tools else 1)


class SkillAgent:
    """An agent with a skill pool and a router; `run` never raises except on fatal LM errors."""

    def __init__(
        self,
        lm: LM,
        benchmark: Benchmark,
        pool: Pool | None,
        router: Router | None = None,
        *,
        tools: Sequence[str] = (),
        max_steps: int = 1,
        granularity: str = "task",
    ) -> None:
        self.lm = lm
        self.benchmark = benchmark
        self.pool = pool
        self.router: Router = router or FixedSkills((), "none")
        self.tools = tuple(tools)
        self.max_steps = max_steps if self.tools else 1
        self.granularity = granularity

    def _skills(self, names: Sequence[str]) -> list[Skill]:
        if self.pool is None:
            return []
        return [self.pool.get(n) for n in names if n in self.pool]

    async def run(self, task: Task, *, sample: int = 0) -> Rollout:
        usage = Usage()
        activation = await self.router.select(task.prompt, sample=sample)
        _count(usage, activation)
        reselect = None
        if self.granularity == "step" and self.max_steps > 1:

            async def reselect(messages: list[Message]) -> list[Skill]:
                progress = messages[-1]["content"][-1500:]
                act = await self.router.select(
                    f"{task.prompt}\n\n## Progress so far\n{progress}", sample=sample
                )
                _count(usage, act)
                return self._skills(act.skills)

        messages, response, agent_usage, error = await run_agent(
            self.lm,
            task,
            self.benchmark,
            self._skills(activation.skills),
            tools=self.tools,
            max_steps=self.max_steps,
            sample=sample,
            reselect=reselect,
        )
        grade = await asyncio.to_thread(self.benchmark.grade, task, response)
        return Rollout(
            task_id=task.id,
            skills=activation.skills,
            activation=activation.source,
            messages=messages,
            response=response,
            answer=grade.answer,
            reward=grade.reward,
            detail=grade.detail,
            error=error or grade.error,
            gate_error=activation.error,
            prompt_tokens=usage.prompt_tokens + agent_usage.prompt_tokens,
            completion_tokens=usage.completion_tokens + agent_usage.completion_tokens,
            cost=usage.cost + agent_usage.cost,
            calls=usage.calls + agent_usage.calls,
            sample=sample,
        )


def _count(usage: Usage, activation: Activation) -> None:
    if activation.usage is not None:
        usage.add(activation.usage)
