"""The exact sequential sign-flip test that paired differences are positive (the `paired`
policy's test for an edit, `moscopt.optimizer.policies.acceptance`).

If the edit changes nothing but the noise, candidate and incumbent are exchangeable, so each
task's difference is as likely to be +x as -x: given the magnitudes, the signs are fair coins.
The null distribution of the sum of the differences is therefore known exactly, for any split
size and any rewards (zeros, the most common difference with 0/1 rewards, carry no sign and do
not move it); no normal approximation is involved. The unit is the task
(`moscopt.optimizer.policies.blocks`): a task's differences flip together.

While every task is new, the test is sequential over the looks: with alpha = 1 - confidence
(alpha / 2 when tasks will repeat: `blocks.Schedule`) over those K looks, look k may have spent
alpha * (k/K)**0.25 in all (front-loaded: a real improvement should stop the test early). Its
boundary is the smallest positive running sum whose null probability, over the paths still open,
fits in what earlier looks left, computed by dynamic programming over the exact null. Once tasks
repeat, the sum of the tasks' blocks is tested at the last look, at the other alpha / 2 (looks
before it only stop for futility). Either way a no-op edit is accepted with probability at most
alpha, however many looks are taken.

A look stops for futility ("clearly not better") when the conditional power under the current
trend is below 20%: the standardised sum is at most sqrt(t) * (z[1 - alpha] + z[0.2] *
sqrt(1 - t)), t = k/K. That stop is binding (the policies always obey it), so the boundaries may
use the alpha it frees. Differences are compared in hundredths of a reward.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from moscopt.optimizer.policies.blocks import SPENDING_SHAPE, Blocks, Schedule

Outcome = Literal["crossed", "futile", "tie", "open", "cap"]

RESOLUTION = 100  # differences are compared in hundredths of a reward
FUTILITY_POWER = 0.2  # stop when the conditional power under the current trend is below this


@dataclass(frozen=True)
class Look:
    """What one look of the sequential test concluded.

    `mean`: the mean of the differences fed so far, in the test's resolution; `critical`: its
    critical distance at this look (the test crosses iff `mean > critical`); `p_value`: the
    stage-wise sequential p-value; `z`: the running sum over the square root of the sum of
    squares of the tasks' sums (0 when every difference is zero).
    """

    outcome: Outcome
    p_value: float
    mean: float
    critical: float
    z: float


class SequentialSignFlip:
    """The one-sided test that paired differences are positive; see the module docstring.

    Feed it the differences of each look, in order, with `look` (and the task of each, `keys`;
    None: every difference is a task of its own); it never reads them again. While no task
    repeats, the whole null is recomputed at every look (in units of the largest common divisor
    of the magnitudes seen), so every look's boundary is a pure function of the data so far.
    """

    def __init__(
        self,
        alpha: float,
        looks: int,
        *,
        shape: float = SPENDING_SHAPE,
        futility_power: float = FUTILITY_POWER,
        repeats_from: int | None = None,
    ) -> None:
        """`repeats_from`: the first look that repeats a task (None: none does)."""
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"alpha must be within (0, 0.5), got {alpha}")
        if looks < 1:
            raise ValueError(f"looks must be at least 1, got {looks}")
        self.alpha, self.looks, self.shape = alpha, looks, shape
        self.schedule = Schedule(alpha, looks, repeats_from)
        self._z_alpha = NormalDist().inv_cdf(1.0 - alpha)
        self._z_power = NormalDist().inv_cdf(futility_power)
        self._blocks = Blocks(self.schedule)
        self._batches: list[list[int]] = []
        self._sum = 0
        self._p_value = 1.0  # the sequential phase's p-value (adjusted to alpha)

    def look(self, diffs: Sequence[float], keys: Sequence[Hashable] | None = None) -> Look:
        if len(self._batches) >= self.looks:
            raise RuntimeError("every look of this test has been taken")
        units = [_units(d) for d in diffs]
        self._blocks.add(units, keys)
        self._batches.append(units)
        self._sum += sum(units)
        if self.schedule.blocked(len(self._batches)):
            return self._blocked()
        scale = math.gcd(*(abs(u) for batch in self._batches for u in batch)) or 1
        null: dict[int, float] = {0: 1.0}
        spent = 0.0
        n = sum_sq = 0
        for k, batch in enumerate(self._batches, start=1):
            for u in batch:
                if u:
                    null = _flip(null, abs(u) // scale)
            n += len(batch)
            sum_sq += sum((u // scale) ** 2 for u in batch)
            boundary, tail = _boundary(null, self._spent(k) - spent)
            if k == len(self._batches):
                return self._conclude(null, boundary, spent, scale, n, sum_sq)
            spent += tail
            null = {v: w for v, w in null.items() if v < boundary and not self._stops(k, v, sum_sq)}
        raise AssertionError("unreachable")

    def _spent(self, k: int) -> float:
        return self.schedule.spent(k, self.shape)

    def _blocked(self) -> Look:
        """A look once tasks repeat: the sum of the tasks' sums, which crosses only at the last
        look, at its part of alpha (`blocks.Schedule`)."""
        k = len(self._batches)
        sums = [round(v) for v in self._blocks.sums()]
        scale = math.gcd(*(abs(v) for v in sums)) or 1
        null: dict[int, float] = {0: 1.0}
        for v in sums:
            if v:
                null = _flip(null, abs(v) // scale)
        share = self.schedule.block_alpha(k)
        boundary, _ = _boundary(null, share) if share > 0 else (math.inf, 0.0)
        observed = self._sum // scale
        sum_sq = sum((v // scale) ** 2 for v in sums)
        tail = sum(w for v, w in null.items() if v >= observed)
        part = self.alpha - self.schedule.sequential_alpha
        p_value = min(self._p_value, tail * self.alpha / part)
        n = sum(len(b) for b in self._batches)
        edge = boundary - 1 if boundary < math.inf else max(null)
        outcome = self._outcome(observed, boundary, k, sum_sq)
        z = observed / math.sqrt(sum_sq) if sum_sq else 0.0
        mean, critical = observed * scale / RESOLUTION / n, edge * scale / RESOLUTION / n
        return Look(outcome, min(1.0, p_value), mean, critical, z)

    def _stops(self, k: int, total: int, sum_sq: int) -> bool:
        """Whether a path at running sum `total` stops at look k < K without crossing: all
        differences zero so far (a tie), or too little conditional power."""
        t = k / self.looks  # the futility bound at look k: O(1), however many looks
        futility = math.sqrt(t) * (self._z_alpha + self._z_power * math.sqrt(1.0 - t))
        return sum_sq == 0 or total <= futility * math.sqrt(sum_sq)

    def _outcome(self, observed: int, boundary: float, k: int, sum_sq: int) -> Outcome:
        if observed >= boundary:
            return "crossed"
        if k == self.looks:
            return "tie" if observed == 0 else "cap"
        if self._stops(k, observed, sum_sq):
            return "tie" if observed == 0 else "futile"
        return "open"

    def _conclude(
        self, null: dict[int, float], boundary: float, spent: float, scale: int, n: int, sq: int
    ) -> Look:
        observed = self._sum // scale
        # the largest sum that does not cross (sums are integers in units of `scale`)
        edge = boundary - 1 if boundary < math.inf else max(null)
        critical = edge * scale / RESOLUTION / n
        mean = observed * scale / RESOLUTION / n
        p_value = min(1.0, spent + sum(w for v, w in null.items() if v >= observed))
        self._p_value = min(1.0, p_value * self.alpha / self.schedule.sequential_alpha)
        z = observed / math.sqrt(sq) if sq else 0.0
        outcome = self._outcome(observed, boundary, len(self._batches), sq)
        return Look(outcome, self._p_value, mean, critical, z)


def _flip(null: dict[int, float], magnitude: int) -> dict[int, float]:
    """The null after one more difference of this magnitude with a fair random sign."""
    out: dict[int, float] = {}
    for v, w in null.items():
        half = w / 2.0
        out[v - magnitude] = out.get(v - magnitude, 0.0) + half
        out[v + magnitude] = out.get(v + magnitude, 0.0) + half
    return out


def _boundary(null: dict[int, float], allowance: float) -> tuple[float, float]:
    """The smallest positive value b with P(sum >= b) <= allowance (inf if none), and that
    probability (a candidate that is not ahead is never accepted, whatever is left)."""
    tail, boundary = 0.0, math.inf
    for v in sorted((v for v in null if v > 0), reverse=True):
        if tail + null[v] > allowance * (1.0 + 1e-12):
            break
        tail += null[v]
        boundary = v
    return boundary, tail


def _units(d: float) -> int:
    """`d` in hundredths, rounded half away from zero (odd: a no-op's symmetry survives)."""
    return int(math.copysign(math.floor(abs(d) * RESOLUTION + 0.5), d))
