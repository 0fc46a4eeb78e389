"""The task is the unit: the paired differences of a decision, grouped by the task they came from.

A decision's looks may ask the same tasks again (at a new sample index: the whole validation
split at every look, the default on a small split) or new ones (`optimizer.val_look`). Two
differences of the same task are not independent evidence: a model that answers a task the same
way on most samples repeats itself, and a test that counts each repeat as a new observation is
valid only for "better on these tasks", not for the tasks a pool will meet (issue 37). So both
tests treat a task's differences as one block: they flip its sign together (the sign-flip test)
or bet on its mean once (the test by betting).

The caller says beforehand from which look on a task repeats (`repeats_from`: the schedule of a
decision's looks is known before any answer). While every task is new, a block is one difference
and the tests run as sequential tests over those looks (exact, anytime), at alpha in all when no
task ever repeats, else at alpha / 2. From the first look that repeats a task on, the looks stop
for futility but cross only at the last look, on the tasks' blocks, at the other alpha / 2: the
last look holds the most evidence about each task, and by the union bound a null candidate
passes in at most alpha of the decisions, whatever the within-task dependence.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

SPENDING_SHAPE = 0.25  # look k of K may have spent alpha * (k/K)**0.25 in all
FRESH_LOOK = 20  # tasks per look by default when the split holds two looks of them or more


def look_size(split: int, val_look: int | None) -> int:
    """Tasks per look: `optimizer.val_look` (at most the split); unset, fresh tasks where the
    split allows (`FRESH_LOOK` per look from 2 x `FRESH_LOOK` tasks up: later looks draw tasks
    not yet seen), else the whole split at every look (its tasks as blocks)."""
    if split <= 0:
        raise ValueError(f"a validation split of {split} tasks")
    if val_look is not None:
        return min(val_look, split)
    return FRESH_LOOK if split >= 2 * FRESH_LOOK else split


def spending(alpha: float, k: int, looks: int, shape: float = SPENDING_SHAPE) -> float:
    """The error rate looks 1..k may have spent in all."""
    return alpha * (min(k, looks) / looks) ** shape if k > 0 else 0.0


def look_tasks(pool: int, size: int, look: int) -> list[tuple[int, int]]:
    """(task index in the split, sample index) of each task of look `look` (from 0): looks
    walk the split `size` tasks at a time, and a task comes back only after the whole split,
    at the next sample index. With `size == pool`, look s is every task at sample s."""
    if not 0 < size <= pool or look < 0:
        raise ValueError(f"a look of {size} tasks out of {pool}, look {look}: out of range")
    start = look * size
    return [((start + j) % pool, (start + j) // pool) for j in range(size)]


@dataclass(frozen=True)
class Schedule:
    """How a test of `looks` looks at `alpha` spends it when tasks repeat from look
    `repeats_from` on (None: never): see the module docstring."""

    alpha: float
    looks: int
    repeats_from: int | None = None

    def __post_init__(self) -> None:
        if self.repeats_from is not None and not 1 < self.repeats_from <= self.looks:
            raise ValueError(f"repeats from look {self.repeats_from} of {self.looks}")

    @property
    def sequential_looks(self) -> int:
        """The looks on tasks not seen before (the sequential phase)."""
        return self.looks if self.repeats_from is None else self.repeats_from - 1

    @property
    def sequential_alpha(self) -> float:
        return self.alpha if self.repeats_from is None else self.alpha / 2.0

    def spent(self, k: int, shape: float = SPENDING_SHAPE) -> float:
        """What sequential looks 1..k may have spent in all."""
        return spending(self.sequential_alpha, k, self.sequential_looks, shape)

    def blocked(self, k: int) -> bool:
        """Whether look k is tested on the tasks' blocks."""
        return self.repeats_from is not None and k >= self.repeats_from

    def block_alpha(self, k: int) -> float:
        """What blocked look k may spend: alpha / 2 at the last look, nothing before."""
        return self.alpha - self.sequential_alpha if k == self.looks else 0.0


def repeats_from(looks: Sequence[Sequence[Hashable]]) -> int | None:
    """The first look (from 1) whose tasks include one seen before (or twice in it)."""
    seen: set[Hashable] = set()
    for k, keys in enumerate(looks, start=1):
        if len(set(keys)) < len(keys) or seen & set(keys):
            return k
        seen.update(keys)
    return None


class Blocks:
    """The differences seen so far, by look and by task (`keys`; None: every difference is its
    own task, as when each comes from a task not seen before)."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.batches: list[list[float]] = []
        self.keys: list[list[Hashable]] = []

    def add(self, diffs: Sequence[float], keys: Sequence[Hashable] | None = None) -> None:
        n = sum(len(b) for b in self.batches)
        keyed: list[Hashable] = (
            list(keys) if keys is not None else [("obs", n + i) for i in range(len(diffs))]
        )
        if len(keyed) != len(diffs):
            raise ValueError(f"{len(diffs)} differences but {len(keyed)} task keys")
        k = len(self.batches) + 1
        if not self.schedule.blocked(k) and repeats_from([*self.keys, keyed]) is not None:
            raise ValueError(f"look {k} repeats a task, but the schedule said it would not")
        self.batches.append([float(d) for d in diffs])
        self.keys.append(keyed)

    def sums(self) -> list[float]:
        """Each task's sum of differences so far, in the order the tasks were first seen."""
        out: dict[Hashable, float] = {}
        for batch, keys in zip(self.batches, self.keys, strict=True):
            for d, key in zip(batch, keys, strict=True):
                out[key] = out.get(key, 0.0) + d
        return list(out.values())

    def means(self) -> list[float]:
        """Each task's mean difference so far, in the order the tasks were first seen."""
        total: dict[Hashable, float] = {}
        count: dict[Hashable, int] = {}
        for batch, keys in zip(self.batches, self.keys, strict=True):
            for d, key in zip(batch, keys, strict=True):
                total[key] = total.get(key, 0.0) + d
                count[key] = count.get(key, 0) + 1
        return [total[k] / count[k] for k in total]
