"""Routed insights as EditAdam evidence: the two calls the engine's `Editor` makes.

`pending_evidence` is read when a skill's proposal is made: the insights waiting for it, as a
block appended to its reflection's analysis (what the proposal prompt shows), and their ids.
`decided` is called once the proposal is decided: those insights are consumed, and a `transfer`
event records what became of each (the edit was accepted, rejected, not applied or unusable).
A rejected insight may be routed to the same skill again by a later session. Both are no-ops
when niches are off. Reading does not change the state, so proposals made again after a resume
see the same evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from moscopt.extensions.niches.records import Insight
from moscopt.run.ledger import TransferEvent, TransferOutcome

if TYPE_CHECKING:
    from moscopt.core.skills import Skill
    from moscopt.optimizer.engine.context import Context

HEADER = (
    "Insights routed to this skill from skills that are strong where it is weak (CODREAM); "
    "adopt what fits this skill's purpose:"
)


class DecidedProposal(Protocol):
    """What `decided` needs of the engine's `Proposed`."""

    name: str
    insights: tuple[str, ...]

    @property
    def changed(self) -> bool: ...


def _entry(ctx: Context, insight_id: str) -> Insight | None:
    ns = ctx.state.niches
    if ns is None:
        return None
    return next((e for e in ns.archive if e.id == insight_id), None)


def pending_evidence(ctx: Context, name: str) -> tuple[str, tuple[str, ...]]:
    """(the evidence block, or "" when nothing waits for `name`; the insight ids in it)."""
    ns = ctx.state.niches
    if ns is None or not ns.pending.get(name):
        return "", ()
    lines, ids = [], []
    for routed in ns.pending[name]:
        entry = _entry(ctx, routed.insight)
        if entry is None:
            continue
        lines.append(f"- [niche {routed.niche}, from {routed.giver}] {entry.text}")
        ids.append(routed.insight)
    if not lines:
        return "", ()
    return HEADER + "\n" + "\n".join(lines), tuple(ids)


def with_evidence(analysis: str | None, evidence: str) -> str | None:
    """The analysis the proposal sees: the reflection's, then the routed insights."""
    if not evidence:
        return analysis
    return f"{analysis}\n\n{evidence}" if analysis else evidence


def decided(ctx: Context, p: DecidedProposal, candidate: Skill | None) -> None:
    """Consume `p`'s insights and record their outcome (`candidate`: the proposed skill)."""
    ns = ctx.state.niches
    if ns is None or not p.insights:
        return
    current = ctx.pool.get(p.name) if p.name in ctx.pool.names else None
    outcome: TransferOutcome
    if candidate is None:
        outcome = "unusable"
    elif not p.changed:
        outcome = "not_applied"
    elif current is not None and current.body == candidate.body:
        outcome = "accepted"
    else:
        outcome = "rejected"
    waiting = ns.pending.get(p.name, [])
    used = [r for r in waiting if r.insight in p.insights]
    ns.pending[p.name] = [r for r in waiting if r.insight not in p.insights]
    if not ns.pending[p.name]:
        del ns.pending[p.name]
    for routed in used:
        entry = _entry(ctx, routed.insight)
        channel = f"{routed.giver}>{p.name}"
        if outcome == "accepted":
            ns.adopted[channel] = ns.adopted.get(channel, 0) + 1
        elif entry is not None and outcome != "accepted" and p.name in entry.given:
            entry.given.remove(p.name)  # not adopted: a later session may route it again
        ctx.record(
            TransferEvent(
                **ctx.where(),
                giver=routed.giver,
                recipient=p.name,
                niche=routed.niche,
                insight=entry.text if entry else "",
                insight_id=routed.insight,
                scope=entry.kind if entry else "niche",
                outcome=outcome,
            )
        )
