"""Phase 2, gate editing, and gate restoration after repeated parse failures.

Gate editing: up to `gating.edit_steps` EditAdam steps on the gate per epoch, on the epoch's
routing cases (failed rollouts where better-scoring skills were left out, unusable router
answers); each is a step of the trainer's counter. Restoration: after each minibatch the
`GateRestoration` policy may call for the last good gate (or the seed gate); the restored gate
is kept only when non-inferior (its loss bounded within `optimizer.margin`) and recorded as a
`gate_restored` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.agent.harness import Rollout
from moscopt.core.evidence import routing_cases
from moscopt.core.skills import GATE_NAME, Skill
from moscopt.optimizer.engine.editing import Editor
from moscopt.optimizer.engine.validation import Validator, decision
from moscopt.run.ledger import GateRestored

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context
    from moscopt.optimizer.policies.gate_restoration import GateRestoration


class GatePhase:
    def __init__(
        self, ctx: Context, validator: Validator, editor: Editor, restoration: GateRestoration
    ) -> None:
        self.ctx = ctx
        self.validator = validator
        self.editor = editor
        self.restoration = restoration
        restoration.history = list(ctx.state.gate_failure_rates)  # the window, as saved

    async def run(self) -> None:
        ctx = self.ctx
        rollouts = ctx.rollouts()
        while ctx.cursor.batch < ctx.config.gating.edit_steps:
            if not routing_cases(rollouts, ctx.tasks, ctx.pool.names, ctx.state.q):
                break
            (proposed,) = await self.editor.propose_all([GATE_NAME], rollouts)
            await self.editor.decide(proposed)
            ctx.cursor.batch += 1
            ctx.state.step += 1
            ctx.save()
            ctx.emit(event="step")

    async def watch(self, rollouts: Sequence[Rollout]) -> None:
        """Track the gate's parse failures of a minibatch; restore the gate when they persist."""
        ctx = self.ctx
        assert ctx.pool.gate is not None
        sources = [s for r in rollouts for s in r.sources]
        if self.restoration.healthy(sources):
            ctx.state.last_good_gate = ctx.pool.gate.to_json()
        due = self.restoration.observe(sources)
        ctx.state.gate_failure_rates = list(self.restoration.history)
        if due:
            await self.restore()

    async def restore(self) -> None:
        ctx = self.ctx
        last = ctx.state.last_good_gate
        good = Skill.from_json(last) if last is not None else ctx.seeds.gate
        source = "last_good" if last is not None else "seed"
        if good is None or good == ctx.pool.gate:
            return
        candidate = ctx.pool.replace(good)
        verdict = await self.validator.decide(ctx.pool, candidate, direction="non_inferior")
        checkpoint = None
        if verdict.accepted:
            checkpoint = await self.validator.adopt(candidate, verdict)
        ctx.record(
            GateRestored(
                **ctx.where(),
                pool=candidate.digest()[:12],
                checkpoint=checkpoint,
                source=source,
                before=verdict.incumbent_score,
                after=verdict.candidate_score,
                accepted=verdict.accepted,
                decision=decision(self.validator.policy, verdict),
            )
        )
