"""Applying one lifecycle operator: ask for the new skill (fork, merge, seed), build the
candidate pool, validate it (`non_inferior`), record a `lifecycle` event, and on acceptance update
the pool and the statistics (see `moscopt.extensions.niches.lifecycle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt.core.skills import Pool, Skill
from moscopt.extensions.niches.lifecycle import (
    EXAMPLES,
    Op,
    forked,
    min_size,
    plan_fork,
    plan_merge,
    plan_prune,
    plan_seed,
)
from moscopt.extensions.niches.records import live_niches
from moscopt.optimizer.engine.validation import decision
from moscopt.optimizer.evolve import Job, draft, pool_listing
from moscopt.run.ledger import LifecycleEvent

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context
    from moscopt.optimizer.engine.validation import Validator


async def new_skill(ctx: Context, op: Op) -> tuple[Skill | None, str | None]:
    """The skill a fork, merge or seed adds (None and the error if the LLM gave none usable)."""
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
        ns = live_niches(ctx)
        if ns is not None:
            for name in removed:
                ns.pending.pop(name, None)
                ns.below.pop(name, None)
        checkpoint = await validator.adopt(pool, verdict)
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


async def lifecycle_cycle(ctx: Context, validator: Validator) -> None:
    """One cycle: plan, ask, validate and record each operator in turn (module docstring)."""
    cfg = ctx.config.niches.lifecycle
    min_count = ctx.config.niches.min_count
    floor = min_size(ctx.config)
    planners = (
        lambda ns, names: plan_prune(ns, names, cfg, floor),
        lambda ns, names: plan_merge(ns, names, cfg, floor),
        lambda ns, names: plan_fork(ns, ctx.state.q, names, cfg, min_count, forked(ctx.pool)),
        lambda ns, names: plan_seed(ns, names, cfg, min_count),
    )
    for planner in planners:
        ns = live_niches(ctx)
        if ns is None:
            return
        op = planner(ns, list(ctx.pool.names))
        if op is not None:
            await apply_op(ctx, validator, op)
    await ctx.settled()  # saved with the phase's starting score
    ctx.save()


def examples(ctx: Context, niche: str, pool: Pool, *, failed: bool) -> str:
    """Up to `EXAMPLES` recent tasks of `niche` (failed ones, or solved ones)."""
    from moscopt.extensions.niches.observer import NicheObserver
    from moscopt.optimizer.policies.edit_targets import SUCCESS

    ns = live_niches(ctx)
    if ns is None:
        return "(none)"
    assigner = NicheObserver(ctx.config).assigner(ctx)
    found = []
    for task_id, last in reversed(list(ns.last.items())):
        task = ctx.tasks.get(task_id)
        if task is None or assigner.niche(task) != niche or (last.reward < SUCCESS) != failed:
            continue
        found.append(f"- {' '.join(task.prompt.split())[:400]}")
        if len(found) == EXAMPLES:
            break
    return "\n".join(found) or "(none)"
