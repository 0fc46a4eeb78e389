"""Confidence intervals for scores (95%)."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054
FEW_TASKS = 20  # below this, a score's 95% interval is wider than ±0.22 at a 50% success rate


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): Wilson interval for 0/1 values, normal approximation otherwise."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0, 0.0)
    mean = sum(values) / n
    if all(v in (0.0, 1.0) for v in values):
        z2 = Z95 * Z95
        centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        return (mean, max(0.0, centre - half), min(1.0, centre + half))
    if n == 1:
        return (mean, mean, mean)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = Z95 * math.sqrt(var / n)
    return (mean, max(0.0, mean - half), min(1.0, mean + half))


def repeats_half_width(scores: Sequence[float]) -> float:
    """Half-width of the 95% interval of the mean of repeated evaluation scores."""
    n = len(scores)
    if n < 2:
        return math.inf
    mean = sum(scores) / n
    var = sum((s - mean) ** 2 for s in scores) / (n - 1)
    return Z95 * math.sqrt(var / n)


def few_tasks_note(n: int, what: str = "the validation") -> str | None:
    """What to say of a score measured on `n` tasks when they are too few to mean anything
    (None: `FEW_TASKS` or more): how few, and how wide a 95% interval is there."""
    if n >= FEW_TASKS:
        return None
    half = Z95 * math.sqrt(0.25 / max(n, 1))
    return (
        f"{what} rests on {n} task{'s' if n != 1 else ''}, too few to mean anything: a score on "
        f"{n} tasks is uncertain by up to ±{half:.2f} (95%), so a difference there is noise; "
        f"compare on {FEW_TASKS} tasks or more (`moscopt eval --split test`)"
    )
