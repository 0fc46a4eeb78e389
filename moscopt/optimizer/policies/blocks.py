"""The task is the unit: the paired differences of a decision, grouped by the task they came from.

A decision's looks may ask the same tasks again (at a new sample index: the whole validation
split at every look, the default on a small split) or new ones (`optimizer.val_look`). Two
differences of the same task are not independent evidence: a model that answers a task the same
way on most samples repeats itself, and a test that counts each repeat as a new observation is
valid only for "better on these tasks", not for the tasks a pool will meet (issue 37). So both
tests treat a task's differences as one block: they flip its sign together (the sign-flip test)
or bet on its mean once (the test by betting).

While every task seen is new (no repeats yet), a block is one difference and the tests run as
sequential tests over all looks (exact, anytime). From the first look that repeats a task on,
each look is tested on its blocks alone at its share of the error rate: look k may use
alpha * ((k/K)**s - ((k-1)/K)**s), s = `SPENDING_SHAPE`, and the looks before it, whatever they
were, at most alpha * ((k-1)/K)**s in all; by the union bound a null candidate passes in at
most alpha of the decisions, whatever the within-task dependence.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

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


class Blocks:
    """The differences seen so far, by look and by task (`keys`; None: every difference is its
    own task, as when each comes from a task not seen before)."""

    def __init__(self) -> None:
        self.batches: list[list[float]] = []
        self.keys: list[list[Hashable]] = []
        self.first_repeat: int | None = None  # the first look (from 1) that repeats a task
        self._seen: set[Hashable] = set()

    def add(self, diffs: Sequence[float], keys: Sequence[Hashable] | None = None) -> None:
        n = sum(len(b) for b in self.batches)
        keyed = list(keys) if keys is not None else [("obs", n + i) for i in range(len(diffs))]
        if len(keyed) != len(diffs):
            raise ValueError(f"{len(diffs)} differences but {len(keyed)} task keys")
        self.batches.append([float(d) for d in diffs])
        self.keys.append(keyed)
        if self.first_repeat is None and (
            len(set(keyed)) < len(keyed) or any(k in self._seen for k in keyed)
        ):
            self.first_repeat = len(self.batches)
        self._seen.update(keyed)

    @property
    def blocked(self) -> bool:
        """Whether the current look is tested on its blocks (a task has repeated)."""
        return self.first_repeat is not None

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
