"""Applying one lifecycle operator: ask for the new skill (fork, merge, seed), build the
candidate pool, validate it (`non_inferior`), record a `lifecycle` event, and on acceptance update
the pool and the statistics (see `moscopt.niches.lifecycle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt.engine.validation import decision
from moscopt.evolve import Job, draft, pool_listing
from moscopt.ledger import LifecycleEvent
from moscopt.skills import Pool, Skill

if TYPE_CHECKING:
    from moscopt.engine.context import Context
    from moscopt.engine.validation import Validator
    from moscopt.niches.lifecycle import Op


async def new_skill(ctx: Context, op: Op) -> tuple[Skill | None, str | None]:
    """The skill a fork, merge or seed adds (None and the error if the LLM gave none usable)."""
    from moscopt.niches.lifecycle import examples

    pool, listing = ctx.pool, pool_listing(ctx.pool)
    if op.kind == "merge":
        first, second = (pool.get(n).dumps() for n in op.skills)
        job = Job("crossover", {"first": first, "second": second, "pool": listing})
    elif op.kind == "fork":
        assert op.niche is not None
        shown = examples(ctx, op.niche, pool, failed=False)
        values = {"skill": pool.get(op.skills[0]).dumps(), "niche": op.niche, "pool": listing}
        job = Job("lifecycle_fork", {**values, "examples": shown})
    else:
        assert op.niche is not None
        shown = examples(ctx, op.niche, pool, failed=True)
        job = Job("lifecycle_seed", {"niche": op.niche, "examples": shown, "pool": listing})
    got, errors = await draft(ctx.optimizer_lm, job)
    if got is None:
        return None, errors[-1] if errors else "no usable skill"
    taken = set(ctx.state.names_used) | set(pool.names)
    origin = {"merge": "merge", "fork": f"fork:{op.niche}", "seed": f"seed:{op.niche}"}[op.kind]
    return got.named(taken, origin), None


async def apply_op(ctx: Context, validator: Validator, op: Op) -> bool:
    """Try `op`; whether the pool took it."""
    s, old = ctx.state, ctx.pool
    child: Skill | None = None
    if op.kind != "prune":
        child, error = await new_skill(ctx, op)
        if child is None:
            ctx.record(
                LifecycleEvent(
                    **ctx.where(),
                    op=op.kind,
                    skills=list(op.skills),
                    niche=op.niche,
                    reason=f"{op.reason}; {error}",
                )
            )
            return False
        s.names_used = sorted(set(s.names_used) | {child.name})
    removed = set(op.skills) if op.kind in ("prune", "merge") else set()
    kept = tuple(x for x in old if x.name not in removed)
    pool = Pool(skills=(*kept, *((child,) if child else ())), gate=old.gate)
    verdict = await validator.decide(old, pool, direction="non_inferior")
    checkpoint = None
    if verdict.accepted:
        ctx.renew(old, pool, [child.name] if child is not None else [])
        if s.niches is not None:
            for name in removed:
                s.niches.pending.pop(name, None)
                s.niches.below.pop(name, None)
        checkpoint = ctx.adopt(pool, verdict.candidate_score)
    ctx.record(
        LifecycleEvent(
            **ctx.where(),
            op=op.kind,
            skills=list(op.skills),
            created=child.name if child else None,
            niche=op.niche,
            reason=op.reason,
            before=verdict.incumbent_score,
            after=verdict.candidate_score,
            accepted=verdict.accepted,
            pool=pool.digest()[:12],
            checkpoint=checkpoint,
            decision=decision(validator.policy, verdict),
        )
    )
    ctx.emit(event="evolution", verdict=verdict.accepted, score=verdict.candidate_score)
    return verdict.accepted
