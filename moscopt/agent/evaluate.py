"""Evaluate an agent on a list of tasks, concurrently, with optional adaptive repeats.

With `out`, results are streamed: each rollout is written as it completes (to a spool file next
to `out`) and dropped, and the result keeps only the numbers its summary needs, so memory does
not grow with the number of tasks. When the evaluation ends, `out` is replaced atomically by
the rows in task order (sample by sample), the same bytes whatever order the rollouts completed
in; if it fails, `out` is left as it was. Rows never carry the value of a secret environment
variable (`moscopt.run.fsio.scrub`).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from moscopt.agent.harness import Rollout
from moscopt.core.stats import mean_ci, repeats_half_width
from moscopt.lm.redact import MASK, env_secrets
from moscopt.routing.gate import GATE_ERROR, PARSE_FAILURES
from moscopt.run.fsio import atomic_writer, make_dirs, storage

if TYPE_CHECKING:
    from moscopt.agent.skill_agent import SkillAgent
    from moscopt.benchmarks import Task

MIN_REPEATS, MAX_REPEATS = 3, 50


@dataclass
class Tally:
    """What a summary needs of a set of rollouts, without the rollouts."""

    rewards: array[float] = field(default_factory=lambda: array("d"))
    task_ids: set[str] = field(default_factory=set)
    errors: int = 0
    gate_fallbacks: int = 0
    gate_errors: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def add(self, r: Rollout) -> None:
        self.rewards.append(r.reward)
        self.task_ids.add(r.task_id)
        self.errors += r.error is not None
        # per selection (one per step with step-level gating); LLM errors at the gate apart
        self.gate_fallbacks += sum(s in PARSE_FAILURES for s in r.sources)
        self.gate_errors += sum(s == GATE_ERROR for s in r.sources)
        self.calls += r.calls
        self.prompt_tokens += r.prompt_tokens
        self.completion_tokens += r.completion_tokens
        self.cost += r.cost

    @classmethod
    def of(cls, rollouts: Sequence[Rollout]) -> Tally:
        tally = cls()
        for r in rollouts:
            tally.add(r)
        return tally


@dataclass
class EvalResult:
    """`rollouts` holds every rollout, unless they were streamed to a file: then it is empty
    and `tally` holds their numbers."""

    rollouts: list[Rollout]
    repeat_scores: list[float] = field(default_factory=list)
    tally: Tally | None = None

    def _tally(self) -> Tally:
        return self.tally if self.tally is not None else Tally.of(self.rollouts)

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
        return mean_ci(self._tally().rewards)

    def summary(self) -> dict[str, Any]:
        mean, low, high = self.interval
        t = self._tally()
        return {
            "score": mean,
            "ci95": [low, high],
            "tasks": len(t.task_ids),
            "rollouts": len(t.rewards),
            "repeats": max(1, len(self.repeat_scores)),
            "errors": t.errors,
            "gate_fallbacks": t.gate_fallbacks,
            "gate_errors": t.gate_errors,
            "calls": t.calls,
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens": t.completion_tokens,
            "cost": t.cost,
        }


async def each_rollout(
    agent: SkillAgent,
    tasks: Sequence[Task],
    handle: Callable[[int, Rollout], None],
    *,
    concurrency: int,
    sample: int = 0,
) -> None:
    """Roll out every task once, handing each rollout (with the task's index) to `handle` as it
    completes. Only the rollouts in flight are in memory: `concurrency` of them, the LM's slots
    for calls in flight, and one more, whose next request waits for a slot ready-made (its
    cache lookup and request built), so that it goes out as soon as an answer frees one and the
    answered rollout's own work (grading, its row) overlaps the wait for the next answer
    (`LiteLLMClient.acomplete` yields once after an answer)."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < len(tasks):
            i = next_index
            next_index += 1
            handle(i, await agent.run(tasks[i], sample=sample))

    count = min(max(1, concurrency) + 1, len(tasks))
    workers = [asyncio.ensure_future(worker()) for _ in range(count)]
    try:
        await asyncio.gather(*workers)
    except BaseException:  # the first failure stops the others (as `gather` of every task did)
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise


async def run_tasks(
    agent: SkillAgent,
    tasks: Sequence[Task],
    *,
    concurrency: int,
    sample: int = 0,
    on_rollout: Callable[[Rollout], None] | None = None,
) -> list[Rollout]:
    """Roll out every task once (in task order in the result), at most `concurrency` at a time."""
    results: list[Rollout | None] = [None] * len(tasks)

    def keep(i: int, rollout: Rollout) -> None:
        results[i] = rollout
        if on_rollout is not None:
            on_rollout(rollout)

    await each_rollout(agent, tasks, keep, concurrency=concurrency, sample=sample)
    return [r for r in results if r is not None]


class RowSpool:
    """Result rows spooled to an unnamed file beside `out` in completion order, then written to
    `out` atomically in order (`commit`). Memory holds three integers per row."""

    def __init__(self, out: Path) -> None:
        self.out = out
        make_dirs(out.parent)
        with storage(out):
            self._file: IO[bytes] = tempfile.TemporaryFile(dir=out.parent)  # noqa: SIM115 (closed by close)
        self._where: dict[int, tuple[int, int]] = {}  # row index -> (offset, length)
        self._end = 0
        # `fsio.scrub`'s secrets, read from the environment once, not once per row
        self._secrets = env_secrets()

    def add(self, index: int, row: dict[str, Any]) -> None:
        text = json.dumps(row, ensure_ascii=False, sort_keys=True)
        for value in self._secrets:
            if value in text:
                text = text.replace(value, MASK)
        data = (text + "\n").encode()
        with storage(self.out):
            self._file.seek(self._end)
            self._file.write(data)
        self._where[index] = (self._end, len(data))
        self._end += len(data)

    def commit(self) -> None:
        with atomic_writer(self.out) as f:
            for index in sorted(self._where):
                offset, length = self._where[index]
                self._file.seek(offset)
                f.write(self._file.read(length))

    def close(self) -> None:
        self._file.close()


async def evaluate(
    agent: SkillAgent,
    tasks: Sequence[Task],
    *,
    concurrency: int,
    repeats: int | str = 1,
    tolerance: float = 0.01,
    on_rollout: Callable[[Rollout], None] | None = None,
    out: Path | None = None,
) -> EvalResult:
    """Evaluate; `repeats="auto"` repeats 3..50 times until the 95% half-width ≤ `tolerance`.

    With `out`, each rollout's row (`Rollout.to_json`) is streamed to that file (see the module
    docstring) and `EvalResult.rollouts` stays empty; without it, the rollouts are returned.
    """
    spool = RowSpool(out) if out is not None else None
    result = EvalResult(rollouts=[], tally=Tally() if spool is not None else None)
    auto = repeats == "auto"
    limit = MAX_REPEATS if auto else int(repeats)
    try:
        for sample in range(limit):
            batch = await _one_sample(agent, tasks, sample, concurrency, spool, result, on_rollout)
            if limit > 1:
                result.repeat_scores.append(sum(batch.rewards) / max(1, len(batch.rewards)))
            if (
                auto
                and sample + 1 >= MIN_REPEATS
                and (repeats_half_width(result.repeat_scores) <= tolerance)
            ):
                break
        if spool is not None:
            spool.commit()
    finally:
        if spool is not None:
            spool.close()
    return result


async def _one_sample(
    agent: SkillAgent,
    tasks: Sequence[Task],
    sample: int,
    concurrency: int,
    spool: RowSpool | None,
    result: EvalResult,
    on_rollout: Callable[[Rollout], None] | None,
) -> Tally:
    """Sample `sample` of every task: streamed to `spool`, or kept in `result.rollouts`."""
    batch = Tally()
    ordered: list[Rollout | None] = [None] * (len(tasks) if spool is None else 0)
    base = sample * len(tasks)

    def handle(i: int, rollout: Rollout) -> None:
        batch.add(rollout)
        if spool is None:
            ordered[i] = rollout
        else:
            assert result.tally is not None
            result.tally.add(rollout)
            spool.add(base + i, rollout.to_json())
        if on_rollout is not None:
            on_rollout(rollout)

    await each_rollout(agent, tasks, handle, concurrency=concurrency, sample=sample)
    result.rollouts.extend(r for r in ordered if r is not None)
    return batch
