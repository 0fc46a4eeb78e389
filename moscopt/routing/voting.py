"""`agent.aggregate: vote`: the paper's voting aggregator as an agent that wraps another.

For a task with a deterministic answer (graders `exact`, `numeric`, `math`, `choice`) the
`m` skills the familiarity router ranks first each run as a separate agent (that skill alone),
concurrently, and the familiarity-weighted majority of their extracted answers wins
(`moscopt.routing.vote.familiarity_vote`); the rollout returned is the winner's, with the
calls, tokens and cost of all `m` (a vote costs m agent runs instead of one). Tasks without a
deterministic answer (code, instructions) and a router that ranks nothing go to the wrapped
agent unchanged.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from moscopt.agent.skill_agent import SkillAgent
from moscopt.routing.gate import FixedSkills
from moscopt.routing.vote import familiarity_vote

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.benchmarks import Task
    from moscopt.routing.familiarity import Routing
    from moscopt.routing.gate import Router

SOURCE = "vote"
DETERMINISTIC = ("exact", "numeric", "math", "choice")

Explain = Callable[[str], Awaitable["Routing"]]


def explainer(router: Router) -> Explain | None:
    """How `router` ranks every skill by familiarity: the familiarity router's `explain`, the
    hybrid router's shortlisting router's; None for routers that do not rank by familiarity."""
    explain = getattr(router, "explain", None)
    if explain is None:
        explain = getattr(getattr(router, "familiarity", None), "explain", None)
    return explain if callable(explain) else None


class VotingAgent(SkillAgent):
    """`inner`'s rollouts, except that deterministic-answer tasks are answered by a vote."""

    def __init__(self, inner: SkillAgent, explain: Explain, m: int) -> None:
        if m < 1:
            raise ValueError("a vote needs at least one voter")
        super().__init__(inner.lm, inner.benchmark, inner.pool, inner.router)
        self.inner, self.explain, self.m = inner, explain, m
        self._voters: dict[str, SkillAgent] = {}

    @property
    def votes(self) -> bool:
        return self.benchmark.spec.grader in DETERMINISTIC

    def voter(self, skill: str) -> SkillAgent:
        """The wrapped agent with `skill` alone active (tools, steps and memory as it has)."""
        if skill not in self._voters:
            agent = copy.copy(self.inner)
            agent.router = FixedSkills((skill,), SOURCE)
            self._voters[skill] = agent
        return self._voters[skill]

    async def run(self, task: Task, *, sample: int = 0) -> Rollout:
        if not self.votes:
            return await self.inner.run(task, sample=sample)
        routing = await self.explain(task.prompt)
        names = routing.ranked[: self.m]
        if not names:
            return await self.inner.run(task, sample=sample)
        rollouts = await asyncio.gather(*(self.voter(n).run(task, sample=sample) for n in names))
        weights = [routing.familiarity[n] for n in names]
        winner = familiarity_vote([r.answer for r in rollouts], weights)
        chosen = rollouts[0 if winner is None else winner]
        return dataclasses.replace(
            chosen,
            skills=tuple(names),
            activation=SOURCE,
            prompt_tokens=sum(r.prompt_tokens for r in rollouts),
            completion_tokens=sum(r.completion_tokens for r in rollouts),
            cost=sum(r.cost for r in rollouts),
            calls=sum(r.calls for r in rollouts),
            selections=(tuple(names),),
            sources=(SOURCE,),
            extra={
                **chosen.extra,
                "vote": {
                    "answers": [r.answer for r in rollouts],
                    "familiarity": [round(w, 4) for w in weights],
                    "winner": names[0 if winner is None else winner],
                },
            },
        )
