"""Confidence intervals for scores (95%)."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054


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
