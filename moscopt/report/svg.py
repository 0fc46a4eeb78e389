"""A small SVG writer for the report's charts: panels with linear axes, grid, ticks, lines, step
lines, markers, legends and text; colour ramps for a heatmap.

The report drew its charts with matplotlib: on a 1,027-step run, importing it and drawing three
PNGs took about 1.3 s of the report's 2.5 s of CPU (2.53 s before, 1.28 s with these charts,
load 4.6). The charts are a few hundred shapes each, so the report writes them as SVG text
itself (milliseconds; `scripts/bench_scale.py` prints the report's time). The output is a
function of the data alone (no date, no random ids): the same run gives the same bytes. Text is
escaped (skill names come from a model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

# matplotlib's default colour cycle ("tab10"), so the charts read as they did
COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c")
FONT = 11  # px
CHAR = 0.6 * FONT  # an estimate of a character's width, for legends and margins


def num(x: float) -> str:
    """A coordinate, rounded to 0.01 px (short, and the same bytes for the same data)."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def ticks(low: float, high: float, count: int = 6, integer: bool = False) -> list[float]:
    """About `count` round values (1, 2, 2.5 or 5 times a power of ten) from `low` to `high`;
    whole numbers only with `integer`."""
    span = high - low
    if span <= 0:
        return [low]
    raw = span / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, round(step))
    first = math.ceil(low / step - 1e-9) * step
    out = []
    k = 0
    while (value := first + k * step) <= high + 1e-9 * span:
        out.append(round(value, 10))
        k += 1
    return out


def label(value: float) -> str:
    """A tick's label: `12000`, `0.25`, `1e-05`."""
    return f"{value:.6g}"


@dataclass
class Panel:
    """A plotting area: `left`, `top`, `width`, `height` in pixels; data limits `xlim`, `ylim`."""

    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def x(self, value: float) -> float:
        lo, hi = self.xlim
        return self.left + (value - lo) / ((hi - lo) or 1.0) * self.width

    def y(self, value: float) -> float:
        lo, hi = self.ylim
        return self.top + self.height - (value - lo) / ((hi - lo) or 1.0) * self.height

    def points(self, xs: Sequence[float], ys: Sequence[float]) -> str:
        return " ".join(f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, ys, strict=True))


@dataclass
class Drawing:
    """SVG elements in drawing order; `svg()` gives the document's bytes."""

    width: float
    height: float
    parts: list[str] = field(default_factory=list)

    def add(self, element: str) -> None:
        self.parts.append(element)

    def text(self, x: float, y: float, text: str, **attrs: str | float) -> None:
        extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
        self.add(f'<text x="{num(x)}" y="{num(y)}"{extra}>{escape(text)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, style: str) -> None:
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" {style}/>')

    def polyline(self, points: str, color: str, dash: str = "", width: float = 1.5) -> None:
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(
            f'<polyline points="{points}" fill="none" stroke="{color}"'
            f' stroke-width="{num(width)}"{dashes}/>'
        )

    def marker(self, x: float, y: float, kind: str, color: str, size: float = 2.5) -> None:
        """A dot (`o`), or a cross (`x`)."""
        if kind == "x":
            a, b = num(x - size), num(x + size)
            c, d = num(y - size), num(y + size)
            self.add(f'<path d="M{a} {c}L{b} {d}M{a} {d}L{b} {c}" stroke="{color}"/>')
        else:
            self.add(f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(size)}" fill="{color}"/>')

    def svg(self) -> bytes:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}"'
            f' height="{num(self.height)}" viewBox="0 0 {num(self.width)} {num(self.height)}"'
            f' font-family="DejaVu Sans, Arial, sans-serif" font-size="{FONT}">'
        )
        background = f'<rect width="{num(self.width)}" height="{num(self.height)}" fill="white"/>'
        return "\n".join([head, background, *self.parts, "</svg>\n"]).encode("utf-8")


