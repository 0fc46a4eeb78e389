"""One EditAdam step per target, `step = update(propose())`: EditAdam proposes values (an
analysis, a proposal, a budget), and the `Editor` applies them, validates the candidate, lets
the acceptance policy decide, and records the decision in the state and the ledger.

Proposals for all targets of a minibatch depend only on the minibatch's rollouts and on each
target's own text and optimizer state, so they are made concurrently; decisions are taken in
target order, each against the pool the previous decision left, so the result is that of the
sequential order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonpatch

from moscopt.core.edits import ProposalError
from moscopt.core.evidence import hard_soft, routing_cases, scores_text, trajectory_groups
from moscopt.core.skills import GATE_NAME, Pool
from moscopt.optimizer.editadam import Candidate, EditAdam
from moscopt.optimizer.engine.validation import Validator, decision
from moscopt.optimizer.policies.acceptance import Acceptance, Rewards, Verdict
from moscopt.optimizer.policies.edit_budget import EditBudget
from moscopt.routing.gate import constrained_gate, summary_table
from moscopt.run.edit_detail import op_record, proposal_diff
from moscopt.run.history import skill_text
from moscopt.run.ledger import EditEvent, RolloutEvent
from moscopt.run.state import OptimizerState

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context
    from moscopt.optimizer.engine.extension import Outcome


@dataclass
class Proposed:
    """What EditAdam proposed for one target (candidate None: nothing usable)."""

    name: str
    adam: EditAdam
    analysis: str | None
    candidate: Candidate | None
    error: str | None = None
    # ids of the extensions' evidence shown to this proposal (`Context.proposal_evidence`)
    evidence: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.candidate is not None and self.candidate.changed


class Editor:
    def __init__(self, ctx: Context, validator: Validator, budget: EditBudget) -> None:
        self.ctx = ctx
        self.validator = validator
        self.budget = budget

    def adam(self, name: str) -> EditAdam:
        kind = "gate" if name == GATE_NAME else "skill"
        lm, config = self.ctx.optimizer_lm, self.ctx.config
        constrained = constrained_gate(lm.model, config.gating.output)
        return EditAdam(lm, config.optimizer, kind=kind, constrained=constrained)

    def opt(self, name: str) -> OptimizerState:
        return self.ctx.state.optimizers.setdefault(name, OptimizerState())

    # -- propose ---------------------------------------------------------------------------------

    async def max_edits(self, rollouts: Sequence[RolloutEvent]) -> int:
        """L for this step: the schedule's, or the optimizer's choice from the minibatch's hard
        and soft scores (autonomous)."""
        skill_steps = self.ctx.state.skill_steps or 0
        value = self.budget.fixed(skill_steps)
        if value is not None:
            return value
        hard, soft = hard_soft(rollouts)
        await self.ctx.settled()  # the history ends with the phase's starting score
        recent = ", ".join(f"{p.score:.3f}" for p in self.ctx.state.val_history[-5:]) or "none"
        return self.budget.clamp(await self.adam("").choose_budget(hard, soft, recent))

    async def propose_all(
        self, names: Sequence[str], rollouts: Sequence[RolloutEvent]
    ) -> list[Proposed]:
        if names:
            self.ctx.doing("proposing edits to " + ", ".join(names))
        max_edits = await self.max_edits(rollouts) if names else 0
        if not self.ctx.config.optimizer.overlap:  # one after another (scripts/bench_train.py)
            return [await self.propose(n, rollouts, max_edits) for n in names]
        return list(await asyncio.gather(*(self.propose(n, rollouts, max_edits) for n in names)))

    async def propose(
        self, name: str, rollouts: Sequence[RolloutEvent], max_edits: int
    ) -> Proposed:
        ctx = self.ctx
        adam, opt, target = self.adam(name), self.opt(name), ctx.pool.get(name)
        if name == GATE_NAME:
            table = summary_table(ctx.pool, q=ctx.state.q, activations=ctx.state.activations)
            cases = routing_cases(rollouts, ctx.tasks, ctx.pool.names, ctx.state.q)
            analysis = await adam.reflect(target, [cases], opt, k=ctx.config.pool.k, table=table)
        else:
            groups = trajectory_groups(name, rollouts, ctx.tasks, ctx.config.optimizer.minibatch)
            analysis = await adam.reflect(target, groups, opt)
        evidence, ids = ctx.proposal_evidence(name)
        if evidence:
            analysis = f"{analysis}\n\n{evidence}" if analysis else evidence
        try:
            proposal = await adam.propose(
                target, opt, analysis=analysis, scores=scores_text(rollouts), max_edits=max_edits
            )
        except ProposalError as e:
            return Proposed(name, adam, analysis, None, str(e)[:300], ids)
        return Proposed(name, adam, analysis, adam.apply(target, proposal, max_edits), None, ids)

    # -- update ----------------------------------------------------------------------------------

    async def decide(self, p: Proposed) -> None:
        """Validate and accept or reject one target's candidate against the current pool."""
        await self._decide(p)
        self._decided(p)

    async def _decide(self, p: Proposed) -> None:
        ctx, opt = self.ctx, self.opt(p.name)
        p.adam.keep_analysis(opt, p.analysis)
        await ctx.settled()
        before = ctx.cursor.best_val or 0.0
        if p.candidate is None:
            ctx.record(
                EditEvent(**ctx.where(), target=p.name, status="unusable", reason=p.error or "")
            )
            return
        outcomes = _outcomes(p.candidate)
        if not p.candidate.changed:
            reasons = (
                "; ".join(sorted({o["reason"] for o in outcomes if o["reason"]})) or "no edits"
            )
            summary = f"not applied: {reasons}"
            p.adam.reject(
                opt,
                step=ctx.state.step,
                before=before,
                after=before,
                summary=summary,
                analysis=p.analysis,
            )
            ctx.record(
                EditEvent(
                    **ctx.where(),
                    target=p.name,
                    status="not_applied",
                    summary=summary,
                    reasoning=p.candidate.proposal.reasoning,
                    outcomes=outcomes,
                )
            )
            return
        summary = p.candidate.proposal.summary(ctx.config.optimizer.summary_chars)
        new_pool = ctx.pool.replace(p.candidate.skill)
        await self.settle(
            [p],
            new_pool,
            summary=summary,
            reasoning=p.candidate.proposal.reasoning,
            outcomes=outcomes,
        )

    async def decide_together(self, proposed: Sequence[Proposed]) -> None:
        """The "no interleaving" ablation: every usable candidate of the minibatch applied at
        once and validated together (one decision for all)."""
        await self._decide_together(proposed)
        for p in proposed:
            self._decided(p)

    def _decided(self, p: Proposed) -> None:
        """Tell the extensions what became of the proposal their evidence went into."""
        if not p.evidence:
            return
        ctx = self.ctx
        outcome: Outcome
        if p.candidate is None:
            outcome = "unusable"
        elif not p.changed:
            outcome = "not_applied"
        elif p.name in ctx.pool.names and ctx.pool.get(p.name).body == p.candidate.skill.body:
            outcome = "accepted"
        else:
            outcome = "rejected"
        ctx.proposal_decided(p.name, p.evidence, outcome)

    async def _decide_together(self, proposed: Sequence[Proposed]) -> None:
        ctx = self.ctx
        for p in proposed:
            self.adam(p.name).keep_analysis(self.opt(p.name), p.analysis)
        changed = [p for p in proposed if p.changed]
        if not changed:
            return
        new_pool = ctx.pool
        for p in changed:
            assert p.candidate is not None
            new_pool = new_pool.replace(p.candidate.skill)
        limit = ctx.config.optimizer.summary_chars
        summary = " | ".join(
            f"{p.name}: {p.candidate.proposal.summary(limit)}" for p in changed if p.candidate
        )[:limit]
        outcomes = [o for p in changed if p.candidate for o in _outcomes(p.candidate, p.name)]
        reasoning = "\n\n".join(
            f"{p.name}: {p.candidate.proposal.reasoning}" for p in changed if p.candidate
        )
        await self.settle(
            changed, new_pool, summary=summary, reasoning=reasoning, outcomes=outcomes
        )

    async def settle(
        self,
        proposed: Sequence[Proposed],
        new_pool: Pool,
        *,
        summary: str,
        reasoning: str,
        outcomes: list[dict[str, Any]],
    ) -> None:
        ctx = self.ctx
        incumbent = ctx.pool
        diff = proposal_diff(
            (
                (p.name, skill_text(incumbent, p.name), p.candidate.skill.dumps())
                for p in proposed
                if p.candidate
            ),
            ctx.state.step,
        )
        kept = _KeptSamples(self.validator.policy)
        self.validator.policy = kept
        try:
            verdict = await self.validator.decide(incumbent, new_pool)
        finally:
            self.validator.policy = kept.policy
        before, after = verdict.incumbent_score, verdict.candidate_score
        patch, checkpoint = None, None
        if verdict.accepted:
            patch = jsonpatch.make_patch(incumbent.to_json(), new_pool.to_json()).patch
            checkpoint = await self.validator.adopt(new_pool, verdict)
        for p in proposed:
            opt = self.opt(p.name)
            part = (
                p.candidate.proposal.summary(ctx.config.optimizer.summary_chars)
                if p.candidate
                else summary
            )
            if verdict.accepted:
                opt.accepted += 1
                ctx.state.epoch_accepted.setdefault(p.name, []).append(part)
            else:
                p.adam.reject(
                    opt,
                    step=ctx.state.step,
                    before=before,
                    after=after,
                    summary=part,
                    analysis=p.analysis,
                )
        ctx.record(
            EditEvent(
                **ctx.where(),
                target=proposed[0].name
                if len(proposed) == 1
                else ",".join(p.name for p in proposed),
                status="accepted" if verdict.accepted else "rejected",
                before=before,
                after=after,
                summary=summary,
                reasoning=reasoning,  # bounded by the proposal's parser
                outcomes=outcomes,
                patch=patch,
                checkpoint=checkpoint,
                decision=decision(self.validator.policy, verdict),
                diff=diff,
                incumbent=incumbent.digest()[:12],
                candidate=new_pool.digest()[:12],
                samples=kept.samples(verdict.samples),
            )
        )
        ctx.emit(event="edit", target=proposed[0].name, verdict=verdict.accepted, score=after)


