"""The report's charts, as SVG (`moscopt.report.svg`): the learning curve (validation score, LLM
calls and cost per step), the skills' Q over time and their activations by niche."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from moscopt.report.svg import (
    COLORS,
    Drawing,
    Panel,
    axes,
    blue,
    label,
    legend,
    right_axis,
    ticks,
)


@dataclass
class Curve:
    """The learning curve: the current pool's validation score and the spending, per step."""

    val: list[tuple[int, float]]  # (step, score) in order, from state.val_history
    accepted: list[tuple[int, float]]  # validation score of accepted candidates
    rejected: list[tuple[int, float]]  # ... and of rejected ones
    steps: list[int]  # 0..state.step
    calls: list[int]  # cumulative LLM calls (cache hits excluded) at the end of each step
    cost: list[float]  # cumulative cost ($) at the end of each step
    logged_calls: bool  # False: the run logged no llm_call events (nothing to plot)
    evolutions: list[int] = field(default_factory=list)  # steps of kept evolution cycles


MARKED = 200  # points: a line of more is drawn without a marker at each (they would merge)
SCORE_LIMITS = (-0.05, 1.05)  # a score at 0 or 1 stays visible


def step_limits(steps: Sequence[int]) -> tuple[float, float]:
    """Whole steps, with a margin; never a sub-step axis around a lone point."""
    low, high = (min(steps), max(steps)) if steps else (0, 1)
    return (low - 0.2, max(low + 1, high) + 0.2)


def draw_curve(curve: Curve) -> bytes:
    """The learning curve as SVG: the validation score per step above (the current pool, accepted
    edits, rejected candidates, kept evolution cycles), cumulative LLM calls and cost below, both
    from zero. A run of a single step has no curve to draw: its calls and cost are written as
    values."""
    d = Drawing(750, 550)
    xlim = (-0.2, max(1, max(curve.steps, default=0)) + 0.2)
    xticks = ticks(0, xlim[1], integer=True)
    top = Panel(80, 15, 590, 270, xlim, SCORE_LIMITS)
    axes(d, top, xticks=xticks, yticks=ticks(0, 1), ylabel="validation score", xlabels=False)
    items: list[tuple[str, str, str]] = []
    for i, step in enumerate(curve.evolutions):
        d.line(top.x(step), top.top, top.x(step), top.top + top.height, VLINE)
        if i == 0:
            items.append(("evolution accepted", COLORS[3], "vline"))
    if curve.val:
        xs, ys = zip(*curve.val, strict=True)
        sx = [x for a, b in zip(xs, [*xs[1:], None], strict=True) for x in (a, b) if x is not None]
        sy = [y for y in ys for _ in (0, 1)][: len(sx)]
        d.polyline(top.points(sx, sy), COLORS[0])
        if len(xs) <= MARKED:
            for x, y in curve.val:
                d.marker(top.x(x), top.y(y), "o", COLORS[0], 2)
        items.insert(0, ("current pool", COLORS[0], "line"))
    for points, kind, color, name in (
        (curve.rejected, "x", COLORS[7], "rejected candidate"),
        (curve.accepted, "o", COLORS[2], "accepted edit"),
    ):
        for x, y in points:
            d.marker(top.x(x), top.y(y), kind, color, 3)
        if points:
            items.insert(
                len(items) - bool(curve.evolutions), (name, color, kind.replace("o", "dot"))
            )
    legend(d, top, items, "lower right")
    bottom = Panel(80, 305, 590, 195, xlim, (0, 1))
    if not curve.logged_calls or len(curve.steps) < 2:
        axes(d, bottom, xticks=xticks, yticks=(), xlabel="step")
        said = "no LLM calls logged"
        if curve.logged_calls:  # one point is a value, not a curve
            said = f"{curve.calls[-1]} LLM calls, ${curve.cost[-1]:.4f} (one step: no curve)"
        d.text(bottom.x(sum(xlim) / 2), bottom.y(0.5) + 4, said, text_anchor="middle")
        return d.svg()
    bottom.ylim = (0, max(1, max(curve.calls)) * 1.05)  # from zero: step 0 is seen
    axes(d, bottom, xticks=xticks, yticks=ticks(*bottom.ylim), xlabel="step",
         ylabel="cumulative calls")  # fmt: skip
    most = max(curve.cost)
    cost = Panel(80, 305, 590, 195, xlim, (0, most * 1.05 if most > 0 else 1.0))
    right_axis(d, cost, ticks(*cost.ylim), "cumulative cost ($)")
    d.polyline(bottom.points(curve.steps, curve.calls), COLORS[4])
    if len(curve.steps) <= MARKED:
        for x, y in zip(curve.steps, curve.calls, strict=True):
            d.marker(bottom.x(x), bottom.y(y), "o", COLORS[4], 2)
    d.polyline(cost.points(curve.steps, curve.cost), COLORS[1], dash="5 3")
    legend(d, bottom, [("LLM calls", COLORS[4], "line"), ("cost", COLORS[1], "dash")],
           "upper left")  # fmt: skip
    return d.svg()


