"""The non-inferiority test: may a change that buys something other than score (an evolution
cycle, a gate restoration, a lifecycle operator) replace the incumbent?

The question is not "is the candidate worse?" (on a small split, failing to show a loss says
little: a true drop of 0.2 was let in about half the time) but "does the evidence bound its loss
within the margin?". With d = candidate - incumbent (same task, same sample index) and a stated
`margin` (in the reward's units, `optimizer.margin`), the test rejects H0: mean(d) <= -margin,
and the candidate is kept only then; otherwise the incumbent stays.

It is a test by betting (Waudby-Smith & Ramdas, "Estimating means of bounded random variables
by betting", 2023), valid whatever the rewards are (0/1 or graded, any split size, tasks of
different difficulty) and however many looks are taken. A bettor starts with wealth 1 and
stakes a fraction f of its wealth on each difference being above -margin: the wealth is
multiplied by 1 + f * y, y = (d + margin) / (1 - margin) >= -1. Under H0 each factor's expected
value is at most 1, so the wealth is a nonnegative supermartingale and, by Ville's inequality,
reaches 1/a with probability at most a.

The task is the unit (`moscopt.optimizer.policies.blocks`). While every task is new, the bettor
bets on every difference, look after look, each stake chosen from the differences before it
(`FIRST_FRACTION` at the first, then the "aGRAPA" plug-in mean(y) / mean(y^2) clipped to [0,
`MAX_FRACTION`]), and look k crosses when the wealth has reached 1 / (a * (k/K)**0.25) during it
(a = alpha, or alpha / 2 when tasks will repeat: `blocks.Schedule`). Once tasks repeat, the last
look bets once on each task's mean difference (tasks in the order first seen) and crosses when
that wealth reaches 2 / alpha. A pool worse by the margin or more is kept in at most alpha of the
decisions. Stops: `crossed` (kept); `futile` when the mean difference so far is at or below
-margin before the last look; `cap` after the last look (not shown within).

`lower()` is the matching lower confidence bound on mean(d): the largest m whose test (the same
fractions, loss scaled by 1 + m) would have crossed at some look; the test keeps the candidate
iff `lower() >= -margin`. `upper()` is the mirror bound. Bounding a loss for the tasks a pool
will meet takes enough tasks: with identical answers on every task, a margin of 0.1 needs about
30 distinct tasks (each lifts the wealth at most 1 + 0.95 * 0.1 / 0.9), however many samples of
each are drawn (`least_tasks`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from moscopt.optimizer.policies.blocks import Blocks, Schedule

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
    """Feed it the differences of each look in order (`look`, with the task of each: `keys`,
    None: every difference a task of its own); see the module docstring."""

    def __init__(
        self, alpha: float, margin: float, looks: int, *, repeats_from: int | None = None
    ) -> None:
        """`repeats_from`: the first look that repeats a task (None: none does)."""
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"alpha must be within (0, 0.5), got {alpha}")
        if not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be within [0, 1), got {margin}")
        if looks < 1:
            raise ValueError(f"looks must be at least 1, got {looks}")
        self.alpha, self.margin, self.looks = alpha, margin, looks
        self._blocks = Blocks(Schedule(alpha, looks, repeats_from))

    def look(
        self, diffs: Sequence[float], keys: Sequence[Hashable] | None = None
    ) -> NonInferiorLook:
        if len(self._blocks.batches) >= self.looks:
            raise RuntimeError("every look of this test has been taken")
        if not diffs or not all(math.isfinite(d) and -1.0 <= d <= 1.0 for d in diffs):
            raise ValueError("differences must be finite numbers within [-1, 1]")
        self._blocks.add(diffs, keys)
        ratios = _ratios(self._blocks, -self.margin, -self.margin)
        every = [d for batch in self._blocks.batches for d in batch]
        mean = math.fsum(every) / len(every)
        outcome: Outcome
        if max(ratios) >= 1.0:
            outcome = "crossed"
        elif len(self._blocks.batches) == self.looks:
            outcome = "cap"
        elif mean <= -self.margin:
            outcome = "futile"
        else:
            outcome = "open"
        p_value = min(1.0, self.alpha / max(max(ratios), 1e-300))
        return NonInferiorLook(outcome, p_value, mean, self.lower(), self.upper())

    def lower(self) -> float:
        """The largest m in [-1, 1] whose H0: mean <= m some look rejects."""
        return _bound(self._blocks, -self.margin)

    def upper(self) -> float:
        mirrored = Blocks(self._blocks.schedule)
        for batch, keys in zip(self._blocks.batches, self._blocks.keys, strict=True):
            mirrored.add([-d for d in batch], keys)
        return -_bound(mirrored, -self.margin)


def least_tasks(margin: float, level: float) -> float:
    """The fewest distinct tasks that can ever bound a loss within `margin` at `level` (a
    look's share of alpha): with identical answers on every task, the best evidence there is,
    each task lifts the wealth by 1 + f * margin / (1 - margin) at most."""
    y = margin / (1.0 - margin)
    if y <= 0:
        return math.inf
    wealth, n = 1.0 + FIRST_FRACTION * y, 1
    while wealth * level < 1.0:
        wealth *= 1.0 + MAX_FRACTION * y
        n += 1
    return n


def wealths(ds: Sequence[float], m: float, centre: float) -> list[float]:
    """The wealth after each difference of `ds`, in order, against H0: mean <= m, each stake
    chosen at `centre` from the differences before it (`FIRST_FRACTION` first, then aGRAPA);
    it decreases as m grows (each factor 1 + f (d - m) / (1 + m) does)."""
    out, wealth = [], 1.0
    total = squares = 0.0
    for i, d in enumerate(ds):
        if i == 0:
            f = FIRST_FRACTION
        elif squares > 0:
            f = min(MAX_FRACTION, max(0.0, total / squares))
        else:
            f = MAX_FRACTION
        wealth *= 1.0 + f * (d - m) / (1.0 + m)
        out.append(wealth)
        y = (d - centre) / (1.0 + centre)
        total, squares = total + y, squares + y * y
    return out


def _ratios(blocks: Blocks, m: float, centre: float) -> list[float]:
    """Per look, its largest wealth against H0: mean <= m times what it may spend (>= 1:
    rejected; see the module docstring)."""
    schedule = blocks.schedule
    out: list[float] = []
    sequential = [b for k, b in enumerate(blocks.batches, 1) if not schedule.blocked(k)]
    wealth = wealths([d for batch in sequential for d in batch], m, centre)
    end = 0
    for k, batch in enumerate(sequential, start=1):
        out.append(max(wealth[end : end + len(batch)]) * schedule.spent(k))
        end += len(batch)
    k = len(blocks.batches)
    if schedule.blocked(k) and schedule.block_alpha(k) > 0:
        out.append(max(wealths(blocks.means(), m, centre)) * schedule.block_alpha(k))
    return out or [0.0]


def _bound(blocks: Blocks, centre: float) -> float:
    if not blocks.batches:
        return -1.0
    crosses = lambda m: max(_ratios(blocks, m, centre)) >= 1.0  # noqa: E731
    low, high = -1.0 + 1e-9, 1.0
    if not crosses(low):
        return -1.0
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2.0
        low, high = (mid, high) if crosses(mid) else (low, mid)
    return low
