"""What `status` and the report show of niches: competence per skill and niche, CODREAM
channels (giver -> recipient: insights routed, and adopted by an accepted edit), sessions, the
archive, insights waiting, and the specialization index. Pure: reads a `RunState`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from moscopt.extensions.niches.competence import niches_of, specialization_index
from moscopt.extensions.niches.records import stored_niches
from moscopt.run.state import RunState


def niche_summary(state: RunState, pool: Sequence[str]) -> dict[str, Any] | None:
    """The niches section of `status --json` (None when the run tracks no niches)."""
    ns = stored_niches(state)
    if ns is None:
        return None
    niches = niches_of(ns)
    channels = sorted(set(ns.routed) | set(ns.adopted))
    return {
        "source": ns.source,
        "niches": niches,
        "competence": {
            name: {n: [round(c.ema, 3), c.count] for n, c in sorted(by.items())}
            for name, by in sorted(ns.competence.items())
            if name in pool
        },
        "channels": [
            {
                "giver": key.split(">", 1)[0],
                "recipient": key.split(">", 1)[1],
                "routed": ns.routed.get(key, 0),
                "adopted": ns.adopted.get(key, 0),
            }
            for key in channels
        ],
        "sessions": ns.sessions,
        "archive": {
            "niche": sum(e.kind == "niche" for e in ns.archive),
            "meta": sum(e.kind == "meta" for e in ns.archive),
        },
        "pending": {name: len(queue) for name, queue in sorted(ns.pending.items())},
        "specialization_index": round(specialization_index(ns, pool), 4),
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The same, as the lines of the text `status`."""
    lines = [
        f"niches ({summary['source']}): {', '.join(summary['niches']) or '-'}; "
        f"specialization index {summary['specialization_index']:.3f}; "
        f"CODREAM sessions {summary['sessions']}; archive {summary['archive']['niche']} niche "
        f"lessons + {summary['archive']['meta']} meta-insights"
    ]
    for skill, by in summary["competence"].items():
        cells = ", ".join(f"{n} {ema:.2f} ({count})" for n, (ema, count) in by.items())
        lines.append(f"  {skill}: {cells}")
    for c in summary["channels"]:
        lines.append(
            f"  {c['giver']} -> {c['recipient']}: {c['routed']} routed, {c['adopted']} adopted"
        )
    return lines
