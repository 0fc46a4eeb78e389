"""The report's tables of decisions: every edit and every evolution cycle with its evidence."""

from __future__ import annotations

from typing import Any

from moscopt.report.render import Block
from moscopt.run.history import EditEntry, EvolutionEntry
from moscopt.run.ledger import Decision
from moscopt.run.outcomes import outcome_word


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def edits_table(edits: list[EditEntry]) -> Block:
    rows = [
        [
            str(i),
            str(e.step),
            str(e.epoch),
            e.phase,
            e.target,
            outcome_word(e.status),
            f"{fmt(e.before)} -> {fmt(e.after)}" if e.before is not None else "-",
            evidence(e.decision),
            e.summary,
        ]
        for i, e in enumerate(edits, 1)
    ]
    head = ["edit", "step", "epoch", "phase", "target", "status", "score", "evidence", "summary"]
    return ("table", head, rows)


def edit_links(edits: list[EditEntry]) -> Block | None:
    """The line after the edits table linking each edit's section in `full_edit_blocks`."""
    shown = [f"Edit {i}" for i, e in enumerate(edits, 1) if e.status != "unusable"]
    return ("links", "Each edit in full:", shown) if shown else None


def full_edit_blocks(edits: list[EditEntry]) -> list[Block]:
    """ "Edits in full": per edit decided on validation or not applied, a heading naming its
    number (the `edit` column of the table, `moscopt log --edit N`) and the edit in full
    (`run.edit_detail.full_lines`)."""
    from moscopt.run.edit_detail import full_lines

    blocks: list[Block] = []
    for i, e in enumerate(edits, 1):
        if e.status == "unusable":  # no proposal: the table's summary is all there is
            continue
        where = f"step {e.step}, {e.phase} {e.target}: {outcome_word(e.status)}"
        lines = "\n".join([where, *full_lines(e.to_json(full=True))])
        blocks += [("h3", f"Edit {i}"), ("pre", lines)]
    if not blocks:
        return []
    intro = (
        "Each edit's operations in full (anchor, old and new text) as a unified diff against "
        "the skill it targeted, its reasoning, and the decision with each validation sample's "
        "per-task rewards; the same as `moscopt log --full` (`--edit N` for one)."
    )
    return [("h2", "Edits in full"), ("p", intro), *blocks]


def evidence(d: Decision | None) -> str:
    """A decision's evidence: samples, paired mean difference and its interval."""
    if d is None:
        return "-"
    return f"{d.samples} sample(s), {d.mean_diff:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"


def evolution_table(evolutions: list[EvolutionEntry]) -> Block:
    rows = [
        [
            str(e.step),
            str(e.epoch),
            ("accepted" if e.accepted else "rejected") if e.before is not None else "no change",
            f"{fmt(e.before)} -> {fmt(e.after)}" if e.before is not None else "-",
            ", ".join(e.eliminated) or "-",
            ", ".join(e.added) or "-",
            diversity_cell(e.diversity),
            evidence(e.decision),
        ]
        for e in evolutions
    ]
    head = ["step", "epoch", "verdict", "score", "eliminated", "added", "similarity", "evidence"]
    return ("table", head, rows)


def diversity_cell(d: dict[str, Any] | None) -> str:
    """`0.62 minilm / 0.85`: the pool's similarity, its method and the rediversify threshold."""
    if not d or not isinstance(d.get("similarity"), int | float):
        return "-"
    limit = d.get("threshold")
    tail = f" / {limit:.2f}" if isinstance(limit, int | float) else ""
    return f"{d['similarity']:.2f} {d.get('method') or '?'}{tail}"
