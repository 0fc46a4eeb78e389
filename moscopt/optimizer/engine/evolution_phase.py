"""Phase 3, collective evolution (every E epochs), and the end-of-epoch memory step.

Evolution: `evolve.next_generation` builds a candidate pool (elimination, reproduction,
co-breeding, diversity); the acceptance policy keeps it only when it is non-inferior, its loss
bounded within `optimizer.margin` (it buys diversity, not score; see
`moscopt.optimizer.policies.noninferiority`). Accepted: eliminated skills lose their statistics and
optimizer state; newborns start from the survivors' mean Q (with no activations, so they are not
ranked before c_min). Either way, every slug the cycle generated is marked used, so a later
offspring never reuses one.

Memory: each target's long-term memory is condensed from the epoch's accepted and rejected edits
(concurrently: the targets are independent), then the epoch-local buffers are cleared.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from moscopt.optimizer.engine.editing import Editor
from moscopt.optimizer.engine.validation import Validator, decision
from moscopt.optimizer.evolve import gather_all, generated_names, newborns, next_generation
from moscopt.run.ledger import EpochEnd, EvolutionEvent

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context


async def evolve(ctx: Context, validator: Validator) -> None:
    s = ctx.state
    old = ctx.pool
    ctx.doing("evolving the pool (new skills by mutation and co-breeding)")
    pool, notes = await next_generation(
        ctx.optimizer_lm,
        old,
        s,
        ctx.config,
        ctx.seeds,
        fresh_rng=random.Random(f"{ctx.config.seed}:fresh:{s.epoch}"),
    )
    s.names_used = sorted(set(s.names_used) | set(generated_names(notes)) | set(pool.names))
    if pool.digest() == old.digest():
        ctx.record(EvolutionEvent(**ctx.where(), changes=notes, accepted=False))
        return
    verdict = await validator.decide(old, pool, direction="non_inferior")
    checkpoint = None
    if verdict.accepted:
        ctx.renew(old, pool, newborns(notes))
        checkpoint = await validator.adopt(pool, verdict)
    ctx.record(
        EvolutionEvent(
            **ctx.where(),
            changes=notes,
            before=verdict.incumbent_score,
            after=verdict.candidate_score,
            accepted=verdict.accepted,
            pool=pool.digest()[:12],
            checkpoint=checkpoint,
            decision=decision(validator.policy, verdict),
        )
    )
    ctx.save()
    ctx.emit(event="evolution", verdict=verdict.accepted, score=verdict.candidate_score)


async def end_epoch(ctx: Context, editor: Editor) -> None:
    """Condense long-term memory, clear the epoch's buffers, and move to the next epoch."""
    s = ctx.state
    names = sorted(s.optimizers)
    ctx.doing(f"condensing long-term memory of {len(names)} optimizers (end of epoch)")
    await gather_all(
        (
            editor.adam(n).condense_memory(n, s.optimizers[n], s.epoch_accepted.get(n, []))
            for n in names
        ),
        overlap=ctx.config.optimizer.overlap,
    )
    for opt in s.optimizers.values():
        opt.step_buffer.clear()
        opt.rejection_buffer.clear()
    s.epoch_accepted = {}
    ctx.record(EpochEnd(epoch=s.epoch, best_val=ctx.cursor.best_val))
    s.epoch += 1
    ctx.cursor.epoch = s.epoch
    ctx.cursor.rollouts, ctx.cursor.batch_rollouts = [], 0
