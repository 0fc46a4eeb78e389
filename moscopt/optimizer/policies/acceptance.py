"""Acceptance: does an edited candidate pool replace the incumbent? A policy sees the validation
split through two `Rewards` callables, `rewards(s)` being the reward of every validation task (same
tasks, same order, every call) at sample index `s`. The caller caches per (pool, s), so asking the
incumbent again is free; the policy still asks for as few sample indices as it needs, and asks the
incumbent only for indices it also asks the candidate for. `direction="better"` (an edit) accepts
only an improvement;
`"non_inferior"` (evolution, gate restoration, lifecycle operators: changes that buy something
other than score) accepts only when the evidence bounds the candidate's loss within `margin`.

- `strict` (the paper): sample 0 only; "better" accepts iff the candidate's mean reward is
  strictly higher, "non_inferior" iff it is at least as high (the paper has no margin).
- `paired` (the default): for "better", an exact sequential sign-flip test of the paired
  differences d = candidate - incumbent (same task, same sample index), looked at after each sample
  index (10 new differences on a 10-task split), at most `max_samples` looks; for "non_inferior",
  the sequential test by betting of `moscopt.optimizer.policies.noninferiority` over the same looks
  (a pool worse by more than the margin is kept in at most 1 - confidence of the decisions, whatever
  the split size).

The paired test. If the edit changes nothing but the noise, candidate and incumbent are
exchangeable, so each d is as likely to be +x as -x: given the magnitudes |d|, the signs are
fair coins. The null distribution of the running sum of d is therefore known exactly, for any
split size and any rewards (zeros, the most common difference with 0/1 rewards, carry no sign
and do not move it); no normal approximation is involved. With alpha = 1 - confidence and
K = `max_samples`, look k may have spent alpha * (k/K)**0.25 in all (front-loaded: a real
improvement should stop the test early). Its boundary is the smallest positive running sum
whose null probability, over the paths still open, fits in what earlier looks left, computed
by dynamic programming over the exact null; so a no-op edit is accepted with probability at
most alpha, however many looks are taken. A look stops for futility ("clearly not better")
when the conditional power under the current trend is below 20%: the standardised sum is at
most sqrt(t) * (z[1 - alpha] + z[0.2] * sqrt(1 - t)), t = k/K. That stop is binding (this code
always obeys it), so the boundaries may use the alpha it frees. Differences are compared in
hundredths of a reward. On a 10-task split with 0/1 rewards, a no-op edit at p = 0.5 is
accepted about 5% of the time after 1.7 samples on average, and an edit that lifts p from 0.3
to 0.7 about 92% of the time after 2.0 (scripts/bench_acceptance.py).

Tie rule ("better"): when every difference seen is zero, or the running sum is exactly zero at
a stop, the verdict is a tie (an all-zero first look stops at once): rejected (an edit must
earn its place). The test never accepts a candidate that is not ahead. `Verdict.low/high` is
the test-based interval: the mean difference (in hundredths) plus or minus the critical
distance of the last look, so that paired "better" accepts iff `low > 0` (strict reports the
one-look interval, for information); `reason` gives the stage-wise sequential p-value. For
paired "non_inferior", `low/high` is the betting test's anytime-valid interval, accepted iff
`low >= -margin`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any, Literal, Protocol

from moscopt.optimizer.policies.noninferiority import NonInferiorityTest

Rewards = Callable[[int], Awaitable[Sequence[float]]]
Direction = Literal["better", "non_inferior"]
Outcome = Literal["crossed", "futile", "tie", "open", "cap"]

RESOLUTION = 100  # differences are compared in hundredths of a reward
SPENDING_SHAPE = 0.25  # look k of K may have spent alpha * (k/K)**0.25
FUTILITY_POWER = 0.2  # stop when the conditional power under the current trend is below this
DEFAULT_MARGIN = 0.1  # optimizer.margin: the loss a non-inferior change may hide (README)


@dataclass(frozen=True)
class Verdict:
    """One acceptance decision; see the module docstring for `low`, `high` and `reason`."""

    accepted: bool
    samples: int  # sample indices used (1 = only s=0)
    n: int  # paired observations used (tasks x samples)
    mean_diff: float  # candidate - incumbent, mean over the paired observations
    low: float
    high: float
    candidate_score: float  # mean reward over the samples used
    incumbent_score: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Acceptance(Protocol):
    """Decides one candidate against the incumbent; raises `ValueError` when the two `Rewards`
    disagree on the number of tasks (or give none, or a non-finite reward), and lets whatever
    a `Rewards` call raises propagate."""

    name: str

    async def decide(
        self, incumbent: Rewards, candidate: Rewards, *, direction: Direction = "better"
    ) -> Verdict: ...


def make_acceptance(
    name: Literal["strict", "paired"],
    *,
    confidence: float = 0.95,
    max_samples: int = 5,
    margin: float = DEFAULT_MARGIN,
) -> Acceptance:
    """The policy called `name` (`max_samples` and `margin` concern `paired` only, but
    `strict` reports its interval at `confidence` too)."""
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0.5, 1), got {confidence}")
    if max_samples < 1:
        raise ValueError(f"max_samples must be at least 1, got {max_samples}")
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be within [0, 1), got {margin}")
    if name == "strict":
        return StrictAcceptance(confidence=confidence)
    if name == "paired":
        return PairedAcceptance(confidence=confidence, max_samples=max_samples, margin=margin)
    raise ValueError(f"unknown acceptance policy {name!r}: use 'strict' or 'paired'")


@dataclass
class StrictAcceptance:
    """The paper's rule: one sample, strict improvement ("non_inferior": no drop)."""

    confidence: float = 0.95
    name: str = field(default="strict", init=False)

    async def decide(
        self, incumbent: Rewards, candidate: Rewards, *, direction: Direction = "better"
    ) -> Verdict:
        sign = _sign(direction)
        paired = PairedRewards()
        await paired.add(incumbent, candidate, 0)
        look = SequentialSignFlip(1.0 - self.confidence, 1).look([sign * d for d in paired.last])
        diff = paired.candidate_score - paired.incumbent_score
        if _same_total(paired.candidate_total, paired.incumbent_total):
            accepted, reason = direction == "non_inferior", "tie"
        elif direction == "better":
            accepted = paired.candidate_total > paired.incumbent_total
            reason = "improved" if accepted else "not better"
        else:
            accepted = paired.candidate_total > paired.incumbent_total
            reason = "not worse" if accepted else "worse"
        return paired.verdict(accepted, reason, diff, sign * look.mean, look.critical)


