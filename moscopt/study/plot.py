"""The study's plot, `table.svg` (the report's SVG writer, `moscopt.report.svg`): left, test
accuracy with its 95% interval per configuration; right, the paired difference to full with
its interval, green where better, red where worse. The same table gives the same bytes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.report.svg import Drawing, Panel

VERDICT_COLORS = {"better": "#2ca02c", "worse": "#d62728"}
GRAY = "#7f7f7f"
ROW = 26  # px per configuration


def plot_table(table: dict[str, Any], out: Path) -> Path | None:
    """Write `out` (SVG); None (nothing written) without a finished row."""
    from moscopt.report.svg import CHAR, COLORS, Drawing, Panel, axes, num, ticks
    from moscopt.run.fsio import atomic_write_bytes

    rows = [r for r in table["rows"] if "accuracy" in r]
    if not rows:
        return None
    names = [str(r["configuration"]) for r in rows]
    left = 20 + CHAR * max(len(n) for n in names)
    height = ROW * len(rows)
    d = Drawing(left + 300 + 60 + 300 + 20, 40 + height + 45)
    title = (
        f"{table['kind']} on {table['benchmark']}: {table['budget_calls']} calls, "
        f"seeds {', '.join(map(str, table['seeds']))}"
    )
    d.text(d.width / 2, 18, title, text_anchor="middle")
    accuracy = Panel(left, 30, 300, height, (-0.02, 1.02), (len(rows) - 0.5, -0.5))
    diffs = [r.get("difference") for r in rows]
    spread = max([abs(v) for x in diffs if x for v in (*x["ci95"], x["mean"])], default=0.1)
    difference = Panel(left + 360, 30, 300, height, (-spread * 1.1, spread * 1.1), accuracy.ylim)
    axes(d, accuracy, xticks=ticks(0, 1), yticks=[], xlabel="test accuracy (95% CI)")
    axes(d, difference, xticks=ticks(-spread, spread, 5), yticks=[],
         xlabel="paired difference to full (95% CI)")  # fmt: skip
    zero = difference.x(0.0)
    d.line(zero, difference.top, zero, difference.top + height, 'stroke="#000" stroke-width="0.8"')
    for i, (row, diff) in enumerate(zip(rows, diffs, strict=True)):
        y = accuracy.y(i)
        d.text(left - 6, y + 4, names[i], text_anchor="end")
        acc = row["accuracy"]
        _interval(d, accuracy, y, acc["mean"], acc["ci95"][0], acc["ci95"][1], COLORS[0])
        if diff is None:  # full itself: the reference
            d.add(f'<rect x="{num(zero - 3)}" y="{num(y - 3)}" width="6" height="6" fill="#000"/>')
            continue
        color = VERDICT_COLORS.get(diff["verdict"], GRAY)
        _interval(d, difference, y, diff["mean"], diff["ci95"][0], diff["ci95"][1], color)
    atomic_write_bytes(out, d.svg())
    return out


def _interval(
    d: Drawing, p: Panel, y: float, mean: float, low: float, high: float, color: str
) -> None:
    """A point at `mean` with a bar from `low` to `high` and caps, at height `y`."""
    a, b = p.x(min(low, mean)), p.x(max(high, mean))
    d.line(a, y, b, y, f'stroke="{color}" stroke-width="1.5"')
    for x in (a, b):
        d.line(x, y - 4, x, y + 4, f'stroke="{color}" stroke-width="1.5"')
    d.marker(p.x(mean), y, "o", color, 3.5)
