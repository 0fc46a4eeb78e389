"""Fit the write gate, the retrieval gate and the halting controller from logged rollouts.

Every step of a rollout's memory trace (`Rollout.extra["memory"]`) is graded as if the run had
stopped there (the benchmark's grader on that step's candidate response; no LLM call). A task
whose grade needs the judge model (a task file's rubric) would need one judge call per step: its
rollouts teach the memory nothing, rather than teach it that every step scored 0. Then:

- halting: a step t with an answer and an observed continuation is a positive example when
  stopping there is no worse than any observed continuation under the cost-aware objective
  U(t) = reward(t) - price * calls(t), i.e. U(t) >= max over s > t of U(s);
- write: a record is useful when it is a step of a rollout that succeeded or proposes a right
  answer itself (redundancy is the novelty rule's job, before the learned score);
- retrieval: each record shown (or not) to a later step, labelled by that record's usefulness.

Examples are appended to bounded buffers in `MemoryState` (oldest dropped), and each model is
refitted on its whole buffer after every minibatch: deterministic (same rollouts, same
parameters) and resumable (the buffers are in the run state).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.extensions.memory.gates import RETRIEVAL_FEATURES, WRITE_FEATURES
from moscopt.extensions.memory.halting import HALTING_FEATURES
from moscopt.extensions.memory.learned import calibration, fit_logistic
from moscopt.extensions.memory.params import MIGRATIONS, NAME, MemoryState, ModelParams
from moscopt.optimizer.engine.extension import Extension

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.config import Config
    from moscopt.optimizer.engine.context import Context
    from moscopt.run.ledger import RolloutEvent

GradeFn = Callable[[str, str], float]  # (task id, response) -> reward


def step_rewards(rollout: Rollout, grade: GradeFn) -> list[float]:
    """The reward of each step's candidate (the response graded had the run stopped there)."""
    steps = _steps(rollout)
    seen: dict[str, float] = {}
    out = []
    for s in steps:
        text = str(s.get("candidate") or "")
        if text not in seen:
            seen[text] = grade(rollout.task_id, text) if text else 0.0
        out.append(seen[text])
    return out


def halting_examples(
    steps: Sequence[dict[str, Any]], rewards: Sequence[float], price: float
) -> list[list[float]]:
    """[features..., label] for every answered step that has an observed continuation."""
    utility = [r - price * int(s.get("calls") or 0) for s, r in zip(steps, rewards, strict=True)]
    out: list[list[float]] = []
    for t, s in enumerate(steps[:-1]):
        features = s.get("halt_features")
        if features is None or s.get("answer") is None:
            continue
        best_later = max(utility[t + 1 :])
        out.append([*map(float, features), float(utility[t] >= best_later - 1e-9)])
    return out


def usefulness(
    steps: Sequence[dict[str, Any]], rewards: Sequence[float], final: float
) -> list[float]:
    """1.0 for a record of a rollout that succeeded or with a right answer of its own."""
    return [float(final >= 0.5 or r >= 0.5) for r in rewards]


def rollout_examples(
    rollout: Rollout, grade: GradeFn, price: float
) -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    """(write, retrieval, halting) examples of one rollout (empty without a memory trace)."""
    steps = _steps(rollout)
    if not steps:
        return [], [], []
    rewards = step_rewards(rollout, grade)
    useful = usefulness(steps, rewards, rollout.reward)
    write = [[*map(float, s["write_features"]), u] for s, u in zip(steps, useful, strict=True)]
    retrieval = []
    for s in steps:
        for row in s.get("retrieval") or ():
            *features, record_step = row
            if 0 <= int(record_step) < len(useful):
                retrieval.append([*map(float, features), useful[int(record_step)]])
    return write, retrieval, halting_examples(steps, rewards, price)


def refit(state: MemoryState, config: Config) -> MemoryState:
    """`state` with each learned model refitted on its buffer (switched-off models are left)."""
    m = config.memory
    fits = (
        ("write", WRITE_FEATURES, state.write_examples, m.learned_write),
        ("retrieval", RETRIEVAL_FEATURES, state.retrieval_examples, m.learned_retrieval),
        ("halting", HALTING_FEATURES, state.halting_examples, m.halting.learned),
    )
    update: dict[str, Any] = {}
    for name, features, examples, on in fits:
        rows = [e for e in examples if len(e) == len(features) + 1]
        if not on or not rows:
            continue
        xs, ys = [e[:-1] for e in rows], [e[-1] for e in rows]
        model = fit_logistic(xs, ys)
        if model is not None:
            update[name] = ModelParams.of(features, model, calibration(model, xs, ys))
    return state.model_copy(update=update)


