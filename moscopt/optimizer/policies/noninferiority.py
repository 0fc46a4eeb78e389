"""The non-inferiority test: may a change that buys something other than score (an evolution
cycle, a gate restoration, a lifecycle operator) replace the incumbent?

The question is not "is the candidate worse?" (on a small split, failing to show a loss says
little: a true drop of 0.2 was let in about half the time) but "does the evidence bound its loss
within the margin?". With d = candidate - incumbent (same task, same sample index) and a stated
`margin` (in the reward's units, `optimizer.margin`), the test rejects H0: mean(d) <= -margin,
and the candidate is kept only then; otherwise the incumbent stays.

It is a test by betting (Waudby-Smith & Ramdas, "Estimating means of bounded random variables
by betting", 2023), valid whatever the rewards are (0/1 or graded, any split size, tasks of
different difficulty) and however many looks are taken. A bettor starts with wealth 1 and, at
each look (one sample index: every validation task once), stakes a fraction f of its wealth on
each difference being above -margin: the wealth is multiplied by 1 + f * y per difference, where
y = (d + margin) / (1 - margin) >= -1. The fraction is the same for every task of a look and is
chosen from the earlier looks only (the first look stakes `FIRST_FRACTION`, later looks the
"aGRAPA" plug-in mean(y) / mean(y^2), clipped to [0, `MAX_FRACTION`]). Under H0 each look's
expected factor is at most 1 (by the AM-GM inequality, whatever the tasks' own means), so the
wealth is a nonnegative supermartingale and, by Ville's inequality, reaches 1/alpha with
probability at most alpha: a pool worse by the margin or more is kept in at most alpha of the
decisions. Stops: `crossed` when the wealth reaches 1/alpha (kept); `futile` when the mean
difference so far is at or below -margin before the last look (no sign it is within the margin;
stopping early only lowers the chance of keeping); `cap` after the last look (not shown within).

`lower()` is the matching anytime-valid lower confidence bound on mean(d): the largest m whose
test (the same fractions, loss scaled by 1 + m) would have crossed at some look; the test keeps
the candidate iff `lower() >= -margin`. `upper()` is the mirror bound. Identical answers on every
task are the best evidence there is: at margin 0.1 they keep a candidate after 4 looks on a
10-task split (40 paired observations), 3 on 20.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

FIRST_FRACTION = 0.25  # the stake of the first look, before any evidence
MAX_FRACTION = 0.95  # never stake more: one loss at the limit keeps 5% of the wealth
BISECTION_STEPS = 40

Outcome = Literal["crossed", "futile", "cap", "open"]


@dataclass(frozen=True)
class NonInferiorLook:
    """What one look concluded: `p_value` is 1 / the largest wealth so far (capped at 1)."""

    outcome: Outcome
    p_value: float
    mean: float  # mean difference over every look so far
    low: float  # lower confidence bound on the mean difference
    high: float


class NonInferiorityTest:
    """Feed it the differences of each look in order (`look`); see the module docstring."""

    def __init__(self, alpha: float, margin: float, looks: int) -> None:
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"alpha must be within (0, 0.5), got {alpha}")
        if not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be within [0, 1), got {margin}")
        if looks < 1:
            raise ValueError(f"looks must be at least 1, got {looks}")
        self.alpha, self.margin, self.looks = alpha, margin, looks
        self._batches: list[list[float]] = []

    def look(self, diffs: Sequence[float]) -> NonInferiorLook:
        if len(self._batches) >= self.looks:
            raise RuntimeError("every look of this test has been taken")
        if not diffs or not all(math.isfinite(d) and -1.0 <= d <= 1.0 for d in diffs):
            raise ValueError("differences must be finite numbers within [-1, 1]")
        self._batches.append([float(d) for d in diffs])
        best = max(_wealth(self._batches, -self.margin, -self.margin))
        every = [d for batch in self._batches for d in batch]
        mean = math.fsum(every) / len(every)
        outcome: Outcome
        if best >= 1.0 / self.alpha:
            outcome = "crossed"
        elif len(self._batches) == self.looks:
            outcome = "cap"
        elif mean <= -self.margin:
            outcome = "futile"
        else:
            outcome = "open"
        return NonInferiorLook(outcome, min(1.0, 1.0 / best), mean, self.lower(), self.upper())

    def lower(self) -> float:
        """The largest m in [-1, 1] with some look's wealth against H0: mean <= m at 1/alpha."""
        return _bound(self._batches, -self.margin, self.alpha)

    def upper(self) -> float:
        mirrored = [[-d for d in batch] for batch in self._batches]
        return -_bound(mirrored, -self.margin, self.alpha)


def _fractions(batches: Sequence[Sequence[float]], centre: float) -> list[float]:
    """The stake of each look, from the looks before it only (see the module docstring)."""
    out = [FIRST_FRACTION]
    ys: list[float] = []
    for batch in batches[:-1]:
        ys += [(d - centre) / (1.0 + centre) for d in batch]
        first = math.fsum(ys) / len(ys)
        second = math.fsum(y * y for y in ys) / len(ys)
        out.append(min(MAX_FRACTION, max(0.0, first / second)) if second > 0 else MAX_FRACTION)
    return out


def _wealth(batches: Sequence[Sequence[float]], m: float, centre: float) -> list[float]:
    """The wealth after each look against H0: mean <= m, staking the fractions chosen at
    `centre` (the wealth decreases as m grows: each factor 1 + f (d - m) / (1 + m) does)."""
    out, wealth = [], 1.0
    for f, batch in zip(_fractions(batches, centre), batches, strict=True):
        for d in batch:
            wealth *= 1.0 + f * (d - m) / (1.0 + m)
        out.append(wealth)
    return out


def _bound(batches: Sequence[Sequence[float]], centre: float, alpha: float) -> float:
    if not batches:
        return -1.0
    crosses = lambda m: max(_wealth(batches, m, centre)) >= 1.0 / alpha  # noqa: E731
    low, high = -1.0 + 1e-9, 1.0
    if not crosses(low):
        return -1.0
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2.0
        low, high = (mid, high) if crosses(mid) else (low, mid)
    return low
