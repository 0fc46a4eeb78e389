"""Validation: the rewards of a pool on the validation split, per sample index, and the decisions
of the acceptance policy between an incumbent pool and a candidate.

Rewards are cached per (pool, gate view, sample index), so an incumbent is never paid twice: every
decision against the same incumbent reuses its samples (and the LM's response cache makes a
resumed run's re-validation free). Every evaluated sample is a `validation` event.

`first_sample` shifts the sample indices asked of the LM: a decision's sample s is the LM's
sample `first_sample + s`. The stream replays tasks its pool has just answered live (sample 0),
so it starts at 1: the incumbent is measured on fresh samples, not read back from the cache as
the very answers whose failures triggered the edit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.agent.evaluate import run_tasks
from moscopt.lm.batch import can_wait, wave_concurrency
from moscopt.optimizer.policies.acceptance import Acceptance, Direction, Verdict, make_acceptance
from moscopt.run.ledger import Decision, Validation

if TYPE_CHECKING:
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context


class Validator:
    """Scores pools on the validation split and decides between them."""

    def __init__(
        self, ctx: Context, policy: Acceptance | None = None, *, first_sample: int = 0
    ) -> None:
        self.ctx = ctx
        self.first_sample = first_sample
        cfg = ctx.config.optimizer
        self.policy = policy or make_acceptance(
            cfg.acceptance,
            confidence=cfg.confidence,
            max_samples=cfg.max_val_samples,
            margin=cfg.margin,
        )
        self._rewards: dict[str, list[float]] = {}

    def _key(self, pool: Pool, sample: int) -> str:
        stats = self.ctx.val_stats()
        view = (
            f"{pool.digest()}|{sorted(stats.q.items())}|{sorted(stats.activations.items())}|"
            f"{stats.enriched}|{sample}"
        )
        return hashlib.sha256(view.encode()).hexdigest()

    async def rewards(self, pool: Pool, sample: int = 0) -> list[float]:
        """The reward of each validation task (in split order) for sample index `sample`."""
        sample += self.first_sample
        key = self._key(pool, sample)
        cached = self._rewards.get(key)
        if cached is not None:
            return cached
        ctx = self.ctx
        most = self._samples()
        of = f" of up to {most}" if most > 1 else ""
        what = f"validating {self._label(pool)}: sample {sample + 1}{of}"
        done = 0

        def one_more(_: object) -> None:
            nonlocal done
            done += 1
            ctx.doing(f"{what} ({done} of {len(ctx.val_tasks)} tasks done)")

        ctx.doing(f"{what} (0 of {len(ctx.val_tasks)} tasks done)")
        with can_wait(ctx.config.llm.batch):  # validation can wait: `--batch` batches it
            rollouts = await run_tasks(
                ctx.agent(pool, ctx.val_stats()),
                ctx.val_tasks,
                concurrency=wave_concurrency(ctx.config.llm),
                sample=sample,
                on_rollout=one_more,
            )
        rewards = [r.reward for r in rollouts]
        self._rewards[key] = rewards
        ctx.record(
            Validation(
                **ctx.where(),
                pool=pool.digest()[:12],
                score=_mean(rewards),
                tasks=len(rewards),
                fallbacks=sum(r.activation == "fallback" for r in rollouts),
                sample=sample,
            )
        )
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

    async def score(self, pool: Pool) -> float:
        """Mean reward of sample 0: the score a phase starts from."""
        return _mean(await self.rewards(pool, 0))

    async def decide(
        self,
        incumbent: Pool,
        candidate: Pool,
        *,
        direction: Direction = "better",
    ) -> Verdict:
        async def of_incumbent(s: int) -> Sequence[float]:
            return await self.rewards(incumbent, s)

        async def of_candidate(s: int) -> Sequence[float]:
            return await self.rewards(candidate, s)

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


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(1, len(values))
