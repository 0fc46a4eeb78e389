"""`Logistic`: the small learned scorer behind the write gate, the retrieval gate and halting.

A logistic regression over a handful of step features, fitted by Newton's method (IRLS) with an
L2 penalty in pure Python: no numpy, no randomness, the same examples give the same weights to
the last bit. Its parameters and calibration live in the run state as JSON
(`moscopt.extensions.memory.params.ModelParams`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NEWTON_STEPS = 25
BINS = 5  # calibration bins of the expected calibration error


@dataclass(frozen=True)
class Calibration:
    """How well the fitted probabilities match the labels they were fitted on."""

    examples: int
    base_rate: float  # fraction of positive labels
    brier: float  # mean squared error of the probabilities
    ece: float  # expected calibration error over `BINS` equal-width bins
    accuracy: float  # at threshold 0.5


@dataclass(frozen=True)
class Logistic:
    """p(x) = sigmoid(bias + weights . x)."""

    weights: tuple[float, ...]
    bias: float = 0.0

    def prob(self, features: Sequence[float]) -> float:
        if len(features) != len(self.weights):
            raise ValueError(f"expected {len(self.weights)} features, got {len(features)}")
        z = self.bias + sum(w * x for w, x in zip(self.weights, features, strict=True))
        return sigmoid(z)


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def fit_logistic(
    xs: Sequence[Sequence[float]], ys: Sequence[float], *, l2: float = 1.0
) -> Logistic | None:
    """The L2-penalized maximum-likelihood fit (the bias is not penalized); None when the
    examples are empty or all have the same label (nothing to learn from)."""
    if not xs or len(xs) != len(ys):
        return None
    if all(y >= 0.5 for y in ys) or all(y < 0.5 for y in ys):
        return None
    d = len(xs[0]) + 1
    rows = [[1.0, *map(float, x)] for x in xs]
    beta = [0.0] * d
    for _ in range(NEWTON_STEPS):
        grad = [0.0] * d
        hess = [[0.0] * d for _ in range(d)]
        for row, y in zip(rows, ys, strict=True):
            p = sigmoid(sum(b * v for b, v in zip(beta, row, strict=True)))
            w = max(p * (1 - p), 1e-9)
            for i in range(d):
                grad[i] += (p - y) * row[i]
                for j in range(i, d):
                    hess[i][j] += w * row[i] * row[j]
        for i in range(d):
            for j in range(i):
                hess[i][j] = hess[j][i]
            if i > 0:
                grad[i] += l2 * beta[i]
                hess[i][i] += l2
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-9:
            break
    return Logistic(weights=tuple(round(b, 8) for b in beta[1:]), bias=round(beta[0], 8))


def calibration(model: Logistic, xs: Sequence[Sequence[float]], ys: Sequence[float]) -> Calibration:
    n = len(xs)
    if n == 0:
        return Calibration(0, 0.0, 0.0, 0.0, 0.0)
    probs = [model.prob(x) for x in xs]
    brier = sum((p - y) ** 2 for p, y in zip(probs, ys, strict=True)) / n
    correct = sum((p >= 0.5) == (y >= 0.5) for p, y in zip(probs, ys, strict=True))
    ece = 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        members = [
            (p, y)
            for p, y in zip(probs, ys, strict=True)
            if lo <= p < hi or (b == BINS - 1 and p == 1.0)
        ]
        if members:
            gap = abs(sum(p for p, _ in members) - sum(y for _, y in members)) / len(members)
            ece += gap * len(members) / n
    return Calibration(
        examples=n,
        base_rate=round(sum(ys) / n, 4),
        brier=round(brier, 4),
        ece=round(ece, 4),
        accuracy=round(correct / n, 4),
    )


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b, by Gaussian elimination with partial pivoting (a is positive definite)."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        div = m[col][col] if abs(m[col][col]) > 1e-12 else 1e-12
        for r in range(col + 1, n):
            f = m[r][col] / div
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        div = m[r][r] if abs(m[r][r]) > 1e-12 else 1e-12
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / div
    return x