def axes(
    d: Drawing,
    p: Panel,
    *,
    xticks: Sequence[float] | None,
    yticks: Sequence[float],
    xlabel: str = "",
    ylabel: str = "",
    xlabels: bool = True,
) -> None:
    """The panel's frame, grid, tick labels (x ones only with `xlabels`) and axis labels."""
    grid = 'stroke="#000" stroke-opacity="0.12"'
    for v in yticks:
        d.line(p.left, p.y(v), p.left + p.width, p.y(v), grid)
        d.text(p.left - 5, p.y(v) + 4, label(v), text_anchor="end")
    for v in xticks or ():
        d.line(p.x(v), p.top, p.x(v), p.top + p.height, grid)
        if xlabels:
            d.text(p.x(v), p.top + p.height + 15, label(v), text_anchor="middle")
    d.add(
        f'<rect x="{num(p.left)}" y="{num(p.top)}" width="{num(p.width)}"'
        f' height="{num(p.height)}" fill="none" stroke="#000" stroke-width="0.8"/>'
    )
    if xlabel:
        d.text(p.left + p.width / 2, p.top + p.height + 32, xlabel, text_anchor="middle")
    if ylabel:
        y = p.top + p.height / 2
        d.text(
            p.left - 48,
            y,
            ylabel,
            text_anchor="middle",
            transform=f"rotate(-90 {num(p.left - 48)} {num(y)})",
        )


def right_axis(d: Drawing, p: Panel, yticks: Sequence[float], ylabel: str) -> None:
    """Tick labels and a label on the panel's right edge, for a second scale (`p.ylim`)."""
    right = p.left + p.width
    for v in yticks:
        d.line(right, p.y(v), right + 4, p.y(v), 'stroke="#000"')
        d.text(right + 7, p.y(v) + 4, label(v))
    y = p.top + p.height / 2
    d.text(
        right + 52,
        y,
        ylabel,
        text_anchor="middle",
        transform=f"rotate(90 {num(right + 52)} {num(y)})",
    )


def legend(d: Drawing, p: Panel, items: Sequence[tuple[str, str, str]], where: str) -> None:
    """A boxed legend of (text, colour, kind: `line`, `dash`, `dot`, `x`, `vline`) in a corner
    of the panel (`upper left`, `lower right`) or beside it (`outside`)."""
    if not items:
        return
    width = 34 + CHAR * max(len(t) for t, _, _ in items)
    height = 6 + 16 * len(items)
    if where == "outside":
        x, y = p.left + p.width + 8, p.top
    elif where == "upper left":
        x, y = p.left + 6, p.top + 6
    else:
        x, y = p.left + p.width - width - 6, p.top + p.height - height - 6
    d.add(
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(width)}" height="{num(height)}"'
        ' fill="white" fill-opacity="0.8" stroke="#ccc"/>'
    )
    for i, (text, color, kind) in enumerate(items):
        cy = y + 11 + 16 * i
        if kind in ("line", "dash", "vline"):
            dash = {"dash": ' stroke-dasharray="5 3"', "vline": ' stroke-dasharray="1.5 2"'}
            d.line(
                x + 5, cy, x + 25, cy, f'stroke="{color}" stroke-width="1.5"' + dash.get(kind, "")
            )
        if kind in ("dot", "x", "line"):
            d.marker(x + 15, cy, "x" if kind == "x" else "o", color)
        d.text(x + 30, cy + 4, text)


def blue(share: float) -> str:
    """The colour of a heatmap cell at `share` (0 to 1) of the largest count."""
    share = min(1.0, max(0.0, share))
    i = min(len(BLUES) - 2, int(share * (len(BLUES) - 1)))
    t = share * (len(BLUES) - 1) - i
    a, b = BLUES[i], BLUES[i + 1]
    mixed = (round(int(a[k : k + 2], 16) * (1 - t) + int(b[k : k + 2], 16) * t) for k in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in mixed)
