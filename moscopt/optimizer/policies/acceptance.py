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
- `paired` (the default): for "better", the exact sequential sign-flip test of
  `moscopt.optimizer.policies.signflip` on the paired differences d = candidate - incumbent
  (same task, same sample index), looked at after each sample index (10 new differences on a
  10-task split), at most `max_samples` looks; for "non_inferior", the sequential test by
  betting of `moscopt.optimizer.policies.noninferiority` over the same looks (a pool worse by
  more than the margin is kept in at most 1 - confidence of the decisions, whatever the split
  size). Both take the task as the unit (`moscopt.optimizer.policies.blocks`): `tasks(s)`
  names the task of each reward of look s (default: the same tasks, in the same order, at
  every look), and a task's differences count as one block, so the error rates hold for the
  tasks a pool will meet, not only for the validation tasks.

Tie rule ("better"): when every difference seen is zero, or the running sum is exactly zero at
a stop, the verdict is a tie (an all-zero first look stops at once): rejected (an edit must
earn its place). The test never accepts a candidate that is not ahead. `Verdict.low/high` is
the test-based interval: the mean difference (in hundredths) plus or minus the critical
distance of the last look, so that paired "better" accepts iff `low > 0` (strict reports the
one-look interval, for information); `reason` gives the p-value. For paired "non_inferior",
`low/high` is the betting test's confidence interval, accepted iff `low >= -margin`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from moscopt.optimizer.policies.blocks import repeats_from as first_repeat
from moscopt.optimizer.policies.noninferiority import NonInferiorityTest
from moscopt.optimizer.policies.signflip import SequentialSignFlip

Rewards = Callable[[int], Awaitable[Sequence[float]]]
Direction = Literal["better", "non_inferior"]
TaskKeys = Callable[[int], Sequence[int]]
# optimizer.margin: the loss a non-inferior change may hide (docs/acceptance.md)
DEFAULT_MARGIN = 0.1


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
        self,
        incumbent: Rewards,
        candidate: Rewards,
        *,
        direction: Direction = "better",
        tasks: TaskKeys | None = None,
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
        self,
        incumbent: Rewards,
        candidate: Rewards,
        *,
        direction: Direction = "better",
        tasks: TaskKeys | None = None,
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
        self,
        incumbent: Rewards,
        candidate: Rewards,
        *,
        direction: Direction = "better",
        tasks: TaskKeys | None = None,
    ) -> Verdict:
        if _sign(direction) < 0:
            return await self._non_inferior(incumbent, candidate, tasks)
        schedule = _schedule(tasks, self.max_samples)
        test = SequentialSignFlip(
            1.0 - self.confidence, self.max_samples, repeats_from=repeats_from(schedule)
        )
        paired = PairedRewards()
        for s in range(self.max_samples):
            await paired.add(incumbent, candidate, s)
            look = test.look(paired.last, _keys(schedule[s], len(paired.last)))
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

    async def _non_inferior(
        self, incumbent: Rewards, candidate: Rewards, tasks: TaskKeys | None
    ) -> Verdict:
        schedule = _schedule(tasks, self.max_samples)
        test = NonInferiorityTest(
            1.0 - self.confidence,
            self.margin,
            self.max_samples,
            repeats_from=repeats_from(schedule),
        )
        paired = PairedRewards()
        for s in range(self.max_samples):
            await paired.add(incumbent, candidate, s)
            look = test.look(paired.last, _keys(schedule[s], len(paired.last)))
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


def _schedule(tasks: TaskKeys | None, looks: int) -> list[list[int] | None]:
    """The task of each reward of every look, known before any answer (None: the same tasks
    at every look, numbered by position once the first look's size is known)."""
    return [None if tasks is None else list(tasks(s)) for s in range(looks)]


def repeats_from(schedule: Sequence[Sequence[int] | None]) -> int | None:
    """The first look (from 1) that repeats a task (the same tasks at every look: the second)."""
    if any(keys is None for keys in schedule):
        return 2 if len(schedule) > 1 else None
    return first_repeat([list(k) for k in schedule if k is not None])


def _keys(keys: Sequence[int] | None, width: int) -> Sequence[int]:
    """The task of each reward of a look (None: by position)."""
    out = list(range(width)) if keys is None else list(keys)
    if len(out) != width:
        raise ValueError(f"{width} rewards but {len(out)} task keys")
    return out


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
