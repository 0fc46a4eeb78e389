"""The text the optimizer LLM is shown about rollouts: trajectories for reflection (in groups of
M_b), the minibatch's scores, and routing cases for the gate. Kept beside the prompts
(`moscopt/prompts/`), apart from the engine's logic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.agent.harness import Rollout
from moscopt.core.credit import q_of
from moscopt.optimizer.editadam import GOLD_CHARS, cut, format_trajectories
from moscopt.optimizer.policies.edit_targets import SUCCESS
from moscopt.run.ledger import RolloutEvent

if TYPE_CHECKING:
    from moscopt.benchmarks import Task

PASSED_PER_GROUP = 2  # successes shown beside each group of failures, for contrast
JUDGE_CHARS = 1200  # of a judge's verdict on a reply


def as_rollout(r: RolloutEvent, task: Task) -> Rollout:
    """The logged rollout as the `Rollout` the trajectory formatter reads."""
    messages: list[Any] = [
        {"role": "user", "content": task.prompt},
        {"role": "assistant", "content": r.response},
    ]
    return Rollout(
        task_id=r.task_id,
        skills=tuple(r.skills),
        activation=r.activation,
        messages=messages,
        response=r.response,
        answer=r.answer,
        reward=r.reward,
        detail=r.detail,
        error=r.error,
        gate_error=r.gate_error,
    )


def active(r: RolloutEvent) -> set[str]:
    """Every skill selected during the rollout (step-level gating may select several sets)."""
    return set(r.skills).union(*(set(s) for s in r.selections))


def trajectory_groups(
    name: str, rollouts: Sequence[RolloutEvent], tasks: Mapping[str, Task], group: int
) -> list[str]:
    """The trajectories in which `name` was active, failures in groups of `group` (M_b), each
    with up to two successes for contrast: one reflection per group."""
    mine = [r for r in rollouts if name in active(r) and r.task_id in tasks]
    failed = [r for r in mine if r.reward < SUCCESS]
    passed = [r for r in mine if r.reward >= SUCCESS]
    chunks = [failed[i : i + group] for i in range(0, len(failed), group)] or [[]]
    out = []
    for i, chunk in enumerate(chunks):
        shown = chunk + passed[i * PASSED_PER_GROUP : (i + 1) * PASSED_PER_GROUP]
        expected = {r.task_id: expectation(tasks[r.task_id], r) for r in shown}
        out.append(format_trajectories([as_rollout(r, tasks[r.task_id]) for r in shown], expected))
    return out


def expectation(task: Task, r: RolloutEvent) -> str:
    """What reflection is told a right reply is: the answer key (cut), or for a task that
    carries a judge of checks or criteria, what the judge found (which ones the reply missed,
    each as what it requires), never the judge's raw definition."""
    from moscopt.benchmarks.judges import RubricJudge, RuleJudge

    if isinstance(task.gold, RuleJudge | RubricJudge):
        what = "checks" if isinstance(task.gold, RuleJudge) else "criteria"
        verdict = r.detail or f"requires: {task.gold}"
        return f"Judge ({what}): {cut(verdict, JUDGE_CHARS)}"
    return f"Expected answer: {cut(str(task.gold), GOLD_CHARS)}"


def hard_soft(rollouts: Sequence[RolloutEvent]) -> tuple[float, float]:
    """The minibatch's hard score (fraction solved) and soft score (mean reward)."""
    n = max(1, len(rollouts))
    return sum(r.reward >= SUCCESS for r in rollouts) / n, sum(r.reward for r in rollouts) / n


def scores_text(rollouts: Sequence[RolloutEvent]) -> str:
    """The minibatch's scores. Not the pool's validation score: that changes as the targets of a
    minibatch are decided in turn, and each target's proposal must not depend on the order."""
    hard, soft = hard_soft(rollouts)
    return f"this minibatch: {soft:.3f} mean reward, {hard:.3f} solved, over {len(rollouts)} tasks"


def case_text(prompt: str) -> str:
    """A task as a routing case shows it: on one line, its first 400 characters."""
    return " ".join(prompt.split())[:400]


def routing_cases(
    rollouts: Sequence[RolloutEvent],
    tasks: Mapping[str, Task],
    pool_names: Sequence[str],
    q: Mapping[str, float],
    limit: int = 8,
) -> str:
    """Failed rollouts where skills with higher Q were left out, and gate parse failures. A
    rollout whose gate chose from a shortlist (`offered`, the hybrid router's) names it, and
    counts as left out only the skills the gate was offered: it could not pick the others."""
    lines = []
    for r in rollouts:
        if r.reward >= SUCCESS and not r.gate_error:
            continue
        task = tasks.get(r.task_id)
        text = case_text(task.prompt if task else r.task_id)
        floor = min((q_of(q, s) for s in r.skills), default=0.0)
        better = sorted(
            (s for s in r.offered or pool_names if s not in r.skills and q_of(q, s) > floor),
            key=lambda s: -q_of(q, s),
        )[:3]
        line = f"- task: {text}\n  activated: {', '.join(r.skills)} -> reward {r.reward:.2f}"
        if r.offered:
            line += f"\n  offered to the gate (the router's shortlist): {', '.join(r.offered)}"
        if better:
            line += "\n  higher-scoring skills left out: " + ", ".join(
                f"{s} ({q_of(q, s):.2f})" for s in better
            )
        if r.gate_error:
            line += f"\n  the router's answer could not be used: {r.gate_error}"
        lines.append(line)
        if len(lines) == limit:
            break
    return "\n".join(lines)