VLINE = f'stroke="{COLORS[3]}" stroke-dasharray="1.5 2" stroke-opacity="0.6"'


def draw_lines(curves: Mapping[str, list[tuple[int, float]]], xlabel: str, ylabel: str) -> bytes:
    """One line per name (in name order, markers at each point), scores on 0 to 1, the legend
    beside the plot (never over a line)."""
    names = sorted(curves)
    width = 60 + 0.6 * 11 * max((len(n) for n in names), default=4)
    d = Drawing(80 + 520 + 20 + width, 320 + max(0, 16 * len(names) - 270))
    xs = [p[0] for points in curves.values() for p in points]
    p = Panel(80, 15, 520, 255, step_limits(xs), SCORE_LIMITS)
    axes(d, p, xticks=ticks(p.xlim[0] + 0.2, p.xlim[1] - 0.2, integer=True),
         yticks=ticks(0, 1), xlabel=xlabel, ylabel=ylabel)  # fmt: skip
    items = []
    for i, name in enumerate(names):
        color = COLORS[i % len(COLORS)]
        points = curves[name]
        d.polyline(p.points([a for a, _ in points], [b for _, b in points]), color)
        if len(points) <= MARKED:
            for a, b in points:
                d.marker(p.x(a), p.y(b), "o", color, 2.5)
        items.append((name, color, "line"))
    legend(d, p, items, "outside")
    return d.svg()


def draw_heatmap(
    rows: Sequence[str], cols: Sequence[str], counts: Mapping[tuple[str, str], int]
) -> bytes:
    """A grid of counts (rows x cols), each cell shaded by its share of the largest and
    labelled with its count, and the colour scale beside it."""
    cell_w, cell_h = 70, 24
    left = 20 + 0.6 * 11 * max((len(r) for r in rows), default=1)
    below = 20 + 0.42 * 11 * max((len(c) for c in cols), default=1)  # labels at 30 degrees
    width, height = cell_w * len(cols), cell_h * len(rows)
    d = Drawing(left + width + 90, 15 + height + below)
    most = max(counts.values(), default=0) or 1
    for i, r in enumerate(rows):
        y = 15 + i * cell_h
        d.text(left - 6, y + cell_h / 2 + 4, r, text_anchor="end")
        for j, c in enumerate(cols):
            x = left + j * cell_w
            share = counts.get((r, c), 0) / most
            box = f'x="{x:g}" y="{y:g}" width="{cell_w}" height="{cell_h}"'
            d.add(f'<rect {box} fill="{blue(share)}"/>')
            ink = "white" if share > 0.6 else "black"
            d.text(x + cell_w / 2, y + cell_h / 2 + 4, str(counts.get((r, c), 0)),
                   text_anchor="middle", fill=ink)  # fmt: skip
    for j, c in enumerate(cols):
        x, y = left + (j + 0.5) * cell_w, 15 + height + 14
        d.text(x, y, c, text_anchor="end", transform=f"rotate(-30 {x:g} {y:g})")
    scale = Panel(left + width + 20, 15, 14, max(height, 60), (0, 1), (0, most))
    for k in range(20):  # the colour scale, bottom (0) to top (the largest count)
        y0 = scale.y(most * (k + 1) / 20)
        d.add(
            f'<rect x="{scale.left:g}" y="{y0:.2f}" width="14" height="{scale.height / 20:.2f}"'
            f' fill="{blue((k + 0.5) / 20)}"/>'
        )
    for v in ticks(0, most, 5, integer=True):
        d.text(scale.left + 18, scale.y(v) + 4, label(v))
    return d.svg()
