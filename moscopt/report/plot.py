"""The report's learning-curve plot: validation score, LLM calls and cost per step (matplotlib,
imported only to draw)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any


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


def draw_curve(curve: Curve) -> bytes | None:
    """The learning curve as PNG bytes; None if matplotlib is not installed."""
    fig = curve_figure(curve)
    if fig is None:
        return None
    buf = io.BytesIO()
    # no Software/date metadata: the same run gives the same bytes
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def curve_figure(curve: Curve) -> Any:
    """The learning curve's matplotlib `Figure` (None without matplotlib). Counts and cost
    start at zero; a run of a single step has no curve to draw, so its calls and cost are
    written as values."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    fig = Figure(figsize=(7.5, 5.5), dpi=100)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    if curve.val:
        xs, ys = zip(*curve.val, strict=True)
        top.step(xs, ys, where="post", color="tab:blue", label="current pool", marker=".")
    if curve.rejected:
        xs, ys = zip(*curve.rejected, strict=True)
        top.scatter(xs, ys, marker="x", color="tab:gray", label="rejected candidate", zorder=3)
    if curve.accepted:
        xs, ys = zip(*curve.accepted, strict=True)
        top.scatter(xs, ys, marker="o", color="tab:green", label="accepted edit", zorder=4)
    for i, step in enumerate(curve.evolutions):
        label = "evolution accepted" if i == 0 else None
        top.axvline(step, color="tab:red", linestyle=":", alpha=0.6, label=label)
    top.set_ylabel("validation score")
    top.set_ylim(-0.05, 1.05)  # a score at 0 or 1 stays visible
    top.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(loc="lower right", fontsize="small")
    if not curve.logged_calls:
        _say(bottom, "no LLM calls logged")
    elif len(curve.steps) < 2:  # one point is a value, not a curve
        _say(bottom, f"{curve.calls[-1]} LLM calls, ${curve.cost[-1]:.4f} (one step: no curve)")
    else:
        bottom.plot(curve.steps, curve.calls, color="tab:purple", label="LLM calls", marker=".")
        bottom.set_ylabel("cumulative calls")
        bottom.set_ylim(0, max(1, max(curve.calls)) * 1.05)  # from zero: step 0 is seen
        twin = bottom.twinx()
        twin.plot(curve.steps, curve.cost, color="tab:orange", linestyle="--", label="cost")
        twin.set_ylabel("cumulative cost ($)")
        most = max(curve.cost)
        twin.set_ylim(0, most * 1.05 if most > 0 else 1.0)  # no cost: $0, never below
        lines = bottom.get_lines() + twin.get_lines()
        bottom.legend(
            lines, [str(x.get_label()) for x in lines], loc="upper left", fontsize="small"
        )
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    from matplotlib.ticker import MaxNLocator

    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    if curve.steps:
        bottom.set_xlim(-0.2, max(1, max(curve.steps)) + 0.2)
    fig.tight_layout()
    return fig


def _say(ax: Any, text: str) -> None:
    """`text` in the middle of `ax`, instead of a plot."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_yticks([])


# -- the page ------------------------------------------------------------------------------------
