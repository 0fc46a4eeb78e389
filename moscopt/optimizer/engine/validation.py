"""Validation: the rewards of a pool on the validation split, per sample index, and the decisions
of the acceptance policy between an incumbent pool and a candidate.

Rewards are cached per (pool, gate view, answering state, look), so an incumbent is never paid
twice: every decision against the same incumbent reuses its samples (and the LM's response cache
makes a resumed run's re-validation free). Every evaluated sample is a `validation` event. The
answering state is what else changes answers: the extensions' learned state (execution memory,
routers), frozen per phase (`Context.freeze_validation`), so incumbent and candidate answer with
the same memory.

Fresh evidence for an adopted pool. A candidate that wins was measured on the looks it won on;
read back as the incumbent of the next decision, those very samples (selected for being good)
would be its evidence, and the next edit would face an incumbent measured too high. So a
decision's look s is look `cursor.val_base + s`, and adopting a pool moves `val_base` past the
looks its decision used (`adopt`): the new incumbent is measured on sample indices (with
`val_look`, tasks) no decision about it has seen, and the score recorded for it (`best_val`, the
validation history) is that fresh look's, not the winning one's.

`first_sample` shifts the sample indices asked of the LM: a decision's sample s is the LM's
sample `first_sample + s`. The stream replays tasks its pool has just answered live (sample 0),
so it starts at 1: the incumbent is measured on fresh samples, not read back from the cache as
the very answers whose failures triggered the edit.

More tasks, not only more repeats: the validation split is the pool of held-out tasks a decision
draws from. With `optimizer.val_look` = L smaller than the split, look s of a decision evaluates L
tasks: the first look the split's first L (the tasks every validation score is reported on),
each further look the next L tasks of the split not yet seen (in the split's seeded order), and
only once every task has been seen are tasks repeated, at the next sample index (`look_tasks`).
The schedule is a pure function of the look, the same for every pool and decision: the incumbent
and the candidate meet the same tasks, an incumbent's looks are cached and shared by every
decision against it, and a resumed run makes the same decisions. Different tasks carry more
information than repeats of the same ones: a model that answers a task the same way on most
samples learns little from a second sample (scripts/bench_acceptance.py, `--consistency`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.agent.evaluate import run_tasks
from moscopt.lm.batch import can_wait, wave_concurrency
from moscopt.optimizer.policies.acceptance import Acceptance, Direction, Verdict
from moscopt.run.ledger import Decision, Validation

if TYPE_CHECKING:
    from moscopt.agent.skill_agent import SkillAgent
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context


class Validator:
    """Scores pools on the validation split and decides between them by `policy` (the one the
    application layer built from `optimizer.acceptance`, `Policies.acceptance`)."""

    def __init__(self, ctx: Context, policy: Acceptance, *, first_sample: int = 0) -> None:
        self.ctx = ctx
        self.first_sample = first_sample
        self.policy = policy
        self._rewards: dict[str, list[float]] = {}

    def _key(self, pool: Pool, look: int) -> str:
        stats = self.ctx.val_stats()
        ids = ",".join(t.id for t in self.ctx.val_tasks)
        view = (
            f"{pool.digest()}|{sorted(stats.q.items())}|{sorted(stats.activations.items())}|"
            f"{stats.enriched}|{self.first_sample}|{self._look_size()}|{ids}|{look}|"
            f"{self.ctx.validation_view()}"
        )
        return hashlib.sha256(view.encode()).hexdigest()

    def _look_size(self) -> int:
        """Tasks per look: `optimizer.val_look`, at most the split (None: the whole split)."""
        size = self.ctx.config.optimizer.val_look
        return len(self.ctx.val_tasks) if size is None else min(size, len(self.ctx.val_tasks))

    async def rewards(
        self, pool: Pool, look: int = 0, agent: SkillAgent | None = None
    ) -> list[float]:
        """The reward of each task of look `look` (`look_tasks`), in the look's order; `agent`:
        the one to answer with, built earlier (default: built now for `pool`)."""
        key = self._key(pool, look)
        cached = self._rewards.get(key)
        if cached is not None:
            return cached
        ctx = self.ctx
        most = self._samples()
        of = f" of up to {most}" if most > 1 else ""
        what = f"validating {self._label(pool)}: sample {look + 1}{of}"
        plan = look_tasks(len(ctx.val_tasks), self._look_size(), look)
        done = 0

        def one_more(_: object) -> None:
            nonlocal done
            done += 1
            ctx.doing(f"{what} ({done} of {len(plan)} tasks done)")

        ctx.doing(f"{what} (0 of {len(plan)} tasks done)")
        if agent is None:
            agent = ctx.val_agent(pool)
        rewards: list[float] = []
        for sample, indices in by_sample(plan):
            sample += self.first_sample
            with can_wait(ctx.config.llm.batch):  # validation can wait: `--batch` batches it
                rollouts = await run_tasks(
                    agent,
                    [ctx.val_tasks[i] for i in indices],
                    concurrency=wave_concurrency(ctx.config.llm),
                    sample=sample,
                    on_rollout=one_more,
                )
            rewards += [r.reward for r in rollouts]
            ctx.record(
                Validation(
                    **ctx.where(),
                    pool=pool.digest()[:12],
                    score=_mean([r.reward for r in rollouts]),
                    tasks=len(rollouts),
                    fallbacks=sum(r.activation == "fallback" for r in rollouts),
                    sample=sample,
                )
            )
        self._rewards[key] = rewards
        return rewards

    def _label(self, pool: Pool) -> str:
        """`pool` in words, against the current pool: `the current pool`, `candidate <names>`."""
        current = self.ctx.pool
        if pool.digest() == current.digest():
            return "the current pool"
        names = [s.name for s in pool.skills if s.name not in current.names]
        names += [
            s.name for s in pool.skills if s.name in current.names and current.get(s.name) != s
        ]
        if pool.gate is not None and pool.gate != current.gate:
            names.append("gate")
        if len(names) > 3:
            names = [*names[:3], f"+{len(names) - 3} more"]
        return "candidate " + (", ".join(names) if names else "pool")

    def _samples(self) -> int:
        """At most how many samples a decision looks at (1 for the strict policy)."""
        return int(getattr(self.policy, "max_samples", 1))

    @property
    def base(self) -> int:
        """The first look of the next decision (module docstring)."""
        return self.ctx.cursor.val_base

    async def score(self, pool: Pool, agent: SkillAgent | None = None) -> float:
        """Mean reward of the next decision's first look: the score a phase starts from."""
        return _mean(await self.rewards(pool, self.base, agent))

    def score_later(self, pool: Pool) -> Coroutine[Any, Any, float]:
        """`score(pool)` to run later, with the agent (its router, its memory) built now from
        the run's state as it is now, unless the score is already known."""
        known = self._key(pool, self.base) in self._rewards
        return self.score(pool, None if known else self.ctx.val_agent(pool))

    async def adopt(self, pool: Pool, verdict: Verdict) -> str:
        """Make `pool`, accepted by `verdict`, the current pool: later decisions start past the
        looks this one used, and the score recorded for it is measured on the first of those
        fresh looks (which the next decision against it reuses); the checkpoint's file."""
        self.ctx.cursor.val_base += verdict.samples
        return self.ctx.adopt(pool, await self.score(pool))

    async def decide(
        self,
        incumbent: Pool,
        candidate: Pool,
        *,
        direction: Direction = "better",
    ) -> Verdict:
        await self.ctx.settled()  # the incumbent's score as the phase started, in the state

        base = self.base

        async def of_incumbent(s: int) -> Sequence[float]:
            return await self.rewards(incumbent, base + s)

        async def of_candidate(s: int) -> Sequence[float]:
            return await self.rewards(candidate, base + s)

        return await self.policy.decide(of_incumbent, of_candidate, direction=direction)


