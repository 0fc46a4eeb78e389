"""The plan as a table (rich when it is installed, plain text otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.planning import Plan

HEADERS = ("phase", "part", "calls", "at most", "tokens", "cost $", "waves", "time")


def _cells(row: dict[str, Any]) -> list[str]:
    seconds = row["seconds"]
    return [
        row.get("phase", ""),
        row.get("part", ""),
        f"{row['calls']:,.0f}",
        f"{row['bound']:,}",
        f"{row['tokens']:,}",
        f"{row['cost']:.4f}",
        f"{row['waves']:,.0f}",
        "-" if seconds is None else _duration(seconds),
    ]


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def lines(plan: Plan) -> list[str]:
    """What is said above and below the table."""
    data = plan.to_json()
    s, head = data["shape"], []
    head.append(
        f"model {data['model']}; optimizer {data['optimizer_model']}; N={s['n']} K={s['k']}, "
        f"{s['epochs']} epoch(s) x {s['steps_per_epoch']} step(s) of {s['batch']} tasks, "
        f"|V|={s['val']}, up to {s['calls_per_rollout_max']} call(s) per rollout, "
        f"concurrency {s['concurrency']}"
    )
    pilot = data["pilot"]
    if pilot is None:
        head.append("estimates: from the config alone (no pilot): the worst case for the counts")
    else:
        head.append(
            f"pilot: {pilot['rollouts']} rollouts, {pilot['calls']} calls "
            f"({pilot['cache_hits']} from the cache), {pilot['tokens']:,} tokens, "
            f"${pilot['cost']:.4f}, {pilot['seconds']:.1f} s; {pilot['calls_per_rollout']:.2f} "
            f"calls per rollout, {pilot['failure_rate']:.0%} failed, {pilot['targets']:.0f} "
            f"target(s), {pilot['proposals_changed']:.0%} of proposals changed their skill"
        )
    tail = [
        f"a full run makes at most {plan.bound:,} calls (`at most`); "
        "`waves`: sequential rounds of calls, the critical path; time = waves x latency"
    ]
    if plan.budget is not None and plan.budget < plan.bound:
        tail.append(f"llm.max_calls = {plan.budget:,}: the run may stop at that budget")
    if plan.power is not None:
        from moscopt.planning.power import power_lines

        tail.extend(power_lines(plan.power))
    if plan.serial:
        from moscopt.planning.serial import serial_note

        tail.append(serial_note(plan))
    if data["total"]["seconds"] is None:
        tail.append("time unknown without a pilot: pass --latency SECONDS to assume one")
    return [*head, "", *tail]


def render_table(plan: Plan) -> str:
    rows = [_cells(plan.row(p)) for p in plan.parts]
    total = _cells({**plan.total(), "phase": "total", "part": ""})
    said = lines(plan)
    head, tail = said[: said.index("")], said[said.index("") + 1 :]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text
        return "\n".join([*head, _plain([list(HEADERS), *rows, total]), *tail])
    table = Table(*HEADERS, show_footer=False)
    for col in table.columns[2:]:
        col.justify = "right"
    for r in rows:
        table.add_row(*r)
    table.add_section()
    table.add_row(*total)
    console = Console(width=120, record=True, force_terminal=False, color_system=None)
    with console.capture() as captured:
        console.print(table)
    return "\n".join([*head, captured.get().rstrip(), *tail])


def _plain(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        pairs = enumerate(zip(r, widths, strict=True))
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs]
        out.append("  ".join(cells).rstrip())
        if j == 0 or j == len(rows) - 2:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