def learn(
    state: MemoryState | None, rollouts: Sequence[Rollout], grade: GradeFn, config: Config
) -> MemoryState:
    """`state` after learning from `rollouts` (in their order): buffers extended, refitted."""
    state = (state or MemoryState()).model_copy(deep=True)
    cap = config.memory.examples
    price = config.memory.halting.price
    seen = 0
    for rollout in rollouts:
        write, retrieval, halting = rollout_examples(rollout, grade, price)
        if not (write or retrieval or halting):
            continue
        seen += 1
        state.write_examples = _rounded(state.write_examples + write)[-cap:]
        state.retrieval_examples = _rounded(state.retrieval_examples + retrieval)[-cap:]
        state.halting_examples = _rounded(state.halting_examples + halting)[-cap:]
    state.rollouts += seen
    return refit(state, config) if seen else state


class MemoryExtension(Extension):
    """The engine extension: fit the gates and the halting controller on each minibatch's
    rollouts (`learn`); its part of the run state is the `MemoryState` (`params.NAME`), which
    the agents the engine builds use."""

    name = NAME
    migrations = MIGRATIONS
    memory: MemoryState | None = None

    def attach(self, ctx: Context, saved: dict[str, Any] | None) -> None:
        self.memory = None if saved is None else MemoryState.model_validate(saved)

    def saved_state(self) -> dict[str, Any] | None:
        return None if self.memory is None else self.memory.model_dump(mode="json")

    def agent_options(self, ctx: Context) -> dict[str, Any]:
        return {"memory": self.memory}

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        rollouts = [r for r in rollouts if _steps(r) and not _judged(ctx, r.task_id)]
        if not rollouts:
            return

        def grade(task_id: str, response: str) -> float:
            task = ctx.tasks.get(task_id)
            return 0.0 if task is None else ctx.benchmark.grade(task, response).reward

        self.memory = await asyncio.to_thread(learn, self.memory, rollouts, grade, ctx.config)


def wanted(config: Config) -> bool:
    """Whether `config` trains the execution memory (memory or halting on, and `train`)."""
    return config.memory.active and config.memory.train


def describe(state: MemoryState | None) -> list[str]:
    """One line per fitted model: examples, base rate, Brier score, calibration error."""
    if state is None:
        return []
    lines = []
    for name in ("write", "retrieval", "halting"):
        p: ModelParams | None = getattr(state, name)
        if p is None:
            lines.append(f"{name}: not fitted (untrained rule)")
        else:
            lines.append(
                f"{name}: {p.examples} examples, base rate {p.base_rate:.2f}, "
                f"Brier {p.brier:.3f}, ECE {p.ece:.3f}, accuracy {p.accuracy:.2f}"
            )
    return lines


def halting_counts(rollouts: Iterable[RolloutEvent]) -> dict[str, Any]:
    """What `moscopt status` says of halting: how many rollouts it stopped early, and the agent
    calls that saved (at least one per halted run, the step it had pending; at most the step
    budget each had left)."""
    total = halted = left = 0
    for r in rollouts:
        total += 1
        if r.halted_at is not None:
            halted += 1
            left += r.steps_left
    return {
        "rollouts": total,
        "halted_early": halted,
        "share": halted / total if total else None,
        "calls_saved_min": halted,
        "calls_saved_max": left,
    }


def _judged(ctx: Context, task_id: str) -> bool:
    """Whether the task's grade needs the judge model (module docstring)."""
    task = ctx.tasks.get(task_id)
    return task is not None and ctx.benchmark.needs_judge_model([task])


def _steps(rollout: Rollout) -> list[dict[str, Any]]:
    trace = (rollout.extra or {}).get("memory")
    return list(trace.get("steps") or []) if isinstance(trace, dict) else []


def _rounded(rows: list[list[float]]) -> list[list[float]]:
    return [[round(float(x), 4) for x in row] for row in rows]