@dataclass
class PairedAcceptance:
    """The paired, sequential tests of the module docstring."""

    confidence: float = 0.95
    max_samples: int = 5
    margin: float = DEFAULT_MARGIN
    name: str = field(default="paired", init=False)

    async def decide(
        self, incumbent: Rewards, candidate: Rewards, *, direction: Direction = "better"
    ) -> Verdict:
        if _sign(direction) < 0:
            return await self._non_inferior(incumbent, candidate)
        test = SequentialSignFlip(1.0 - self.confidence, self.max_samples)
        paired = PairedRewards()
        for s in range(self.max_samples):
            await paired.add(incumbent, candidate, s)
            look = test.look(paired.last)
            if look.outcome != "open":
                break
        p = f"p={look.p_value:.3g}"
        if look.outcome == "crossed":
            accepted, reason = True, f"improved ({p})"
        elif look.outcome == "tie":
            accepted, reason = False, "tie"
        elif look.outcome == "cap":
            accepted, reason = False, "cap reached"
        else:
            accepted, reason = False, "not better"
        diff = paired.mean_diff()
        return paired.verdict(accepted, reason, diff, look.mean, look.critical)

    async def _non_inferior(self, incumbent: Rewards, candidate: Rewards) -> Verdict:
        test = NonInferiorityTest(1.0 - self.confidence, self.margin, self.max_samples)
        paired = PairedRewards()
        for s in range(self.max_samples):
            await paired.add(incumbent, candidate, s)
            look = test.look(paired.last)
            if look.outcome != "open":
                break
        p, within = f"p={look.p_value:.3g}", f"{self.margin:g}"
        reason = {
            "crossed": f"non-inferior: loss bounded within {within} ({p})",
            "futile": f"behind by the margin {within} or more",
            "cap": f"cap reached: loss not bounded within {within} ({p})",
        }[look.outcome]
        diff = paired.mean_diff()
        centre = (look.low + look.high) / 2.0
        return paired.verdict(
            look.outcome == "crossed", reason, diff, centre, (look.high - look.low) / 2.0
        )


