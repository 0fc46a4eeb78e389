"""`SkillAgent`: route a task to K skills, run the agent, grade the answer -> `Rollout`.

Gating granularity. `task` (the default): the router selects once, before the first step.
`step`: the router selects again before every step after the first, from the task plus the
progress so far; a step is a tool turn with tools, a draft/verify/refine round without (see
`moscopt.agent.harness`), so step-level gating works on every benchmark, with or without tools, as
long as T = `max_steps` > 1 (`agent_tools` gives T = 3 without tools). Every selection is kept
on the rollout (`Rollout.selections`, with its source in `Rollout.sources`) for credit.

What the router reads when it reselects (`memory.route_on`): `progress` (today's default: the
last step and its tool output), `full` (the whole transcript), `query` (the task alone) or
`memory` (the task plus the records the retrieval gate chose; see `moscopt.extensions.memory`). With
`memory.enabled` the agent's own context after the first step is the task plus those records,
not the transcript; with `memory.halting.enabled` the run stops when the halting controller
says the memory holds the answer. The memory's trace is kept in `Rollout.extra["memory"]`.

Tools are offered natively where the model supports function calling (`agent.native_tools`),
else by the text protocol (`moscopt.agent.tools.toolbox`).

Progressive disclosure. By default only the selected skills' bodies reach the agent. With
`progressive_disclosure=False` (the ablation) every skill body of the pool is in the agent's
context; the router still selects, and the selected skills are what the rollout reports (and
what gets credit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.agent.harness import Reselect, Rollout, Usage, full_text, progress_text, run_agent
from moscopt.core.skills import Pool, Skill
from moscopt.extensions.memory.tracker import MemorySettings, StepMemory
from moscopt.lm.base import LM, Message
from moscopt.routing.gate import Activation, FixedSkills, Router

if TYPE_CHECKING:
    from moscopt.agent.tools.toolbox import ToolBox, ToolOptions
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.embedding import Embedder

TOOL_STEPS = 4  # T with tools
REFINE_STEPS = 3  # T without tools under step-level gating: a draft, then two verify/refine rounds


def agent_tools(
    configured: Sequence[str] | None,
    benchmark: Benchmark,
    max_steps: int | None,
    *,
    granularity: str = "task",
) -> tuple[list[str], int]:
    """The tools an agent gets (the config's, else the benchmark's) and its step budget T
    (the config's, else 4 with tools, 3 without tools under step-level gating, 1 otherwise)."""
    tools = list(benchmark.tools if configured is None else configured)
    if max_steps:
        return tools, max_steps
    if tools:
        return tools, TOOL_STEPS
    return tools, REFINE_STEPS if granularity == "step" else 1


class SkillAgent:
    """An agent with a skill pool and a router; `run` never raises except on fatal LM errors.

    `max_steps` is T; without tools and with task-level gating the agent is single-turn (T = 1)
    whatever `max_steps` says.
    """

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
        progressive_disclosure: bool = True,
        memory: MemorySettings | None = None,
        embedding_model: str = "hashing",
        tool_options: ToolOptions | None = None,
    ) -> None:
        self.lm = lm
        self.benchmark = benchmark
        self.pool = pool
        self.router: Router = router or FixedSkills((), "none")
        self.tools = tuple(tools)
        self.granularity = granularity
        multi_step = bool(self.tools) or granularity == "step"
        self.max_steps = max(1, max_steps) if multi_step else 1
        self.progressive_disclosure = progressive_disclosure
        self.memory = memory or MemorySettings()
        self.embedding_model = embedding_model
        self.tool_options = tool_options
        self._embedder: Embedder | None = None
        self._native: bool | None = None

    def _skills(self, names: Sequence[str]) -> list[Skill]:
        if self.pool is None:
            return []
        return [self.pool.get(n) for n in names if n in self.pool]

    def embedder(self) -> Embedder:
        if self._embedder is None:
            from moscopt.embedding import make_embedder

            self._embedder = make_embedder(self.embedding_model, numbers=True)
        return self._embedder

    async def toolbox(self, task: Task) -> ToolBox:
        """The tools of one run, native where the model supports function calls (checked once)."""
        from moscopt.agent.tools.toolbox import ToolOptions, make_toolbox

        options = self.tool_options or ToolOptions()
        if self._native is None:
            self._native = bool(self.tools) and await _supports_tools(self.lm, options)
        return make_toolbox(self.tools, task, options, native=self._native)

    def _route_text(self, task: Task, messages: list[Message], memory: StepMemory | None) -> str:
        """What the router reads before a step after the first (`memory.route_on`)."""
        mode = self.memory.route_on
        if mode == "query":
            return task.prompt
        if mode == "memory" and memory is not None:
            progress = memory.render(memory.retrieved)
        elif mode == "full":
            progress = full_text(messages)
        else:
            progress = progress_text(messages)
        return f"{task.prompt}\n\n## Progress so far\n{progress}"

    async def run(self, task: Task, *, sample: int = 0) -> Rollout:
        usage = Usage()
        activation = await self.router.select(task.prompt, sample=sample)
        _count(usage, activation)
        selections = [activation]
        memory = None
        if self.memory.tracking and self.max_steps > 1:
            memory = StepMemory(
                self.memory,
                self.embedder(),
                task=task.prompt,
                max_steps=self.max_steps,
                same=self.benchmark.same_answer,
            )
        reselect: Reselect | None = None
        if self.granularity == "step" and self.max_steps > 1:

            async def reselect(messages: list[Message]) -> list[Skill]:
                text = self._route_text(task, messages, memory)
                act = await self.router.select(text, sample=sample)
                _count(usage, act)
                selections.append(act)
                return self._skills(act.skills)

        everything = None
        if not self.progressive_disclosure and self.pool is not None:
            everything = list(self.pool)
        messages, response, agent_usage, error = await run_agent(
            self.lm,
            task,
            self.benchmark,
            self._skills(activation.skills),
            tools=self.tools,
            max_steps=self.max_steps,
            sample=sample,
            reselect=reselect,
            pool_skills=everything,
            memory=memory,
            toolbox=await self.toolbox(task) if self.tools else None,
        )
        grade = await self.benchmark.agrade(task, response)
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
            offered=activation.offered,
            prompt_tokens=usage.prompt_tokens + agent_usage.prompt_tokens,
            completion_tokens=usage.completion_tokens + agent_usage.completion_tokens,
            cost=usage.cost + agent_usage.cost,
            calls=usage.calls + agent_usage.calls,
            sample=sample,
            selections=tuple(a.skills for a in selections),
            sources=tuple(a.source for a in selections),
            extra={"memory": memory.trace()} if memory is not None else {},
        )


def _count(usage: Usage, activation: Activation) -> None:
    if activation.usage is not None:
        usage.add(activation.usage)


async def _supports_tools(lm: LM, options: ToolOptions) -> bool:
    """Whether tools go to `lm` as native definitions (`agent.native_tools`: auto asks it)."""
    from moscopt.lm.base import ToolCallingLM

    if options.native != "auto" or not isinstance(lm, ToolCallingLM):
        return False
    return await lm.supports_tools()
