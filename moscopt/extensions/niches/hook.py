"""Routed insights as EditAdam evidence: what the niches extension answers to the engine.

`pending_evidence` is read when a skill's proposal is made: the insights waiting for it, as a
block appended to its reflection's analysis (what the proposal prompt shows), and their ids.
`decided` is called once the proposal is decided: those insights are consumed, and a `transfer`
event records what became of each (the edit was accepted, rejected, not applied or unusable).
A rejected insight may be routed to the same skill again by a later session. Both are no-ops
when niches are off. Reading does not change the state, so proposals made again after a resume
see the same evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt.extensions.niches.records import Insight, live_niches
from moscopt.run.ledger import TransferEvent, TransferOutcome

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context

HEADER = (
    "Insights routed to this skill from skills that are strong where it is weak (CODREAM); "
    "adopt what fits this skill's purpose:"
)


def _entry(ctx: Context, insight_id: str) -> Insight | None:
    ns = live_niches(ctx)
    if ns is None:
        return None
    return next((e for e in ns.archive if e.id == insight_id), None)


def pending_evidence(ctx: Context, name: str) -> tuple[str, tuple[str, ...]]:
    """(the evidence block, or "" when nothing waits for `name`; the insight ids in it)."""
    ns = live_niches(ctx)
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


def decided(ctx: Context, name: str, ids: tuple[str, ...], outcome: TransferOutcome) -> None:
    """Consume the insights `ids` shown to `name`'s proposal and record their `outcome`."""
    ns = live_niches(ctx)
    if ns is None or not ids:
        return
    waiting = ns.pending.get(name, [])
    used = [r for r in waiting if r.insight in ids]
    ns.pending[name] = [r for r in waiting if r.insight not in ids]
    if not ns.pending[name]:
        del ns.pending[name]
    for routed in used:
        entry = _entry(ctx, routed.insight)
        channel = f"{routed.giver}>{name}"
        if outcome == "accepted":
            ns.adopted[channel] = ns.adopted.get(channel, 0) + 1
        elif entry is not None and outcome != "accepted" and name in entry.given:
            entry.given.remove(name)  # not adopted: a later session may route it again
        ctx.record(
            TransferEvent(
                **ctx.where(),
                giver=routed.giver,
                recipient=name,
                niche=routed.niche,
                insight=entry.text if entry else "",
                insight_id=routed.insight,
                scope=entry.kind if entry else "niche",
                outcome=outcome,
            )
        )