# -- the test ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """What one look of the sequential test concluded.

    `mean`: the mean of the differences fed so far, in the test's resolution; `critical`: its
    critical distance at this look (the test crosses iff `mean > critical`); `p_value`: the
    stage-wise sequential p-value; `z`: the running sum over the square root of the sum of
    squares (0 when every difference is zero).
    """

    outcome: Outcome
    p_value: float
    mean: float
    critical: float
    z: float


class SequentialSignFlip:
    """The one-sided test that paired differences are positive; see the module docstring.

    Feed it the differences of each look, in order, with `look`; it never reads them again.
    The whole null is recomputed at every look (in units of the largest common divisor of the
    magnitudes seen), so every look's boundary is a pure function of the magnitudes so far.
    """

    def __init__(
        self,
        alpha: float,
        looks: int,
        *,
        shape: float = SPENDING_SHAPE,
        futility_power: float = FUTILITY_POWER,
    ) -> None:
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"alpha must be within (0, 0.5), got {alpha}")
        if looks < 1:
            raise ValueError(f"looks must be at least 1, got {looks}")
        self.alpha, self.looks, self.shape = alpha, looks, shape
        z_alpha = NormalDist().inv_cdf(1.0 - alpha)
        z_power = NormalDist().inv_cdf(futility_power)
        self._futility = [
            math.sqrt(t) * (z_alpha + z_power * math.sqrt(1.0 - t))
            for t in (k / looks for k in range(1, looks))
        ]
        self._batches: list[list[int]] = []
        self._sum = 0

    def look(self, diffs: Sequence[float]) -> Look:
        if len(self._batches) >= self.looks:
            raise RuntimeError("every look of this test has been taken")
        units = [_units(d) for d in diffs]
        self._batches.append(units)
        self._sum += sum(units)
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
            boundary, tail = _boundary(null, self.alpha * (k / self.looks) ** self.shape - spent)
            if k == len(self._batches):
                return self._conclude(null, boundary, spent, scale, n, sum_sq)
            spent += tail
            null = {v: w for v, w in null.items() if v < boundary and not self._stops(k, v, sum_sq)}
        raise AssertionError("unreachable")

    def _stops(self, k: int, total: int, sum_sq: int) -> bool:
        """Whether a path at running sum `total` stops at look k < K without crossing: all
        differences zero so far (a tie), or too little conditional power."""
        return sum_sq == 0 or total <= self._futility[k - 1] * math.sqrt(sum_sq)

    def _conclude(
        self, null: dict[int, float], boundary: float, spent: float, scale: int, n: int, sq: int
    ) -> Look:
        observed = self._sum // scale
        # the largest sum that does not cross (sums are integers in units of `scale`)
        edge = boundary - 1 if boundary < math.inf else max(null)
        critical = edge * scale / RESOLUTION / n
        mean = observed * scale / RESOLUTION / n
        p_value = min(1.0, spent + sum(w for v, w in null.items() if v >= observed))
        z = observed / math.sqrt(sq) if sq else 0.0
        k, last = len(self._batches), len(self._batches) == self.looks
        outcome: Outcome
        if observed >= boundary:
            outcome = "crossed"
        elif last:
            outcome = "tie" if observed == 0 else "cap"
        elif self._stops(k, observed, sq):
            outcome = "tie" if observed == 0 else "futile"
        else:
            outcome = "open"
        return Look(outcome, p_value, mean, critical, z)


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


# -- the observations ----------------------------------------------------------------------------


class PairedRewards:
    """The rewards a decision has seen: both pools on the same tasks and sample indices."""

    def __init__(self) -> None:
        self.incumbent: list[float] = []
        self.candidate: list[float] = []
        self.last: list[float] = []  # the differences of the latest sample index
        self.samples = 0
        self._width: int | None = None

    async def add(self, incumbent: Rewards, candidate: Rewards, s: int) -> None:
        inc, cand = await asyncio.gather(incumbent(s), candidate(s))
        inc, cand = [float(r) for r in inc], [float(r) for r in cand]
        if len(inc) != len(cand):
            raise ValueError(
                f"sample {s}: {len(inc)} incumbent rewards but {len(cand)} candidate rewards"
            )
        if not inc or (self._width is not None and len(inc) != self._width):
            raise ValueError(f"sample {s}: {len(inc)} rewards, expected {self._width or '> 0'}")
        if not all(math.isfinite(r) for r in (*inc, *cand)):
            raise ValueError(f"sample {s}: a reward is not a finite number")
        self._width = len(inc)
        self.incumbent += inc
        self.candidate += cand
        self.last = [c - i for c, i in zip(cand, inc, strict=True)]
        self.samples += 1

    @property
    def candidate_total(self) -> float:
        return math.fsum(self.candidate)

    @property
    def incumbent_total(self) -> float:
        return math.fsum(self.incumbent)

    @property
    def candidate_score(self) -> float:
        return self.candidate_total / len(self.candidate)

    @property
    def incumbent_score(self) -> float:
        return self.incumbent_total / len(self.incumbent)

    def mean_diff(self) -> float:
        return math.fsum(c - i for c, i in zip(self.candidate, self.incumbent, strict=True)) / len(
            self.candidate
        )

    def verdict(
        self, accepted: bool, reason: str, diff: float, centre: float, critical: float
    ) -> Verdict:
        """`centre`: the mean difference as the test saw it (in its resolution)."""
        return Verdict(
            accepted=accepted,
            samples=self.samples,
            n=len(self.candidate),
            mean_diff=diff,
            low=centre - critical,
            high=centre + critical,
            candidate_score=self.candidate_score,
            incumbent_score=self.incumbent_score,
            reason=reason,
        )


def _same_total(a: float, b: float) -> bool:
    """Whether two sums of rewards are equal but for floating point (2/3 + 2/3 + 0 + 1 and
    1/3 + 0 + 1 + 1 are a tie, not an improvement)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _sign(direction: str) -> int:
    if direction == "better":
        return 1
    if direction == "non_inferior":
        return -1
    raise ValueError(f"unknown direction {direction!r}: use 'better' or 'non_inferior'")