def decision(policy: Acceptance, verdict: Verdict) -> Decision:
    """The ledger's record of a verdict."""
    return Decision(
        policy=policy.name,
        samples=verdict.samples,
        n=verdict.n,
        mean_diff=verdict.mean_diff,
        low=max(-1.0, verdict.low),  # rewards lie in [0, 1]: so do their differences
        high=min(1.0, verdict.high),
        reason=verdict.reason,
    )


def look_tasks(pool: int, size: int, look: int) -> list[tuple[int, int]]:
    """(task index in the split, sample index) of each task of look `look` (from 0): looks
    walk the split `size` tasks at a time, and a task comes back only after the whole split,
    at the next sample index. With `size == pool`, look s is every task at sample s."""
    if not 0 < size <= pool or look < 0:
        raise ValueError(f"a look of {size} tasks out of {pool}, look {look}: out of range")
    start = look * size
    return [((start + j) % pool, (start + j) // pool) for j in range(size)]


def by_sample(plan: Sequence[tuple[int, int]]) -> list[tuple[int, list[int]]]:
    """The look's task indices grouped by sample index, in the look's order (one wrap at most:
    a look is never longer than the split)."""
    groups: dict[int, list[int]] = {}
    for index, sample in plan:
        groups.setdefault(sample, []).append(index)
    return list(groups.items())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(1, len(values))