class _KeptSamples:
    """The acceptance policy, keeping the rewards each side gave it per sample: the evidence
    an edit's event records (`EditEvent.samples`)."""

    def __init__(self, policy: Acceptance) -> None:
        self.policy = policy
        self.name = policy.name
        self.seen: dict[str, dict[int, list[float]]] = {"incumbent": {}, "candidate": {}}

    def __getattr__(self, key: str) -> Any:  # the policy's settings (`max_samples`, ...)
        return getattr(self.policy, key)

    async def decide(self, incumbent: Rewards, candidate: Rewards, **kw: Any) -> Verdict:
        def keeping(side: str, rewards: Rewards) -> Rewards:
            async def kept(s: int) -> Sequence[float]:
                values = await rewards(s)
                self.seen[side][s] = [float(v) for v in values]
                return values

            return kept

        return await self.policy.decide(
            keeping("incumbent", incumbent), keeping("candidate", candidate), **kw
        )

    def samples(self, used: int) -> dict[str, list[list[float]]]:
        """Each side's per-task rewards of the first `used` samples the decision used."""
        return {
            side: [values[s] for s in sorted(values)[:used]] for side, values in self.seen.items()
        }


def _outcomes(candidate: Candidate, target: str | None = None) -> list[dict[str, Any]]:
    """Each proposed operation in full (`moscopt.run.edit_detail`); `target` when a decision
    holds several targets' edits."""
    return [
        op_record(o.edit.op, o.edit.anchor, o.edit.content, o.status, o.reason, target)
        for o in candidate.applied.outcomes
    ]
